"""Koordinator's label gangs (seed 003) through the modules, on koord-scheduler run by the runner:
the smoke test proves a gang of plain pods and a PyTorchJob by labels alone (no PodGroup object);
operator_gang refuses to point an operator's gang flag at koord-scheduler and changes nothing;
gang_info reports an operator whose flag already does (the silent partial start seen on the lab)."""

from __future__ import annotations

import pytest
from ansible_run import run_module
from kubernetes import client as k

from lab import scenarios

NO_PODGROUPS = ("scheduling.sigs.k8s.io", "v1alpha1", "podgroups")


@pytest.fixture(scope="module")
def koord(lab):
    scenarios.install_koord_scheduler(lab)
    scenarios.install_training_operator(lab, gang_flag=None)
    return lab


def _smoke(lab, **over):
    args = {
        "gang_scheduler": "koordinator",
        "replicas": 4,
        "timeout": 60,
        "settle_seconds": 5,
        "liveness_timeout": 20,
        "allow_system_namespace": False,
        **over,
    }
    return run_module(lab, "gang_smoke_test", args)


def _podgroups(api) -> list:
    return k.CustomObjectsApi(api).list_cluster_custom_object(*NO_PODGROUPS)["items"]


@pytest.mark.parametrize("workload", ["pods", "pytorchjob"])
def test_label_gang_held_running_and_pending(koord, api, workload):
    """4 members on 4 GPUs: all Running; 5: all Pending, koord-scheduler's rejection of the whole gang."""
    running = _smoke(koord, workload=workload, expect="running")
    assert running.get("failed") is not True, running.get("msg")
    assert (running["verdict"], running["scheduler_name"]) == ("gang_held_running", "koord-scheduler"), running
    pending = _smoke(koord, workload=workload, replicas=5, expect="pending")
    assert pending.get("failed") is not True, pending.get("msg")
    assert pending["verdict"] == "gang_held_pending", pending
    assert _podgroups(api) == [], "a label gang needs no PodGroup object"


def test_operator_gang_refuses_koord_scheduler_and_changes_nothing(koord):
    apps = k.AppsV1Api(scenarios.kube.api(koord))
    before = apps.read_namespaced_deployment("training-operator", "kubeflow").metadata.resource_version
    for args in (
        {"gang_scheduler": "koordinator"},
        {"gang_scheduler": "scheduler_plugins", "scheduler_name": "koord-scheduler"},
    ):
        res = run_module(koord, "operator_gang", {"operator": "training_operator", **args})
        assert res.get("failed") is True, res
        assert "koord-scheduler ignores" in res["msg"] and "label_gang" in res["msg"], res["msg"]
        assert "Traceback" not in res["msg"]
    after = apps.read_namespaced_deployment("training-operator", "kubeflow").metadata.resource_version
    assert after == before


def test_gang_info_reports_an_operator_flag_pointing_at_koord_scheduler(koord):
    info = run_module(koord, "gang_info", {})
    assert info.get("failed") is not True, info.get("msg")
    (koord_s,) = [s for s in info["schedulers"] if s["kind"] == "koordinator"]
    assert koord_s["gang_profiles"] == ["koord-scheduler"] and koord_s["ready"] is True
    assert info["problems"] == [], info["problems"]
    scenarios.install_training_operator(koord, gang_flag="--gang-scheduler-name=koord-scheduler")
    try:
        probs = run_module(koord, "gang_info", {})["problems"]
        hits = [p for p in probs if "koord-scheduler, which ignores the PodGroups" in p["message"]]
        assert len(hits) == 1 and hits[0]["object"] == "Deployment kubeflow/training-operator", probs
    finally:
        scenarios.install_training_operator(koord, gang_flag=None)
