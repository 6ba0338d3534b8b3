"""The problems gang_info reports about Kubeflow Trainer v2: a runtime's podGroupPolicy without (or with
the wrong) schedulerName, no scheduler for the policy, limits without requests; the PodGroup CRD missing or
newer than Trainer's pod; a TrainJob and a Kubeflow v1 job sharing one PodGroup; Trainer v2.1.x ignoring a
TrainJob's resourcesPerNode. Each with a case that triggers it and one that does not."""

from __future__ import annotations

import copy

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _trainer_runtime_problems

SP = "scheduler-plugins-scheduler"


def _sched(kind, names, ready=True, ns="ns", name="sched"):
    return {
        "kind": kind,
        "namespace": ns,
        "name": name,
        "source": "Deployment",
        "ready": ready,
        "scheduler_names": list(names),
        "gang_profiles": list(names),
    }


SP_SCHED = _sched("scheduler_plugins", [SP], ns="scheduler-plugins", name=SP)
SP_DEFAULT = _sched("scheduler_plugins", ["default-scheduler"], ns="kube-system", name="kube-scheduler-cp")
VOLCANO = _sched("volcano", ["volcano"], ns="volcano-system", name="volcano-scheduler")
KOORD = _sched("koordinator", ["koord-scheduler"], ns="koordinator-system", name="koord-scheduler")


def _runtime(
    name="torch",
    policy="coscheduling",
    names=(SP,),
    requests=True,
    kind="ClusterTrainingRuntime",
    namespace=None,
):
    res = {"limits": {"nvidia.com/gpu": "1"}}
    if requests:
        res["requests"] = {"nvidia.com/gpu": "1"}
    jobs = []
    for i, n in enumerate(names):
        pod = {"containers": [{"name": "node", "resources": copy.deepcopy(res)}]}
        if n:
            pod["schedulerName"] = n
        jobs.append({"name": f"job{i}", "template": {"spec": {"template": {"spec": pod}}}})
    spec = {"template": {"spec": {"replicatedJobs": jobs}}}
    if policy == "coscheduling":
        spec["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 60}}
    elif policy == "volcano":
        spec["podGroupPolicy"] = {"volcano": {}}
    md = {"name": name}
    if namespace:
        md["namespace"] = namespace
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind, "metadata": md, "spec": spec}


@pytest.mark.parametrize(
    "runtime,schedulers,expect",
    [
        # (1) no schedulerName: the default scheduler ignores the PodGroup
        (_runtime(names=(None,)), [SP_SCHED], ["set no schedulerName (Trainer never sets one)"]),
        (_runtime(names=(SP, None)), [SP_SCHED], ["replicated job(s) job1 set no schedulerName"]),
        # ... unless scheduler-plugins runs Coscheduling as the default scheduler
        (_runtime(names=(None,)), [SP_DEFAULT], []),
        # (1) different names per replicated job
        (_runtime(names=(SP, "other")), [SP_SCHED], [f"job0: {SP}, job1: other"]),
        # (2) a name served by a scheduler that does not honour this policy's PodGroup
        (_runtime(names=("volcano",)), [SP_SCHED, VOLCANO], ["Deployment volcano-system/volcano-scheduler serves"]),
        (_runtime(names=("koord-scheduler",)), [SP_SCHED, KOORD], ["koordinator-system/koord-scheduler serves"]),
        (_runtime(policy="volcano", names=(SP,)), [SP_SCHED, VOLCANO], ["without honouring the volcano PodGroup"]),
        # (2) a name nobody serves
        (_runtime(names=("scheduler-plugins",)), [SP_SCHED], ["no running scheduler-plugins (Coscheduling)"]),
        # (2) no scheduler for the policy at all (or not ready)
        (_runtime(), [VOLCANO], ["no scheduler-plugins (Coscheduling) scheduler is running"]),
        (_runtime(), [_sched("scheduler_plugins", [SP], ready=False)], ["is running"]),
        (_runtime(policy="volcano", names=("volcano",)), [SP_SCHED], ["no Volcano scheduler is running"]),
        # (4) limits without requests
        (_runtime(requests=False), [SP_SCHED], ["job0/node (nvidia.com/gpu) with limits but no requests"]),
        # none: the gang is set up right, or there is no gang at all
        (_runtime(), [SP_SCHED], []),
        (_runtime(names=(SP, SP)), [SP_SCHED], []),
        (_runtime(policy="volcano", names=("volcano",)), [VOLCANO], []),
        (_runtime(policy=None, names=(None,), requests=False), [], []),
    ],
    ids=[
        "no-scheduler-name",
        "one-job-without",
        "default-scheduler-is-coscheduling",
        "different-names",
        "coscheduling-on-volcano",
        "coscheduling-on-koord",
        "volcano-on-scheduler-plugins",
        "name-nobody-serves",
        "no-scheduler-plugins",
        "scheduler-not-ready",
        "no-volcano",
        "limits-only",
        "ok",
        "ok-two-jobs",
        "ok-volcano",
        "no-policy",
    ],
)
def test_runtime_problems(runtime, schedulers, expect):
    probs = _trainer_runtime_problems.runtime_problems(runtime, schedulers)
    assert len(probs) == len(expect), probs
    for p, text in zip(probs, expect, strict=True):
        assert p["object"] == "ClusterTrainingRuntime torch"
        assert p["message"].startswith("ClusterTrainingRuntime torch "), p
        assert text in p["message"], p
        assert p["fix"]


def test_the_fix_names_the_running_scheduler_and_the_tools():
    (p,) = _trainer_runtime_problems.runtime_problems(_runtime(names=(None,)), [SP_SCHED, VOLCANO])
    assert f"set schedulerName to {SP!r} in every replicated job" in p["fix"]
    assert "gangsched.kubeflow.trainer_runtime_gang" in p["fix"]
    (p,) = _trainer_runtime_problems.runtime_problems(_runtime(policy="volcano", names=(None,)), [SP_SCHED, VOLCANO])
    assert "schedulerName to 'volcano'" in p["fix"]
    (p,) = _trainer_runtime_problems.runtime_problems(_runtime(requests=False), [SP_SCHED])
    assert p["fix"].startswith("set requests (equal to the limits)")
    (p,) = _trainer_runtime_problems.runtime_problems(_runtime(), [])
    assert "role gangsched.kubeflow.scheduler_plugins" in p["fix"] and "restart Trainer" in p["fix"]


@pytest.mark.parametrize(
    "schedulers,expect",
    [
        ([SP_SCHED, VOLCANO, KOORD], f"{SP!r}"),
        ([SP_SCHED, _sched("scheduler_plugins", ["b-gang"])], f"one of 'b-gang', {SP!r}"),
        ([VOLCANO], "none runs: install scheduler-plugins"),
    ],
    ids=["one", "several", "none"],
)
def test_scheduler_for_coscheduling(schedulers, expect):
    assert expect in _trainer_runtime_problems.scheduler_for("coscheduling", schedulers)


def test_a_namespaced_runtime_is_named_with_its_namespace():
    rt = _runtime(names=(None,), kind="TrainingRuntime", namespace="team-a")
    (p,) = _trainer_runtime_problems.runtime_problems(rt, [SP_SCHED])
    assert p["object"] == "TrainingRuntime team-a/torch"


@pytest.mark.parametrize(
    "runtime,crd_ok,ready",
    [
        (_runtime(), {"coscheduling": True}, True),
        (_runtime(), {"coscheduling": False}, False),  # Trainer does not follow the PodGroups
        (_runtime(names=(None,)), {"coscheduling": True}, False),
        (_runtime(requests=False), {"coscheduling": True}, False),
        (_runtime(policy=None), {"coscheduling": True}, False),
    ],
    ids=["ready", "crd-not-followed", "no-scheduler-name", "limits-only", "no-policy"],
)
def test_runtime_fact(runtime, crd_ok, ready):
    fact = _trainer_runtime_problems.runtime_fact(runtime, [SP_SCHED], crd_ok)
    assert fact["gang_ready"] is ready
    assert (fact["kind"], fact["namespace"], fact["name"]) == ("ClusterTrainingRuntime", None, "torch")
    assert fact["gang_policy"] == ("coscheduling" if runtime["spec"].get("podGroupPolicy") else None)
    assert set(fact["scheduler_names"]) == {"job0"}


def test_runtime_fact_lists_each_jobs_scheduler_name():
    fact = _trainer_runtime_problems.runtime_fact(_runtime(names=(SP, None)), [SP_SCHED], {"coscheduling": True})
    assert fact["scheduler_names"] == {"job0": SP, "job1": None}


# ---- the PodGroup CRD and Trainer's start ------------------------------------------------------------
CRD = "podgroups.scheduling.x-k8s.io"
TRAINER = {"deployment": "kubeflow-system/kubeflow-trainer-controller-manager", "started": "2025-06-01T10:00:00Z"}


def _crds(created="2025-06-01T09:00:00Z", established=True, present=True):
    fact = {"established": established, "created": created} if present else None
    return {"coscheduling": (CRD, fact), "volcano": ("podgroups.scheduling.volcano.sh", None)}


@pytest.mark.parametrize(
    "runtimes,crds,controllers,expect",
    [
        ([_runtime()], _crds(present=False), [TRAINER], [("CustomResourceDefinition " + CRD, "is missing")]),
        ([_runtime()], _crds(established=False), [TRAINER], [("CustomResourceDefinition " + CRD, "not Established")]),
        (
            [_runtime()],
            _crds(created="2025-06-01T10:05:00Z"),
            [TRAINER],
            [("Deployment kubeflow-system/kubeflow-trainer-controller-manager", "before CustomResourceDefinition")],
        ),
        ([_runtime()], _crds(), [TRAINER], []),  # the CRD first, then Trainer
        ([_runtime()], _crds(created="2025-06-01T10:00:00Z"), [TRAINER], []),  # same second: not after
        ([_runtime()], _crds(created="2025-06-01T10:05:00Z"), [{**TRAINER, "started": None}], []),  # no pod runs
        ([_runtime(policy=None)], _crds(present=False), [TRAINER], []),  # no policy: no CRD needed
    ],
    ids=["missing", "not-established", "created-after", "created-before", "same-second", "no-pod", "no-policy"],
)
def test_podgroup_crd_problems(runtimes, crds, controllers, expect):
    probs = _trainer_runtime_problems.podgroup_crd_problems(runtimes, crds, controllers)
    assert [(p["object"], t) for p, (_o, t) in zip(probs, expect, strict=True)] == [(o, t) for o, t in expect]
    for p, (_o, text) in zip(probs, expect, strict=True):
        assert text in p["message"] and "ClusterTrainingRuntime torch" in p["message"], p


def test_crd_order_fix_is_the_rollout_restart_of_trainers_deployment():
    (p,) = _trainer_runtime_problems.podgroup_crd_problems(
        [_runtime()], _crds(created="2025-06-01T10:05:00Z"), [TRAINER]
    )
    restart = "kubectl -n kubeflow-system rollout restart deployment/kubeflow-trainer-controller-manager"
    assert p["fix"] == f"restart Trainer: {restart}"
    assert "2025-06-01T10:00:00Z" in p["message"] and "2025-06-01T10:05:00Z" in p["message"]
    assert _trainer_runtime_problems.crd_followed(_crds()["coscheduling"][1], [TRAINER])
    assert not _trainer_runtime_problems.crd_followed(
        _crds(created="2025-06-01T10:05:00Z")["coscheduling"][1], [TRAINER]
    )
    assert not _trainer_runtime_problems.crd_followed(None, [TRAINER])
    (p,) = _trainer_runtime_problems.podgroup_crd_problems([_runtime()], _crds(present=False), [TRAINER])
    assert p["fix"].startswith("install scheduler-plugins with its CRDs") and p["fix"].endswith(f"({restart})")


# ---- a TrainJob and a Kubeflow v1 job of one name ----------------------------------------------------
def _trainjob(ns, name, runtime="torch", kind="ClusterTrainingRuntime", resources=None):
    tj = {
        "metadata": {"namespace": ns, "name": name},
        "spec": {"runtimeRef": {"name": runtime, "kind": kind, "apiGroup": "trainer.kubeflow.org"}, "trainer": {}},
    }
    if resources:
        tj["spec"]["trainer"]["resourcesPerNode"] = resources
    return tj


PYTORCHJOB = {
    "kind": "PyTorchJob",
    "namespace": "team-a",
    "name": "llm",
    "operators": {"scheduler_plugins": "training-operator"},
}
VC_PYTORCHJOB = {**PYTORCHJOB, "operators": {"volcano": "training-operator"}}
VC_MPIJOB = {**PYTORCHJOB, "kind": "MPIJob", "operators": {"volcano": "mpi-operator"}}
RUNTIMES = [
    _runtime(),
    _runtime(name="vc", policy="volcano", names=("volcano",)),
    _runtime(name="plain", policy=None),
    _runtime(name="local", kind="TrainingRuntime", namespace="team-a"),
]


@pytest.mark.parametrize(
    "trainjob,jobs,clash",
    [
        (_trainjob("team-a", "llm"), [PYTORCHJOB], "scheduler_plugins"),
        (_trainjob("team-a", "llm", "local", "TrainingRuntime"), [PYTORCHJOB], "scheduler_plugins"),
        (_trainjob("team-a", "llm", "vc"), [VC_PYTORCHJOB], "volcano"),  # Volcano's PodGroup, named alike
        (_trainjob("team-a", "llm", "vc"), [VC_MPIJOB], "volcano"),
        (_trainjob("team-a", "llm"), [{**PYTORCHJOB, "namespace": "team-b"}], None),  # another namespace
        (_trainjob("team-a", "llm"), [{**PYTORCHJOB, "name": "llm-2"}], None),  # another name
        (_trainjob("team-a", "llm", "vc"), [PYTORCHJOB], None),  # one PodGroup each, in two API groups
        (_trainjob("team-a", "llm"), [VC_PYTORCHJOB], None),
        (_trainjob("team-a", "llm", "plain"), [PYTORCHJOB, VC_PYTORCHJOB], None),  # no PodGroup for the TrainJob
        (_trainjob("team-a", "llm", "missing"), [PYTORCHJOB], None),  # runtime not found
        (_trainjob("team-b", "llm", "local", "TrainingRuntime"), [{**PYTORCHJOB, "namespace": "team-b"}], None),
        (_trainjob("team-a", "llm"), [], None),
    ],
    ids=[
        "clash",
        "clash-namespaced-runtime",
        "clash-volcano",
        "clash-volcano-mpijob",
        "other-namespace",
        "other-name",
        "volcano-runtime-sp-job",
        "sp-runtime-volcano-job",
        "no-policy",
        "unknown-runtime",
        "runtime-of-another-namespace",
        "no-v1-job",
    ],
)
def test_name_clash_problems(trainjob, jobs, clash):
    probs = _trainer_runtime_problems.name_clash_problems([trainjob], RUNTIMES, jobs)
    assert bool(probs) is bool(clash), probs
    if clash:
        (p,) = probs
        (job,) = jobs
        group = {"volcano": "scheduling.volcano.sh", "scheduler_plugins": "scheduling.x-k8s.io"}[clash]
        assert p["object"] == "TrainJob team-a/llm"
        assert f"{job['kind']} team-a/llm" in p["message"] and f"{group} team-a/llm" in p["message"]
        assert job["operators"][clash] in p["message"] and p["fix"].startswith("rename one of them")
        assert ("Volcano" in p["message"]) is (clash == "volcano")


# ---- Trainer v2.1.x and resourcesPerNode -------------------------------------------------------------
GPUS = {"limits": {"nvidia.com/gpu": "2"}}


@pytest.mark.parametrize(
    "version,trainjob,reported",
    [
        ("v2.1.0", _trainjob("team-a", "big", resources=GPUS), True),
        ("v2.1.3", _trainjob("team-a", "big", "vc", resources=GPUS), True),
        ("v2.2.0", _trainjob("team-a", "big", resources=GPUS), False),
        ("v2.0.0", _trainjob("team-a", "big", resources=GPUS), False),
        ("latest", _trainjob("team-a", "big", resources=GPUS), False),
        (None, _trainjob("team-a", "big", resources=GPUS), False),
        ("v2.1.0", _trainjob("team-a", "big"), False),  # no resourcesPerNode
        ("v2.1.0", _trainjob("team-a", "big", "plain", resources=GPUS), False),  # no PodGroup
    ],
    ids=["v2.1.0", "v2.1.3-volcano", "v2.2.0", "v2.0.0", "unknown-tag", "no-version", "no-resources", "no-gang"],
)
def test_resources_per_node_problems(version, trainjob, reported):
    probs = _trainer_runtime_problems.resources_per_node_problems(version, [trainjob], RUNTIMES)
    assert bool(probs) is reported, probs
    if reported:
        (p,) = probs
        assert p["object"] == "TrainJob team-a/big"
        assert "kubeflow/trainer#2525" in p["message"] and version in p["message"]
        assert p["fix"].startswith("upgrade Trainer to v2.2.0 or later")


def test_a_runtime_naming_two_gang_plugins_is_named_and_one_plugin_is_not():
    two = _runtime()
    two["spec"]["podGroupPolicy"]["volcano"] = {}
    (p,) = _trainer_runtime_problems.runtime_problems(two, [SP_SCHED, VOLCANO])
    assert "names coscheduling and volcano" in p["message"] and "keep one key" in p["fix"], p
    assert _trainer_runtime_problems.runtime_problems(_runtime(), [SP_SCHED, VOLCANO]) == []
