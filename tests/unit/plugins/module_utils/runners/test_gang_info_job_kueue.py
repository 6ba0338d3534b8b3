"""gang_info's explanation of one job sent to a Kueue queue (_gang_info_job): the job's LocalQueue and Workload from
the ``kueue`` fact, and the why a held job gets before any scheduler sees it — Kueue's own word — or none once
admitted (then the scheduler's evidence speaks); a job without the label has no Kueue part. And the reads of one
job's explanation, asked for ahead by gather."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _together
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _gang_info_job

JOB = {"metadata": {"name": "resnet", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "gpu"}}}
WL = {
    "namespace": "team-a",
    "name": "pytorchjob-resnet-1",
    "owner": "PyTorchJob/resnet",
    "queue": "gpu",
    "admitted": False,
    "quota_reserved": False,
    "evicted": None,
    "requeue_count": 0,
    "pods_ready": None,
    "said": "couldn't assign flavors to pod set master: insufficient unused quota for nvidia.com/gpu in flavor gpu",
}
KUEUE = {
    "local_queues": [{"namespace": "team-a", "name": "gpu", "cluster_queue": "gpu-cluster-queue"}],
    "workloads": [WL, {**WL, "owner": "PyTorchJob/other", "name": "x"}],
}


def test_a_held_job_is_explained_by_kueues_word_before_any_scheduler():
    k = _gang_info_job._kueue(JOB, "PyTorchJob", "team-a", "resnet", KUEUE)
    assert k == {"local_queue": "gpu", "local_queue_found": True, "cluster_queue": "gpu-cluster-queue", "workload": WL}
    why = _gang_info_job._why(True, [], None, None, [], "PyTorchJob team-a/resnet", k)
    assert why.startswith(
        "held by Kueue, not admitted: its Workload pytorchjob-resnet-1 holds no quota of ClusterQueue"
    )
    assert "insufficient unused quota" in why
    lines = _gang_info_job.summary(
        {
            "kind": "PyTorchJob",
            "namespace": "team-a",
            "name": "resnet",
            "why": why,
            "gang": None,
            "queue": None,
            "kueue": k,
            "quotas": [],
            "pods": [],
            "operator_flag": None,
            "events": [],
            "problems": [],
        }
    )
    assert lines[1].startswith(
        "kueue: LocalQueue gpu (to ClusterQueue gpu-cluster-queue), Workload pytorchjob-resnet-1: not"
    )


def test_requeued_after_evictions_says_so():
    k = _gang_info_job._kueue(
        JOB, "PyTorchJob", "team-a", "resnet", {**KUEUE, "workloads": [{**WL, "requeue_count": 3}]}
    )
    assert "after 3 eviction(s) by waitForPodsReady" in _gang_info_job._kueue_why(k, "PyTorchJob team-a/resnet")


def test_an_admitted_job_is_left_to_the_schedulers_evidence():
    k = _gang_info_job._kueue(JOB, "PyTorchJob", "team-a", "resnet", {**KUEUE, "workloads": [{**WL, "admitted": True}]})
    assert _gang_info_job._kueue_why(k, "PyTorchJob team-a/resnet") is None
    rows = [
        {"name": "resnet-master-0", "node": None, "scheduler_said": "0/5 nodes are available", "scheduler_name": "v"}
    ]
    assert _gang_info_job._why(True, rows, None, None, [], "PyTorchJob team-a/resnet", k).startswith("held as one gang")


def test_no_workload_names_the_integration_and_no_label_no_kueue_part():
    k = _gang_info_job._kueue(JOB, "PyTorchJob", "team-a", "resnet", {"local_queues": [], "workloads": []})
    assert k["local_queue_found"] is False and k["workload"] is None
    assert "Kueue made no Workload for it" in _gang_info_job._kueue_why(k, "PyTorchJob team-a/resnet")
    assert _gang_info_job._kueue({"metadata": {}}, "PyTorchJob", "team-a", "resnet", KUEUE) is None
    assert _gang_info_job._kueue(None, "PyTorchJob", "team-a", "resnet", None) is None


class _ReadKeys:
    """A namespace with the job: records each read as the client's ``get`` keys it (``_together.read_key``; a list's
    query is its first page's, as ``Client.list`` asks it)."""

    def __init__(self):
        self.keys: list[tuple] = []

    def get_or_none(self, path, what=""):
        self.keys.append(_together.read_key(path, what, None))
        return JOB

    def list_or_empty(self, path, what="", **query):
        self.keys.append(_together.read_key(path, what, _api.list_query(**query)))
        return []


@pytest.mark.parametrize("kind", ["PyTorchJob", "MPIJob", "PodGroup"])
def test_the_reads_asked_ahead_for_a_job_are_those_its_explanation_makes(kind):
    """gather asks for a found job's reads as it starts (``reads``): each under the very key the explanation then
    reads it by, and none it does not make (a read asked ahead under another name or query is sent for nothing)."""
    job = {"kind": kind, "namespace": "team-a", "name": "resnet"}
    ahead = [_together.read_key(*r) for r in _gang_info_job.reads(job)]
    client = _ReadKeys()
    facts = {"lists": {"volcano": {"podgroups": [{"metadata": {"namespace": "team-a", "name": "resnet"}}]}}}
    assert _gang_info_job.explain(client, job, facts, [], [])["found"]
    assert sorted(ahead) == sorted(client.keys) and len(ahead) == (3 if kind == "PodGroup" else 4)
    assert _gang_info_job.reads(None) == []
