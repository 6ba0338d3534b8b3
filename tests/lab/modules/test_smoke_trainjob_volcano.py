"""gang_smoke_test workload=trainjob on the lab (4 GPU nodes x 1 GPU) under Volcano, with Kubeflow Trainer
v2.2.0 and JobSet v0.11.1 run by the runner, through Ansible: a TrainJob of 4 nodes on the run's own
runtime (podGroupPolicy volcano, schedulerName volcano) runs whole on Trainer's Volcano PodGroup of
minMember 4; one of 5 is held entirely Pending and its control (the runtime without podGroupPolicy and
schedulerName, on the default scheduler) starts partially. Nothing of a run is left after it."""

from __future__ import annotations

import pytest
from ansible_run import run_module
from test_smoke_trainjob import leftovers

from lab import scenarios

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
