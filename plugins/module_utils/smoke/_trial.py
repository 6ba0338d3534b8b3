# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: one smoke test's trial — its namespace, the liveness canary the
scheduler must bind, the labelled gang (and optionally the same pods without a gang) watched to a
verdict with its cause, and the removal of all it created. Not a public API."""

from __future__ import annotations

import time

from ansible_collections.gangsched.kubeflow.plugins.module_utils import _native, _podgroups, _trainjobs, _workloads
from ansible_collections.gangsched.kubeflow.plugins.module_utils._exceptions import ApiError, Forbidden, GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._waiter import Watcher, wait_pod_bound
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _verdict
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke._diagnosis import (
    forbidden_podgroup_create,
    gang_cause,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke._interrupt import Interrupted, controller_gone
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke._sweep import remove_run, wait_namespace_gone

PODGROUP_WAIT = 30.0
# Trainer's validating webhook looks a TrainJob's runtime up in its informer cache: a TrainJob created
# right after its runtime is refused ("not found") until the cache has the runtime
RUNTIME_SEEN_WAIT = 15.0
# the liveness canary: one member of a gang of one, no GPU, so any live scheduler serving the name binds it
CANARY_RESOURCES = {"cpu": "10m", "memory": "16Mi"}
CANARY_LABEL = "gangsched.kubeflow/canary"


class _NoPodGroup(GangError):
    pass


class _SchedulerDown(GangError):
    pass


class Trial:
    """The objects of smoke run ``run_id`` in ``params["namespace"]``, for the pods' scheduler name
    ``scheduler_name``; ``describe``: that scheduler as messages name it (describe_scheduler)."""

    def __init__(
        self,
        client,
        params: dict,
        run_id: str,
        scheduler_name: str,
        describe: str,
        clock=time.monotonic,
        runtime: dict | None = None,
        trainer_deployments: list[dict] | None = None,
    ):
        """``runtime``: the user's ClusterTrainingRuntime a TrainJob runs on (None: the run's own);
        ``trainer_deployments``: Trainer's Deployments, for the diagnosis of a missing PodGroup."""
        self.client, self.params, self.run_id, self.clock = client, params, run_id, clock
        self.sname, self.describe = scheduler_name, describe
        self.runtime, self.trainer_deployments = runtime, trainer_deployments
        self.ns = params["namespace"]
        self.created_ns = False
        self.created: list[dict] = []
        self.liveness: dict = {}
        self.podgroup: dict | None = None
        self.native = params["gang_scheduler"] in _podgroups.NATIVE_GANG_SCHEDULERS
        # why the liveness canary failed where the generic reason would mislead (the native gang's)
        self.canary_problem: str | None = None

    def ensure_namespace(self) -> None:
        obj = self.client.get_or_none(f"/api/v1/namespaces/{self.ns}", f"Namespace {self.ns}")
        labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
        if obj is not None and labels.get(_workloads.RUN_LABEL) not in (None, self.run_id):
            # created by an earlier run that was interrupted before its cleanup: this run removes it
            self.created_ns = True
        if obj is not None and (obj.get("status") or {}).get("phase") == "Terminating":
            if not wait_namespace_gone(self.client, self.ns, 120, self.clock):
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
        gang, sname = self.params["gang_scheduler"], self.sname
        name = f"smoke-{self.run_id}-live{n}"
        docs, _selector = _workloads.pods(self.ns, name, self.run_id, 1, CANARY_RESOURCES, gang, sname)
        for d in docs:
            d["metadata"]["labels"] = {**d["metadata"]["labels"], CANARY_LABEL: "true"}
        t0 = self.clock()
        pod = [o for o in self.create(docs) if o.get("kind") == "Pod"][0]
        try:
            left = timeout - (self.clock() - t0)
            if not wait_pod_bound(self.client, self.ns, pod, left, self.clock, between=self._check_controller):
                return None
            if self.native and not self._native_canary_marked(name, t0 + timeout):
                return None
            return round(self.clock() - t0, 2)
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

    def _native_podgroup_path(self, name: str) -> str:
        return f"{_workloads.kind_path('PodGroup', _native.API_VERSION, self.ns)}/{name}"

    def _native_canary_marked(self, name: str, deadline: float) -> bool:
        """Whether kube-scheduler marked the bound canary's PodGroup scheduled (by ``deadline``, at least 5s): a
        kube-scheduler without the gang plugin binds the pod alone and marks nothing."""
        deadline = max(deadline, self.clock() + 5)
        while True:
            decided, _msg = _native.scheduled(self.client.get_or_none(self._native_podgroup_path(name), "PodGroup"))
            if decided == "True":
                return True
            if self.clock() >= deadline:
                break
            self._check_controller()
            time.sleep(0.5)
        self.canary_problem = (
            f"kube-scheduler ({self.sname!r}) bound the liveness canary, a gang of one, but never marked its PodGroup "
            f"{self.ns}/{name} scheduled ({' or '.join(_native.SCHEDULED_CONDITIONS)}): it schedules the pods one by "
            "one, without the gang plugin, so no gang would be held. Turn the GenericWorkload feature gate on in "
            f"kube-scheduler (and kube-controller-manager): {_native.TURN_ON}"
        )
        return False

    def _native_job_podgroup(self, job: dict) -> dict | None:
        """The PodGroup the Job controller made for ``job`` (the Job integration; named by the controller)."""
        path = _workloads.kind_path("PodGroup", _native.API_VERSION, self.ns)
        name = job["metadata"]["name"]
        for pg in self.client.list_or_empty(path, what=f"PodGroups in {self.ns}"):
            if _native.owned_by(pg, "Job", name):
                return pg
        return None

    @staticmethod
    def _check_controller() -> None:
        if controller_gone():
            raise Interrupted(
                "Interrupted: the ansible process that ran this smoke test is gone; its objects were removed"
            )

    def create(self, docs: list[dict]) -> list[dict]:
        """Creates ``docs`` in order; the objects as the API server returned them."""
        made = []
        for d in docs:
            what = f"{d['kind']} {self.ns}/{d['metadata']['name']}"
            t0 = self.clock()
            while True:
                try:
                    obj = self.client.request(
                        "POST",
                        _workloads.collection_path(d),
                        body=d,
                        what=what,
                        query={"fieldManager": _service.FIELD_MANAGER},
                    )
                    break
                except Forbidden as e:
                    if not self._runtime_not_seen_yet(d, e) or self.clock() - t0 > RUNTIME_SEEN_WAIT:
                        raise
                    time.sleep(0.5)
            self.created.append(d)
            made.append(obj if isinstance(obj, dict) and obj.get("metadata") else d)
        return made

    def _runtime_not_seen_yet(self, doc: dict, e: Forbidden) -> bool:
        """A TrainJob refused because its runtime, created by this run just before, is not found (yet)."""
        if doc["kind"] != "TrainJob":
            return False
        ref = doc["spec"]["runtimeRef"]
        mine = any(d["kind"] == ref["kind"] and d["metadata"]["name"] == ref["name"] for d in self.created)
        return mine and "not found" in e.msg and ref["name"] in e.msg

    def watch(
        self,
        gang: _verdict.Gang,
        selector: str,
        expect: str,
        timeout: float,
        job: dict | None,
        probe: bool = False,
        name: str | None = None,
    ) -> str:
        """Watch the gang to a verdict. ``probe``: once no member is bound for settle_seconds without the
        scheduler's rejection of the whole gang, bind a second canary; if the scheduler no longer binds
        one, the verdict is an error naming it (raised as _SchedulerDown)."""
        settle = self.params["settle_seconds"]
        t0 = self.clock()
        state = {"verdict": None, "pg_seen": None, "gang_name": name}

        sname = self.sname

        def on_event(kind, obj, store):
            now = self.clock() - t0
            got = (obj.get("spec") or {}).get("schedulerName")
            if job is not None and kind != "DELETED" and got != sname:
                raise _NoPodGroup(self._wrong_scheduler(job, obj["metadata"]["name"], got))
            gang.observe("DELETED" if kind == "DELETED" else "MODIFIED", obj, now)
            state["verdict"] = gang.verdict(now, settle, expect)
            return state["verdict"] is not None

        w = Watcher(self.client, f"/api/v1/namespaces/{self.ns}/pods", f"Pods in {self.ns}", labelSelector=selector)
        deadline = t0 + timeout
        pg_path = None
        if gang.native:
            return self._watch_native(w, on_event, gang, state, expect, t0, deadline, job)
        if job is not None and self.params["gang_scheduler"] not in _podgroups.LABEL_GANG_SCHEDULERS:
            group, version = _podgroups.api(self.params["gang_scheduler"])
            pg_path = f"/apis/{group}/{version}/namespaces/{self.ns}/podgroups/{job['metadata']['name']}"
        while self.clock() < deadline:
            self._check_controller()
            # short watch rounds, so a job's PodGroup and the pending settle time are checked between them
            done = w.run(on_event, min(2.0, deadline - self.clock()))
            now = self.clock() - t0
            if done and (pg_path is None or state["pg_seen"] is not None):
                return state["verdict"]
            if pg_path and state["pg_seen"] is None:
                pg = self.client.get_or_none(pg_path, "PodGroup")
                if pg is not None:
                    if job["kind"] == "TrainJob":
                        # Trainer's PodGroup: owned by the TrainJob and counting all its pods, or no proof
                        self.podgroup = self._trainer_podgroup(job, pg, gang.size)
                    if done:
                        return state["verdict"]
                    state["pg_seen"] = now
                    gang.observe_group(pg, now)
                    if gang.all_present_at is None and job["kind"] != "TrainJob":
                        # the operator holds the pods back until the gang fits (JobSet makes a TrainJob's at once)
                        gang.all_present_at = now
                elif now > PODGROUP_WAIT or done:
                    raise _NoPodGroup(self._no_podgroup(job))
            elif pg_path and not gang.ever_bound():
                # an operator may hold the pods back until the scheduler admits the PodGroup: then the
                # scheduler's rejection is on the PodGroup
                gang.observe_group(self.client.get_or_none(pg_path, "PodGroup"), now)
            v = gang.verdict(now, settle, expect)
            if v:
                return v
            if probe:
                self._probe(gang, state, now)
        return gang.final(self.clock() - t0, settle)

    def _probe(self, gang: _verdict.Gang, state: dict, now: float) -> None:
        """Once no member is bound for settle_seconds without the scheduler's rejection of the whole gang,
        bind a second canary (once); raises _SchedulerDown when the scheduler no longer binds one."""
        settle = self.params["settle_seconds"]
        if "during" in self.liveness or now < state.get("probe_at", 0) or not gang.unproven(now, settle):
            return
        state["probes"] = state.get("probes", 1) + 1
        try:
            secs = self.canary(state["probes"], self.params["liveness_timeout"])
        except ApiError as e:
            # the API server, not the scheduler (a restart can also delay its marks): later again
            self.liveness["recheck_error"] = e.msg
            state["probe_at"] = now + max(settle, 2.0)
            return
        self.liveness["during"] = secs
        if secs is None:
            raise _SchedulerDown(
                f"{self.describe} stopped scheduling: it bound the first liveness canary but "
                f"not a second one in {self.params['liveness_timeout']}s, {now:.0f}s into the test, while "
                "no member of the gang was bound or rejected (frozen, hung, or lost its leader lease); "
                "check its process and log"
            )

    def _watch_native(self, w, on_event, gang, state, expect, t0, deadline, job) -> str:
        """The native gang watched to a verdict: its PodGroup (the run's own, or the one the Job controller made
        for ``job``) read between short watch rounds, as kube-scheduler's decision on it is the evidence."""
        settle = self.params["settle_seconds"]
        name = None if job is not None else state.get("gang_name")
        while self.clock() < deadline:
            self._check_controller()
            w.run(on_event, min(2.0, deadline - self.clock()))
            now = self.clock() - t0
            if job is not None and name is None:
                pg = self._native_job_podgroup(job)
                if pg is None and now > PODGROUP_WAIT:
                    raise _NoPodGroup(self._no_native_podgroup(job))
                name = (pg or {}).get("metadata", {}).get("name")
            else:
                pg = self.client.get_or_none(self._native_podgroup_path(name), "PodGroup") if name else None
            if pg is not None:
                self.podgroup = {"name": pg["metadata"]["name"], "scheduled": _native.scheduled(pg)[0]}
            gang.observe_group(pg, now)
            v = gang.verdict(now, settle, expect)
            if v:
                return v
            self._probe(gang, state, now)
        return gang.final(self.clock() - t0, settle)

    def _no_native_podgroup(self, job: dict) -> str:
        what = f"Job {self.ns}/{job['metadata']['name']}"
        return (
            f"the Job controller made no PodGroup for {what} in {PODGROUP_WAIT:.0f}s although the Job asks for a gang "
            "(spec.scheduling.schedulingPolicy.gang): the native gang's Job integration is off. Turn it on with "
            f"{_native.TURN_ON_JOBS} (besides {_native.TURN_ON}), or prove the native gang with workload=pods"
        )

    def _wrong_scheduler(self, job: dict, pod: str, got: str | None) -> str:
        what = f"{job['kind']} {self.ns}/{job['metadata']['name']}"
        if job["kind"] == "TrainJob":
            return (
                f"{what}: JobSet created pod {pod} for scheduler {got!r}, not {self.sname!r}, so it is not "
                f"gang-scheduled: the runtime's pod templates must name the scheduler (Trainer never sets it); "
                "make the runtime gang-scheduled with the gangsched.kubeflow.trainer_runtime_gang filter"
            )
        return (
            f"{what}: the operator created pod {pod} for scheduler {got!r}, not {self.sname!r}, so it is not "
            "gang-scheduled; set the operator's gang flag (gangsched.kubeflow.operator_gang)"
        )

    def _trainer_podgroup(self, job: dict, pg: dict, members: int) -> dict:
        """What shows Trainer made the TrainJob's PodGroup for the whole gang: owned by the TrainJob,
        minMember all its pods. Raises _NoPodGroup otherwise (the gang would not be all or nothing)."""
        name = job["metadata"]["name"]
        md, spec = pg.get("metadata") or {}, pg.get("spec") or {}
        owners = [f"{o.get('kind')} {o.get('name')}" for o in md.get("ownerReferences") or []]
        got = {"name": name, "min_member": spec.get("minMember"), "owners": owners}
        if f"TrainJob {name}" not in owners:
            raise _NoPodGroup(
                f"PodGroup {self.ns}/{name} is not Trainer's for TrainJob {self.ns}/{name} (owners: "
                f"{', '.join(owners) or 'none'}): something else made a PodGroup of that name, and Trainer does not "
                "update one it did not make; remove it and re-run"
            )
        if spec.get("minMember") != members:
            raise _NoPodGroup(
                f"PodGroup {self.ns}/{name} that Trainer made for TrainJob {self.ns}/{name} has minMember "
                f"{spec.get('minMember')}, not the TrainJob's {members} pods: the gang would not be all or nothing; "
                "check the runtime's replicated jobs (numNodes goes to the one labelled "
                f"{_trainjobs.ANCESTOR}={_trainjobs.TRAINER_STEP})"
            )
        return got

    def _no_podgroup(self, job: dict) -> str:
        """Why the operator made no PodGroup: the first create it may not do, asked of the API server as
        its ServiceAccount; else the flag or the rights to check."""
        what = f"{job['kind']} {self.ns}/{job['metadata']['name']}"
        gang = self.params["gang_scheduler"]
        if job["kind"] == "TrainJob":
            generic = (
                f"no PodGroup was created for {what} in {PODGROUP_WAIT:.0f}s although its runtime has a "
                f"podGroupPolicy: Trainer watches {_podgroups.group(gang)} PodGroups only if their CRD existed when "
                "it started (restart its Deployment after installing the scheduler), and needs the rights to "
                f"create them; read its log"
            )
        else:
            generic = (
                f"no PodGroup was created for {what} in {PODGROUP_WAIT:.0f}s: check the operator's gang flag "
                "(gangsched.kubeflow.operator_gang) and its rights on podgroups (gangsched.kubeflow.gang_rbac)"
            )
        denied = forbidden_podgroup_create(
            self.client, self.params["workload"], gang, self.ns, deployments=self.trainer_deployments
        )
        return f"no PodGroup was created for {what}: {denied}" if denied else generic

    def one_gang(self, resources: dict, expect: str, control: bool) -> dict:
        """The gang (``control``: the same pods without a gang, for the default scheduler) created and
        watched to its verdict, with the cause of an unexpected one."""
        params = self.params
        wl = params["workload"]
        suffix = "control" if control else "gang"
        name = f"smoke-{self.run_id}-{suffix}"
        job = None
        size = params["replicas"]
        if wl == "trainjob":
            # the control: the same TrainJob on the runtime without podGroupPolicy and schedulerName
            docs, selector = _trainjobs.trainjob(
                self.ns,
                name,
                self.run_id,
                params["replicas"],
                resources,
                None if control else params["gang_scheduler"],
                None if control else self.sname,
                self.runtime,
            )
            size = _trainjobs.trainjob_members(self.runtime, params["replicas"])
            job = None if control else docs[-1]
        elif wl == "job":
            docs, selector = _workloads.indexed_job(
                self.ns, name, self.run_id, params["replicas"], resources, None if control else params["gang_scheduler"]
            )
            job = None if control else docs[0]
        elif control:
            docs, selector = _workloads.pods(
                self.ns, name, self.run_id, params["replicas"], resources, None, "default-scheduler"
            )
        elif wl == "pods":
            docs, selector = _workloads.pods(
                self.ns, name, self.run_id, params["replicas"], resources, params["gang_scheduler"], self.sname
            )
        else:
            docs, selector = _workloads.kubeflow_job(
                wl, self.ns, name, self.run_id, params["replicas"], resources, params["gang_scheduler"], self.sname
            )
            job = docs[0]
        gang = _verdict.Gang(size=size, skew_seconds=params["skew_seconds"], native=self.native and not control)
        t0 = time.monotonic()
        cause = None
        exp = "pending" if control else expect
        self.podgroup = None
        try:
            self.create(docs)
            verdict = self.watch(gang, selector, exp, params["timeout"], job, probe=not control, name=name)
            if not control:
                cause = gang_cause(verdict, gang, exp, self.describe, params["timeout"], self.liveness)
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
        if (job is not None and job["kind"] == "TrainJob") or gang.native:
            out["podgroup"] = self.podgroup
        return out

    def liveness_summary(self) -> dict:
        """The result's ``liveness``: the canary's seconds before and during the test."""
        out = {
            "canary_seconds": self.liveness.get("before"),
            "recheck_seconds": self.liveness.get("during"),
            "timeout": self.params["liveness_timeout"],
        }
        if self.liveness.get("recheck_error"):
            out["recheck_error"] = self.liveness["recheck_error"]
        return out

    def cleanup(self, timeout: float = 60, namespace: bool = True) -> list[str]:
        """Delete everything labelled with this run; returns what is left (should be nothing)."""
        return remove_run(
            self.client, self.ns, self.run_id, self.created, self.created_ns and namespace, timeout, self.clock
        )


def conduct(trial: Trial, result: dict, resources: dict, expect: str) -> list[str]:
    """The trial in its namespace: the liveness canary, then (when it was bound) the gang and, with
    ``control``, the same pods without a gang. Fills in ``result``'s verdict, cause, gang and control;
    returns what the cleanup between gang and control left behind."""
    params = trial.params
    left: list[str] = []
    trial.ensure_namespace()
    secs = trial.canary(1, params["liveness_timeout"])
    trial.liveness["before"] = secs
    if secs is None:
        result.update(
            verdict=_verdict.ERROR,
            cause=trial.canary_problem
            or (
                f"{trial.describe} did not bind the liveness canary (a pod of its own gang of one, no GPU, "
                f"schedulerName {trial.sname!r}) in {params['liveness_timeout']}s: it is not "
                "scheduling (frozen, hung, no leader, or it does not serve that name although its Deployment "
                "is Ready); no gang was run. Check its process and log"
            ),
        )
    else:
        g = trial.one_gang(resources, expect, control=False)
        result.update(verdict=g["verdict"], gang=g)
        if g.get("cause"):
            result["cause"] = g["cause"]
        if params["control"]:
            left += trial.cleanup(namespace=False)
            trial.created = []
            c = trial.one_gang(resources, expect, control=True)
            result["control"] = c
    return left
