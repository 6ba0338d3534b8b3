"""gang_info on Kubeflow Trainer v2 in the lab (JobSet, Trainer, scheduler-plugins' second scheduler and
training-operator, run by the runner), through Ansible: Trainer installed before scheduler-plugins'
PodGroup CRD is reported on its Deployment, and the rollout restart the fix names clears it; a
coscheduling runtime without schedulerName is reported and the runtime through the trainer_runtime_gang
filter is not; a TrainJob and a PyTorchJob of one name (both ganged on scheduler-plugins, one PodGroup)
are reported until the PyTorchJob is renamed. The facts list Trainer's controller, version, start and
runtimes."""

from __future__ import annotations

import time

import pytest
from ansible_run import run_module
from kubernetes import client as k

from lab import kube, scenarios
from lab import versions as V

TRAINER_DEP = f"Deployment {scenarios.TRAINER_NS}/{scenarios.TRAINER_NAME}"
CRD = "podgroups.scheduling.x-k8s.io"


@pytest.fixture(scope="module")
def stack(lab):
    # Trainer first, the PodGroup CRD after it: the order the CRD-order problem is about
    scenarios.install_jobset(lab)
    scenarios.install_trainer(lab)
    time.sleep(1.1)  # creationTimestamp and the pod's start have 1 s resolution
    scenarios.install_scheduler_plugins(lab)
    kube.apply(lab, [scenarios.training_runtime("gang")])
    return lab


def _info(lab) -> dict:
    res = run_module(lab, "gang_info", {})
    assert not res.get("failed"), res.get("msg")
    return res


def _about(info: dict, obj: str) -> list[dict]:
    return [p for p in info["problems"] if p["object"] == obj]


def _runtime(info: dict, name: str, namespace: str | None = None) -> dict:
    (rt,) = [r for r in info["trainer"]["runtimes"] if (r["namespace"], r["name"]) == (namespace, name)]
    return rt


def _trainer_serving(core) -> bool:
    """Trainer's webhook Service lists exactly the running pod (not the one the restart replaced)."""
    pods = [
        p
        for p in core.list_namespaced_pod(scenarios.TRAINER_NS, label_selector=f"app={scenarios.TRAINER_NAME}").items
        if p.metadata.deletion_timestamp is None and p.status.pod_ip
    ]
    ep = core.read_namespaced_endpoints(scenarios.TRAINER_NAME, scenarios.TRAINER_NS)
    ready = {a.ip for s in ep.subsets or [] for a in s.addresses or []}
    return len(pods) == 1 and ready == {pods[0].status.pod_ip}


def test_crd_created_after_trainer_started_is_reported_until_trainer_restarts(stack, core):
    info = _info(stack)
    (p,) = _about(info, TRAINER_DEP)
    assert f"before CustomResourceDefinition {CRD} was created" in p["message"], p
    assert "ClusterTrainingRuntime gang" in p["message"], p
    t = info["trainer"]
    assert t["installed"] is True
    (ctl,) = t["controllers"]
    assert (ctl["deployment"], ctl["version"], ctl["ready"]) == (
        f"{scenarios.TRAINER_NS}/{scenarios.TRAINER_NAME}",
        V.TRAINER,
        True,
    ), ctl
    assert ctl["started"] and ctl["started"] < info["podgroup_crds"][CRD]["created"], (ctl, info["podgroup_crds"])
    assert _runtime(info, "gang") == {
        "kind": "ClusterTrainingRuntime",
        "namespace": None,
        "name": "gang",
        "gang_policy": "coscheduling",
        "scheduler_names": {"node": scenarios.SP_NAME},
        "gang_ready": False,  # Trainer does not follow its PodGroups yet
    }
    # read-only: the same facts in check mode
    assert run_module(stack, "gang_info", {}, check=True)["trainer"] == t

    # the fix, as written: kubectl -n <ns> rollout restart deployment/<name>
    prefix = "restart Trainer: kubectl "
    assert p["fix"].startswith(prefix), p
    kube.kubectl(stack, *p["fix"][len(prefix) :].split())
    kube.kubectl(
        stack, "-n", scenarios.TRAINER_NS, "rollout", "status", f"deployment/{scenarios.TRAINER_NAME}", "--timeout=120s"
    )
    kube.wait_for(lambda: _trainer_serving(core), 60, "Trainer's webhook served by the restarted pod")
    info = _info(stack)
    assert _about(info, TRAINER_DEP) == [], info["problems"]
    assert info["trainer"]["controllers"][0]["started"] >= info["podgroup_crds"][CRD]["created"]
    assert _runtime(info, "gang")["gang_ready"] is True


def test_runtime_without_scheduler_name_is_reported_then_fixed_by_the_filter(stack, namespace):
    from ansible_collections.gangsched.kubeflow.plugins.filter.gang import trainer_runtime_gang

    trap = scenarios.training_runtime("trap")
    pod = trap["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod.pop("schedulerName")
    local = scenarios.training_runtime("local")  # a namespaced runtime without a gang: listed, not a problem
    local.update(kind="TrainingRuntime")
    local["metadata"]["namespace"] = namespace
    local["spec"].pop("podGroupPolicy")
    kube.apply(stack, [trap, local])
    try:
        info = _info(stack)
        (p,) = _about(info, "ClusterTrainingRuntime trap")
        assert "replicated job(s) node set no schedulerName" in p["message"], p
        assert "starts partially" in p["message"], p
        assert f"set schedulerName to {scenarios.SP_NAME!r}" in p["fix"], p
        assert "gangsched.kubeflow.trainer_runtime_gang" in p["fix"], p
        assert _runtime(info, "trap")["scheduler_names"] == {"node": None}
        assert _runtime(info, "trap")["gang_ready"] is False
        assert _runtime(info, "local", namespace) == {
            "kind": "TrainingRuntime",
            "namespace": namespace,
            "name": "local",
            "gang_policy": None,
            "scheduler_names": {"node": scenarios.SP_NAME},
            "gang_ready": False,
        }
        assert _about(info, f"TrainingRuntime {namespace}/local") == []

        # the fix the message names: the filter, with the scheduler it names
        kube.apply(stack, [trainer_runtime_gang(trap, "scheduler_plugins", scheduler_name=scenarios.SP_NAME)])
        info = _info(stack)
        assert _about(info, "ClusterTrainingRuntime trap") == [], info["problems"]
        assert _runtime(info, "trap")["scheduler_names"] == {"node": scenarios.SP_NAME}
        assert _runtime(info, "trap")["gang_ready"] is True
    finally:
        kube.delete(stack, [trap])


def test_trainjob_and_pytorchjob_of_one_name_are_reported_until_one_is_renamed(stack, api, namespace):
    scenarios.install_training_operator(stack, gang_flag=f"--gang-scheduler-name={scenarios.SP_NAME}")
    kube.apply(stack, [scenarios.trainjob(namespace, "twin", "gang", 1), scenarios.pytorchjob(namespace, "twin", 1)])
    info = _info(stack)
    (p,) = _about(info, f"TrainJob {namespace}/twin")
    assert f"PyTorchJob {namespace}/twin" in p["message"], p
    assert f"scheduling.x-k8s.io {namespace}/twin" in p["message"], p
    assert p["fix"].startswith("rename one of them"), p

    # renamed: the PyTorchJob deleted and made again under another name
    kube.kubectl(stack, "-n", namespace, "delete", "pytorchjob", "twin", "--timeout=60s")
    kube.apply(stack, [scenarios.pytorchjob(namespace, "twin-v1", 1)])
    info = _info(stack)
    assert _about(info, f"TrainJob {namespace}/twin") == [], info["problems"]
    jobs = k.CustomObjectsApi(api).list_namespaced_custom_object("kubeflow.org", "v1", namespace, "pytorchjobs")
    assert [j["metadata"]["name"] for j in jobs["items"]] == ["twin-v1"]


def test_a_runtime_naming_two_gang_plugins_is_accepted_by_trainers_crd_and_named(stack):
    """Trainer v2.2.0's CRD and webhook take a podGroupPolicy with both coscheduling and volcano: gang_info names it."""
    two = scenarios.training_runtime("two")
    two["spec"]["podGroupPolicy"]["volcano"] = {}
    kube.apply(stack, [two])
    try:
        (p,) = _about(_info(stack), "ClusterTrainingRuntime two")
        assert "names coscheduling and volcano" in p["message"] and "keep one key" in p["fix"], p
    finally:
        kube.delete(stack, [two])
