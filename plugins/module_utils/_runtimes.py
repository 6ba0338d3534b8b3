# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what makes a Kubeflow Trainer v2 runtime (TrainingRuntime,
ClusterTrainingRuntime) gang-scheduled. Trainer has no operator flag: the runtime's
``spec.podGroupPolicy`` makes it create a PodGroup per TrainJob (``coscheduling`` for scheduler-plugins,
``volcano`` for Volcano), and Trainer never sets ``schedulerName``, so every replicated job's pod
template must name the scheduler, else the pods go to the default scheduler carrying an unused PodGroup
label (a silent partial start). The PodGroup's minResources sums container requests: limits alone give
none. Pure: no I/O. Not a public API."""

from __future__ import annotations

import copy

GROUP = "trainer.kubeflow.org"
KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")
VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"  # the runtime annotation Trainer gives the PodGroup
POLICY = {"scheduler_plugins": "coscheduling", "volcano": "volcano"}
DEFAULT_TIMEOUT = 60  # Trainer's default scheduleTimeoutSeconds


def _pod_specs(runtime: dict) -> list[tuple[str, dict]]:
    jobs = ((((runtime.get("spec") or {}).get("template") or {}).get("spec") or {}).get("replicatedJobs")) or []
    out = []
    for rj in jobs:
        pod = rj.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
        out.append((rj.get("name") or "?", pod.setdefault("spec", {})))
    return out


def gang_runtime(
    runtime: dict,
    gang_scheduler: str,
    scheduler_name: str,
    schedule_timeout: int | None = None,
    queue: str | None = None,
) -> tuple[dict, list[str]]:
    """A copy of ``runtime`` gang-scheduled by ``gang_scheduler`` under ``scheduler_name``, and what was
    changed, in words. Raises ValueError naming what is wrong."""
    if not isinstance(runtime, dict) or runtime.get("kind") not in KINDS:
        raise ValueError(f"needs a TrainingRuntime or ClusterTrainingRuntime, got kind {(runtime or {}).get('kind')!r}")
    if not str(runtime.get("apiVersion", "")).startswith(GROUP + "/"):
        raise ValueError(f"apiVersion {runtime.get('apiVersion')!r} is not {GROUP}/<version>")
    name = (runtime.get("metadata") or {}).get("name") or "?"
    what = f"{runtime['kind']} {name}"
    if gang_scheduler not in POLICY:
        raise ValueError(
            f"{what}: Trainer's podGroupPolicy knows coscheduling (scheduler_plugins) and volcano, not "
            f"{gang_scheduler!r}; a runtime cannot carry a label gang either (its size is the TrainJob's numNodes)"
        )
    if not scheduler_name:
        raise ValueError(f"{what}: scheduler_name is required (the scheduler that runs the {gang_scheduler} gangs)")
    if gang_scheduler == "volcano" and scheduler_name != "volcano":
        raise ValueError(f"{what}: Volcano gangs are scheduled by 'volcano', not {scheduler_name!r}")
    if queue and gang_scheduler != "volcano":
        raise ValueError(f"{what}: a queue is a Volcano setting; leave it out with gang_scheduler={gang_scheduler}")
    if schedule_timeout is not None and (
        isinstance(schedule_timeout, bool) or not isinstance(schedule_timeout, int) or schedule_timeout < 1
    ):
        raise ValueError(f"{what}: schedule_timeout must be a whole number of seconds, at least 1")
    out = copy.deepcopy(runtime)
    spec = out.setdefault("spec", {})
    changes: list[str] = []
    key = POLICY[gang_scheduler]
    old = spec.get("podGroupPolicy") or {}
    if key == "coscheduling":
        timeout = schedule_timeout or (old.get("coscheduling") or {}).get("scheduleTimeoutSeconds") or DEFAULT_TIMEOUT
        policy = {"coscheduling": {"scheduleTimeoutSeconds": timeout}}
    else:
        policy = {"volcano": dict(old.get("volcano") or {})}
    if old != policy:
        spec["podGroupPolicy"] = policy
        changes.append(f"podGroupPolicy {key}")
    if queue:
        ann = out.setdefault("metadata", {}).setdefault("annotations", {})
        if ann.get(VOLCANO_QUEUE) != queue:
            ann[VOLCANO_QUEUE] = queue
            changes.append(f"queue {queue}")
    pods = _pod_specs(out)
    if not pods:
        raise ValueError(f"{what} has no spec.template.spec.replicatedJobs to schedule")
    for job, pod in pods:
        if pod.get("schedulerName") != scheduler_name:
            pod["schedulerName"] = scheduler_name
            changes.append(f"replicatedJob {job}: schedulerName {scheduler_name}")
        for c in (pod.get("initContainers") or []) + (pod.get("containers") or []):
            res = c.get("resources") or {}
            limits, requests = res.get("limits") or {}, res.get("requests") or {}
            missing = {r: v for r, v in limits.items() if r not in requests}
            if missing:
                # a new dict: containers may share one resources object (a YAML alias)
                c["resources"] = {**res, "requests": {**requests, **missing}}
                changes.append(f"replicatedJob {job} container {c.get('name')}: requests {', '.join(sorted(missing))}")
    return out, changes
