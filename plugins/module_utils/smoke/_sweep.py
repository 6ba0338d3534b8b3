# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: removing what smoke runs create — the objects earlier runs left behind
(found by their label, in one namespace or all) and, after a run, everything it labelled, waiting
until its pods and (unless told otherwise) its namespace are gone. Not a public API."""

from __future__ import annotations

import time

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api, _workloads
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import Forbidden, NotFound
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._waiter import Watcher
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _smoke_objects
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _queue


def _labels(doc: dict) -> dict:
    return (doc.get("metadata") or {}).get("labels") or {}


def _stale_selector(keep: str | None) -> str:
    label = _workloads.RUN_LABEL
    return label if keep is None else f"{label},{label}!={keep}"


def find_stale(client, namespace: str | None, keep: str | None = None) -> list[tuple[str, str, bool]]:
    """(API path, 'Kind ns/name', already being deleted) of every object labelled by a smoke run other
    than ``keep``, in ``namespace`` or (None) in all namespaces; namespaces labelled by such a run last
    (all-namespace scan only). Objects already being deleted count only when they are pods (their GPUs
    are free only once they are gone) or namespaces (a run that did not wait for its namespace to go
    leaves it terminating: a removal waits for it, without deleting it again)."""
    out = []
    lists = _stale_lists(namespace, keep)
    for i, (kind, api_version) in enumerate(_smoke_objects.RUN_KINDS):
        path, what, options = lists[i]
        for o in client.list_or_empty(path, what, **options):
            md = o["metadata"]
            going = bool(md.get("deletionTimestamp"))
            if going and kind != "Pod":
                continue
            ns, name = md["namespace"], md["name"]
            out.append((_api.path(kind, ns, name, api_version), f"{kind} {ns}/{name}", going))
    if namespace is None:
        path, what, options = lists[-1]
        for o in client.list(path, what, **options):
            md = o["metadata"]
            out.append(
                (_api.path("Namespace", name=md["name"]), f"Namespace {md['name']}", bool(md.get("deletionTimestamp")))
            )
    return out


def _stale_lists(namespace: str | None, keep: str | None) -> list[tuple[str, str, dict]]:
    """The lists ``find_stale`` makes, as (path, what, the list's options): one per kind of ``RUN_KINDS``, then (all
    namespaces) the namespaces'."""
    sel = {"labelSelector": _stale_selector(keep)}
    lists = [
        (_api.path(kind, namespace, api_version_=api_version), f"{kind}s labelled {_workloads.RUN_LABEL}", sel)
        for kind, api_version in _smoke_objects.RUN_KINDS
    ]
    if namespace is None:
        lists.append((_api.path("Namespace"), "Namespaces", sel))
    return lists


def stale_reads(namespace: str | None, keep: str | None) -> list[tuple]:
    """The reads ``find_stale`` makes, as (path, what, query): asked for at once (``_together.ahead``) instead of one
    kind after another."""
    return [(path, what, _api.list_query(**options)) for path, what, options in _stale_lists(namespace, keep)]


def stale_pods(client, namespace: str, keep: str, found: list | None = None) -> frozenset:
    """'ns/name' of the pods ``find_stale`` finds (``found``: what it found already): an earlier run
    interrupted before its cleanup may hold GPUs with them."""
    if found is None:
        found = find_stale(client, namespace, keep)
    return frozenset(w.split(" ", 1)[1] for _path, w, _going in found if w.startswith("Pod "))


# what a removal waits for until gone: pods (their GPUs), namespaces, TrainJobs and their runtimes
_WAITED = ("Pod ", "Namespace ", *(f"{k} " for k in _workloads.WAITED_KINDS))


def remove_stale(
    client,
    namespace: str | None,
    keep: str | None,
    check_mode: bool,
    timeout: float = 120,
    found: list | None = None,
) -> tuple:
    """Delete what ``find_stale`` finds (``found``: what it found already), jobs before their runtimes,
    and wait until its pods, namespaces, TrainJobs and runtimes, and Kueue's Workloads of its jobs, are gone.
    Returns (what was removed, what is still there after ``timeout``): a namespace already terminating is
    waited for, not counted as removed (its run deleted it)."""
    stale = find_stale(client, namespace, keep) if found is None else found
    removed = [w for _path, w, going in stale if not (going and w.startswith("Namespace "))]
    if check_mode or not stale:
        return removed, []
    for path, what, going in stale:
        if going:
            continue
        try:
            client.request("DELETE", path, query={"propagationPolicy": "Background"}, what=what)
        except NotFound:
            pass
    # the jobs' Workloads (Kueue's, where it runs): a job an earlier run sent through Kueue holds its quota until
    # Kueue lets its Workload go
    jobs: dict[str, set] = {}
    for _path, w, _going in stale:
        kind, _sep, ns_name = w.partition(" ")
        if kind not in ("Pod", "Namespace") and "/" in ns_name:
            ns, _sep, name = ns_name.partition("/")
            jobs.setdefault(ns, set()).add((kind, name))
    deadline = time.monotonic() + timeout
    left = removed
    while time.monotonic() < deadline:
        left = [w for p, w, _going in stale if w.startswith(_WAITED) and client.get_or_none(p, w) is not None]
        left += [h for ns, owners in sorted(jobs.items()) for h in kueue_holds(client, ns, owners)]
        if not left:
            break
        time.sleep(0.5)
    return removed, left


def wait_namespace_gone(client, ns: str, timeout: float, clock=time.monotonic) -> bool:
    """True once Namespace ``ns`` is gone (False after ``timeout``): one read, then a watch of that name
    from the read's resourceVersion until its DELETED event (a broken watch re-lists), instead of polling
    it the several seconds the namespace controller takes."""
    obj = client.get_or_none(_api.path("Namespace", name=ns), f"Namespace {ns}")
    if obj is None:
        return True
    deadline = clock() + timeout
    w = Watcher(client, _api.path("Namespace"), f"Namespace {ns}", clock=clock, fieldSelector=f"metadata.name={ns}")
    w.store[ns], w.rv = obj, obj["metadata"].get("resourceVersion")
    try:
        return w.run(lambda _kind, _obj, store: ns not in store, timeout)
    except Forbidden:  # a user who may get namespaces but not watch them (an older automation-user role): poll
        pass
    while clock() < deadline:
        if client.get_or_none(_api.path("Namespace", name=ns), f"Namespace {ns}") is None:
            return True
        time.sleep(0.5)
    return False


def kueue_holds(client, ns: str, owners: set) -> list[str]:
    """Kueue's Workloads in ``ns`` of the jobs ``owners`` ({(kind, name)}), as 'Workload ns/name (...)': while one
    is there, the quota it reserved is not free. None where Kueue's API is not served."""
    return [
        f"Workload {ns}/{w['metadata']['name']} (Kueue's, of {o['kind']} {o['name']})"
        for w in client.list_or_empty(_queue.workloads_path(ns), what=f"Kueue Workloads in {ns}")
        for o in (w.get("metadata") or {}).get("ownerReferences") or []
        if (o.get("kind"), o.get("name")) in owners
    ]


def remove_run(
    client,
    ns: str,
    run_id: str,
    created: list[dict],
    namespace: bool,
    timeout: float,
    clock=time.monotonic,
    wait_namespace: bool = True,
) -> list[str]:
    """Delete everything labelled with smoke run ``run_id`` of the kinds in ``created`` (jobs first, then
    runtimes, pods last) and (``namespace``) the namespace ``ns``; returns what is left after ``timeout``
    (should be nothing) of the run's pods, TrainJobs and runtimes (the garbage collector removes a
    TrainJob's JobSet and Jobs before their pods), and of the Workloads Kueue made for its queued jobs (their
    quota is free once they are gone), and of the namespace unless ``wait_namespace`` is false (it is then
    deleted and left terminating: the namespace controller removes the rest of it, which holds no GPU and no
    quota, within seconds)."""
    sel = f"{_workloads.RUN_LABEL}={run_id}"
    order = [k for k, _v in _smoke_objects.RUN_KINDS]
    kinds = {(_workloads.collection_path(d), d["kind"]) for d in created}
    for path, kind in sorted(kinds, key=lambda x: order.index(x[1]) if x[1] in order else len(order)):
        try:
            client.request(
                "DELETE",
                path,
                query={"labelSelector": sel, "propagationPolicy": "Background"},
                what=f"{kind}s of smoke run {run_id}",
            )
        except NotFound:
            pass
    waited = [(_api.path("Pod", ns), "Pod")]
    waited += sorted((p, k) for p, k in kinds if k in _workloads.WAITED_KINDS)
    # a job sent through Kueue holds its ClusterQueue's quota until Kueue lets its Workload go: the next trial's
    # gang, sent at once, would be held for the quota this one still holds
    queued = {(d["kind"], d["metadata"]["name"]) for d in created if _queue.QUEUE_LABEL in _labels(d)}
    deadline = clock() + timeout
    left: list[str] = []
    while clock() < deadline:
        left = [
            f"{kind} {ns}/{o['metadata']['name']}"
            for path, kind in waited
            for o in client.list_or_empty(path, labelSelector=sel)
        ]
        if queued:
            left += kueue_holds(client, ns, queued)
        if not left:
            break
        time.sleep(0.5)
    if namespace:
        try:
            client.request("DELETE", _api.path("Namespace", name=ns), what=f"Namespace {ns}")
        except NotFound:
            pass
        if wait_namespace and not wait_namespace_gone(client, ns, timeout, clock):
            left.append(f"Namespace {ns} (terminating)")
    return left
