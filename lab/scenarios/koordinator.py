"""Koordinator's koord-scheduler on the lab, and its label gangs (seed 003)."""

from __future__ import annotations

import yaml

from .. import kube
from .. import versions as V
from ..cluster import Lab
from ._common import (
    KOORD_CRDS,
    KOORD_GANG_MIN,
    KOORD_GANG_NAME,
    KOORD_NAME,
    KOORD_NS,
    _crb,
    _deployment,
    _ns,
    _role,
    _sa,
    crds,
    wait_crds_established,
    wait_deployment,
)


# ---- Koordinator koord-scheduler as a second scheduler ---------------------------------------------
def koord_rbac() -> list[dict]:
    """koord-scheduler's RBAC for a gang-only profile: system:kube-scheduler, system:volume-scheduler,
    extension-apiserver-authentication-reader, and a role of our own in place of upstream's
    config/rbac/scheduler_role.yaml (all verbs on all resources of five API groups, and CRDs):
    the informers' reads of the three CRDs it needs, the patch its PodGroup controller makes to
    the status of a PodGroup object (the old group's, when a user creates one), and v1.8's pod patch before
    binding (its DefaultPreBind applies Coscheduling's). No wildcard."""
    ro = ["get", "list", "watch"]
    role = _role(
        "lab-koord-scheduler",
        [
            {"apiGroups": ["scheduling.sigs.k8s.io"], "resources": ["podgroups"], "verbs": ro + ["patch"]},
            {"apiGroups": ["scheduling.koordinator.sh"], "resources": ["reservations", "devices"], "verbs": ro},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]},
        ],
    )
    return [
        role,
        _crb("lab-koord-scheduler", "lab-koord-scheduler", KOORD_NS, KOORD_NAME),
        _crb("lab-koord-scheduler-kube-scheduler", "system:kube-scheduler", KOORD_NS, KOORD_NAME),
        _crb("lab-koord-scheduler-volume-scheduler", "system:volume-scheduler", KOORD_NS, KOORD_NAME),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "lab-koord-scheduler-auth-reader", "namespace": "kube-system"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "extension-apiserver-authentication-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": KOORD_NAME, "namespace": KOORD_NS}],
        },
    ]


def koord_scheduler() -> list[dict]:
    """Namespace, ServiceAccount, configuration and Deployment of koord-scheduler as a second
    scheduler: one profile ``koord-scheduler`` with Coscheduling on every extension point it has
    (PreEnqueue, PreFilter, PostFilter, Reserve, Permit, PostBind), leader election off."""
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": KOORD_NAME, "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]}}}],
    }
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "koord-scheduler-config", "namespace": KOORD_NS},
        "data": {"koord-scheduler-config": yaml.safe_dump(cfg, sort_keys=False)},
    }
    dep = _deployment(
        KOORD_NS,
        KOORD_NAME,
        KOORD_NAME,
        f"registry.cn-beijing.aliyuncs.com/koordinator-sh/koord-scheduler:{V.KOORDINATOR}",
        [
            "--config=/config/koord-scheduler.config",
            # its deprecated insecure port (10251) listens on every address without this, --config or
            # not. No port flag beyond it: a lab pod has a network namespace of its own, so the secure
            # port (10259) clashes with no other scheduler, as in a cluster
            "--address=127.0.0.1",
            "--v=2",
        ],
        config="koord-scheduler-config",
        mount="/config",
    )
    dep["spec"]["template"]["spec"]["volumes"][0]["configMap"]["items"] = [
        {"key": "koord-scheduler-config", "path": "koord-scheduler.config"}
    ]
    return [_ns(KOORD_NS), _sa(KOORD_NS, KOORD_NAME), cm, dep]


def install_koord_scheduler(lab: Lab) -> None:
    """The three CRDs koord-scheduler needs (from the built module), its RBAC, configuration and
    Deployment; returns once its pod runs."""
    docs = [d for d in crds("koordinator", "crds") if d["metadata"]["name"] in KOORD_CRDS]
    kube.apply(lab, docs, server_side=True)
    wait_crds_established(lab, list(KOORD_CRDS))
    kube.apply(lab, koord_scheduler() + koord_rbac())
    wait_deployment(lab, KOORD_NS, KOORD_NAME)


def koord_gang(ns: str, name: str, size: int, min_available: int, gpus: int = 1) -> list[dict]:
    """``size`` pods of ``gpus`` GPUs each for koord-scheduler, in a gang by the seed-003 labels."""
    labels = {"app": name, KOORD_GANG_NAME: name, KOORD_GANG_MIN: str(min_available)}
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{name}-{i}", "namespace": ns, "labels": labels},
            "spec": {
                "schedulerName": KOORD_NAME,
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {"name": "worker", "image": "busybox:1.36", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
                ],
            },
        }
        for i in range(size)
    ]
