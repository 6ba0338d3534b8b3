"""What the lab's scenarios share: CRDs from a build unit, waits, and small object builders."""

from __future__ import annotations

from pathlib import Path

from kubernetes import client as k

from .. import build, kube, yamlio
from ..cluster import Lab

SP_NS = "scheduler-plugins"
SP_NAME = "scheduler-plugins-scheduler"
VC_NS = "volcano-system"
KOORD_NS = "koordinator-system"
KOORD_NAME = "koord-scheduler"
# the CRDs koord-scheduler needs at start, whatever its profiles enable: it starts informers for them
KOORD_CRDS = (
    "podgroups.scheduling.sigs.k8s.io",
    "reservations.scheduling.koordinator.sh",
    "devices.scheduling.koordinator.sh",
)
# the gang labels koord-scheduler reads (seed 003, Alibaba ACK): no PodGroup object needed
KOORD_GANG_NAME = "pod-group.scheduling.sigs.k8s.io/name"
KOORD_GANG_MIN = "pod-group.scheduling.sigs.k8s.io/min-available"


def crds(unit: str, sub: str) -> list[dict]:
    docs = []
    root = build.artifact_path(unit, sub)
    files = [root] if root.is_file() else sorted(Path(root).rglob("*.yaml"))
    for f in files:
        docs += [d for d in yamlio.load_all(f.read_text()) if d and d.get("kind") == "CustomResourceDefinition"]
    return docs


def wait_crds_established(lab: Lab, names: list[str], timeout: float = 60) -> None:
    ext = k.ApiextensionsV1Api(kube.api(lab))

    def ok() -> bool:
        for n in names:
            try:
                crd = ext.read_custom_resource_definition(n)
            except k.ApiException:
                return False
            if not any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or []):
                return False
        return True

    kube.wait_for(ok, timeout, f"CRDs {names} established")


def _sa(ns: str, name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}}


def _crb(name: str, role: str, ns: str, sa: str) -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
    }


def _deployment(
    ns: str, name: str, sa: str, image: str, args: list[str], config: str | None = None, mount: str = "/etc/config"
) -> dict:
    c = {"name": name, "image": image, "args": args, "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
    pod_spec: dict = {"serviceAccountName": sa, "containers": [c]}
    if config:
        c["volumeMounts"] = [{"name": "config", "mountPath": mount}]
        pod_spec["volumes"] = [{"name": "config", "configMap": {"name": config}}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
        },
    }


def _ns(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def wait_deployment(lab: Lab, ns: str, name: str, timeout: float = 60) -> None:
    core = k.CoreV1Api(kube.api(lab))

    def ready() -> bool:
        pods = core.list_namespaced_pod(ns, label_selector=f"app={name}").items
        return any(
            p.status.phase == "Running"
            and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
            for p in pods
        )

    kube.wait_for(ready, timeout, f"{ns}/{name} to run")


def _role(name: str, rules: list[dict]) -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": rules,
    }


_ALL = ["get", "list", "watch", "create", "update", "patch", "delete"]
