# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to this collection: what gang_smoke_test does — preflight, create a labelled gang, watch
its pods to a verdict, optionally the same pods without a gang, clean up always. Not a public API."""

from __future__ import annotations

import os
import select
import signal
import stat
import sys
import time
import uuid

from ansible_collections.gangsched.kubeflow.plugins.module_utils import _capacity, _rbac, _service, _verdict, _workloads
from ansible_collections.gangsched.kubeflow.plugins.module_utils._exceptions import ApiError, GangError, NotFound
from ansible_collections.gangsched.kubeflow.plugins.module_utils._operator_gang import derive_scheduler_name
from ansible_collections.gangsched.kubeflow.plugins.module_utils._waiter import Watcher

JOB_CRDS = {
    "pytorchjob": ("pytorchjobs.kubeflow.org", "training-operator"),
    "tfjob": ("tfjobs.kubeflow.org", "training-operator"),
    "mpijob": ("mpijobs.kubeflow.org", "mpi-operator"),
}
PODGROUP_WAIT = 30.0


class Interrupted(GangError):
    pass


def _on_term(signum, frame):
    # a second signal must not cut the cleanup short
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise Interrupted(
        f"Interrupted by {signal.Signals(signum).name}: the smoke test stopped and removed its objects "
        "(any it could not are removed by the next run, or by state=absent)"
    )


def controller_gone(fd: int | None = None) -> bool:
    """True when our output is a pipe nobody reads any more: the ansible process that started the
    module was killed (an interrupted ansible-playbook leaves its module running otherwise)."""
    try:
        fd = sys.stdout.fileno() if fd is None else fd
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        poller = select.poll()
        poller.register(fd, select.POLLERR | select.POLLHUP)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def run_absent(client, check_mode: bool) -> dict:
    """state=absent: remove everything any smoke run left behind, in all namespaces."""
    removed, left = remove_stale(client, None, None, check_mode)
    return {"changed": bool(removed), "stale_removed": removed, "left_behind": left}


def validate(params: dict) -> dict:
    """Resources as numbers; raises on bad input before anything is created."""
    if params["replicas"] < 1:
        raise GangError(f"replicas must be >= 1 (got {params['replicas']}): a gang needs members")
    res = params.get("resources")
    if not isinstance(res, dict) or not res:
        raise GangError("resources must be a mapping of resource name to quantity, e.g. {nvidia.com/gpu: 1}")
    out = {}
    for k, v in res.items():
        try:
            q = _capacity.quantity(v)
        except (ValueError, TypeError):
            raise GangError(
                f"resources[{k!r}] = {v!r} is not a Kubernetes quantity; use e.g. 1, '2' or '500m'"
            ) from None
        if q < 0:
            raise GangError(f"resources[{k!r}] = {v!r} is negative")
        out[k] = str(v)
    for t in ("timeout", "settle_seconds"):
        if params.get(t) is not None and params[t] <= 0:
            raise GangError(f"{t} must be > 0 (got {params[t]})")
    return out


def preflight(client, params: dict) -> dict:
    gang = params["gang_scheduler"]
    crd_name = _service.PODGROUP_CRDS[gang]
    if not _service.crd_established(_service.crd(client, crd_name)):
        raise GangError(f"CustomResourceDefinition {crd_name} is missing: install {gang.replace('_', '-')} first")
    wl = params["workload"]
    if wl in JOB_CRDS:
        name, op = JOB_CRDS[wl]
        if not _service.crd_established(_service.crd(client, name)):
            raise GangError(f"CustomResourceDefinition {name} is missing: install {op} first (workload={wl})")
    schedulers = _service.find_schedulers(client)
    sname = derive_scheduler_name(gang, params.get("scheduler_name"), schedulers, "training_operator")
    running = [
        s
        for s in schedulers
        if s["ready"] and ((gang == "volcano" and s["kind"] == "volcano") or sname in s["gang_profiles"])
    ]
    nodes = client.scan("/api/v1/nodes", what="Nodes", keep=_capacity.slim_node)
    pods = client.scan(
        "/api/v1/pods",
        what="Pods (all namespaces)",
        keep=_capacity.slim_pod,
        fieldSelector="status.phase!=Succeeded,status.phase!=Failed",
    )
    return {"scheduler_name": sname, "scheduler_running": bool(running), "nodes": nodes, "pods": pods}


def expected(params: dict, resources: dict, nodes: list, pods: list) -> tuple[str, dict]:
    gpu = _capacity.GPU
    per_pod = _capacity.quantity(resources[gpu]) if gpu in resources else 0.0
    per_node = _capacity.nodes_capacity(nodes, pods, gpu)
    fits, slots = _capacity.gang_fits(per_node, params["replicas"], per_pod)
    cap = {"free_gpus": sum(n["free"] for n in per_node if n["schedulable"]), "fits": fits, "slots": slots}
    exp = params["expect"]
    if exp == "auto":
        exp = "running" if fits else "pending"
    return exp, cap


def _stale_selector(keep: str | None) -> str:
    label = _workloads.RUN_LABEL
    return label if keep is None else f"{label},{label}!={keep}"


def find_stale(client, namespace: str | None, keep: str | None = None) -> list[tuple[str, str, bool]]:
    """(API path, 'Kind ns/name', already being deleted) of every object labelled by a smoke run other
    than ``keep``, in ``namespace`` or (None) in all namespaces; namespaces labelled by such a run last
    (all-namespace scan only). Objects already being deleted count only when they are pods (their GPUs
    are free only once they are gone)."""
    sel = _stale_selector(keep)
    out = []
    for kind, api_version in _workloads.RUN_KINDS:
        path = _workloads.kind_path(kind, api_version, namespace)
        for o in client.list_or_empty(path, what=f"{kind}s labelled {_workloads.RUN_LABEL}", labelSelector=sel):
            md = o["metadata"]
            going = bool(md.get("deletionTimestamp"))
            if going and kind != "Pod":
                continue
            ns, name = md["namespace"], md["name"]
            out.append((f"{_workloads.kind_path(kind, api_version, ns)}/{name}", f"{kind} {ns}/{name}", going))
    if namespace is None:
        for o in client.list("/api/v1/namespaces", what="Namespaces", labelSelector=sel):
            name = o["metadata"]["name"]
            out.append((f"/api/v1/namespaces/{name}", f"Namespace {name}", False))
    return out


def remove_stale(client, namespace: str | None, keep: str | None, check_mode: bool, timeout: float = 120) -> tuple:
    """Delete what ``find_stale`` finds and wait until its pods (and namespaces) are gone.
    Returns (what was removed, what is still there after ``timeout``)."""
    stale = find_stale(client, namespace, keep)
    removed = [w for _, w, _ in stale]
    if check_mode or not stale:
        return removed, []
    for path, what, going in stale:
        if going:
            continue
        try:
            client.request("DELETE", path, query={"propagationPolicy": "Background"}, what=what)
        except NotFound:
            pass
    deadline = time.monotonic() + timeout
    left = removed
    while time.monotonic() < deadline:
        left = [w for p, w, _ in stale if w.startswith(("Pod ", "Namespace ")) and client.get_or_none(p, w) is not None]
        if not left:
            break
        time.sleep(0.5)
    return removed, left


class Run:
    def __init__(self, client, params: dict, run_id: str, clock=time.monotonic):
        self.client, self.params, self.run_id, self.clock = client, params, run_id, clock
        self.ns = params["namespace"]
        self.created_ns = False
        self.created: list[dict] = []

    def _wait_namespace_gone(self, timeout: float) -> bool:
        deadline = self.clock() + timeout
        while self.clock() < deadline:
            obj = self.client.get_or_none(f"/api/v1/namespaces/{self.ns}", f"Namespace {self.ns}")
            if obj is None:
                return True
            time.sleep(0.5)
        return False

    def ensure_namespace(self) -> None:
        obj = self.client.get_or_none(f"/api/v1/namespaces/{self.ns}", f"Namespace {self.ns}")
        labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
        if obj is not None and labels.get(_workloads.RUN_LABEL) not in (None, self.run_id):
            # created by an earlier run that was interrupted before its cleanup: this run removes it
            self.created_ns = True
        if obj is not None and (obj.get("status") or {}).get("phase") == "Terminating":
            if not self._wait_namespace_gone(120):
                raise GangError(f"Namespace {self.ns} is still terminating after 120s; pick another namespace")
            obj = None
        if obj is None:
            self.client.request(
                "POST",
                "/api/v1/namespaces",
                body={
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": self.ns, "labels": {_workloads.RUN_LABEL: self.run_id}},
                },
                what=f"Namespace {self.ns}",
            )
            self.created_ns = True

    def create(self, docs: list[dict]) -> None:
        for d in docs:
            what = f"{d['kind']} {self.ns}/{d['metadata']['name']}"
            self.client.request(
                "POST", _workloads.collection_path(d), body=d, what=what, query={"fieldManager": _service.FIELD_MANAGER}
            )
            self.created.append(d)

    def watch(self, gang: _verdict.Gang, selector: str, expect: str, timeout: float, job: dict | None) -> str:
        settle = self.params["settle_seconds"]
        t0 = self.clock()
        state = {"verdict": None, "pg_seen": None}

        sname = self.params["_scheduler_name"]

        def on_event(kind, obj, store):
            now = self.clock() - t0
            got = (obj.get("spec") or {}).get("schedulerName")
            if job is not None and kind != "DELETED" and got != sname:
                raise _NoPodGroup(
                    f"{job['kind']} {self.ns}/{job['metadata']['name']}: the operator created pod "
                    f"{obj['metadata']['name']} for scheduler {got!r}, not {sname!r}, so it is not gang-scheduled; "
                    "set the operator's gang flag (gangsched.kubeflow.operator_gang)"
                )
            gang.observe("DELETED" if kind == "DELETED" else "MODIFIED", obj, now)
            state["verdict"] = gang.verdict(now, settle, expect)
            return state["verdict"] is not None

        w = Watcher(self.client, f"/api/v1/namespaces/{self.ns}/pods", f"Pods in {self.ns}", labelSelector=selector)
        deadline = t0 + timeout
        pg_path = None
        if job is not None:
            group, version = _service.PODGROUP_API[self.params["gang_scheduler"]]
            pg_path = f"/apis/{group}/{version}/namespaces/{self.ns}/podgroups/{job['metadata']['name']}"
        while self.clock() < deadline:
            if controller_gone():
                raise Interrupted(
                    "Interrupted: the ansible process that ran this smoke test is gone; its objects were removed"
                )
            # short watch rounds, so a job's PodGroup and the pending settle time are checked between them
            done = w.run(on_event, min(2.0, deadline - self.clock()))
            now = self.clock() - t0
            if done and (pg_path is None or state["pg_seen"] is not None):
                return state["verdict"]
            if pg_path and state["pg_seen"] is None:
                if self.client.get_or_none(pg_path, "PodGroup") is not None:
                    if done:
                        return state["verdict"]
                    state["pg_seen"] = now
                    if gang.all_present_at is None:
                        gang.all_present_at = now  # the operator holds the pods back until the gang fits
                elif now > PODGROUP_WAIT or done:
                    raise _NoPodGroup(self._no_podgroup(job))
            v = gang.verdict(now, settle, expect)
            if v:
                return v
        return gang.final(self.clock() - t0, settle)

    def _no_podgroup(self, job: dict) -> str:
        """Why the operator made no PodGroup: the first create it may not do, asked of the API server as
        its ServiceAccount; else the flag or the rights to check."""
        what = f"{job['kind']} {self.ns}/{job['metadata']['name']}"
        generic = (
            f"no PodGroup was created for {what} in {PODGROUP_WAIT:.0f}s: check the operator's gang flag "
            "(gangsched.kubeflow.operator_gang) and its rights on podgroups (gangsched.kubeflow.gang_rbac)"
        )
        denied = forbidden_podgroup_create(self.client, self.params["workload"], self.params["gang_scheduler"], self.ns)
        return f"no PodGroup was created for {what}: {denied}" if denied else generic

    def cleanup(self, timeout: float = 60, namespace: bool = True) -> list[str]:
        """Delete everything labelled with this run; returns what is left (should be nothing)."""
        sel = f"{_workloads.RUN_LABEL}={self.run_id}"
        kinds = {(_workloads.collection_path(d), d["kind"]) for d in self.created}
        for path, kind in sorted(kinds, key=lambda x: x[1] == "Pod"):
            try:
                self.client.request(
                    "DELETE",
                    path,
                    query={"labelSelector": sel, "propagationPolicy": "Background"},
                    what=f"{kind}s of smoke run {self.run_id}",
                )
            except NotFound:
                pass
        deadline = self.clock() + timeout
        left: list[str] = []
        while self.clock() < deadline:
            left = [
                f"Pod {self.ns}/{p['metadata']['name']}"
                for p in self.client.list_or_empty(f"/api/v1/namespaces/{self.ns}/pods", labelSelector=sel)
            ]
            if not left:
                break
            time.sleep(0.5)
        if self.created_ns and namespace:
            try:
                self.client.request("DELETE", f"/api/v1/namespaces/{self.ns}", what=f"Namespace {self.ns}")
            except NotFound:
                pass
            if not self._wait_namespace_gone(timeout):
                left.append(f"Namespace {self.ns} (terminating)")
        return left


class _NoPodGroup(GangError):
    pass


def forbidden_podgroup_create(client, workload: str, gang_scheduler: str, ns: str) -> str | None:
    """The forbidden call, named, when the workload's operator may not create PodGroups in ``ns``
    (a SubjectAccessReview as its ServiceAccount); None when it may, or when that cannot be asked."""
    operator = JOB_CRDS[workload][1].replace("-", "_")
    group = _service.PODGROUP_API[gang_scheduler][0]
    try:
        found = [o for o in _service.find_operators(client) if o["operator"] == operator]
        for o in found:
            dep = o["deployment"]
            dns = dep["metadata"]["namespace"]
            sa = dep["spec"]["template"]["spec"].get("serviceAccountName") or "default"
            if not _rbac.allowed(client, dns, sa, ("create", group, "podgroups"), namespace=ns):
                return (
                    f"Forbidden: ServiceAccount {dns}/{sa} of Deployment {dns}/{dep['metadata']['name']} may not "
                    f"create {group}/podgroups in namespace {ns}; grant it with gangsched.kubeflow.gang_rbac "
                    f"(component={operator}, gang_scheduler={gang_scheduler})"
                )
    except ApiError:
        return None  # not allowed to look: the caller gives the general advice
    return None


def one_gang(run: Run, params, resources, sname: str, expect: str, control: bool) -> dict:
    wl = params["workload"]
    suffix = "control" if control else "gang"
    name = f"smoke-{run.run_id}-{suffix}"
    job = None
    if control:
        docs, selector = _workloads.pods(
            run.ns, name, run.run_id, params["replicas"], resources, None, "default-scheduler"
        )
    elif wl == "pods":
        docs, selector = _workloads.pods(
            run.ns, name, run.run_id, params["replicas"], resources, params["gang_scheduler"], sname
        )
    else:
        docs, selector = _workloads.kubeflow_job(wl, run.ns, name, run.run_id, params["replicas"], resources)
        job = docs[0]
    gang = _verdict.Gang(size=params["replicas"], skew_seconds=params["skew_seconds"])
    t0 = time.monotonic()
    cause = None
    try:
        run.create(docs)
        verdict = run.watch(gang, selector, "pending" if control else expect, params["timeout"], job)
    except _NoPodGroup as e:
        verdict, cause = _verdict.ERROR, e.msg
    except ApiError as e:
        verdict, cause = _verdict.ERROR, e.msg
    out = {
        "name": name,
        "verdict": verdict,
        "seconds": round(time.monotonic() - t0, 2),
        "timeline": gang.timeline,
        **gang.summary(),
    }
    if cause:
        out["cause"] = cause
    return out


def run(client, params: dict, check_mode: bool, warn) -> dict:
    if params.get("state") == "absent":
        return run_absent(client, check_mode)
    resources = validate(params)
    run_id = params.get("run_id") or uuid.uuid4().hex[:8]
    # an earlier run interrupted before its cleanup may hold GPUs here: remove that first
    stale, stale_left = remove_stale(client, params["namespace"], run_id, check_mode)
    if stale_left:
        raise GangError(
            f"objects of an earlier smoke run in namespace {params['namespace']} are still there after being "
            f"deleted: {', '.join(stale_left)}; check what holds them (finalizers) and re-run"
        )
    pf = preflight(client, params)
    exp, cap = expected(params, resources, pf["nodes"], pf["pods"])
    result = {
        "changed": bool(stale),
        "stale_removed": stale,
        "expected": exp,
        "workload": params["workload"],
        "gang_scheduler": params["gang_scheduler"],
        "scheduler_name": pf["scheduler_name"],
        "replicas": params["replicas"],
        "namespace": params["namespace"],
        "capacity": cap,
    }
    if not pf["scheduler_running"]:
        result.update(
            verdict=_verdict.ERROR, cause=f"scheduler not running: no ready scheduler serves {pf['scheduler_name']!r}"
        )
        result["ok"] = False
        return result
    if check_mode:
        result.update(
            verdict=None, ok=None, skipped_reason="check mode: the smoke test creates pods, so it did not run"
        )
        return result

    params = {**params, "_scheduler_name": pf["scheduler_name"]}
    r = Run(client, params, run_id)
    result["run_id"] = run_id
    old = signal.signal(signal.SIGTERM, _on_term)
    old_int = signal.signal(signal.SIGINT, _on_term)
    left: list[str] = []
    try:
        r.ensure_namespace()
        g = one_gang(r, params, resources, pf["scheduler_name"], exp, control=False)
        result.update(verdict=g["verdict"], gang=g)
        if g.get("cause"):
            result["cause"] = g["cause"]
        if params["control"]:
            left += r.cleanup(namespace=False)
            r.created = []
            c = one_gang(r, params, resources, pf["scheduler_name"], exp, control=True)
            result["control"] = c
    finally:
        if params.get("cleanup", True):
            left += r.cleanup()
        signal.signal(signal.SIGTERM, old)
        signal.signal(signal.SIGINT, old_int)
    result["left_behind"] = left
    want = _verdict.GANG_HELD_RUNNING if exp == "running" else _verdict.GANG_HELD_PENDING
    result["ok"] = result["verdict"] == want
    return result
