"""gang_info's explanation of a job that is gone while its gang object remains (deleted with --cascade=orphan), of a
label gang by its name (no PodGroup object), and which problems touch a job: a whole name, not a prefix of another."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _gang_info_job

PG = {
    "metadata": {"name": "resnet", "namespace": "team"},
    "spec": {"minMember": 5},
    "status": {"phase": "Pending"},
}
STALE = {
    "object": "PodGroup team/resnet",
    "message": "the Volcano PodGroup is Pending with no pod, no owner and no job of its name",
    "fix": "delete it",
}


class _Client:
    """The API of a namespace: objects by path, and the pods listed (any selector)."""

    def __init__(self, objects=None, pods=()):
        self.objects, self.pods = objects or {}, list(pods)

    def get_or_none(self, path, what=""):
        return self.objects.get(path)

    def list_or_empty(self, path, what="", **query):
        return self.pods if path.endswith("/pods") else []


def _facts(*podgroups):
    return {"lists": {"volcano": {"podgroups": list(podgroups), "queues": []}}}


def test_a_job_that_is_gone_while_its_podgroup_remains_is_explained_from_the_podgroup():
    job = {"kind": "PyTorchJob", "namespace": "team", "name": "resnet"}
    out = _gang_info_job.explain(_Client(), job, _facts(PG), [], [STALE])
    assert out["found"] is False and out["gang"]["name"] == "resnet" and out["problems"] == [STALE]
    assert out["why"].startswith("PyTorchJob team/resnet is gone, but its gang object PodGroup team/resnet remains: ")
    assert "no owner and no job of its name" in out["why"] and out["why"].endswith("Fix: delete it")
    # no problem named (yet): the PodGroup's state, and what to do if no job is coming back
    quiet = _gang_info_job.explain(_Client(), job, _facts(PG), [], [])
    assert "remains (phase Pending)" in quiet["why"] and "--cascade=orphan" in quiet["why"]
    # neither the job nor a PodGroup: as before
    gone = _gang_info_job.explain(_Client(), job, _facts(), [], [])
    assert gone["why"] == "PyTorchJob team/resnet does not exist: check its kind, namespace and name"


def test_a_label_gang_is_explained_by_its_name_from_its_pods():
    label = {"pod-group.scheduling.sigs.k8s.io/name": "g", "pod-group.scheduling.sigs.k8s.io/min-available": "2"}

    def pod(name, node=None):
        return {
            "metadata": {"name": name, "namespace": "team", "labels": label},
            "spec": {"schedulerName": "koord-scheduler", **({"nodeName": node} if node else {})},
            "status": {"phase": "Running" if node else "Pending"},
        }

    job = {"kind": "PodGroup", "namespace": "team", "name": "g"}
    out = _gang_info_job.explain(_Client(pods=[pod("a", "n1"), pod("b", "n2")]), job, _facts(), [], [])
    assert out["found"] is True and out["gang"] is None and out["why"] == "running: all 2 pod(s) bound"
    none = _gang_info_job.explain(_Client(), job, _facts(), [], [])
    assert none["found"] is False


def test_a_problem_touches_a_job_by_its_whole_name():
    assert _gang_info_job._names("PodGroup team/a", {"team/a"})
    assert _gang_info_job._names("Pods team/a-0 and 2 more", {"team/a-0"})
    assert not _gang_info_job._names("PodGroup team/ab", {"team/a"})
    assert _gang_info_job._names("Deployment x/y, PyTorchJob team/a", {"team/a"})


def test_a_gang_held_by_volcanos_enqueue_says_nothing_is_pending_for_an_autoscaler():
    why = _gang_info_job._why(True, [], PG, "phase Pending", [], "PyTorchJob team/resnet", path="volcano")
    assert why.startswith("held by Volcano's enqueue, no pod yet: its PodGroup resnet is at phase Pending")
    assert "overcommit-factor" in why and "no pod is Pending, so a cluster autoscaler adds no node" in why
    let_in = {**PG, "status": {"phase": "Inqueue"}}
    why = _gang_info_job._why(True, [], let_in, "phase Inqueue", [], "PyTorchJob team/resnet", path="volcano")
    assert why.startswith("no pod yet: its gang object resnet is at phase Inqueue")


def test_a_partial_start_with_the_gang_in_place_says_no_configuration_cause_was_found():
    rows = [
        {"name": "w-0", "node": "n1", "scheduler_said": None, "scheduler_name": "volcano"},
        {
            "name": "w-1",
            "node": None,
            "scheduler_said": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu",
            "scheduler_name": "volcano",
        },
    ]
    why = _gang_info_job._why(True, rows, PG, "phase Running", [], "PyTorchJob team/resnet", path="volcano")
    assert why.startswith("partial: 1 of 2 pods bound, the others Pending, although the pods carry their gang")
    assert "no configuration cause was found" in why and "4 Insufficient nvidia.com/gpu" in why
    # no gang object: the pods do not carry one, as before
    assert "check that its pods name the gang scheduler" in _gang_info_job._why(True, rows, None, None, [], "x")


def test_a_kueue_workload_is_explained_as_the_job_it_admits():
    wl = {"namespace": "team", "name": "pytorchjob-resnet-1", "owner": "PyTorchJob/resnet", "admitted": True}
    facts = {**_facts(PG), "kueue": {"workloads": [wl], "local_queues": []}}
    job = {"kind": "Workload", "namespace": "team", "name": "pytorchjob-resnet-1"}
    client = _Client({"/apis/kubeflow.org/v1/namespaces/team/pytorchjobs/resnet": {"metadata": {"name": "resnet"}}})
    out = _gang_info_job.explain(client, job, facts, [], [])
    assert (out["kind"], out["name"], out["found"]) == ("PyTorchJob", "resnet", True), out
    assert out["why"].startswith("Kueue Workload team/pytorchjob-resnet-1 admits PyTorchJob team/resnet: "), out["why"]
    assert out["summary"][0].startswith("PyTorchJob team/resnet: Kueue Workload"), out["summary"]
    missing = _gang_info_job.explain(client, {**job, "name": "nope"}, facts, [], [])
    assert missing["found"] is False and "is not one of Kueue's" in missing["why"], missing
    odd = {**facts, "kueue": {"workloads": [{**wl, "owner": "RayJob/r"}]}}
    other = _gang_info_job.explain(client, job, odd, [], [])
    assert other["found"] is True and "a kind this explanation does not follow" in other["why"], other
    assert _gang_info_job.reads(job) == []
