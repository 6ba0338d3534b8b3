# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what gang_smoke_test does — validate every input before anything is
created, preflight, prove the scheduler live (a canary it must bind), create a labelled gang, watch its
pods to a verdict, optionally the same pods without a gang, clean up always, write the reports. Not a
public API."""

from __future__ import annotations

import os
import re
import select
import signal
import stat
import sys
import tempfile
import time
import uuid

from ansible_collections.gangsched.kubeflow.plugins.module_utils import (
    _capacity,
    _podgroups,
    _rbac,
    _report,
    _schedulers,
    _service,
    _verdict,
    _workloads,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils._exceptions import ApiError, GangError, NotFound
from ansible_collections.gangsched.kubeflow.plugins.module_utils._waiter import Watcher

JOB_CRDS = {
    "pytorchjob": ("pytorchjobs.kubeflow.org", "training-operator"),
    "tfjob": ("tfjobs.kubeflow.org", "training-operator"),
    "mpijob": ("mpijobs.kubeflow.org", "mpi-operator"),
}
PODGROUP_WAIT = 30.0
# namespaces a smoke test does not run in unless allow_system_namespace (the schedulers' own namespaces
# found in the cluster are added to these)
SYSTEM_NAMESPACES = (
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "volcano-system",
    "volcano-monitoring",
    "scheduler-plugins",
)
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# the liveness canary: one member of a gang of one, no GPU, so any live scheduler serving the name binds it
CANARY_RESOURCES = {"cpu": "10m", "memory": "16Mi"}
CANARY_LABEL = "gangsched.kubeflow/canary"
# the longest name a run creates: smoke-<run id>-control-<n>, a job's smoke-<run id>-gang-worker-<n> service
_NAME_SHAPE = "smoke-{}-control-worker-{}"


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
    """Resources as numbers; raises on bad input before anything is read, created or written."""
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
    for t, low in (("timeout", 1), ("liveness_timeout", 1), ("settle_seconds", 0), ("skew_seconds", 0)):
        if params.get(t) is not None and params[t] < low:
            raise GangError(f"{t} must be >= {low} (got {params[t]})")
    ns = params.get("namespace") or ""
    if not DNS_LABEL.match(ns) or len(ns) > 63:
        raise GangError(
            f"namespace {ns!r} is not a valid namespace name (lower-case letters, digits and '-', at most 63 "
            "characters, starting and ending with a letter or digit)"
        )
    check_namespace(params, ())
    run_id = params.get("run_id")
    if run_id is not None:
        if not DNS_LABEL.match(run_id) or len(run_id) > 63:
            raise GangError(
                f"run_id {run_id!r} is not usable: it becomes the label value {_workloads.RUN_LABEL}=<run_id> "
                "and part of object names, so it must be at most 63 lower-case letters, digits and '-', "
                "starting and ending with a letter or digit (e.g. nightly-42)"
            )
        longest = _NAME_SHAPE.format(run_id, params["replicas"])
        if len(longest) > 63:
            most = 63 - len(_NAME_SHAPE.format("", params["replicas"]))
            raise GangError(
                f"run_id {run_id!r} is too long: the names it makes (such as {longest}) must fit 63 characters; "
                f"use at most {most} characters"
            )
    return out


def check_namespace(params: dict, more: tuple) -> None:
    """The test's namespace is none of the cluster's own or a scheduler's (``more``: found ones)."""
    ns = params.get("namespace")
    if params.get("allow_system_namespace"):
        return
    if ns in SYSTEM_NAMESPACES or ns in more:
        raise GangError(
            f"namespace {ns!r} is a system namespace (Kubernetes' own or a gang scheduler's): a smoke test "
            "creates and deletes pods there and would compete with what runs there; pick another namespace "
            "(the default gangsched-smoke is created and removed again), or set allow_system_namespace=true"
        )


def check_report_dir(path: str | None, check_mode: bool) -> None:
    """report_dir can take the reports: it is (or can be made) a directory this process writes to.
    Created when missing, except in check mode; checked before the test creates anything."""
    if not path:
        return
    full = os.path.abspath(os.path.expanduser(path))
    if os.path.exists(full) and not os.path.isdir(full):
        raise GangError(f"report_dir {path!r} is not a directory; point report_dir at a directory")
    if check_mode:
        parent = full
        while not os.path.exists(parent):
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
            raise GangError(
                f"report_dir {path!r} is not writable ({parent} is not a directory this user may write); "
                "point report_dir at a writable directory"
            )
        return
    try:
        os.makedirs(full, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=full, prefix=".gang-smoke-probe-"):
            pass
    except OSError as e:
        raise GangError(
            f"report_dir {path!r} is not writable ({e.strerror or e}); point report_dir at a writable directory "
            "(nothing was created in the cluster)"
        ) from None


def serves(s: dict, gang: str, sname: str) -> bool:
    """Whether scheduler entry ``s`` (from find_schedulers) takes pods with schedulerName ``sname``."""
    if gang == "volcano":
        return s["kind"] == "volcano" and sname in (s.get("scheduler_names") or [])
    return sname in (s.get("gang_profiles") or [])


def _where(s: dict) -> str:
    kind = {"volcano": "Volcano", "scheduler_plugins": "scheduler-plugins"}.get(s["kind"], s["kind"])
    return f"{kind} {s['source']} {s['namespace']}/{s['name']}"


def describe_scheduler(schedulers: list[dict], gang: str, sname: str) -> str:
    """The scheduler behind ``sname``, named for a message: where it runs, or who runs instead."""
    mine = [s for s in schedulers if serves(s, gang, sname)]
    if mine:
        return f"scheduler {sname!r} ({', '.join(_where(s) for s in mine)})"
    kind = "volcano" if gang == "volcano" else "scheduler_plugins"
    others = [s for s in schedulers if s["kind"] == kind]
    if others:
        found = "; ".join(
            f"{_where(s)} serves {', '.join(map(repr, s.get('scheduler_names') or [])) or 'nothing'}" for s in others
        )
        return f"scheduler {sname!r} (served by no scheduler: {found})"
    return f"scheduler {sname!r} (no {kind.replace('_', '-')} scheduler found)"


def not_running_cause(schedulers: list[dict], gang: str, sname: str) -> str:
    mine = [s for s in schedulers if serves(s, gang, sname)]
    if mine:
        return (
            f"scheduler not running: {', '.join(_where(s) for s in mine)} serves {sname!r} but has no ready "
            "replica (scaled to 0, or its pod does not start); scale it up and check its pods"
        )
    found = [s for s in schedulers if s["kind"] == ("volcano" if gang == "volcano" else "scheduler_plugins")]
    if gang == "volcano" and found:
        names = "; ".join(
            f"{_where(s)} serves {', '.join(map(repr, s['scheduler_names']))} (--scheduler-name)" for s in found
        )
        return (
            f"scheduler not running: no ready scheduler serves {sname!r}: {names}; the gang's pods name "
            f"{sname!r} and would never be looked at. Remove --scheduler-name (or add --scheduler-name={sname})"
        )
    return f"scheduler not running: no ready scheduler serves {sname!r}"


def preflight(client, params: dict, exclude: frozenset = frozenset()) -> dict:
    """CRDs, the scheduler, its namespace, and nodes and pods for the capacity maths (``exclude``:
    'ns/name' of pods that do not count, such as an earlier run's, about to be removed)."""
    gang = params["gang_scheduler"]
    crd_name = _podgroups.crd_name(gang)
    if not _service.crd_established(_service.crd(client, crd_name)):
        raise GangError(f"CustomResourceDefinition {crd_name} is missing: install {gang.replace('_', '-')} first")
    wl = params["workload"]
    if wl in JOB_CRDS:
        name, op = JOB_CRDS[wl]
        if not _service.crd_established(_service.crd(client, name)):
            raise GangError(f"CustomResourceDefinition {name} is missing: install {op} first (workload={wl})")
    schedulers = _service.find_schedulers(client)
    check_namespace(params, tuple(s["namespace"] for s in schedulers))
    sname = _schedulers.derive_scheduler_name(gang, params.get("scheduler_name"), schedulers)
    running = [s for s in schedulers if s["ready"] and serves(s, gang, sname)]
    nodes = client.scan("/api/v1/nodes", what="Nodes", keep=_capacity.slim_node)
    pods = client.scan(
        "/api/v1/pods",
        what="Pods (all namespaces)",
        keep=_capacity.slim_pod,
        fieldSelector="status.phase!=Succeeded,status.phase!=Failed",
    )
    if exclude:
        pods = [p for p in pods if f"{p['metadata'].get('namespace')}/{p['metadata'].get('name')}" not in exclude]
    return {
        "scheduler_name": sname,
        "scheduler_running": bool(running),
        "schedulers": schedulers,
        "nodes": nodes,
        "pods": pods,
    }


def expected(params: dict, resources: dict, nodes: list, pods: list) -> tuple[str, dict]:
    gpu = _capacity.GPU
    per_pod = _capacity.quantity(resources[gpu]) if gpu in resources else 0.0
    per_node = _capacity.nodes_capacity(nodes, pods, gpu)
    fits, slots = _capacity.gang_fits(per_node, params["replicas"], per_pod)
    cap = {"free_gpus": sum(n["free"] for n in per_node if n["schedulable"]), "fits": fits, "slots": slots}
    exp = params["expect"]
    if exp == "auto":
        exp = "running" if fits else "pending"
    if exp == "running" and not fits:
        free = ", ".join(f"{n['name']} {n['free']}" for n in per_node if n["schedulable"] and n["free"]) or "none"
        raise GangError(
            f"expect=running with replicas={params['replicas']} cannot pass: only {slots} member(s) of "
            f"{resources[gpu]} {gpu} fit on the schedulable nodes at once (a member lives on one node; free "
            f"{gpu} per node: {free}), so the gang could never run. Set replicas to at most {slots}, or "
            "expect=pending (or auto) to prove it is held; nothing was created"
        )
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
        self.liveness: dict = {}

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

    def canary(self, n: int, timeout: float) -> float | None:
        """The liveness proof: a gang of one (its own PodGroup, no GPU, 10m CPU) for the gang's scheduler
        name; seconds until it was bound, or None when it was not within ``timeout``. Removed at once."""
        gang, sname = self.params["gang_scheduler"], self.params["_scheduler_name"]
        name = f"smoke-{self.run_id}-live{n}"
        docs, _ = _workloads.pods(self.ns, name, self.run_id, 1, CANARY_RESOURCES, gang, sname)
        for d in docs:
            d["metadata"]["labels"] = {**d["metadata"]["labels"], CANARY_LABEL: "true"}
        t0 = self.clock()
        self.create(docs)
        path = f"/api/v1/namespaces/{self.ns}/pods/{name}-0"
        try:
            while self.clock() - t0 < timeout:
                pod = self.client.get_or_none(path, f"Pod {self.ns}/{name}-0")
                if pod is not None and (pod.get("spec") or {}).get("nodeName"):
                    return round(self.clock() - t0, 2)
                if controller_gone():
                    raise Interrupted(
                        "Interrupted: the ansible process that ran this smoke test is gone; its objects were removed"
                    )
                time.sleep(0.2)
            return None
        finally:
            for d in reversed(docs):
                try:
                    self.client.request(
                        "DELETE",
                        f"{_workloads.collection_path(d)}/{d['metadata']['name']}",
                        query={"gracePeriodSeconds": 0} if d["kind"] == "Pod" else None,
                        what=f"{d['kind']} {self.ns}/{d['metadata']['name']}",
                    )
                except ApiError:
                    pass  # gone already, or the API server is away: the cleanup removes it by its label

    def create(self, docs: list[dict]) -> None:
        for d in docs:
            what = f"{d['kind']} {self.ns}/{d['metadata']['name']}"
            self.client.request(
                "POST", _workloads.collection_path(d), body=d, what=what, query={"fieldManager": _service.FIELD_MANAGER}
            )
            self.created.append(d)

    def watch(
        self, gang: _verdict.Gang, selector: str, expect: str, timeout: float, job: dict | None, probe: bool = False
    ) -> str:
        """Watch the gang to a verdict. ``probe``: once no member is bound for settle_seconds without the
        scheduler's rejection of the whole gang, bind a second canary; if the scheduler no longer binds
        one, the verdict is an error naming it (raised as _SchedulerDown)."""
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
            group, version = _podgroups.api(self.params["gang_scheduler"])
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
                pg = self.client.get_or_none(pg_path, "PodGroup")
                if pg is not None:
                    if done:
                        return state["verdict"]
                    state["pg_seen"] = now
                    gang.observe_group(pg, now)
                    if gang.all_present_at is None:
                        gang.all_present_at = now  # the operator holds the pods back until the gang fits
                elif now > PODGROUP_WAIT or done:
                    raise _NoPodGroup(self._no_podgroup(job))
            elif pg_path and not gang.ever_bound():
                # an operator may hold the pods back until the scheduler admits the PodGroup: then the
                # scheduler's rejection is on the PodGroup
                gang.observe_group(self.client.get_or_none(pg_path, "PodGroup"), now)
            v = gang.verdict(now, settle, expect)
            if v:
                return v
            if (
                probe
                and "during" not in self.liveness
                and now >= state.get("probe_at", 0)
                and gang.unproven(now, settle)
            ):
                state["probes"] = state.get("probes", 1) + 1
                try:
                    secs = self.canary(state["probes"], self.params["liveness_timeout"])
                except ApiError as e:
                    # the API server, not the scheduler (a restart can also delay its marks): later again
                    self.liveness["recheck_error"] = e.msg
                    state["probe_at"] = now + max(settle, 2.0)
                    continue
                self.liveness["during"] = secs
                if secs is None:
                    raise _SchedulerDown(
                        f"{self.params['_describe']} stopped scheduling: it bound the first liveness canary but "
                        f"not a second one in {self.params['liveness_timeout']}s, {now:.0f}s into the test, while "
                        "no member of the gang was bound or rejected (frozen, hung, or lost its leader lease); "
                        "check its process and log"
                    )
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


class _SchedulerDown(GangError):
    pass


def forbidden_podgroup_create(client, workload: str, gang_scheduler: str, ns: str) -> str | None:
    """The forbidden call, named, when the workload's operator may not create PodGroups in ``ns``
    (a SubjectAccessReview as its ServiceAccount); None when it may, or when that cannot be asked."""
    operator = JOB_CRDS[workload][1].replace("-", "_")
    group = _podgroups.group(gang_scheduler)
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


def gang_cause(verdict: str, g: _verdict.Gang, expect: str, params: dict, liveness: dict) -> str | None:
    """Why a verdict other than the expected one came about, naming the scheduler."""
    who, timeout = params["_describe"], params["timeout"]
    live = f"it bound the liveness canary in {liveness['before']}s before the test" if liveness.get("before") else ""
    if liveness.get("during") is not None:
        live += f" and again in {liveness['during']}s during it"
    if verdict == _verdict.INCONCLUSIVE:
        missing = ", ".join(g.not_rejected()) or "none"
        return (
            f"no member was bound in {timeout}s, yet {who} never rejected the whole gang (members not marked "
            f"unschedulable after all {g.size} existed: {missing}); {live or 'its liveness was not proven'}. "
            "An unbound gang without the scheduler's rejection proves nothing: check that the pods' schedulerName "
            "is the one it serves and read its log"
        )
    if verdict == _verdict.GANG_HELD_PENDING and expect == "running":
        msgs = sorted({m for m in g.summary()["unschedulable"].values() if m})
        return f"{who} rejected every member of a gang that was expected to fit: {msgs[0] if msgs else ''}"
    if verdict == _verdict.TIMEOUT and expect == "running" and not g.ever_bound():
        return f"{who} bound no member in {timeout}s ({len(g.live())}/{g.size} members created); {live}"
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
    exp = "pending" if control else expect
    try:
        run.create(docs)
        verdict = run.watch(gang, selector, exp, params["timeout"], job, probe=not control)
        if not control:
            cause = gang_cause(verdict, gang, exp, params, run.liveness)
    except (_NoPodGroup, _SchedulerDown) as e:
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


def _finish(result: dict, params: dict) -> dict:
    """Reports (when report_dir is set and a verdict was reached) and, on an unexpected verdict, the
    message the task fails with (``_failed``)."""
    if params.get("report_dir") and result.get("verdict") is not None:
        result["reports"] = _report.write(params["report_dir"], result)
    if result.get("ok") is False:
        g = result.get("gang") or {}
        why = result.get("cause") or (
            f"bound {len(g.get('bound', []))}/{result['replicas']}, running {len(g.get('running', []))}, "
            f"unbound {', '.join(g.get('unbound', [])) or 'none'}"
        )
        result["_failed"] = f"Gang smoke test: verdict {result['verdict']}, expected {result['expected']} ({why})"
    return result


def run(client, params: dict, check_mode: bool, warn) -> dict:
    if params.get("state") == "absent":
        result = run_absent(client, check_mode)
        if result["left_behind"]:
            warn(f"objects left after cleanup: {', '.join(result['left_behind'])}")
        return result
    params = {"liveness_timeout": 30, **params}
    resources = validate(params)
    check_report_dir(params.get("report_dir"), check_mode)
    run_id = params.get("run_id") or uuid.uuid4().hex[:8]
    # an earlier run interrupted before its cleanup may hold GPUs here: its pods do not count in the
    # capacity maths, and are removed once every input is known to be good
    stale_pods = frozenset(
        w.split(" ", 1)[1] for _, w, _ in find_stale(client, params["namespace"], run_id) if w.startswith("Pod ")
    )
    pf = preflight(client, params, stale_pods)
    exp, cap = expected(params, resources, pf["nodes"], pf["pods"])
    stale, stale_left = remove_stale(client, params["namespace"], run_id, check_mode)
    if stale_left:
        raise GangError(
            f"objects of an earlier smoke run in namespace {params['namespace']} are still there after being "
            f"deleted: {', '.join(stale_left)}; check what holds them (finalizers) and re-run"
        )
    describe = describe_scheduler(pf["schedulers"], params["gang_scheduler"], pf["scheduler_name"])
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
            verdict=_verdict.ERROR,
            cause=not_running_cause(pf["schedulers"], params["gang_scheduler"], pf["scheduler_name"]),
        )
        result["ok"] = False
        return _finish(result, params)
    if check_mode:
        result.update(
            verdict=None, ok=None, skipped_reason="check mode: the smoke test creates pods, so it did not run"
        )
        return result

    params = {**params, "_scheduler_name": pf["scheduler_name"], "_describe": describe}
    r = Run(client, params, run_id)
    result["run_id"] = run_id
    old = signal.signal(signal.SIGTERM, _on_term)
    old_int = signal.signal(signal.SIGINT, _on_term)
    left: list[str] = []
    try:
        r.ensure_namespace()
        secs = r.canary(1, params["liveness_timeout"])
        r.liveness["before"] = secs
        if secs is None:
            result.update(
                verdict=_verdict.ERROR,
                cause=(
                    f"{describe} did not bind the liveness canary (a pod of its own gang of one, no GPU, "
                    f"schedulerName {pf['scheduler_name']!r}) in {params['liveness_timeout']}s: it is not "
                    "scheduling (frozen, hung, no leader, or it does not serve that name although its Deployment "
                    "is Ready); no gang was run. Check its process and log"
                ),
            )
        else:
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
    result["liveness"] = {
        "canary_seconds": r.liveness.get("before"),
        "recheck_seconds": r.liveness.get("during"),
        "timeout": params["liveness_timeout"],
    }
    if r.liveness.get("recheck_error"):
        result["liveness"]["recheck_error"] = r.liveness["recheck_error"]
    result["left_behind"] = left
    if left:
        warn(f"objects left after cleanup: {', '.join(left)}")
    want = _verdict.GANG_HELD_RUNNING if exp == "running" else _verdict.GANG_HELD_PENDING
    result["ok"] = result["verdict"] == want
    return _finish(result, params)
