"""scheduler-plugins on the lab: as a second scheduler, and in the kube-scheduler static pod."""

from __future__ import annotations

from pathlib import Path

import yaml
from kubernetes import client as k

from .. import kube
from .. import versions as V
from ..cluster import Lab
from ._common import SP_NAME, SP_NS, _crb, _deployment, _ns, _sa, crds, wait_crds_established, wait_deployment


# ---- scheduler-plugins as a second scheduler ------------------------------------------------------
def sp_rbac() -> list[dict]:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "lab-sp-scheduler-extra"},
        "rules": [
            {
                "apiGroups": ["scheduling.x-k8s.io"],
                "resources": ["podgroups", "elasticquotas"],
                "verbs": ["get", "list", "watch", "update", "patch"],
            },
            {
                "apiGroups": ["scheduling.x-k8s.io"],
                "resources": ["podgroups/status", "elasticquotas/status"],
                "verbs": ["get", "update", "patch"],
            },
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
            {
                "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"],
                "verbs": ["create", "get", "list", "update", "watch"],
            },
        ],
    }
    return [
        role,
        _crb("lab-sp-scheduler-kube-scheduler", "system:kube-scheduler", SP_NS, SP_NAME),
        _crb("lab-sp-scheduler-volume-scheduler", "system:volume-scheduler", SP_NS, SP_NAME),
        _crb("lab-sp-scheduler-extra", "lab-sp-scheduler-extra", SP_NS, SP_NAME),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "lab-sp-scheduler-auth-reader", "namespace": "kube-system"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "extension-apiserver-authentication-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": SP_NAME, "namespace": SP_NS}],
        },
    ]


def sp_second_scheduler(permit_wait: int = 60) -> list[dict]:
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [
            {
                "schedulerName": SP_NAME,
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
                },
                "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": permit_wait}}],
            }
        ],
    }
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "scheduler-config", "namespace": SP_NS},
        "data": {"scheduler-config.yaml": yaml.safe_dump(cfg, sort_keys=False)},
    }
    dep = _deployment(
        SP_NS,
        SP_NAME,
        SP_NAME,
        f"registry.k8s.io/scheduler-plugins/kube-scheduler:{V.SCHEDULER_PLUGINS}",
        # Coscheduling registers no Node events: a rejected gang is retried only after this
        # (upstream default 5m); the lab retries within seconds of "add a GPU node"
        ["--config=/etc/kubernetes/scheduler-config.yaml", "--pod-max-in-unschedulable-pods-duration=10s", "--v=2"],
        config="scheduler-config",
        mount="/etc/kubernetes",
    )
    return [_ns(SP_NS), _sa(SP_NS, SP_NAME), cm, dep]


def install_scheduler_plugins(lab: Lab) -> None:
    docs = crds("scheduler-plugins", "coscheduling")
    kube.apply(lab, docs, server_side=True)
    wait_crds_established(lab, [d["metadata"]["name"] for d in docs])
    kube.apply(lab, sp_second_scheduler() + sp_rbac())
    wait_deployment(lab, SP_NS, SP_NAME)


def sp_default_scheduler(lab: Lab, permit_wait: int = 60) -> Path:
    """Switch the lab's static kube-scheduler to the scheduler-plugins build with Coscheduling in the
    ``default-scheduler`` profile, kubeadm-style: a KubeSchedulerConfiguration next to the manifest and
    the manifest's image, command and volumes rewritten. Also binds system:kube-scheduler to the
    PodGroup rights Coscheduling needs. Returns the manifest path; undo with restore_default_scheduler."""
    conf = lab.etc / "scheduler.conf"
    cfg_path = lab.etc / "scheduler-config.yaml"
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(conf)},
        "leaderElection": {"leaderElect": True},
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
                },
                "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": permit_wait}}],
            }
        ],
    }
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    kube.apply(lab, _clusterrole_for_user("lab:scheduler-plugins-default", "system:kube-scheduler"))
    path = lab.manifests / "kube-scheduler.yaml"
    pod = yaml.safe_load(path.read_text())
    c = pod["spec"]["containers"][0]
    c["image"] = f"registry.k8s.io/scheduler-plugins/kube-scheduler:{V.SCHEDULER_PLUGINS}"
    c["command"] = [
        "kube-scheduler",
        f"--config={cfg_path}",
        f"--authentication-kubeconfig={conf}",
        f"--authorization-kubeconfig={conf}",
        "--bind-address=127.0.0.1",
        "--pod-max-in-unschedulable-pods-duration=10s",
    ]
    c["volumeMounts"].append({"name": "config", "mountPath": str(cfg_path), "readOnly": True})
    pod["spec"]["volumes"].append({"name": "config", "hostPath": {"path": str(cfg_path), "type": "File"}})
    path.write_text(yaml.safe_dump(pod, sort_keys=False))
    return path


def _clusterrole_for_user(name: str, user: str) -> list[dict]:
    rules = [
        {
            "apiGroups": ["scheduling.x-k8s.io"],
            "resources": ["podgroups", "elasticquotas"],
            "verbs": ["get", "list", "watch"],
        },
        {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups/status"], "verbs": ["get", "update", "patch"]},
    ]
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
    ]


def scheduler_lease_holder(lab: Lab) -> str | None:
    try:
        lease = k.CoordinationV1Api(kube.api(lab)).read_namespaced_lease("kube-scheduler", "kube-system")
        return lease.spec.holder_identity or None
    except k.ApiException:
        return None


def restore_default_scheduler(lab: Lab) -> None:
    lab.write_scheduler_manifest()
    (lab.etc / "scheduler-config.yaml").unlink(missing_ok=True)
