# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what component_ready does — one read of each object a component
brings (CRDs, Deployments, DaemonSets by name or by label, Services' endpoints, admission webhook configurations;
namespaces, ServiceAccounts and Secrets, ready once they exist; the nodes' allocatable total of a resource), then, for
those not ready yet, reads again once a second until they are or the timeout passes. The reads of one round are sent
together (``_together.each``). Not a public API."""

from __future__ import annotations

import threading
import time

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._capacity import quantity
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._readiness import (
    ca_injected,
    daemonset_ready,
    endpoint_ready,
    established,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _together
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._waiter import rollout_complete


def rolled_out(obj: dict) -> str | None:
    """Like `kubectl rollout status`: every replica of the current spec updated and available, none old left."""
    done, why = rollout_complete(obj)
    return None if done else why


def exists(_obj: dict) -> None:
    """Ready once found: a namespace, a ServiceAccount or a Secret has no readiness of its own."""
    return None


def _one(kind: str):
    return lambda client, label, ns, name: client.get_or_none(_api.path(kind, ns, name), label)


def _slices(client, label, ns, name):
    path = _api.path("EndpointSlice", ns)
    return client.list_or_empty(path, f"EndpointSlices of {label}", labelSelector=f"kubernetes.io/service-name={name}")


# option: (kind, read(client, label, namespace, name) -> the object or None, readiness, namespaced)
KINDS = {
    "crds": (
        "CustomResourceDefinition",
        _one("CustomResourceDefinition"),
        established,
        False,
    ),
    "deployments": ("Deployment", _one("Deployment"), rolled_out, True),
    "daemonsets": ("DaemonSet", _one("DaemonSet"), daemonset_ready, True),
    "services": ("Service", _slices, endpoint_ready, True),
    "mutating_webhook_configurations": (
        "MutatingWebhookConfiguration",
        _one("MutatingWebhookConfiguration"),
        ca_injected,
        False,
    ),
    "validating_webhook_configurations": (
        "ValidatingWebhookConfiguration",
        _one("ValidatingWebhookConfiguration"),
        ca_injected,
        False,
    ),
    "namespaces": ("Namespace", _one("Namespace"), exists, False),
    "service_accounts": ("ServiceAccount", _one("ServiceAccount"), exists, True),
    "secrets": ("Secret", _one("Secret"), exists, True),
}
NAMESPACED = tuple(o for o, (_k, _r, _c, namespaced) in KINDS.items() if namespaced)


def daemonsets_ready(found: dict) -> str | None:
    """The DaemonSets a label selector found (a DaemonSetList): at least one, each ready as ``daemonset_ready``."""
    items = found.get("items") or []
    if not items:
        return "no DaemonSet has the labels yet"
    for ds in items:
        why = daemonset_ready(ds)
        if why:
            return f"{(ds.get('metadata') or {}).get('name')}: {why}"
    return None


def _allocatable(node: dict, resource: str) -> float:
    try:
        return quantity(((node.get("status") or {}).get("allocatable") or {}).get(resource, 0))
    except ValueError:
        return 0.0


def allocatable_at_least(resource: str, minimum: int):
    """Readiness of the nodes (a list): their allocatable ``resource`` adds up to ``minimum`` or more."""

    def ready(nodes: list) -> str | None:
        total = sum(_allocatable(n, resource) for n in nodes)
        return None if total >= minimum else f"{total:g} allocatable on {len(nodes)} node(s), {minimum} wanted"

    return ready


def _nodes(clock):
    """A read of every node that lists them again only once ``len(nodes) / 100`` seconds (1 s at least) have
    passed since its last list, else gives that list again: at most about 100 nodes a second, on any cluster."""
    last: dict = {}
    lock = threading.Lock()  # the targets of one round are read together: one list serves them all

    def read(client):
        with lock:
            if "at" not in last or clock() - last["at"] >= max(1.0, len(last["nodes"]) / 100):
                last.update(at=clock(), nodes=client.list(_api.path("Node"), "the nodes"))
            return last["nodes"]

    return read


def targets(params: dict, clock=time.monotonic) -> list[tuple[str, object, object]]:
    """(``Kind namespace/name``, read() of it, readiness) of every object the options name, in option order; then
    the DaemonSets of ``daemonset_selector``, then the nodes' total of each resource of ``allocatable``."""
    out = []
    for option, (kind, read, ready, namespaced) in KINDS.items():
        for name in params.get(option) or []:
            ns = params.get("namespace") if namespaced else None
            label = f"{kind} {ns}/{name}" if namespaced else f"{kind} {name}"
            out.append((label, lambda client, r=read, lb=label, n=ns, nm=name: r(client, lb, n, nm), ready))
    selector, ns = params.get("daemonset_selector"), params.get("namespace")
    if selector:
        label = f"DaemonSets {ns} -l {selector}"

        def daemonsets(client, lb=label):
            items = client.list_or_empty(_api.path("DaemonSet", ns), lb, labelSelector=selector)
            return {"apiVersion": "apps/v1", "kind": "DaemonSetList", "items": items}

        out.append((label, daemonsets, daemonsets_ready))
    nodes = _nodes(clock)
    for resource, minimum in (params.get("allocatable") or {}).items():
        out.append((f"Nodes' allocatable {resource}", nodes, allocatable_at_least(resource, minimum)))
    return out


def _read(client, todo, seen: dict):
    """(target, why not ready) of those in ``todo`` that are not ready now; ``seen`` gets each one's read, by label."""
    left = []
    for target, obj in zip(todo, _together.each(client, lambda t: t[1](client), todo), strict=True):
        label, _read, ready = target
        seen[label] = obj
        why = "not found" if obj is None else ready(obj)
        if why:
            left.append((target, why))
    return left


def _without_data(obj: dict) -> dict:
    if obj.get("kind") == "Secret":
        return {k: v for k, v in obj.items() if k not in ("data", "stringData")}
    return obj


def run(client, params: dict, check_mode: bool, warn, clock=time.monotonic, sleep=time.sleep) -> dict:
    wanted = {}
    for resource, amount in (params.get("allocatable") or {}).items():
        try:
            wanted[resource] = int(amount)
        except (TypeError, ValueError):
            fix = f"allocatable.{resource} must be a whole number (got {amount!r}); set it to the nodes' total wanted"
            return {"changed": False, "_failed": fix}
    todo = targets({**params, "allocatable": wanted}, clock)
    namespaced = any(o in NAMESPACED and params.get(o) for o in KINDS) or params.get("daemonset_selector")
    if namespaced and not params.get("namespace"):
        kinds = "deployments, daemonsets, daemonset_selector, services, service_accounts or secrets"
        need = f"namespace is required with {kinds}; set it to theirs"
        return {"changed": False, "_failed": need}
    t0 = clock()
    seen: dict = {}
    left = _read(client, todo, seen)
    not_ready_at_first = [t[0] for t, _why in left]
    timeout = params["wait_timeout"]
    while left and params["wait"] and clock() - t0 < timeout:
        sleep(min(1.0, max(0.0, timeout - (clock() - t0))))
        left = _read(client, [t for t, _why in left], seen)
    waiting = {t[0] for t, _why in left}
    result = {
        "changed": False,
        "ready": [label for label, _p, _r in todo if label not in waiting],
        "not_ready": [{"object": t[0], "why": why} for t, why in left],
        "waited_for": not_ready_at_first if params["wait"] else [],
        "seconds": round(clock() - t0, 2),
    }
    if params.get("return_objects"):
        # a Service's read is its EndpointSlices (a list), not the Service: only objects proper are returned
        # a Secret without its data: whether it exists and its metadata are what a play reads, never its keys
        result["objects"] = [_without_data(seen[label]) for label, _p, _r in todo if isinstance(seen[label], dict)]
    if left and params["wait"]:
        result["_failed"] = (
            f"Timed out after {timeout}s waiting for "
            + "; ".join(f"{t[0]}: {why}" for t, why in left)
            + ". Check those objects and their pods (kubectl describe), or raise wait_timeout"
        )
    return result
