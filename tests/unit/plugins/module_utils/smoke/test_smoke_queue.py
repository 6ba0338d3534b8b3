"""The smoke test through Kueue (_queue, cluster_queue): the run's LocalQueue and the job's label; Kueue's word read
off the job's Workload — admitted, held for quota (not an eviction's requeue), inadmissible, or no Workload at all —
each with the fix named; the inputs refused before anything is created."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _queue, _smoke_input

from tests.unit.plugins.module_utils.runners.test_component_ready_runner import Clock

JOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "smoke-r1-gang", "namespace": "s", "uid": "u1"},
    "spec": {"runPolicy": {"suspend": True}},
}
QUOTA = (
    "couldn't assign flavors to pod set master: insufficient unused quota for nvidia.com/gpu in flavor gpu, "
    "1 more needed"
)


def workload(*conds, owner=("PyTorchJob", "smoke-r1-gang", "u1"), requeue=None) -> dict:
    kind, name, uid = owner
    status = {"conditions": [{"type": t, "status": s, "reason": r, "message": m} for t, s, r, m in conds]}
    if requeue:
        status["requeueState"] = requeue
    return {
        "metadata": {"name": "pytorchjob-x-1", "ownerReferences": [{"kind": kind, "name": name, "uid": uid}]},
        "status": status,
    }


class Trial:
    """What admission() reads of a trial: its client (the Workloads it lists, one answer per read, the last one
    repeated) and its controller check."""

    def __init__(self, answers):
        self.answers, self.reads = list(answers), 0
        self.client = self

    def list_or_empty(self, path, what="", **query):
        assert path == "/apis/kueue.x-k8s.io/v1beta2/namespaces/s/workloads", path
        self.reads += 1
        return self.answers[min(self.reads, len(self.answers)) - 1]

    @staticmethod
    def check_controller():
        pass


def admission(answers, timeout=60):
    clock = Clock()
    return _queue.admission(Trial(answers), JOB, "cq", timeout, clock=clock, sleep=clock.sleep)


def test_the_local_queue_and_label_send_the_job_to_the_cluster_queue():
    lq = _queue.local_queue("s", "smoke-r1", "r1", "cq")
    assert lq["kind"] == "LocalQueue" and lq["spec"] == {"clusterQueue": "cq"}
    assert lq["metadata"]["labels"] == {"gangsched.kubeflow/smoke-run": "r1"}
    job = _queue.queued({"metadata": {"name": "j", "labels": {"a": "b"}}}, "smoke-r1")
    assert job["metadata"]["labels"] == {"a": "b", "kueue.x-k8s.io/queue-name": "smoke-r1"}


@pytest.mark.parametrize(
    ("job", "want"),
    [
        ({"kind": "Job", "spec": {"suspend": True}}, True),
        ({"kind": "TrainJob", "spec": {}}, False),
        ({"kind": "PyTorchJob", "spec": {"runPolicy": {"suspend": True}}}, True),
        ({"kind": "MPIJob", "spec": {"runPolicy": {"suspend": False}}}, False),
    ],
)
def test_suspended_reads_each_kind_where_it_keeps_it(job, want):
    assert _queue.suspended(job) is want


def test_admitted_after_a_few_reads():
    pending = workload(("QuotaReserved", "False", "Pending", "waiting"))
    admitted = workload(("QuotaReserved", "True", "QuotaReserved", ""), ("Admitted", "True", "Admitted", ""))
    out = admission([[], [pending], [admitted]])
    assert out == {"workload": "pytorchjob-x-1", "seconds": 1.0, "admitted": True}


def test_held_for_quota_is_kueues_word_not_a_requeue_after_eviction():
    held = workload(("QuotaReserved", "False", "Pending", QUOTA))
    assert admission([[held]]) == {"workload": "pytorchjob-x-1", "seconds": 0.0, "admitted": False, "held": QUOTA}
    # an evicted workload waiting for its requeue says the same, but Kueue had admitted it: not a quota hold
    requeued = workload(
        ("QuotaReserved", "False", "Pending", QUOTA),
        ("Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout"),
        requeue={"count": 1},
    )
    assert _queue.quota_hold(requeued) is None


def test_another_jobs_workload_is_not_this_ones():
    other = workload(("Admitted", "True", "Admitted", ""), owner=("PyTorchJob", "smoke-r1-gang", "old-uid"))
    with pytest.raises(
        GangError, match="Kueue made no Workload for PyTorchJob s/smoke-r1-gang .* integrations.frameworks"
    ):
        admission([[other]])


def test_inadmissible_names_kueues_reason_and_the_cluster_queue():
    bad = workload(("QuotaReserved", "False", "Inadmissible", "ClusterQueue cq is inactive"))
    with pytest.raises(GangError, match="inadmissible: ClusterQueue cq is inactive. Check ClusterQueue cq"):
        admission([[bad]])


def test_no_decision_within_the_timeout_names_what_kueue_last_said():
    waiting = workload(("QuotaReserved", "False", "Pending", "Workload is waiting for the next scheduling cycle"))
    with pytest.raises(GangError, match="neither admitted nor held for quota .* in 5s .*next scheduling cycle"):
        admission([[waiting]], timeout=5)


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"cluster_queue": "cq", "workload": "pods"}, "Kueue, which admits jobs, not workload=pods"),
        ({"cluster_queue": "Bad_Name", "workload": "pytorchjob"}, "not a ClusterQueue name"),
        ({"expect": "queued", "workload": "pytorchjob"}, "expect=queued asks for Kueue's hold"),
    ],
)
def test_inputs_refused_before_anything_is_created(params, words):
    with pytest.raises(GangError, match=words):
        _smoke_input.check_queue(params)


def test_a_queued_pytorchjob_is_taken():
    _smoke_input.check_queue({"cluster_queue": "cq", "workload": "pytorchjob", "expect": "queued"})
