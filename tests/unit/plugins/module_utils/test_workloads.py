"""The objects the collection builds: label gangs (seed 003, Koordinator) on Pods and Kubeflow jobs."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils import _workloads

NAME, MIN = _workloads.LABEL_GANG_NAME, _workloads.LABEL_GANG_MIN


def _job(kind, specs_key, replicas):
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {
            specs_key: {r: {"replicas": n, "template": {"spec": {"containers": []}}} for r, n in replicas.items()}
        },
    }


def test_every_member_template_of_a_job_joins_one_gang_of_all_its_pods():
    job = _job("TFJob", "tfReplicaSpecs", {"PS": 1, "Worker": 4})
    out = _workloads.label_gang(job, "koord-scheduler")
    for spec in out["spec"]["tfReplicaSpecs"].values():
        assert spec["template"]["metadata"]["labels"] == {NAME: "train", MIN: "5"}
        assert spec["template"]["spec"]["schedulerName"] == "koord-scheduler"
    assert "metadata" not in job["spec"]["tfReplicaSpecs"]["PS"]["template"], "the input was changed"


def test_mpijob_launcher_is_not_a_member():
    out = _workloads.label_gang(_job("MPIJob", "mpiReplicaSpecs", {"Launcher": 1, "Worker": 3}), "koord", 2, "g")
    specs = out["spec"]["mpiReplicaSpecs"]
    assert specs["Worker"]["template"]["metadata"]["labels"] == {NAME: "g", MIN: "2"}
    assert (
        "metadata" not in specs["Launcher"]["template"] and "schedulerName" not in specs["Launcher"]["template"]["spec"]
    )


def test_a_pod_keeps_its_labels():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app": "x"}}, "spec": {}}
    out = _workloads.label_gang(pod, "koord-scheduler")
    assert out["metadata"]["labels"] == {"app": "x", NAME: "p", MIN: "1"}
    assert out["spec"]["schedulerName"] == "koord-scheduler"


@pytest.mark.parametrize(
    "doc,min_available,words",
    [
        ({"kind": "Deployment", "metadata": {"name": "d"}}, None, "kind Deployment is not"),
        ({"kind": "PyTorchJob"}, None, "needs a Pod or a Kubeflow job"),
        ({"kind": "PyTorchJob", "metadata": {"name": "j"}, "spec": {}}, None, "has no spec.pytorchReplicaSpecs"),
        ({"kind": "Pod", "metadata": {"name": "p"}}, 0, "min_available must be"),
        ({"kind": "Pod", "metadata": {"name": "p"}}, True, "min_available must be"),
    ],
)
def test_bad_input_is_named(doc, min_available, words):
    with pytest.raises(ValueError, match=words):
        _workloads.label_gang(doc, "koord-scheduler", min_available)


def test_smoke_pods_for_a_label_gang_scheduler_have_no_podgroup():
    docs, selector = _workloads.pods("ns", "g", "r", 3, {"cpu": "1"}, "koordinator", "koord-scheduler")
    assert [d["kind"] for d in docs] == ["Pod"] * 3 and selector == "gangsched.kubeflow/gang=g"
    for p in docs:
        assert p["metadata"]["labels"][NAME] == "g" and p["metadata"]["labels"][MIN] == "3"
        assert p["spec"]["schedulerName"] == "koord-scheduler"


@pytest.mark.parametrize("kind", ["pytorchjob", "tfjob", "mpijob"])
def test_smoke_jobs_for_a_label_gang_scheduler_label_their_member_templates(kind):
    (job,), _ = _workloads.kubeflow_job(kind, "ns", "g", "r", 4, {"cpu": "1"}, "koordinator", "koord")
    specs = next(v for k, v in job["spec"].items() if k.endswith("ReplicaSpecs"))
    members = {r: s for r, s in specs.items() if r != "Launcher"}
    assert sum(s["replicas"] for s in members.values()) == 4
    for s in members.values():
        assert s["template"]["metadata"]["labels"][MIN] == "4" and s["template"]["spec"]["schedulerName"] == "koord"
    (plain,), _ = _workloads.kubeflow_job(kind, "ns", "g", "r", 4, {"cpu": "1"})
    assert MIN not in str(plain)
