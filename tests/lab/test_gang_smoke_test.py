"""gang_smoke_test against the lab (4 GPU nodes x 1 GPU): N vs N-1 GPUs gives gang_held_pending then
gang_held_running for Volcano and scheduler-plugins, with plain pods and with a PyTorchJob through
training-operator; the no-gang control is partial; an operator without its gang flag gives an error
verdict naming the missing PodGroup; check mode creates nothing; bad inputs fail and create nothing."""

from __future__ import annotations

import json

import pytest
from lab_ansible import run_module

from lab import scenarios

RUN_LABEL = "gangsched.kubeflow/smoke-run"


def _leftovers(core) -> list[str]:
    pods = core.list_pod_for_all_namespaces(label_selector=RUN_LABEL).items
    nss = core.list_namespace(label_selector=RUN_LABEL).items
    return [f"pod {p.metadata.namespace}/{p.metadata.name}" for p in pods] + [f"ns {n.metadata.name}" for n in nss]


@pytest.fixture(scope="module")
def sp(lab):
    scenarios.install_scheduler_plugins(lab)
    return lab


@pytest.fixture(scope="module")
def training_operator_volcano(volcano):
    # flag set by the collection, waiting until the rollout is complete: an operator pod of the old
    # template still running would create members without a gang (the verdict then says partial)
    scenarios.install_training_operator(volcano, gang_flag=None)
    res = run_module(
        volcano, "operator_gang", {"operator": "training_operator", "gang_scheduler": "volcano", "wait": True}
    )
    assert res.get("failed") is not True, res.get("msg")
    yield volcano
    scenarios.install_training_operator(volcano, gang_flag=None)


def test_check_mode_predicts_and_creates_nothing(volcano, core):
    res = run_module(volcano, "gang_smoke_test", {"gang_scheduler": "volcano", "replicas": 5}, check=True)
    assert res["changed"] is False and res["verdict"] is None and res["expected"] == "pending", res
    assert res["capacity"] == {"free_gpus": 4, "fits": False, "slots": 4}
    assert _leftovers(core) == []


@pytest.mark.parametrize("scheduler", ["volcano", "scheduler_plugins"])
def test_pods_n_vs_n_minus_1(volcano, sp, core, tmp_path, scheduler):
    pending = run_module(
        volcano,
        "gang_smoke_test",
        {
            "gang_scheduler": scheduler,
            "replicas": 5,
            "settle_seconds": 10,
            "control": True,
            "report_dir": str(tmp_path),
        },
    )
    assert pending.get("failed") is not True, pending.get("msg")
    assert pending["verdict"] == "gang_held_pending" and pending["ok"] is True, pending
    assert pending["gang"]["ever_bound"] == [] and pending["gang"]["pods"] == 5
    assert pending["gang"]["held_pending_by"] in ("rejected", "settled"), pending["gang"]
    if scheduler == "volcano":
        # Volcano marks every member of the gang it cannot place: the verdict need not wait settle_seconds
        assert pending["gang"]["held_pending_by"] == "rejected", pending["gang"]
    assert pending["control"]["verdict"] == "partial", pending["control"]
    assert len(pending["control"]["bound"]) == 4, pending["control"]
    reports = pending["reports"]
    assert json.loads(open(reports["json"]).read())["verdict"] == "gang_held_pending"
    assert "<testsuite" in open(reports["junit"]).read() and "<svg" in open(reports["svg"]).read()
    assert pending["left_behind"] == [] and _leftovers(core) == []

    running = run_module(volcano, "gang_smoke_test", {"gang_scheduler": scheduler, "replicas": 4})
    assert running["verdict"] == "gang_held_running" and running["expected"] == "running", running
    assert sorted(running["gang"]["running"]) == sorted(running["gang"]["ever_bound"])
    assert len(running["gang"]["running"]) == 4
    assert _leftovers(core) == []


def test_wrong_expectation_fails_the_task_with_the_timeline(volcano, core):
    res = run_module(
        volcano,
        "gang_smoke_test",
        {"gang_scheduler": "volcano", "replicas": 5, "expect": "running", "timeout": 15, "settle_seconds": 5},
    )
    assert res.get("failed") is True
    assert "verdict gang_held_pending, expected running" in res["msg"], res["msg"]
    assert res["gang"]["timeline"], res
    assert _leftovers(core) == []


def test_pytorchjob_through_training_operator(training_operator_volcano, core):
    pending = run_module(
        training_operator_volcano,
        "gang_smoke_test",
        {"gang_scheduler": "volcano", "workload": "pytorchjob", "replicas": 5, "settle_seconds": 10},
    )
    assert pending.get("failed") is not True, pending.get("msg")
    assert pending["verdict"] == "gang_held_pending", pending
    running = run_module(
        training_operator_volcano,
        "gang_smoke_test",
        {"gang_scheduler": "volcano", "workload": "pytorchjob", "replicas": 4},
    )
    assert running["verdict"] == "gang_held_running", running
    assert len(running["gang"]["running"]) == 4
    assert _leftovers(core) == []


def test_operator_without_gang_flag_gives_an_error_verdict(training_operator_volcano, core):
    volcano = training_operator_volcano
    res = run_module(
        volcano, "operator_gang", {"operator": "training_operator", "gang_scheduler": "none", "wait": True}
    )
    assert res["changed"] is True, res
    res = run_module(volcano, "gang_smoke_test", {"gang_scheduler": "volcano", "workload": "pytorchjob", "replicas": 2})
    assert res.get("failed") is True and res["verdict"] == "error", res
    # members for the default scheduler, no PodGroup: named as not gang-scheduled
    assert "not gang-scheduled" in res["cause"] and "operator_gang" in res["cause"], res
    assert _leftovers(core) == []


BAD = [
    ("replicas-zero", {"replicas": 0}, "replicas must be >= 1"),
    ("replicas-negative", {"replicas": -3}, "replicas must be >= 1"),
    ("resources-malformed", {"resources": {"nvidia.com/gpu": "lots"}}, "is not a Kubernetes quantity"),
    ("resources-negative", {"resources": {"nvidia.com/gpu": -1}}, "is negative"),
    ("resources-empty", {"resources": {}}, "resources must be a mapping"),
    ("resources-not-a-mapping", {"resources": "gpu"}, "resources"),
    ("unknown-workload", {"workload": "rayjob"}, "value of workload must be one of"),
    ("unknown-scheduler", {"gang_scheduler": "kube-batch"}, "value of gang_scheduler must be one of"),
    ("timeout-zero", {"timeout": 0}, "timeout must be > 0"),
    ("settle-zero", {"settle_seconds": 0}, "settle_seconds must be > 0"),
    ("tfjob-crd-missing", {"workload": "tfjob"}, "CustomResourceDefinition tfjobs.kubeflow.org is missing"),
    (
        "sp-name-nobody-serves",
        {"gang_scheduler": "scheduler_plugins", "scheduler_name": "nobody-serves-this"},
        "nobody-serves-this",
    ),
    (
        "unreachable-api",
        {"host": "https://127.0.0.1:1", "api_key": "not-a-token", "validate_certs": False},
        "Failed to reach the Kubernetes API at https://127.0.0.1:1",
    ),
    ("forbidden", {"impersonate_user": "system:serviceaccount:default:default"}, "Forbidden to"),
]


@pytest.mark.parametrize("case,override,message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_fails_and_creates_nothing(volcano, sp, core, case, override, message):
    args = {"gang_scheduler": "volcano", "replicas": 2, **override}
    res = run_module(volcano, "gang_smoke_test", args)
    assert res.get("failed") is True, res
    assert message in res["msg"], res["msg"]
    assert _leftovers(core) == []
