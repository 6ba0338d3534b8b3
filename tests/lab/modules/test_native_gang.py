"""kube-scheduler's own gang (Kubernetes 1.37, Workload and PodGroup of scheduling.k8s.io/v1beta1) as the smoke
test's fourth gang path, on a lab whose control plane runs the native gang's gates (4 GPU nodes x 1 GPU):
4 pods on 4 GPUs held running and 5 held pending, each on kube-scheduler's own decision on the PodGroup; the
no-gang control partial; the same for an Indexed Job the Job controller gangs; nothing left behind. The seeds'
scenarios replayed with the native_gang filter's objects: 6 on 4 GPUs all Pending, then all Running together once
the room grows; two gangs contending, one whole and one held. Faults for real: kube-scheduler frozen (SIGSTOP),
kube-scheduler restarted without the gate, and a control plane that does not serve the API — never a held verdict,
and the cause says which."""

from __future__ import annotations

import os
import signal
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _native
from ansible_run import playbook, run_module
from kubernetes import client as k
from lab_objects import role_namespaces_gone

from lab import kube, nodes, procs
from lab import versions as V
from lab.cluster import Lab

pytestmark = pytest.mark.skipif(V.KUBERNETES_MINOR != 37, reason="the native gang's API of 1.37 (v1beta1)")
GATES = "GenericWorkload=true,WorkloadWithJob=true"
RUN_LABEL = "gangsched.kubeflow/smoke-run"


@contextmanager
def _gates(value: str | None):
    before = os.environ.get("GANGSCHED_LAB_FEATURE_GATES")
    if value is None:
        os.environ.pop("GANGSCHED_LAB_FEATURE_GATES", None)
    else:
        os.environ["GANGSCHED_LAB_FEATURE_GATES"] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("GANGSCHED_LAB_FEATURE_GATES", None)
        else:
            os.environ["GANGSCHED_LAB_FEATURE_GATES"] = before


@pytest.fixture(scope="module")
def gated():
    """A lab of its own with the gates on (only while it starts: a lab started beside it runs upstream's defaults)."""
    the_lab = Lab(Path(f"{Lab().root}-native"))
    try:
        the_lab.down(log=lambda *_: None)
        with _gates(GATES):
            the_lab.up(gpu_nodes=4, gpus_per_node=1, cpu_nodes=1, log=lambda *_: None)
        yield the_lab
    finally:
        the_lab.down(log=lambda *_: None)


@pytest.fixture(scope="module")
def custom(gated):
    return k.CustomObjectsApi(kube.api(gated))


def _left(gated, custom) -> list[str]:
    core = k.CoreV1Api(kube.api(gated))
    out = [
        f"Pod {p.metadata.namespace}/{p.metadata.name}"
        for p in core.list_pod_for_all_namespaces(label_selector=RUN_LABEL).items
    ]
    for plural in ("workloads", "podgroups"):
        got = custom.list_cluster_custom_object(
            _native.GROUP, _native.SUPPORTED_VERSION, plural, label_selector=RUN_LABEL
        )
        out += [f"{plural} {o['metadata']['namespace']}/{o['metadata']['name']}" for o in got["items"]]
    out += [f"Namespace {n.metadata.name}" for n in core.list_namespace(label_selector=RUN_LABEL).items]
    return out


def _smoke(the_lab, **args) -> dict:
    return run_module(the_lab, "gang_smoke_test", {"gang_scheduler": "native", "timeout": 90, **args})


def test_pods_fit_run_together_and_one_more_is_held(gated, custom):
    ran = _smoke(gated, replicas=4, expect="running")
    assert not ran.get("failed"), ran.get("msg") or ran.get("cause")
    assert ran["verdict"] == "gang_held_running", ran
    assert ran["gang"]["podgroup_scheduled"] is True and ran["gang"]["podgroup"]["scheduled"] == "True", ran["gang"]
    assert ran["liveness"]["canary_seconds"] is not None
    held = _smoke(gated, replicas=5, expect="pending", control=True)
    assert not held.get("failed"), held.get("msg") or held.get("cause")
    assert held["verdict"] == "gang_held_pending" and held["gang"]["bound"] == [], held
    assert "minCount (5) cannot be satisfied" in held["gang"]["podgroup_unschedulable"], held["gang"]
    # the members' own marks vary (the gang's refusal, or the filter's "Insufficient nvidia.com/gpu" for the one
    # that found no node): the verdict rests on the PodGroup's condition
    marks = list(held["gang"]["unschedulable"].values())
    assert len(marks) == 5 and any(_native.REJECTION in m for m in marks), marks
    assert held["control"]["verdict"] == "partial" and len(held["control"]["bound"]) == 4, held["control"]
    assert held["left_behind"] == [] and _left(gated, custom) == []
    info = run_module(gated, "gang_info", {})
    native = info["native_gang"]
    assert (native["served_versions"], native["version"], native["supported"]) == (["v1beta1"], "v1beta1", True)
    assert native["kube_scheduler_gate"] is True and native["unsupported_reason"] is None, native
    assert not [p for p in info["problems"] if "feature gate" in p["message"]], info["problems"]


def test_an_indexed_job_the_job_controller_gangs(gated, custom):
    ran = _smoke(gated, workload="job", replicas=4, expect="running")
    assert ran.get("verdict") == "gang_held_running", ran
    assert ran["gang"]["podgroup"]["name"].startswith(f"smoke-{ran['run_id']}-gang"), ran["gang"]["podgroup"]
    held = _smoke(gated, workload="job", replicas=5, expect="pending")
    assert held.get("verdict") == "gang_held_pending" and held["gang"]["bound"] == [], held
    assert held["left_behind"] == [] and _left(gated, custom) == []
    batch = k.BatchV1Api(kube.api(gated))
    assert batch.list_job_for_all_namespaces(label_selector=RUN_LABEL).items == []


def test_the_smoke_test_playbook_proves_the_native_gang(gated, custom):
    """playbooks/smoke_test.yml on a cluster whose control plane runs the native gang: the role sizes the gangs from
    the free GPUs and proves both verdicts; a Kubeflow workload for it is refused by the role's preflight."""
    run = playbook(gated, "smoke_test", gangsched_gang_scheduler="native")
    assert run.rc == 0, run.failures()
    got = [
        r["verdict"]
        for name in ("Fitting gang runs as a whole", "Oversized gang stays entirely Pending")
        for r in run.results(f"gangsched.kubeflow.gang_smoke_test : {name}")
    ]
    assert got == ["gang_held_running", "gang_held_pending"], got
    # the last run returned with its namespace terminating: it goes within seconds, and nothing else is left
    (held,) = run.results("gangsched.kubeflow.gang_smoke_test : Oversized gang stays entirely Pending")
    assert held["namespace_terminating"] is True, held
    assert role_namespaces_gone(kube.api(gated)) in ([], ["gangsched-smoke"])
    assert _left(gated, custom) == []
    refused = playbook(gated, "smoke_test", gangsched_gang_scheduler="native", gang_smoke_test_workload="pytorchjob")
    assert refused.rc != 0 and "use workload=pods or workload=job for the native gang" in refused.failures(), (
        refused.failures()
    )


def _gang(ns: str, name: str, members: int) -> list[dict]:
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{name}-{i}", "namespace": ns, "labels": {"seed": name}},
            "spec": {
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "c", "image": "pause", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
            },
        }
        for i in range(members)
    ]
    return _native.gang_pods(pods, name=name)


def _phases(core, ns: str, name: str) -> list[bool]:
    return [bool(p.spec.node_name) for p in core.list_namespaced_pod(ns, label_selector=f"seed={name}").items]


def _wait(pred, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.5)
    raise AssertionError(f"not within {timeout}s: {what}")


def test_the_seeds_replayed(gated, namespace_native, added_native_nodes):
    core = k.CoreV1Api(kube.api(gated))
    ns = namespace_native
    # six members on four GPUs: none bound, every member refused as one gang
    kube.apply(gated, _gang(ns, "six", 6))
    _wait(lambda: len(_phases(core, ns, "six")) == 6, 30, "six pods")
    time.sleep(8)
    assert _phases(core, ns, "six") == [False] * 6
    # the room grows by two GPUs: all six bound together (within seconds of each other)
    for n in range(2):
        added_native_nodes.append(nodes.add(kube.api(gated), gpus=1, name=f"gpu-grow-{n}"))
    _wait(lambda: _phases(core, ns, "six") == [True] * 6, 60, "all six bound once there are six GPUs")
    bound_at = [
        c.last_transition_time
        for p in core.list_namespaced_pod(ns, label_selector="seed=six").items
        for c in p.status.conditions or []
        if c.type == "PodScheduled" and c.status == "True"
    ]
    assert (max(bound_at) - min(bound_at)).total_seconds() <= 5, bound_at
    for p in core.list_namespaced_pod(ns, label_selector="seed=six").items:
        core.delete_namespaced_pod(p.metadata.name, ns, grace_period_seconds=0)
    _wait(lambda: not _phases(core, ns, "six"), 60, "six gone")
    # two gangs of four on six GPUs: one whole, the other wholly held
    kube.apply(gated, _gang(ns, "left", 4) + _gang(ns, "right", 4))
    _wait(lambda: sorted([sum(_phases(core, ns, "left")), sum(_phases(core, ns, "right"))]) == [0, 4], 60, "one of two")
    time.sleep(8)
    assert sorted([sum(_phases(core, ns, "left")), sum(_phases(core, ns, "right"))]) == [0, 4]


@pytest.fixture
def namespace_native(gated):
    core = k.CoreV1Api(kube.api(gated))
    kube.ensure_namespace(core, "seeds")
    yield "seeds"
    kube.delete_namespace(core, "seeds", timeout=120)


@pytest.fixture
def added_native_nodes(gated):
    added: list[str] = []
    yield added
    for name in added:
        nodes.remove(kube.api(gated), name)


def _scheduler_pid(the_lab) -> int:
    pid = procs.read_pid(the_lab.pods / "kube-system_kube-scheduler" / "kube-scheduler.pid")
    assert procs.alive(pid), pid
    return pid


def test_a_frozen_kube_scheduler_is_named(gated, custom):
    pid = _scheduler_pid(gated)
    os.killpg(pid, signal.SIGSTOP)
    try:
        res = _smoke(gated, replicas=5, expect="pending", liveness_timeout=10)
    finally:
        os.killpg(pid, signal.SIGCONT)
    assert res.get("verdict") == "error" and res.get("failed"), res
    assert "did not bind the liveness canary" in res["cause"], res["cause"]
    assert _left(gated, custom) == []


def test_a_kube_scheduler_without_the_gate_is_named(gated, custom):
    before = _scheduler_pid(gated)
    with _gates(None):
        gated.write_scheduler_manifest()  # the runner restarts kube-scheduler without --feature-gates
    try:
        _wait(
            lambda: procs.alive(procs.read_pid(gated.pods / "kube-system_kube-scheduler" / "kube-scheduler.pid"))
            and procs.read_pid(gated.pods / "kube-system_kube-scheduler" / "kube-scheduler.pid") != before,
            30,
            "kube-scheduler restarted",
        )
        res = _smoke(gated, replicas=5, expect="pending", liveness_timeout=60)
        assert res.get("verdict") == "error" and res.get("failed"), res
        assert "never marked its PodGroup" in res["cause"] and "GenericWorkload" in res["cause"], res["cause"]
        assert _left(gated, custom) == []
        info = run_module(gated, "gang_info", {})
        assert info["native_gang"]["kube_scheduler_gate"] is False, info["native_gang"]
        (p,) = [p for p in info["problems"] if "kube-scheduler runs without" in p["message"]]
        assert p["object"].startswith("Pod kube-system/kube-scheduler") and "one by one" in p["message"], p
    finally:
        with _gates(GATES):
            gated.write_scheduler_manifest()
        _wait(
            lambda: procs.read_pid(gated.pods / "kube-system_kube-scheduler" / "kube-scheduler.pid") != before,
            30,
            "kube-scheduler restarted with the gate",
        )


def test_operators_and_runtimes_refuse_the_native_gang(gated):
    op = run_module(gated, "operator_gang", {"operator": "training_operator", "gang_scheduler": "native"})
    assert op.get("failed") and "cannot put its pods in a native gang" in op["msg"], op
    rt = run_module(gated, "trainer_runtime_gang", {"name": "torch-distributed", "gang_scheduler": "native"})
    assert rt.get("failed") and "cannot put its pods in a native gang" in rt["msg"], rt
    job = run_module(gated, "gang_smoke_test", {"gang_scheduler": "native", "workload": "pytorchjob"})
    assert job.get("failed") and "no Kubeflow operator or Trainer runtime" in job["msg"], job


def test_a_control_plane_without_the_api_is_refused(lab):
    """Upstream's defaults (the lab's own control plane): the API is not served; refused, nothing created."""
    res = run_module(lab, "gang_smoke_test", {"gang_scheduler": "native", "replicas": 2})
    assert res.get("failed") and "does not serve Workloads and PodGroups" in res["msg"], res
    assert "--runtime-config=scheduling.k8s.io/v1beta1=true" in res["msg"] and "nothing was created" in res["msg"]
    core = k.CoreV1Api(kube.api(lab))
    assert core.list_namespace(label_selector=RUN_LABEL).items == []
    native = run_module(lab, "gang_info", {})["native_gang"]
    assert native["served_versions"] == [] and native["supported"] is False, native
    assert "does not serve Workloads and PodGroups" in native["unsupported_reason"]
