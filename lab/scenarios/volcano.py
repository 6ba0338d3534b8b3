"""Volcano on the lab: its CRDs and a minimal vc-scheduler Deployment."""

from __future__ import annotations

from .. import kube
from .. import versions as V
from ..cluster import Lab
from ._common import VC_NS, _crb, _deployment, _ns, _role, _sa, crds, wait_crds_established, wait_deployment

# ---- Volcano --------------------------------------------------------------------------------------
VC_CONF = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def vc_scheduler_rbac() -> list[dict]:
    ro = ["get", "list", "watch"]
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "lab-vc-scheduler"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ro + ["update", "patch", "delete"]},
            {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["update", "patch"]},
            {"apiGroups": [""], "resources": ["pods/binding", "bindings"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "list", "watch", "update", "patch"]},
            {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "update", "patch"]},
            {
                "apiGroups": [""],
                "resources": [
                    "nodes",
                    "namespaces",
                    "resourcequotas",
                    "persistentvolumes",
                    "persistentvolumeclaims",
                    "configmaps",
                    "services",
                    "replicationcontrollers",
                ],
                "verbs": ro,
            },
            {"apiGroups": ["apps"], "resources": ["replicasets", "statefulsets"], "verbs": ro},
            {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ro},
            {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ro},
            {
                "apiGroups": ["storage.k8s.io"],
                "resources": ["storageclasses", "csinodes", "csidrivers", "csistoragecapacities", "volumeattachments"],
                "verbs": ro,
            },
            {"apiGroups": ["resource.k8s.io"], "resources": ["*"], "verbs": ro},
            {
                "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"],
                "verbs": ["create", "get", "list", "update", "watch"],
            },
            {
                "apiGroups": ["scheduling.volcano.sh"],
                "resources": ["podgroups", "queues"],
                "verbs": ro + ["create", "update", "patch", "delete"],
            },
            {
                "apiGroups": ["scheduling.volcano.sh"],
                "resources": ["podgroups/status", "queues/status"],
                "verbs": ["update", "patch"],
            },
            {"apiGroups": ["batch.volcano.sh"], "resources": ["jobs"], "verbs": ro},
            {"apiGroups": ["nodeinfo.volcano.sh"], "resources": ["numatopologies"], "verbs": ro},
            # vc-scheduler v1.15 watches HyperNodes (network topology) and NodeShards from its start, and waits for them
            {"apiGroups": ["topology.volcano.sh"], "resources": ["hypernodes", "hypernodes/status"], "verbs": ro},
            {"apiGroups": ["shard.volcano.sh"], "resources": ["nodeshards", "nodeshards/status"], "verbs": ro},
        ],
    }
    return [role, _crb("lab-vc-scheduler", "lab-vc-scheduler", VC_NS, "vc-scheduler")]


def vc_scheduler() -> list[dict]:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "vc-scheduler-config", "namespace": VC_NS},
        "data": {"volcano-scheduler.conf": VC_CONF},
    }
    dep = _deployment(
        VC_NS,
        "vc-scheduler",
        "vc-scheduler",
        f"volcanosh/vc-scheduler:{V.VOLCANO}",
        [
            "--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf",
            "--leader-elect=false",
            "--logtostderr",
            "--enable-healthz=false",
            "--enable-metrics=false",
            "-v=3",
        ],
        config="vc-scheduler-config",
        mount="/volcano.scheduler",
    )
    return [_ns(VC_NS), _sa(VC_NS, "vc-scheduler"), cm, dep]


def install_volcano_crds(lab: Lab) -> None:
    docs = crds("volcano", "crds")
    kube.apply(lab, docs, server_side=True)
    wait_crds_established(lab, [d["metadata"]["name"] for d in docs])


def vc_queue_controller() -> list[dict]:
    """vc-controller-manager with its queue controller alone: from v1.15 vc-scheduler allocates nothing to a queue
    whose status.state is not Open, and the queue controller is what opens it (v1.10's scheduler took an unset state as
    open). The lab runs no other Volcano controller, so that no PodGroup is made for pods that have none."""
    ro = ["get", "list", "watch"]
    rules = [
        {"apiGroups": ["scheduling.volcano.sh"], "resources": ["queues"], "verbs": ro + ["update", "patch"]},
        {"apiGroups": ["scheduling.volcano.sh"], "resources": ["queues/status"], "verbs": ["update", "patch"]},
        {"apiGroups": ["scheduling.volcano.sh"], "resources": ["podgroups"], "verbs": ro},
        {"apiGroups": ["bus.volcano.sh"], "resources": ["commands"], "verbs": ro + ["delete"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "list", "watch", "update", "patch"]},
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "update", "patch"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create", "get", "list", "update"]},
    ]
    dep = _deployment(
        VC_NS,
        "vc-queue-controller",
        "vc-queue-controller",
        f"volcanosh/vc-controller-manager:{V.VOLCANO}",
        ["--logtostderr", "--enable-healthz=false", "--leader-elect=false", "--controllers=+queue-controller", "-v=3"],
    )
    return [
        _sa(VC_NS, "vc-queue-controller"),
        _role("lab-vc-queue-controller", rules),
        _crb("lab-vc-queue-controller", "lab-vc-queue-controller", VC_NS, "vc-queue-controller"),
        dep,
    ]


def install_volcano(lab: Lab, rbac: bool = True) -> None:
    install_volcano_crds(lab)
    kube.apply(lab, vc_scheduler() + (vc_scheduler_rbac() if rbac else []) + vc_queue_controller())
    wait_deployment(lab, VC_NS, "vc-scheduler")
    wait_deployment(lab, VC_NS, "vc-queue-controller")
