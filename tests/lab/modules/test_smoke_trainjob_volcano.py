"""gang_smoke_test workload=trainjob on the lab (4 GPU nodes x 1 GPU) under Volcano, with Kubeflow Trainer
v2.2.0 and JobSet v0.11.1 run by the runner, through Ansible: a TrainJob of 4 nodes on the run's own
runtime (podGroupPolicy volcano, schedulerName volcano) runs whole on Trainer's Volcano PodGroup of
minMember 4; one of 5 is held entirely Pending and its control (the runtime without podGroupPolicy and
schedulerName, on the default scheduler) starts partially. Nothing of a run is left after it. A TrainJob and a
PyTorchJob of one name, both ganged on Volcano, share one PodGroup: gang_info reports it until one is renamed."""

from __future__ import annotations

import time

import pytest
from ansible_run import run_module
from kubernetes import client as k
from lab_objects import trainjob_leftovers as leftovers

from lab import kube, scenarios

VOLCANO_PODGROUPS = ("scheduling.volcano.sh", "v1beta1", "podgroups")


@pytest.fixture(scope="module")
def trainer(volcano):
    # Volcano's PodGroup CRD before Trainer starts (it watches the kinds whose CRD exists then)
    scenarios.install_jobset(volcano)
    scenarios.install_trainer(volcano)
    return volcano


def _args(**over) -> dict:
    return {"gang_scheduler": "volcano", "workload": "trainjob", "settle_seconds": 10, **over}


def test_a_fitting_trainjob_runs_whole_on_trainers_volcano_podgroup(trainer, api):
    res = run_module(trainer, "gang_smoke_test", _args(replicas=4, expect="running"))
    assert res.get("failed") is not True, res.get("msg")
    assert res["verdict"] == "gang_held_running" and res["scheduler_name"] == "volcano", res
    g = res["gang"]
    name = f"smoke-{res['run_id']}-gang"
    assert len(g["running"]) == 4 and g["podgroup"] == {"name": name, "min_member": 4, "owners": [f"TrainJob {name}"]}
    assert res["left_behind"] == [] and leftovers(api, res["run_id"], VOLCANO_PODGROUPS) == []


def test_an_oversized_trainjob_is_held_pending_and_its_control_starts_partially(trainer, api):
    res = run_module(trainer, "gang_smoke_test", _args(replicas=5, control=True))
    assert res.get("failed") is not True, res.get("msg")
    assert res["verdict"] == "gang_held_pending" and res["gang"]["ever_bound"] == [], res
    assert res["gang"]["podgroup"]["min_member"] == 5, res["gang"]
    c = res["control"]
    assert c["verdict"] == "partial" and len(c["bound"]) == 4, c
    assert res["left_behind"] == [] and leftovers(api, res["run_id"], VOLCANO_PODGROUPS) == []


def test_trainjob_and_pytorchjob_of_one_name_on_volcano_are_reported_until_one_is_renamed(trainer, api, namespace):
    """Under Volcano too, Trainer names its PodGroup after the TrainJob and training-operator after the job: one
    name in one namespace is one PodGroup scheduling.volcano.sh, which gang_info names with its fix."""
    runtime = scenarios.training_runtime("vc-twin", scheduler_name="volcano")
    runtime["spec"]["podGroupPolicy"] = {"volcano": {}}
    scenarios.install_training_operator(trainer, gang_flag="--gang-scheduler-name=volcano")
    kube.apply(trainer, [runtime])
    try:
        kube.apply(
            trainer, [scenarios.trainjob(namespace, "twin", "vc-twin", 1), scenarios.pytorchjob(namespace, "twin", 1)]
        )
        podgroups = k.CustomObjectsApi(api)
        deadline = time.monotonic() + 60
        while not _podgroup_names(podgroups, namespace) and time.monotonic() < deadline:
            time.sleep(1)
        assert _podgroup_names(podgroups, namespace) == ["twin"]  # the one both controllers write
        info = run_module(trainer, "gang_info", {})
        assert not info.get("failed"), info.get("msg")
        (p,) = [p for p in info["problems"] if p["object"] == f"TrainJob {namespace}/twin"]
        assert f"PyTorchJob {namespace}/twin" in p["message"] and "Volcano (training-operator" in p["message"], p
        assert f"scheduling.volcano.sh {namespace}/twin" in p["message"], p
        assert p["fix"].startswith("rename one of them"), p

        kube.kubectl(trainer, "-n", namespace, "delete", "pytorchjob", "twin", "--timeout=60s")
        kube.apply(trainer, [scenarios.pytorchjob(namespace, "twin-v1", 1)])
        info = run_module(trainer, "gang_info", {})
        assert [p for p in info["problems"] if p["object"] == f"TrainJob {namespace}/twin"] == [], info["problems"]
    finally:
        kube.kubectl(trainer, "-n", namespace, "delete", "trainjobs,pytorchjobs", "--all", "--timeout=60s")
        kube.delete(trainer, [runtime])


def _podgroup_names(custom, namespace: str) -> list[str]:
    items = custom.list_namespaced_custom_object(*VOLCANO_PODGROUPS[:2], namespace, VOLCANO_PODGROUPS[2])["items"]
    return sorted(pg["metadata"]["name"] for pg in items)
