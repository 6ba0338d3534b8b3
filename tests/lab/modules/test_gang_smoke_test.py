"""gang_smoke_test against the lab (4 GPU nodes x 1 GPU): N vs N-1 GPUs gives gang_held_pending then
gang_held_running for Volcano and scheduler-plugins, with plain pods and with a PyTorchJob through
training-operator; the no-gang control is partial; an operator without its gang flag gives an error
verdict naming the missing PodGroup; check mode creates nothing; bad inputs fail and create nothing.
Faults injected for real: vc-scheduler frozen (SIGSTOP), serving another --scheduler-name, scaled to 0
— never a held-pending verdict, the cause names the scheduler, gang_info reports it; and the role's
gangs sized node by node on 3 nodes x 2 GPUs + 2 nodes x 1 GPU."""

from __future__ import annotations

import json
import os
import signal
import time
from contextlib import contextmanager

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _together
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._client import Client
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _smoke
from ansible_collections.gangsched.kubeflow.plugins.modules.gang_smoke_test import argument_spec
from ansible_run import fails_within_api_timeout, playbook, run_module
from kubernetes import client as k
from lab_objects import role_namespaces_gone

from lab import kube, nodes, procs, scenarios
from lab.latency import LatencyProxy

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


def test_the_sweep_and_preflight_reads_go_out_together_and_each_is_used(volcano, tmp_path, monkeypatch):
    """A run in check mode, in process, through a forwarder that holds each chunk sent for 0.1 s: the sweep's lists
    and the preflight's reads are asked for together (several connections open at once), every one asked ahead is one
    the run makes (none sent for nothing), and it predicts what it predicts without the forwarder."""
    blocks, ahead = [], _together.ahead
    monkeypatch.setattr(_together, "ahead", lambda *a: blocks.append(ahead(*a)) or blocks[-1])
    params = {"gang_scheduler": "volcano", "workload": "pods", "replicas": 5, "resources": {"nvidia.com/gpu": 1}}
    for name, spec in argument_spec().items():
        params.setdefault(name, spec.get("default"))
    with LatencyProxy(volcano.state()["ports"]["apiserver"], 0.1) as far:
        client = Client.from_params({"kubeconfig": str(far.kubeconfig(volcano, tmp_path / "far"))})
        res = _smoke.run(client, params, True, pytest.fail)
    assert far.most >= 4, f"at most {far.most} connection(s) open at once, of {far.accepted}"
    assert len(blocks) == 1 and len(blocks[0].reads) >= 10 and blocks[0].unused == [], blocks[0].reads
    near = _smoke.run(Client.from_params({"kubeconfig": str(volcano.kubeconfig)}), params, True, pytest.fail)
    assert res["verdict"] is None and res["expected"] == "pending" and res["capacity"]["slots"] == 4, res
    assert {k: v for k, v in res.items() if k != "stale_removed"} == {
        k: v for k, v in near.items() if k != "stale_removed"
    }


def test_a_silent_api_server_fails_within_api_timeout_naming_it_and_nothing_is_left(volcano, core, silent_server):
    """A real listener that accepts connections and never answers a byte: a run (its sweep's lists and its preflight's
    reads asked together, 12 lists and more) and a removal (state=absent, its lists asked together) each fail within
    their api_timeout (3 s here), not once per read, next to the same run's start-up cost measured now (a run refused
    before any request), with the message naming the server and the option."""
    runs = [{"gang_scheduler": "volcano", "replicas": 2}, {"state": "absent"}]
    fails_within_api_timeout(volcano, "gang_smoke_test", silent_server, {"gang_scheduler": "volcano"}, runs)
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
    # held pending only on the scheduler's own rejection of every member, after a canary proved it live
    assert pending["gang"]["held_pending_by"] == "rejected", pending["gang"]
    assert pending["liveness"]["canary_seconds"] is not None, pending["liveness"]
    print(
        f"{scheduler}: canary bound in {pending['liveness']['canary_seconds']}s, held pending in "
        f"{pending['gang']['seconds']}s"
    )
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
    # keep_namespace holds only for a verdict as expected: this run's namespace goes all the same
    res = run_module(
        volcano,
        "gang_smoke_test",
        {
            "gang_scheduler": "volcano",
            "replicas": 4,
            "expect": "pending",
            "timeout": 15,
            "settle_seconds": 5,
            "keep_namespace": True,
        },
    )
    assert res.get("failed") is True
    assert "verdict gang_held_running, expected pending" in res["msg"], res["msg"]
    assert res["gang"]["timeline"], res
    assert res["namespace_kept"] is False
    assert _leftovers(core) == []


@pytest.mark.parametrize("option,phase", [("keep_namespace", "Active"), ("wait_namespace_gone", "Terminating")])
def test_a_namespace_a_run_kept_or_left_terminating_is_taken_over_by_the_next_run(volcano, core, option, phase):
    """keep_namespace: the namespace is left, emptied, for the next run; wait_namespace_gone=false: it is deleted and
    the run returns while the namespace controller has yet to empty it (5 s after the deletion), and the next run at
    once waits for it to go, then makes it again."""
    ns = f"gangsched-smoke-{phase.lower()}"
    args = {"gang_scheduler": "volcano", "replicas": 4, "namespace": ns, option: option == "keep_namespace"}
    first = run_module(volcano, "gang_smoke_test", args)
    assert first["verdict"] == "gang_held_running", first
    assert (first["namespace_kept"], first["namespace_terminating"]) == (phase == "Active", phase == "Terminating")
    left = core.read_namespace(ns)
    assert left.status.phase == phase and left.metadata.labels[RUN_LABEL] == first["run_id"], left.status
    # emptied: the run's pods are gone (their GPUs free), its other objects removed
    assert core.list_namespaced_pod(ns).items == [] and first["left_behind"] == []
    second = run_module(volcano, "gang_smoke_test", {"gang_scheduler": "volcano", "replicas": 5, "namespace": ns})
    assert second["verdict"] == "gang_held_pending" and second["ok"] is True, second
    assert second["stale_removed"] == [] and second["left_behind"] == [], second
    assert second["namespace_kept"] is False and second["namespace_terminating"] is False
    assert _leftovers(core) == []


def test_state_absent_waits_for_a_namespace_a_run_left_terminating_and_does_not_count_it_removed(volcano, core):
    args = {"gang_scheduler": "volcano", "replicas": 4, "namespace": "gangsched-smoke-absent"}
    ran = run_module(volcano, "gang_smoke_test", {**args, "wait_namespace_gone": False})
    assert ran["verdict"] == "gang_held_running" and ran["namespace_terminating"] is True, ran
    absent = run_module(volcano, "gang_smoke_test", {"state": "absent"})
    assert absent["changed"] is False and absent["stale_removed"] == [] and absent["left_behind"] == [], absent
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
    ("timeout-zero", {"timeout": 0}, "timeout must be >= 1"),
    ("settle-negative", {"settle_seconds": -1}, "settle_seconds must be >= 0"),
    ("skew-negative", {"skew_seconds": -1}, "skew_seconds must be >= 0"),
    ("liveness-zero", {"liveness_timeout": 0}, "liveness_timeout must be >= 1"),
    ("kube-system", {"namespace": "kube-system"}, "namespace 'kube-system' is a system namespace"),
    ("scheduler-namespace", {"namespace": "volcano-system"}, "allow_system_namespace=true"),
    ("run-id", {"run_id": "Bad Run!"}, "run_id 'Bad Run!' is not usable"),
    ("report-dir-not-writable", {"report_dir": "/proc/version/reports"}, "report_dir '/proc/version/reports'"),
    ("running-more-than-fit", {"replicas": 500, "expect": "running"}, "only 4 member(s) of 1 nvidia.com/gpu fit"),
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


# ---- faults injected for real ------------------------------------------------------------------------
WHO = "scheduler 'volcano' (Volcano Deployment volcano-system/vc-scheduler)"
VC = ("volcano-system", "vc-scheduler")


def _vc_pids(lab) -> list[int]:
    """The vc-scheduler processes the runner runs (podexec execs it: the pid in the pod's dir)."""
    pids = [procs.read_pid(p) for p in lab.pods.glob(f"{VC[0]}_{VC[1]}-*/{VC[1]}.pid")]
    return [p for p in pids if procs.alive(p)]


def _vc_pid(lab) -> int:
    alive = _vc_pids(lab)
    assert len(alive) == 1, f"vc-scheduler processes: {alive}"
    return alive[0]


@contextmanager
def frozen(lab):
    """vc-scheduler stopped with SIGSTOP (its pod stays Running and Ready), resumed whatever happens."""
    pid = _vc_pid(lab)
    os.killpg(pid, signal.SIGSTOP)
    try:
        yield pid
    finally:
        os.killpg(pid, signal.SIGCONT)


def _rolled_out(lab, apps, core, replicas: int, args_ok) -> None:
    def done():
        d = apps.read_namespaced_deployment(VC[1], VC[0])
        st = d.status
        if st.observed_generation != d.metadata.generation or (st.updated_replicas or 0) != replicas:
            return False
        pods = [p for p in core.list_namespaced_pod(VC[0], label_selector=f"app={VC[1]}").items]
        if len(pods) != replicas or (st.ready_replicas or 0) != replicas:
            return False
        return all(args_ok(p.spec.containers[0].args or []) for p in pods)

    kube.wait_for(done, 90, f"Deployment {VC[0]}/{VC[1]} rolled out to {replicas}")
    if replicas:
        kube.wait_for(lambda: len(_vc_pids(lab)) == 1, 30, "one vc-scheduler process")


def _smoke_args(**over) -> dict:
    return {
        "gang_scheduler": "volcano",
        "replicas": 2,
        "timeout": 30,
        "settle_seconds": 5,
        "liveness_timeout": 5,
        **over,
    }


def _problems(lab, threshold: int = 60) -> list[str]:
    info = run_module(lab, "gang_info", {"partial_threshold_seconds": threshold})
    assert info.get("failed") is not True, info.get("msg")
    return [f"{p['object']}: {p['message']}" for p in info["problems"]]


@contextmanager
def refusing_every_pod(core):
    """Every node tainted NoSchedule (no canary tolerates it): a live scheduler looks at each pod and refuses it,
    with its word in the pod's PodScheduled condition. The taints are taken off whatever happens."""
    taint = {"key": "gangsched.test/refuse", "effect": "NoSchedule"}
    before = {n.metadata.name: [t.to_dict() for t in n.spec.taints or []] for n in core.list_node().items}
    for name, taints in before.items():
        core.patch_node(name, {"spec": {"taints": [*taints, taint]}})
    try:
        yield
    finally:
        for name, taints in before.items():
            core.patch_node(name, {"spec": {"taints": taints or None}})


@pytest.mark.parametrize("scheduler", ["volcano", "scheduler_plugins"])
def test_a_refused_canary_is_tried_afresh_and_the_schedulers_word_is_the_cause(volcano, sp, core, scheduler):
    """A live scheduler that refuses the canary is not called frozen or hung: a fresh canary is tried once, and the
    cause gives what the scheduler said of it."""
    with refusing_every_pod(core):
        res = run_module(volcano, "gang_smoke_test", _smoke_args(gang_scheduler=scheduler, liveness_timeout=12))
    assert res.get("failed") is True and res["verdict"] == "error", res
    assert "looked at the liveness canary" in res["cause"] and "nor a fresh one: it said" in res["cause"], res["cause"]
    assert "taint" in res["cause"] and "frozen" not in res["cause"], res["cause"]  # the scheduler's own word
    assert "gang" not in res and res["liveness"]["canary_seconds"] is None, res
    assert _leftovers(core) == []


@pytest.mark.parametrize("expect", ["pending", "auto"])
def test_frozen_scheduler_is_not_a_proof_and_is_named(volcano, core, namespace, expect):
    with frozen(volcano):
        t0 = time.monotonic()
        res = run_module(volcano, "gang_smoke_test", _smoke_args(expect=expect))
        took = time.monotonic() - t0
        assert res.get("failed") is True and res["verdict"] == "error", res
        assert WHO in res["cause"] and "did not bind the liveness canary" in res["cause"], res["cause"]
        assert "gang" not in res and res["liveness"]["canary_seconds"] is None, res
        assert WHO in res["msg"]
        print(f"frozen vc-scheduler, expect={expect}: error after {took:.1f}s (liveness_timeout 5)")
        if expect == "pending":
            # gang_info: a gang made now is never looked at while the Deployment says Ready
            kube.apply(volcano, scenarios.gang(namespace, "stuck", 1, "volcano"))
            time.sleep(4)
            probs = _problems(volcano, threshold=3)
            assert any("vc-scheduler is Ready but makes no progress" in p and "stuck-0" in p for p in probs), probs
    assert _leftovers(core) == []
    if expect == "pending":
        kube.wait_for(
            lambda: core.read_namespaced_pod("stuck-0", namespace).spec.node_name, 30, "stuck-0 bound once resumed"
        )
        assert not any("makes no progress" in p for p in _problems(volcano, threshold=3))


def test_volcano_serving_another_name_is_no_proof_and_gang_info_reports_it(volcano, core, api):
    apps = k.AppsV1Api(api)
    orig = apps.read_namespaced_deployment(VC[1], VC[0]).spec.template.spec.containers[0].args

    def set_args(args):
        apps.patch_namespaced_deployment(
            VC[1], VC[0], {"spec": {"template": {"spec": {"containers": [{"name": VC[1], "args": args}]}}}}
        )

    set_args([*orig, "--scheduler-name=lab-other"])
    try:
        _rolled_out(volcano, apps, core, 1, lambda a: "--scheduler-name=lab-other" in a)
        res = run_module(volcano, "gang_smoke_test", _smoke_args(expect="pending"))
        assert res.get("failed") is True and res["verdict"] == "error", res
        assert "serves 'lab-other' (--scheduler-name)" in res["cause"], res["cause"]
        assert _leftovers(core) == []
        info = run_module(volcano, "gang_info", {})
        (vc,) = [s for s in info["schedulers"] if s["kind"] == "volcano"]
        assert vc["scheduler_names"] == ["lab-other"] and vc["ready"] is True, vc
        probs = [p["message"] for p in info["problems"]]
        assert any("serves only lab-other (--scheduler-name), not 'volcano'" in p for p in probs), probs
    finally:
        set_args(orig)
        _rolled_out(volcano, apps, core, 1, lambda a: a == orig)
    assert not any("lab-other" in p for p in _problems(volcano))


def test_scheduler_scaled_to_zero_is_an_error_naming_it(volcano, core, api):
    apps = k.AppsV1Api(api)
    apps.patch_namespaced_deployment(VC[1], VC[0], {"spec": {"replicas": 0}})
    try:
        _rolled_out(volcano, apps, core, 0, lambda a: True)
        res = run_module(volcano, "gang_smoke_test", _smoke_args(expect="auto"))
        assert res.get("failed") is True and res["verdict"] == "error", res
        assert (
            "Volcano Deployment volcano-system/vc-scheduler serves 'volcano' but has no ready replica" in res["cause"]
        ), res["cause"]
        assert _leftovers(core) == []
    finally:
        apps.patch_namespaced_deployment(VC[1], VC[0], {"spec": {"replicas": 1}})
        _rolled_out(volcano, apps, core, 1, lambda a: True)


def test_role_sizes_its_gangs_node_by_node(volcano, api, core, added_nodes):
    """3 nodes x 2 GPUs + 2 nodes x 1 GPU (the 4 x 1 GPU nodes cordoned): 8 GPUs free but 3 slots of 2."""
    cordoned = [n.metadata.name for n in core.list_node(label_selector="nvidia.com/gpu.present=true").items]
    for n in cordoned:
        core.patch_node(n, {"spec": {"unschedulable": True}})
    try:
        for gpus in (2, 2, 2, 1, 1):
            added_nodes.append(nodes.add(api, gpus))
        nodes.wait_ready(api, names=added_nodes)
        refused = run_module(
            volcano,
            "gang_smoke_test",
            _smoke_args(replicas=4, expect="running", resources={"nvidia.com/gpu": 2}),
        )
        assert refused.get("failed") is True, refused
        assert "only 3 member(s) of 2 nvidia.com/gpu fit" in refused["msg"], refused["msg"]
        assert _leftovers(core) == []
        extra = {"gang_smoke_test_gpus_per_member": 2, "gang_smoke_test_timeout": 60}
        run = playbook(volcano, "smoke_test", timeout=600, **extra)
        assert run.rc == 0, run.failures()
        (results,) = run.facts("gang_smoke_test_results")
        assert [(r["verdict"], r["ok"]) for r in results] == [("gang_held_running", True), ("gang_held_pending", True)]
        runs = [
            h
            for play in run.data["plays"]
            for t in play["tasks"]
            for h in t["hosts"].values()
            if h.get("replicas") and h.get("verdict")
        ]
        assert [r["replicas"] for r in runs] == [3, 4], [r.get("replicas") for r in runs]
        # the last run returned with its namespace terminating: it goes within seconds, and nothing else is left
        assert runs[-1]["namespace_terminating"] is True, runs[-1]
        assert role_namespaces_gone(api) in ([], ["gangsched-smoke"])
    finally:
        for n in cordoned:
            core.patch_node(n, {"spec": {"unschedulable": False}})
    assert _leftovers(core) == []
