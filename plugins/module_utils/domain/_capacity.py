# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: GPU (or any extended resource) capacity maths over node and pod
objects: allocatable, requested, free per node, and whether a gang fits. Not a public API."""

from __future__ import annotations

GPU = "nvidia.com/gpu"
_SUFFIX = {"m": 0.001, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4}


def quantity(value) -> float:
    """A Kubernetes quantity as a number ('2' -> 2, '500m' -> 0.5, '1Gi' -> 1073741824)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"not a quantity: {value!r}")
    s = value.strip()
    for suf in sorted(_SUFFIX, key=len, reverse=True):
        if s.endswith(suf):
            return float(s[: -len(suf)]) * _SUFFIX[suf]
    return float(s)


def _pick(d: dict | None, keys) -> dict:
    return {k: d[k] for k in keys if d and k in d}


def slim_pod(pod: dict) -> dict:
    """What the capacity and gang maths read of a pod (names, labels, gang annotations, times, node,
    resources, phase): a cluster-wide scan keeps this, not managedFields, volumes, env or statuses."""
    md, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    meta = _pick(md, ("name", "namespace", "labels", "creationTimestamp", "deletionTimestamp", "ownerReferences"))
    ann = {k: v for k, v in (md.get("annotations") or {}).items() if k.startswith("scheduling.")}
    if ann:
        meta["annotations"] = ann
    return {
        "metadata": meta,
        "spec": {
            **_pick(spec, ("nodeName", "schedulerName")),
            **{
                key: [_pick(c, ("name", "resources")) for c in spec[key]]
                for key in ("containers", "initContainers")
                if spec.get(key)
            },
        },
        "status": {
            **_pick(pod.get("status"), ("phase",)),
            # whether a scheduler has looked at the pod yet (gang_info's stuck-scheduler check)
            "conditions": [
                _pick(c, ("type", "status", "reason"))
                for c in (pod.get("status") or {}).get("conditions") or []
                if c.get("type") == "PodScheduled"
            ],
        },
    }


def slim_node(node: dict) -> dict:
    """What the capacity maths read of a node: its name, schedulability, capacity and conditions."""
    st = node.get("status") or {}
    return {
        "metadata": _pick(node.get("metadata"), ("name", "labels")),
        "spec": _pick(node.get("spec"), ("unschedulable", "taints")),
        "status": {
            **_pick(st, ("capacity", "allocatable")),
            "conditions": [_pick(c, ("type", "status")) for c in st.get("conditions") or []],
        },
    }


def pod_request(pod: dict, resource: str = GPU) -> float:
    """Effective request of one resource: max(sum over containers, max over init containers);
    an extended resource's limit counts as its request."""
    spec = pod.get("spec") or {}

    def one(c):
        res = c.get("resources") or {}
        v = (res.get("requests") or {}).get(resource)
        if v is None:
            v = (res.get("limits") or {}).get(resource)
        return quantity(v) if v is not None else 0.0

    total = sum(one(c) for c in spec.get("containers") or [])
    init = max((one(c) for c in spec.get("initContainers") or []), default=0.0)
    return max(total, init)


def _terminal(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def node_ready(node: dict) -> bool:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def nodes_capacity(nodes: list[dict], pods: list[dict], resource: str = GPU) -> list[dict]:
    """Per node: capacity, allocatable, requested (by bound, non-terminal pods), free, schedulable."""
    requested: dict[str, float] = {}
    for p in pods:
        node = (p.get("spec") or {}).get("nodeName")
        if node and not _terminal(p):
            requested[node] = requested.get(node, 0.0) + pod_request(p, resource)
    return capacity_per_node(nodes, requested, resource)


def capacity_per_node(nodes: list[dict], requested: dict[str, float], resource: str = GPU) -> list[dict]:
    """``nodes_capacity`` from what the pods request per node (node name -> amount), however it was
    summed (a list of pods, or ``_podfold.PodFold`` as a scan decodes them)."""
    out = []
    for n in nodes:
        st = n.get("status") or {}
        cap = quantity((st.get("capacity") or {}).get(resource, 0))
        alloc = quantity((st.get("allocatable") or {}).get(resource, 0))
        req = requested.get(n["metadata"]["name"], 0.0)
        out.append(
            {
                "name": n["metadata"]["name"],
                "capacity": num(cap),
                "allocatable": num(alloc),
                "requested": num(req),
                "free": num(max(0.0, alloc - req)),
                "schedulable": node_ready(n) and not (n.get("spec") or {}).get("unschedulable", False),
            }
        )
    return out


def num(x: float):
    return int(x) if float(x).is_integer() else x


def member_slots(per_node: list[dict], per_pod: float) -> int:
    """How many members of ``per_pod`` fit at once, node by node: a member lives on one node, so a node
    with 3 free of 2-GPU members holds 1 (the third GPU is no use to it), whatever the total of free."""
    if per_pod <= 0:
        raise ValueError(f"a member's request must be > 0 to count slots (got {per_pod})")
    return sum(int((n.get("free") or 0) // per_pod) for n in per_node if n.get("schedulable"))


def gang_fits(per_node: list[dict], replicas: int, per_pod: float) -> tuple[bool, int]:
    """(fits, how many such pods fit) given free capacity per schedulable node."""
    if per_pod <= 0:
        return True, replicas
    slots = member_slots(per_node, per_pod)
    return slots >= replicas, slots


def device_plugin_ready(info: dict, namespace: str, release: str, expected_gpus: int) -> bool:
    """gang_info's facts (``info``) show release ``namespace/release``'s device plugin DaemonSets all ready,
    each with a pod desired, and at least ``max(expected_gpus, 1)`` GPUs allocatable. The MPS control
    daemon is left out: it targets only nodes labelled for MPS, so none desired is normal for it."""

    def mine(ds: dict) -> bool:
        name = str(ds.get("daemonset", ""))
        return name.startswith(f"{namespace}/{release}") and "mps-control-daemon" not in name

    ours = [ds for ds in (info or {}).get("device_plugins") or [] if mine(ds)]
    if not ours or any((ds.get("desired") or 0) < 1 or ds.get("ready") != ds.get("desired") for ds in ours):
        return False
    return float(((info or {}).get("gpus") or {}).get("allocatable") or 0) >= max(int(expected_gpus), 1)
