"""The kubeadm-style static pod manifests the lab writes in its manifest directory: kube-scheduler's, which the runner
starts the default scheduler from, and those of the components the lab runs on the host (``HOST_COMPONENTS``), which
the runner follows."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from . import versions as V
from .flags import feature_gates, gate_flags

if TYPE_CHECKING:
    from .cluster import Lab


def write_scheduler(lab: Lab) -> Path:
    """The kubeadm-style static pod manifest the runner starts the default scheduler from."""
    conf = str(lab.etc / "scheduler.conf")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "kube-scheduler",
            "namespace": "kube-system",
            "labels": {"component": "kube-scheduler", "tier": "control-plane"},
        },
        "spec": {
            "hostNetwork": True,
            "priorityClassName": "system-node-critical",
            "containers": [
                {
                    "name": "kube-scheduler",
                    "image": f"registry.k8s.io/kube-scheduler:{V.KUBERNETES}",
                    "command": [
                        "kube-scheduler",
                        f"--authentication-kubeconfig={conf}",
                        f"--authorization-kubeconfig={conf}",
                        "--bind-address=127.0.0.1",
                        f"--kubeconfig={conf}",
                        "--leader-elect=true",
                        *gate_flags(feature_gates(), "kube-scheduler", V.KUBERNETES_MINOR),
                    ],
                    "volumeMounts": [{"name": "kubeconfig", "mountPath": conf, "readOnly": True}],
                }
            ],
            "volumes": [{"name": "kubeconfig", "hostPath": {"path": conf, "type": "FileOrCreate"}}],
        },
    }
    path = lab.manifests / "kube-scheduler.yaml"
    path.write_text(yaml.safe_dump(pod, sort_keys=False))
    return path


def write_host(lab: Lab, name: str) -> Path:
    """The kubeadm-style static pod manifest of a component the lab started on the host (``HOST_COMPONENTS``):
    its image and, as the container's command, the flags it runs with now (``components.json``)."""
    argv = lab.components()[name]["argv"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "kube-system",
            "labels": {"component": name, "tier": "control-plane"},
        },
        "spec": {
            "hostNetwork": True,
            "priorityClassName": "system-node-critical",
            "containers": [
                {"name": name, "image": f"registry.k8s.io/{name}:{V.KUBERNETES}", "command": [name, *argv[1:]]}
            ],
        },
    }
    path = lab.manifests / f"{name}.yaml"
    path.write_text(yaml.safe_dump(pod, sort_keys=False))
    return path
