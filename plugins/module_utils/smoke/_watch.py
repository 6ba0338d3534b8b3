# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: a smoke trial's gang watched to a verdict — its pods watched in short rounds, its
PodGroup read between them (the operator's, Trainer's, the native gang's) as the evidence the verdict needs, a second
liveness canary while no member moves, and what a missing or foreign PodGroup or a wrong scheduler name means. Each
function takes the trial (``_trial.Trial``) it watches for. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api, _podgroups, _trainjobs
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import ApiError, GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._waiter import Watcher
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _verdict
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke._diagnosis import forbidden_podgroup_create

PODGROUP_WAIT = 30.0
DECISION_ROUND = 0.5  # seconds between two reads of a PodGroup whose scheduler decision is the evidence


class NoPodGroup(GangError):
    pass


class SchedulerDown(GangError):
    pass


def decision_podgroup_path(trial, name: str) -> str:
    """The PodGroup whose decision a path with ``decision`` reads (the native gang's)."""
    return _api.path("PodGroup", trial.ns, name, trial.path.decision_api_version)


def job_podgroup(trial, job: dict) -> dict | None:
    """The PodGroup the Job controller made for ``job`` (the native gang's Job integration; named by the
    controller)."""
    path = _api.path("PodGroup", trial.ns, api_version_=trial.path.decision_api_version)
    name = job["metadata"]["name"]
    for pg in trial.client.list_or_empty(path, what=f"PodGroups in {trial.ns}"):
        if trial.path.owned_by(pg, "Job", name):
            return pg
    return None


def watch(
    trial,
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
    one, the verdict is an error naming it (raised as SchedulerDown)."""
    settle = trial.params["settle_seconds"]
    t0 = trial.clock()
    state = {"verdict": None, "pg_seen": None, "gang_name": name}

    sname = trial.sname

    def on_event(kind, obj, store):
        now = trial.clock() - t0
        got = (obj.get("spec") or {}).get("schedulerName")
        if job is not None and kind != "DELETED" and got != sname:
            raise NoPodGroup(wrong_scheduler(trial, job, obj["metadata"]["name"], got))
        gang.observe("DELETED" if kind == "DELETED" else "MODIFIED", obj, now)
        state["verdict"] = gang.verdict(now, settle, expect)
        return state["verdict"] is not None

    w = Watcher(trial.client, _api.path("Pod", trial.ns), f"Pods in {trial.ns}", labelSelector=selector)
    deadline = t0 + timeout
    pg_path = None
    if gang.decide is not None:
        return watch_decision(trial, w, on_event, gang, state, expect, t0, deadline, job)
    if job is not None and trial.path.podgroup_kind:
        api_version = _podgroups.api_version(trial.path.podgroup_kind)
        pg_path = _api.path("PodGroup", trial.ns, job["metadata"]["name"], api_version)
    while trial.clock() < deadline:
        trial.check_controller()
        # short watch rounds, so a job's PodGroup and the pending settle time are checked between them
        wake = gang.wake(trial.clock() - t0, expect)
        done = w.run(on_event, min(2.0, deadline - trial.clock(), 2.0 if wake is None else max(wake, 0.1)))
        now = trial.clock() - t0
        if done and (pg_path is None or state["pg_seen"] is not None):
            return state["verdict"]
        if pg_path and state["pg_seen"] is None:
            pg = trial.client.get_or_none(pg_path, "PodGroup")
            if pg is not None:
                if job["kind"] == "TrainJob":
                    # Trainer's PodGroup: owned by the TrainJob and counting all its pods, or no proof
                    trial.podgroup = trainer_podgroup(trial, job, pg, gang.size)
                if done:
                    return state["verdict"]
                state["pg_seen"] = now
                gang.observe_group(pg, now)
                if gang.all_present_at is None and job["kind"] != "TrainJob":
                    # the operator holds the pods back until the gang fits (JobSet makes a TrainJob's at once)
                    gang.all_present_at = now
            elif now > PODGROUP_WAIT or done:
                raise NoPodGroup(no_podgroup(trial, job))
        elif pg_path and not gang.ever_bound():
            # an operator may hold the pods back until the scheduler admits the PodGroup: then the
            # scheduler's rejection is on the PodGroup, or (a scheduler that writes nothing on a PodGroup with no pod)
            # in its event on it
            pg = trial.client.get_or_none(pg_path, "PodGroup")
            gang.observe_group(pg, now)
            if gang.group_rejected_at is None and pg is not None and not gang.live():
                gang.observe_group_refusal(trial.path.group_refusal(trial.client, pg), now)
        v = gang.verdict(now, settle, expect)
        if v:
            return v
        if probe:
            probe_scheduler(trial, gang, state, now)
    return gang.final(trial.clock() - t0, settle)


def probe_scheduler(trial, gang: _verdict.Gang, state: dict, now: float) -> None:
    """Once no member is bound for settle_seconds without the scheduler's rejection of the whole gang,
    bind a second canary (once); raises SchedulerDown when the scheduler no longer binds one."""
    settle = trial.params["settle_seconds"]
    if "during" in trial.liveness or now < state.get("probe_at", 0) or not gang.unproven(now, settle):
        return
    state["probes"] = state.get("probes", 1) + 1
    trial.canary_problem = None  # this canary's, if it fails
    try:
        secs = trial.canary(state["probes"], trial.params["liveness_timeout"])
    except ApiError as e:
        # the API server, not the scheduler (a restart can also delay its marks): later again
        trial.liveness["recheck_error"] = e.msg
        state["probe_at"] = now + max(settle, 2.0)
        return
    trial.liveness["during"] = secs
    if secs is None:
        raise SchedulerDown(
            trial.canary_problem
            or f"{trial.describe} stopped scheduling: it bound the first liveness canary but "
            f"not a second one in {trial.params['liveness_timeout']}s, {now:.0f}s into the test, while "
            "no member of the gang was bound or rejected (frozen, hung, or lost its leader lease); "
            "check its process and log"
        )


def watch_decision(trial, w, on_event, gang, state, expect, t0, deadline, job) -> str:
    """A gang whose scheduler decides on its PodGroup (the native gang's) watched to a verdict: its PodGroup (the
    run's own, or the one the Job controller made for ``job``) read between short watch rounds, as the scheduler's
    decision on it is the evidence."""
    settle = trial.params["settle_seconds"]
    name = None if job is not None else state.get("gang_name")
    while trial.clock() < deadline:
        trial.check_controller()
        # half-second rounds: the decision is read between them, and the verdict follows it within a round
        w.run(on_event, min(DECISION_ROUND, deadline - trial.clock()))
        now = trial.clock() - t0
        if job is not None and name is None:
            pg = job_podgroup(trial, job)
            if pg is None and now > PODGROUP_WAIT:
                raise NoPodGroup(trial.path.no_job_podgroup(f"Job {trial.ns}/{job['metadata']['name']}", PODGROUP_WAIT))
            name = (pg or {}).get("metadata", {}).get("name")
        else:
            pg = trial.client.get_or_none(decision_podgroup_path(trial, name), "PodGroup") if name else None
        if pg is not None:
            trial.podgroup = {"name": pg["metadata"]["name"], "scheduled": gang.decide(pg)[0]}
        gang.observe_group(pg, now)
        v = gang.verdict(now, settle, expect)
        if v:
            return v
        probe_scheduler(trial, gang, state, now)
    return gang.final(trial.clock() - t0, settle)


def wrong_scheduler(trial, job: dict, pod: str, got: str | None) -> str:
    what = f"{job['kind']} {trial.ns}/{job['metadata']['name']}"
    if job["kind"] == "TrainJob":
        return (
            f"{what}: JobSet created pod {pod} for scheduler {got!r}, not {trial.sname!r}, so it is not "
            f"gang-scheduled: the runtime's pod templates must name the scheduler (Trainer never sets it); "
            "make the runtime gang-scheduled with the gangsched.kubeflow.trainer_runtime_gang filter"
        )
    return (
        f"{what}: the operator created pod {pod} for scheduler {got!r}, not {trial.sname!r}, so it is not "
        "gang-scheduled; set the operator's gang flag (gangsched.kubeflow.operator_gang)"
    )


def trainer_podgroup(trial, job: dict, pg: dict, members: int) -> dict:
    """What shows Trainer made the TrainJob's PodGroup for the whole gang: owned by the TrainJob,
    minMember all its pods. Raises NoPodGroup otherwise (the gang would not be all or nothing)."""
    name = job["metadata"]["name"]
    md, spec = pg.get("metadata") or {}, pg.get("spec") or {}
    owners = [f"{o.get('kind')} {o.get('name')}" for o in md.get("ownerReferences") or []]
    got = {"name": name, "min_member": spec.get("minMember"), "owners": owners}
    if f"TrainJob {name}" not in owners:
        raise NoPodGroup(
            f"PodGroup {trial.ns}/{name} is not Trainer's for TrainJob {trial.ns}/{name} (owners: "
            f"{', '.join(owners) or 'none'}): something else made a PodGroup of that name, and Trainer does not "
            "update one it did not make; remove it and re-run"
        )
    if spec.get("minMember") != members:
        raise NoPodGroup(
            f"PodGroup {trial.ns}/{name} that Trainer made for TrainJob {trial.ns}/{name} has minMember "
            f"{spec.get('minMember')}, not the TrainJob's {members} pods: the gang would not be all or nothing; "
            "check the runtime's replicated jobs (numNodes goes to the one labelled "
            f"{_trainjobs.ANCESTOR}={_trainjobs.TRAINER_STEP})"
        )
    return got


def no_podgroup(trial, job: dict) -> str:
    """Why the operator made no PodGroup: the first create it may not do, asked of the API server as
    its ServiceAccount; else the flag or the rights to check."""
    what = f"{job['kind']} {trial.ns}/{job['metadata']['name']}"
    gang = trial.params["gang_scheduler"]
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
        trial.client, trial.params["workload"], gang, trial.ns, deployments=trial.trainer_deployments
    )
    return f"no PodGroup was created for {what}: {denied}" if denied else generic
