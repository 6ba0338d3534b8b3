"""gang_smoke_test workload=trainjob on the lab (4 GPU nodes x 1 GPU) under scheduler-plugins' Coscheduling
(second scheduler), with Kubeflow Trainer v2.2.0 and JobSet v0.11.1 run by the runner, through Ansible:
a TrainJob of 4 nodes on the run's own gang runtime runs whole (gang_held_running) on Trainer's PodGroup
of minMember 4; one of 5 is held entirely Pending on the scheduler's rejection (gang_held_pending) and its
control, the same TrainJob on the runtime without podGroupPolicy and schedulerName, starts partially;
a user's ClusterTrainingRuntime is proven as it is, and one without podGroupPolicy is refused as the
error it is; a run that kept its objects (cleanup false, as an interrupted run) is swept by state=absent.
After each run nothing of it is left: no TrainJob, JobSet, Job, pod, PodGroup or runtime."""

from __future__ import annotations

import pytest
from ansible_run import run_module
from kubernetes import client as k
from lab_objects import trainjob_leftovers as leftovers

from lab import kube, scenarios

TRAINER = ("trainer.kubeflow.org", "v1alpha1")


@pytest.fixture(scope="module")
def trainer(trainer_stack):
    return trainer_stack


def _args(**over) -> dict:
    return {"gang_scheduler": "scheduler_plugins", "workload": "trainjob", "settle_seconds": 10, **over}


def test_a_fitting_trainjob_runs_whole_on_trainers_podgroup(trainer, api):
    res = run_module(trainer, "gang_smoke_test", _args(replicas=4, expect="running"))
    assert res.get("failed") is not True, res.get("msg")
    assert res["verdict"] == "gang_held_running" and res["ok"] is True, res
    g = res["gang"]
    assert len(g["running"]) == 4 and sorted(g["running"]) == sorted(g["ever_bound"]), g
    assert all(p.startswith(f"smoke-{res['run_id']}-gang-node-") for p in g["running"]), g["running"]
    name = f"smoke-{res['run_id']}-gang"
    assert g["podgroup"] == {"name": name, "min_member": 4, "owners": [f"TrainJob {name}"]}, g["podgroup"]
    assert res["runtime"] == {"kind": "TrainingRuntime", "name": f"gangsched-smoke/{name}", "created": True}
    assert res["scheduler_name"] == scenarios.SP_NAME
    assert res["left_behind"] == [] and leftovers(api, res["run_id"]) == []


def test_an_oversized_trainjob_is_held_pending_and_its_control_starts_partially(trainer, api):
    res = run_module(trainer, "gang_smoke_test", _args(replicas=5, control=True))
    assert res.get("failed") is not True, res.get("msg")
    assert res["expected"] == "pending" and res["verdict"] == "gang_held_pending", res
    g = res["gang"]
    assert g["ever_bound"] == [] and g["pods"] == 5 and g["held_pending_by"] == "rejected", g
    assert g["podgroup"]["min_member"] == 5, g["podgroup"]
    c = res["control"]
    assert c["verdict"] == "partial" and len(c["bound"]) == 4 and len(c["unbound"]) == 1, c
    assert all(p.startswith(f"smoke-{res['run_id']}-control-node-") for p in c["bound"]), c["bound"]
    assert res["left_behind"] == [] and leftovers(api, res["run_id"]) == []


def test_a_users_cluster_training_runtime_is_proven_as_it_is_and_one_without_a_gang_is_refused(trainer, api):
    gang = scenarios.training_runtime("lab-torch-gang")
    plain = scenarios.training_runtime("lab-torch-plain")
    plain["spec"].pop("podGroupPolicy")
    kube.apply(trainer, [gang, plain])
    co = k.CustomObjectsApi(api)
    before = co.get_cluster_custom_object(*TRAINER, "clustertrainingruntimes", "lab-torch-gang")

    res = run_module(trainer, "gang_smoke_test", _args(replicas=4, expect="running", trainer_runtime="lab-torch-gang"))
    assert res.get("failed") is not True, res.get("msg")
    assert res["verdict"] == "gang_held_running", res
    assert res["runtime"] == {"kind": "ClusterTrainingRuntime", "name": "lab-torch-gang", "created": False}
    assert res["gang"]["podgroup"]["min_member"] == 4 and len(res["gang"]["running"]) == 4, res["gang"]
    after = co.get_cluster_custom_object(*TRAINER, "clustertrainingruntimes", "lab-torch-gang")
    assert after["spec"] == before["spec"], "the user's runtime was changed"
    assert leftovers(api, res["run_id"]) == []

    refused = run_module(trainer, "gang_smoke_test", _args(replicas=4, trainer_runtime="lab-torch-plain"))
    assert refused.get("failed") is True and refused["verdict"] == "error", refused
    assert "ClusterTrainingRuntime lab-torch-plain has no spec.podGroupPolicy" in refused["cause"], refused["cause"]
    assert "trainer_runtime_gang filter" in refused["msg"], refused["msg"]
    assert "gang" not in refused and co.list_cluster_custom_object(*TRAINER, "trainjobs")["items"] == []


def test_a_run_that_kept_its_objects_is_swept_whole(trainer, api):
    kept = run_module(trainer, "gang_smoke_test", _args(replicas=2, expect="running", cleanup=False))
    assert kept["verdict"] == "gang_held_running", kept
    run_id = kept["run_id"]
    assert any(o.startswith("trainjobs ") for o in leftovers(api, run_id)), "nothing left to sweep"
    res = run_module(trainer, "gang_smoke_test", {"state": "absent"})
    assert res["changed"] is True and res["left_behind"] == [], res
    ns = "gangsched-smoke"
    for what in (f"TrainJob {ns}/smoke-{run_id}-gang", f"TrainingRuntime {ns}/smoke-{run_id}-gang", f"Namespace {ns}"):
        assert what in res["stale_removed"], res["stale_removed"]
    assert leftovers(api, run_id) == []
    again = run_module(trainer, "gang_smoke_test", {"state": "absent"})
    assert again["changed"] is False and again["stale_removed"] == [], again
