"""The control plane's flags that vary: kube-controller-manager's controllers by Kubernetes minor, and the feature
gates (GANGSCHED_LAB_FEATURE_GATES) given alike to kube-apiserver, kube-controller-manager and kube-scheduler."""

from __future__ import annotations

import os


def kcm_controllers(minor: int) -> str:
    """kube-controller-manager's --controllers for a minor: all but node IPAM (KWOK's nodes need none) and,
    before 1.37, the cloud controllers (the lab has no cloud); 1.37 removed those three, and naming a
    controller it does not have is a start error.

    >>> kcm_controllers(37), kcm_controllers(33)
    ('*,-nodeipam', '*,-nodeipam,-service-lb-controller,-route,-cloud-node-lifecycle')
    """
    return "*,-nodeipam" if minor >= 37 else "*,-nodeipam,-service-lb-controller,-route,-cloud-node-lifecycle"


def feature_gates() -> str:
    """The feature gates the lab's control plane runs with: upstream's defaults unless
    GANGSCHED_LAB_FEATURE_GATES names some (``GenericWorkload=true,WorkloadWithJob=true``), given alike to
    kube-apiserver, kube-controller-manager and kube-scheduler."""
    return ",".join(g.strip() for g in os.environ.get("GANGSCHED_LAB_FEATURE_GATES", "").split(",") if g.strip())


def gate_flags(gates: str, component: str, minor: int) -> list[str]:
    """The flags that turn ``gates`` on in ``component``; for kube-apiserver, GenericWorkload also serves its API
    group (scheduling.k8s.io/v1beta1 on 1.37, off by default even with the gate).

    >>> gate_flags("GenericWorkload=true", "kube-apiserver", 37)
    ['--feature-gates=GenericWorkload=true', '--runtime-config=scheduling.k8s.io/v1beta1=true']
    >>> gate_flags("", "kube-scheduler", 37)
    []
    """
    if not gates:
        return []
    flags = [f"--feature-gates={gates}"]
    if component == "kube-apiserver" and "GenericWorkload=true" in gates.split(","):
        flags.append(f"--runtime-config=scheduling.k8s.io/{'v1beta1' if minor >= 37 else 'v1alpha1'}=true")
    return flags
