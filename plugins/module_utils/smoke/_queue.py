# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: a smoke trial's gang sent through Kueue (option cluster_queue) — the run's own
LocalQueue, the job's queue label, and Kueue's word on the job's Workload before the gang scheduler gets it: admitted
(its pods then go to the scheduler's verdict), or held for quota (a verdict of its own, on Kueue's condition, the job
still suspended and not one pod made). Not a public API."""

from __future__ import annotations

import time

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api, _kueue, _workloads
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._kueue_problems import condition

GROUP_VERSION = _api.api_version("LocalQueue")  # the version the role writes its queues in
QUEUE_LABEL = _kueue.QUEUE_LABEL
# how long Kueue may take to make the job's Workload (its job reconciler, within a second when it runs)
WORKLOAD_WAIT = 30.0
ROUND = 0.5


def workloads_path(ns: str) -> str:
    """Where Kueue's Workloads of namespace ``ns`` are listed."""
    return _api.path("Workload", ns, api_version_=GROUP_VERSION)


def local_queue(ns: str, name: str, run_id: str, cluster_queue: str) -> dict:
    """The run's LocalQueue in the smoke namespace, pointing at the ClusterQueue under test."""
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": ns, "labels": {_workloads.RUN_LABEL: run_id}},
        "spec": {"clusterQueue": cluster_queue},
    }


def queued(job: dict, queue: str) -> dict:
    """``job`` labelled for the LocalQueue ``queue`` (Kueue's webhook then creates it suspended)."""
    md = job["metadata"]
    md["labels"] = {**(md.get("labels") or {}), QUEUE_LABEL: queue}
    return job


def suspended(job: dict) -> bool:
    """Whether a job is suspended: a batch Job's or TrainJob's spec.suspend, a Kubeflow job's spec.runPolicy.suspend."""
    spec = job.get("spec") or {}
    if job.get("kind") in ("Job", "TrainJob"):
        return bool(spec.get("suspend"))
    return bool((spec.get("runPolicy") or {}).get("suspend"))


def owned_workload(workloads: list[dict], job: dict) -> dict | None:
    """The Workload Kueue made for ``job`` (an owner reference to it, by uid where the job has one)."""
    md = job["metadata"]
    for w in workloads:
        for o in (w.get("metadata") or {}).get("ownerReferences") or []:
            if o.get("kind") == job["kind"] and o.get("name") == md["name"] and o.get("uid") in (None, md.get("uid")):
                return w
    return None


def quota_hold(wl: dict | None) -> str | None:
    """Kueue's word that it holds ``wl`` for quota: QuotaReserved False, reason Pending, its flavor assigner's
    message that the quota does not suffice (not an eviction's requeue). None otherwise."""
    c = condition(wl, "QuotaReserved")
    msg = c.get("message") or ""
    if c.get("status") == "False" and c.get("reason") == "Pending" and "insufficient" in msg:
        if condition(wl, "Evicted").get("status") != "True" and not (wl.get("status") or {}).get("requeueState"):
            return msg
    return None


def inadmissible(wl: dict | None) -> str | None:
    """Kueue's word that ``wl`` cannot be admitted at all (its LocalQueue or ClusterQueue missing or inactive)."""
    c = condition(wl, "QuotaReserved")
    if c.get("status") == "False" and c.get("reason") == "Inadmissible":
        return c.get("message") or "inadmissible"
    return None


def admission(trial, job: dict, cluster_queue: str, timeout: float, clock=time.monotonic, sleep=time.sleep) -> dict:
    """Kueue's decision on ``job``'s Workload, read every half second until ``timeout``: {"admitted": seconds} or
    {"held": Kueue's message, "seconds": ...}; with the Workload's name. GangError naming Kueue and the fix when no
    Workload comes, when Kueue calls it inadmissible, or when it decides nothing in time."""
    kind, ns, name = job["kind"], job["metadata"]["namespace"], job["metadata"]["name"]
    path = workloads_path(ns)
    t0 = clock()
    wl = None
    while True:
        trial.check_controller()
        wl = owned_workload(trial.client.list_or_empty(path, what=f"Kueue Workloads in {ns}"), job)
        now = clock() - t0
        if wl is not None:
            out = {"workload": wl["metadata"]["name"], "seconds": round(now, 2)}
            if condition(wl, "Admitted").get("status") == "True":
                return {**out, "admitted": True}
            held = quota_hold(wl)
            if held:
                return {**out, "admitted": False, "held": held}
            why = inadmissible(wl)
            if why:
                raise GangError(
                    f"Kueue calls Workload {ns}/{out['workload']} of {kind} {ns}/{name} inadmissible: {why}. Check "
                    f"ClusterQueue {cluster_queue} (kubectl get clusterqueue {cluster_queue} -o yaml: its Active "
                    "condition, its ResourceFlavors) and its namespaceSelector"
                )
        elif now > WORKLOAD_WAIT:
            raise GangError(
                f"Kueue made no Workload for {kind} {ns}/{name} (label {QUEUE_LABEL}) in {WORKLOAD_WAIT:.0f}s: "
                f"Kueue is not running, or runs without the integration for {kind} (its Configuration's "
                "integrations.frameworks; role gangsched.kubeflow.kueue, kueue_integrations). Check Kueue's Deployment "
                "and log"
            )
        if now >= timeout:
            state = condition(wl, "QuotaReserved")
            raise GangError(
                f"Kueue neither admitted nor held for quota {kind} {ns}/{name} in {timeout:.0f}s (Workload "
                f"{(wl or {}).get('metadata', {}).get('name')}, QuotaReserved {state.get('status')} "
                f"{state.get('reason')}: {state.get('message')}); check ClusterQueue {cluster_queue} and Kueue's log"
            )
        sleep(ROUND)
