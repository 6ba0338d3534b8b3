"""A fifth gang path is one new file (toy_gang_path.py) and one registration line: the smoke test's input check,
the objects it creates, the watch and the verdict, and gang_info's checks take it with no other edit."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry, _smoke_objects
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _gang_info
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _smoke_input, _trial, _watch
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _verdict as V

from tests.unit.plugins.module_utils.paths import toy_gang_path
from tests.unit.plugins.module_utils.smoke.test_smoke_proof import WHO, FakeClient, _Clock, _Feed, params

TOY = {"kind": "toy", "ready": True, "source": "Deployment", "namespace": "toy", "name": "toy-scheduler"}


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(_registry.PATHS, toy_gang_path.PATH.name, toy_gang_path.PATH)  # the registration line
    return toy_gang_path.PATH


def test_the_input_check_takes_its_workloads_and_refuses_the_others(toy):
    _smoke_input.check_path({"workload": "pods", "gang_scheduler": "toy", "scheduler_name": None})
    with pytest.raises(GangError, match="it needs gang_scheduler=native or koordinator, not toy"):
        _smoke_input.check_path({"workload": "job", "gang_scheduler": "toy", "scheduler_name": None})
    assert _registry.derive_scheduler_name("toy", None, []) == "toy-scheduler"
    assert _registry.serves({**TOY, "scheduler_names": ["toy-scheduler"]}, "toy", "toy-scheduler")


def test_its_smoke_pods_carry_its_labels_and_no_gang_object(toy):
    docs, selector = _smoke_objects.pods("ns", "g", "r", 3, {"cpu": "1"}, "toy", "toy-scheduler")
    assert [d["kind"] for d in docs] == ["Pod"] * 3
    for d in docs:
        labels = d["metadata"]["labels"]
        assert (labels[toy_gang_path.GANG_LABEL], labels[toy_gang_path.SIZE_LABEL]) == ("g", "3")
        assert d["spec"]["schedulerName"] == "toy-scheduler"
    assert selector == "gangsched.kubeflow/gang=g"


def _pods(n, running):
    return [
        {
            "metadata": {"name": f"smoke-r1-gang-{i}", "resourceVersion": str(i + 1)},
            "spec": {"schedulerName": "toy-scheduler", **({"nodeName": f"g{i}"} if running else {})},
            "status": {"phase": "Running" if running else "Pending"},
        }
        for i in range(n)
    ]


def test_the_watch_and_the_verdict_prove_a_running_gang(toy, monkeypatch):
    _Feed.pods = _pods(2, running=True)
    monkeypatch.setattr(_watch, "Watcher", _Feed)
    client = FakeClient()
    trial = _trial.Trial(client, params(gang_scheduler="toy", timeout=20, run_id="r1"), "r1", "toy-scheduler", WHO)
    g = trial.one_gang({"nvidia.com/gpu": "1"}, "running", control=False)
    assert g["verdict"] == V.GANG_HELD_RUNNING, g
    posted = [path for m, path in client.writes if m == "POST"]
    assert posted == ["/api/v1/namespaces/gangsched-smoke/pods"] * 2  # no PodGroup: the toy gangs by labels


def test_an_unbound_gang_without_the_schedulers_word_is_never_held_pending(toy, monkeypatch):
    _Feed.pods = _pods(2, running=False)
    monkeypatch.setattr(_watch, "Watcher", _Feed)
    p = params(gang_scheduler="toy", timeout=6, settle_seconds=1, run_id="r1")
    trial = _trial.Trial(FakeClient(), p, "r1", "toy-scheduler", WHO, clock=_Clock())
    trial.liveness["before"] = 0.4
    g = trial.one_gang({"nvidia.com/gpu": "1"}, "pending", control=False)
    assert g["verdict"] == V.INCONCLUSIVE and "never rejected the whole gang" in g["cause"], g


def test_gang_info_runs_its_checks(toy):
    probs = _gang_info.path_problems(FakeClient(), [{**TOY, "ready": False}], [], "v1.37.2")
    assert [(p["object"], p["fix"]) for p in probs] == [("Deployment toy/toy-scheduler", "start the toy scheduler")]
    assert _gang_info.path_problems(FakeClient(), [TOY], [], "v1.37.2") == []
