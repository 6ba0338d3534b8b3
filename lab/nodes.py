"""Fake nodes (managed by KWOK) with ``nvidia.com/gpu`` capacity, and KWOK's stage configuration."""

from __future__ import annotations

import json
import time
from pathlib import Path

import yaml

from . import build
from . import versions as V

GPU_PRODUCT = "NVIDIA-H100-80GB-HBM3"
MANAGED = {"kwok.x-k8s.io/node": "fake"}
# Pods that carry this annotation are completed by KWOK when owned by a Job; others run until deleted,
# like a real training process (KWOK's own default completes every Job-owned pod at once).
COMPLETE_ANNOTATION = "lab.gangsched.io/complete"


def client(kubeconfig: Path):
    from kubernetes import config

    return config.new_client_from_config(str(kubeconfig))


def runner_image_query() -> str:
    """A jq query (KWOK selector key) that is true for pods the pod-process runner runs.

    Mirrors :func:`lab.images.repository`: tag/digest and registry host stripped, exact path match.
    """
    names = json.dumps(sorted(V.IMAGES))
    return (
        f'{names} as $n | [.spec.containers[].image | sub("@.*$"; "") | sub(":[^/:]*$"; "") '
        '| split("/") | if length > 1 and ((.[0] | test("[.:]")) or .[0] == "localhost") '
        'then .[1:] else . end | join("/")] | any(. as $p | $n | any(. == $p))'
    )


def kwok_stage_config() -> str:
    """KWOK's own stages from the built module, with runner-managed pods excluded from every pod stage
    and Job-owned pods completed only on request."""
    root = build.artifact_path("kwok", "stage")
    files = [root / "node/fast/node-initialize.yaml", root / "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml"]
    files += sorted((root / "pod/fast").glob("pod-*.yaml"))
    docs = []
    exclude = {"key": runner_image_query(), "operator": "NotIn", "values": ["true"]}
    for f in files:
        for doc in yaml.safe_load_all(f.read_text()):
            if not doc or doc.get("kind") != "Stage":
                continue
            if doc["spec"]["resourceRef"]["kind"] == "Pod":
                exprs = doc["spec"].setdefault("selector", {}).setdefault("matchExpressions", [])
                exprs.append(exclude)
                if doc["metadata"]["name"] == "pod-complete":
                    exprs.append(
                        {"key": f'.metadata.annotations["{COMPLETE_ANNOTATION}"]', "operator": "In", "values": ["true"]}
                    )
            docs.append(doc)
    return yaml.safe_dump_all(docs, sort_keys=False)


def node_body(name: str, gpus: int, control_plane: bool = False) -> dict:
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "type": "kwok",
    }
    capacity = {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "500Gi"}
    taints = []
    if gpus:
        labels.update(
            {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": GPU_PRODUCT, "nvidia.com/gpu.count": str(gpus)}
        )
        capacity["nvidia.com/gpu"] = str(gpus)
    if control_plane:
        labels["node-role.kubernetes.io/control-plane"] = ""
        taints.append({"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {**MANAGED, "node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {"taints": taints} if taints else {},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "nodeInfo": {
                "kubeletVersion": V.KUBERNETES,
                "architecture": "amd64",
                "operatingSystem": "linux",
                "containerRuntimeVersion": "kwok",
                "kubeProxyVersion": V.KUBERNETES,
                "osImage": "kwok",
                "kernelVersion": "kwok",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
            },
        },
    }


def create_control_plane(api, name: str) -> None:
    from kubernetes import client as k

    k.CoreV1Api(api).create_node(node_body(name, 0, control_plane=True))


def add(api, gpus: int, name: str | None = None) -> str:
    from kubernetes import client as k

    core = k.CoreV1Api(api)
    if gpus < 0:
        raise ValueError("--gpus must be >= 0")
    if name is None:
        existing = {n.metadata.name for n in core.list_node().items}
        prefix = "gpu-node" if gpus else "cpu-node"
        i = 0
        while f"{prefix}-{i}" in existing:
            i += 1
        name = f"{prefix}-{i}"
    core.create_node(node_body(name, gpus))
    return name


def remove(api, name: str) -> None:
    from kubernetes import client as k

    core = k.CoreV1Api(api)
    core.delete_node(name)
    # the node's pods go with it, as a kubelet-less node's pods would after eviction
    for pod in core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={name}").items:
        core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)


def wait_ready(api, timeout: float = 60, names: list[str] | None = None) -> None:
    from kubernetes import client as k

    core = k.CoreV1Api(api)
    deadline = time.monotonic() + timeout
    pending: list[str] = []
    while time.monotonic() < deadline:
        pending = []
        for n in core.list_node().items:
            if names and n.metadata.name not in names:
                continue
            ready = [c for c in (n.status.conditions or []) if c.type == "Ready" and c.status == "True"]
            if not ready:
                pending.append(n.metadata.name)
        if not pending:
            return
        time.sleep(0.3)
    raise RuntimeError(f"nodes not Ready after {timeout:.0f}s: {', '.join(pending)}; see: python -m lab logs kwok")
