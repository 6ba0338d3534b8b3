# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: one smoke test's trial — its namespace, the liveness canary the
scheduler must bind, the labelled gang (and optionally the same pods without a gang) watched to a
verdict with its cause, and the removal of all it created. Not a public API."""

from __future__ import annotations

import time

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api, _trainjobs, _workloads
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import (
    ApiError,
    Forbidden,
    GangError,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._waiter import refusal, wait_pod_bound
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry, _smoke_objects
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _queue, _verdict, _watch
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke._diagnosis import (
    gang_cause,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke._interrupt import Interrupted, controller_gone
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke._sweep import remove_run, wait_namespace_gone

# Trainer's validating webhook looks a TrainJob's runtime up in its informer cache: a TrainJob created
# right after its runtime is refused ("not found") until the cache has the runtime
RUNTIME_SEEN_WAIT = 15.0
# how long a pod refused because its namespace has no ServiceAccount yet is tried again: kube-controller-manager makes
# the namespace's "default" within a second, and within a few after a control-plane restart
ACCOUNT_WAIT = 60.0
# the liveness canary: one member of a gang of one, no GPU, so any live scheduler serving the name binds it
CANARY_RESOURCES = {"cpu": "10m", "memory": "16Mi"}
CANARY_LABEL = "gangsched.kubeflow/canary"
# how long a canary the scheduler refused is given before a fresh one asks again (once): a scheduler that looked at it
# before its caches held the canary's new PodGroup refuses it (scheduler-plugins' Coscheduling: "PodGroup not found"),
# and unless an event moves it back, kube-scheduler tries it again when it flushes unschedulable pods, after 5 minutes
# by default
CANARY_RETRY = 5.0


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
        self.path = _registry.get(params["gang_scheduler"])
        # the canary and the verdict need the scheduler's own decision on the PodGroup (GangPath.decision)
        self.decision = self.path.decision
        # why the liveness canary failed where the generic reason would mislead (a path with a decision)
        self.canary_problem: str | None = None

    def ensure_namespace(self) -> None:
        obj = self.client.get_or_none(_api.path("Namespace", name=self.ns), f"Namespace {self.ns}")
        labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
        if obj is not None and labels.get(_workloads.RUN_LABEL) not in (None, self.run_id):
            # created by an earlier run, left for this one (keep_namespace) or interrupted before its cleanup: this run
            # removes it
            self.created_ns = True
        if obj is not None and (obj.get("status") or {}).get("phase") == "Terminating":
            if not wait_namespace_gone(self.client, self.ns, 120, self.clock):
                raise GangError(f"Namespace {self.ns} is still terminating after 120s; pick another namespace")
            obj = None
        if obj is None:
            self.client.request(
                "POST",
                _api.path("Namespace"),
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
        name; seconds until it was bound, or None when it was not within ``timeout``. Removed at once. One the
        scheduler refused (its PodScheduled condition False) for CANARY_RETRY seconds is replaced by a fresh one, once,
        within the same ``timeout``; when none was bound, ``canary_problem`` names what the scheduler said, if it said
        anything."""
        t0 = self.clock()
        deadline = t0 + timeout
        said = None
        for fresh in (False, True):
            seen: dict = {}
            retry: dict = {}
            give_up = None if fresh else self._refused_long(deadline, retry)
            name = f"smoke-{self.run_id}-live{n}{'b' if fresh else ''}"
            if self._canary_once(name, deadline, seen, give_up):
                return round(self.clock() - t0, 2)
            said = refusal(seen.get("pod"))
            if not retry.get("now"):
                break
        if said and not self.canary_problem:
            self.canary_problem = (
                f"{self.describe} looked at the liveness canary (a pod of its own gang of one, no GPU, schedulerName "
                f"{self.sname!r}) but did not bind it in {timeout:g}s{', nor a fresh one' if fresh else ''}: it "
                f"said {said}. It runs, but does not bind a gang of one that needs no GPU; no gang was run. Read that "
                "message and its log"
            )
        return None

    def _refused_long(self, deadline: float, retry: dict):
        """``give_up`` for the first canary: True (and ``retry["now"]``) once the scheduler has refused it for
        CANARY_RETRY seconds, with as long left for a fresh one; never for one held by a scheduling gate (a fresh one
        would be held too)."""

        def give_up(pod) -> bool:
            word = refusal(pod)
            if word is None or word.startswith("SchedulingGated"):
                return False
            refused_at = retry.setdefault("refused_at", self.clock())
            retry["now"] = self.clock() - refused_at >= CANARY_RETRY and deadline - self.clock() >= CANARY_RETRY
            return retry["now"]

        return give_up

    def _canary_once(self, name: str, deadline: float, seen: dict, give_up) -> bool:
        """One canary ``name``: created, watched until bound (and, on a path with a decision, its PodGroup marked
        scheduled) by ``deadline`` or until ``give_up``, then removed."""
        gang, sname = self.params["gang_scheduler"], self.sname
        docs, _selector = _smoke_objects.pods(self.ns, name, self.run_id, 1, CANARY_RESOURCES, gang, sname)
        for d in docs:
            d["metadata"]["labels"] = {**d["metadata"]["labels"], CANARY_LABEL: "true"}
        pod = [o for o in self.create(docs) if o.get("kind") == "Pod"][0]
        try:
            left = deadline - self.clock()
            bound = wait_pod_bound(
                self.client, self.ns, pod, left, self.clock, between=self.check_controller, seen=seen, give_up=give_up
            )
            return bound and (not self.decision or self._canary_decided(name, deadline))
        finally:
            for d in reversed(docs):
                try:
                    self.client.request(
                        "DELETE",
                        _api.path(d["kind"], d["metadata"]["namespace"], d["metadata"]["name"], d["apiVersion"]),
                        query={"gracePeriodSeconds": 0} if d["kind"] == "Pod" else None,
                        what=f"{d['kind']} {self.ns}/{d['metadata']['name']}",
                    )
                except ApiError:
                    pass  # gone already, or the API server is away: the cleanup removes it by its label

    def _canary_decided(self, name: str, deadline: float) -> bool:
        """Whether the scheduler marked the bound canary's PodGroup scheduled (by ``deadline``, at least 5s): the
        native gang's kube-scheduler without the gang plugin binds the pod alone and marks nothing."""
        deadline = max(deadline, self.clock() + 5)
        while True:
            decided, _msg = self.path.scheduled(
                self.client.get_or_none(_watch.decision_podgroup_path(self, name), "PodGroup")
            )
            if decided == "True":
                return True
            if self.clock() >= deadline:
                break
            self.check_controller()
            time.sleep(0.5)
        self.canary_problem = self.path.undecided_canary(self.sname, f"{self.ns}/{name}")
        return False

    @staticmethod
    def check_controller() -> None:
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
                    waited = self.clock() - t0
                    if self._runtime_not_seen_yet(d, e) and waited <= RUNTIME_SEEN_WAIT:
                        time.sleep(0.5)
                        continue
                    if not _account_not_made_yet(e):
                        raise
                    if waited > ACCOUNT_WAIT:
                        raise GangError(
                            f"{what} was refused for {int(waited)}s because namespace {self.ns} has no ServiceAccount "
                            f"yet ({e.msg}): kube-controller-manager's serviceaccount controller makes one in every "
                            "new namespace within seconds; check that kube-controller-manager runs (after a control-"
                            "plane restart it may still be starting), then run the smoke test again"
                        ) from e
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
                None if control else self.path.podgroup_kind,
                None if control else self.sname,
                self.runtime,
                queue=self.path.smoke_queue,
            )
            size = _trainjobs.trainjob_members(self.runtime, params["replicas"])
            job = None if control else docs[-1]
        elif wl == "job":
            docs, selector = _smoke_objects.indexed_job(
                self.ns,
                name,
                self.run_id,
                params["replicas"],
                resources,
                None if control else params["gang_scheduler"],
                self.sname,
            )
            job = None if control else docs[0]
        elif control:
            docs, selector = _smoke_objects.pods(
                self.ns, name, self.run_id, params["replicas"], resources, None, "default-scheduler"
            )
        elif wl == "pods":
            docs, selector = _smoke_objects.pods(
                self.ns, name, self.run_id, params["replicas"], resources, params["gang_scheduler"], self.sname
            )
        else:
            docs, selector = _smoke_objects.kubeflow_job(
                wl, self.ns, name, self.run_id, params["replicas"], resources, params["gang_scheduler"], self.sname
            )
            job = docs[0]
        decide = self.path.scheduled if self.decision and not control else None
        word = None if control else self.path.gang_word
        gang = _verdict.Gang(size=size, skew_seconds=params["skew_seconds"], decide=decide, gang_word=word)
        t0 = time.monotonic()
        cause = None
        exp = "pending" if control else expect
        self.podgroup = None
        watched_from = 0.0  # when the gang's own clock (its timeline, its decision) started, in the result's seconds
        # through Kueue (cluster_queue): the run's LocalQueue, the job labelled for it; the gang is the scheduler's
        # only once Kueue admitted it
        cq = None if control else params.get("cluster_queue")
        kueue = None
        try:
            if cq:
                queue = f"smoke-{self.run_id}"
                _queue.queued(job, queue)
                self.create([_queue.local_queue(self.ns, queue, self.run_id, cq)])
                kueue = {"cluster_queue": cq, "local_queue": f"{self.ns}/{queue}"}
            made = self.create(docs)
            watched_from = time.monotonic() - t0
            verdict = None
            if cq:
                job_made = next(o for o in made if o.get("kind") == job["kind"])
                kueue.update(_queue.admission(self, job_made, cq, params["timeout"]))
                if not kueue["admitted"]:
                    verdict = self._kueue_held(job_made, selector, kueue)
                watched_from = time.monotonic() - t0
            if verdict is None:
                left = max(1.0, params["timeout"] - watched_from)
                verdict = _watch.watch(self, gang, selector, exp, left, job, probe=not control, name=name)
            if not control:
                cause = gang_cause(verdict, gang, exp, self.describe, params["timeout"], self.liveness, self.path)
                if verdict == _verdict.KUEUE_HELD_QUOTA and exp != "queued":
                    cause = (
                        f"Kueue holds the whole gang for quota (ClusterQueue {cq}): {kueue['held']}; the scheduler "
                        "never got it. Give the ClusterQueue the quota of the gang, or expect=queued to prove "
                        "Kueue's hold"
                    )
        except (_watch.NoPodGroup, _watch.SchedulerDown) as e:
            verdict, cause = _verdict.ERROR, e.msg
        except ApiError as e:
            verdict, cause = _verdict.ERROR, e.msg
        except GangError as e:
            if kueue is None:
                raise
            verdict, cause = _verdict.ERROR, e.msg
        out = {
            "name": name,
            "verdict": verdict,
            "seconds": round(time.monotonic() - t0, 2),
            "timeline": gang.timeline,
            **gang.summary(),
        }
        if out["decided_seconds"] is not None:
            out["decided_seconds"] = round(out["decided_seconds"] + watched_from, 2)  # on the clock of "seconds"
        if cause:
            out["cause"] = cause
        if kueue is not None:
            out["kueue"] = kueue
        if (job is not None and job["kind"] == "TrainJob") or gang.decide is not None:
            out["podgroup"] = self.podgroup
        return out

    def _kueue_held(self, job: dict, selector: str, kueue: dict) -> str:
        """The verdict on a gang Kueue holds for quota, with the evidence beside Kueue's word: the job still
        suspended, and not one of its pods made (a pod would mean Kueue let part of it through)."""
        path = _api.path(job["kind"], self.ns, job["metadata"]["name"], job["apiVersion"])
        now = self.client.get_or_none(path, f"{job['kind']} {self.ns}/{job['metadata']['name']}") or job
        kueue["suspended"] = _queue.suspended(now)
        pods = self.client.list_or_empty(_api.path("Pod", self.ns), what=f"Pods in {self.ns}", labelSelector=selector)
        kueue["pods"] = len(pods)
        if kueue["suspended"] and not pods:
            return _verdict.KUEUE_HELD_QUOTA
        raise GangError(
            f"Kueue says it holds {job['kind']} {self.ns}/{job['metadata']['name']} for quota ({kueue['held']}), yet "
            f"the job is {'suspended' if kueue['suspended'] else 'not suspended'} with {len(pods)} pod(s) made: "
            "Kueue's webhook did not suspend it at its creation (is the job kind among Kueue's integrations, and its "
            "mutating webhook installed?)"
        )

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

    def cleanup(self, timeout: float = 60, namespace: bool = True, wait_namespace: bool = True) -> list[str]:
        """Delete everything labelled with this run and (``namespace``) the namespace it created, waiting for that
        namespace to go unless ``wait_namespace`` is false; returns what is left (should be nothing)."""
        return remove_run(
            self.client,
            self.ns,
            self.run_id,
            self.created,
            self.created_ns and namespace,
            timeout,
            self.clock,
            wait_namespace=wait_namespace,
        )


def _account_not_made_yet(e: Forbidden) -> bool:
    """A pod refused by the ServiceAccount admission because its namespace's ServiceAccount does not exist (yet): a
    namespace just made, whose "default" kube-controller-manager has not made yet."""
    return "error looking up service account" in e.msg and "not found" in e.msg


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
