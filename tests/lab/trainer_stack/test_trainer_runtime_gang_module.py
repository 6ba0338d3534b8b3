"""trainer_runtime_gang against the lab (JobSet, Trainer v2 and scheduler-plugins' second scheduler, run
by the runner): bad inputs fail naming the object and the fix and change no runtime; a runtime as Trainer
ships them gets a gang-scheduled copy (check mode -> real -> idempotent, with diff, the scheduler name
derived from what runs) on which a TrainJob of 5 nodes on 4 GPUs stays wholly Pending and one of 4 runs
whole; another runtime is edited in place, idempotently, and taken back."""

from __future__ import annotations

import time

import pytest
from ansible_run import comparable, run_module
from kubernetes import client as k

from lab import kube, scenarios

G, V = "trainer.kubeflow.org", "v1alpha1"
HOLD = 5.0
SP = {"gang_scheduler": "scheduler_plugins"}


def _no_jobs(name: str) -> dict:
    rt = scenarios.stock_training_runtime(name)
    rt["spec"]["template"]["spec"]["replicatedJobs"] = []
    return rt


def _namespaced(ns: str, name: str) -> dict:
    rt = scenarios.stock_training_runtime(name)
    rt["kind"] = "TrainingRuntime"
    rt["metadata"]["namespace"] = ns
    return rt


@pytest.fixture(scope="module")
def trainer(trainer_stack, core):
    kube.ensure_namespace(core, "rt-b")
    kube.apply(
        trainer_stack,
        [
            scenarios.stock_training_runtime("stock"),
            scenarios.stock_training_runtime("inplace"),
            scenarios.stock_training_runtime("taken"),
            _no_jobs("empty"),
            _namespaced("rt-b", "local"),
        ],
    )
    return trainer_stack


def _co(api) -> k.CustomObjectsApi:
    return k.CustomObjectsApi(api)


def _runtimes(api) -> dict:
    """Every runtime in the cluster: (namespace or '', name) -> resourceVersion."""
    out = {}
    for plural in ("clustertrainingruntimes", "trainingruntimes"):
        for o in _co(api).list_cluster_custom_object(G, V, plural)["items"]:
            md = o["metadata"]
            out[(md.get("namespace", ""), md["name"])] = md["resourceVersion"]
    return out


def _get(api, name: str) -> dict | None:
    try:
        return _co(api).get_cluster_custom_object(G, V, "clustertrainingruntimes", name)
    except k.ApiException as e:
        if e.status == 404:
            return None
        raise


def _pods(rt: dict) -> list[dict]:
    return [rj["template"]["spec"]["template"]["spec"] for rj in rt["spec"]["template"]["spec"]["replicatedJobs"]]


def _same(res: dict) -> dict:
    """A result without what differs between a dry run and the real write by nature (the runtime's
    uid, resourceVersion, generation and creation time)."""
    out = comparable(res)
    rt = out.get("runtime")
    if rt:
        md = {
            k_: v
            for k_, v in rt["metadata"].items()
            if k_ not in ("uid", "resourceVersion", "creationTimestamp", "generation")
        }
        out["runtime"] = {**rt, "metadata": md}
    return out


# (id, options, text the message must hold)
BAD = [
    ("koordinator", {"name": "stock", "gang_scheduler": "koordinator"}, "cannot carry a Koordinator gang"),
    ("queue-with-scheduler-plugins", {"name": "stock", **SP, "queue": "research"}, "a queue is a Volcano setting"),
    ("schedule-timeout-zero", {"name": "stock", **SP, "schedule_timeout": 0}, "schedule_timeout=0"),
    ("api-timeout-zero", {"name": "stock", **SP, "api_timeout": 0}, "api_timeout must be >= 1"),
    ("runtime-not-found", {"name": "nope", **SP}, "ClusterTrainingRuntime nope not found"),
    ("name-invalid", {"name": "Stock_1", **SP}, "name='Stock_1' is not a valid runtime name"),
    ("gang-name-is-name", {"name": "stock", "gang_name": "stock", **SP}, "is the runtime itself"),
    (
        "gang-name-not-ours",
        {"name": "stock", "gang_name": "taken", **SP},
        "ClusterTrainingRuntime taken exists and is not a gang copy made by trainer_runtime_gang",
    ),
    (
        "scheduler-name-nobody-serves",
        {"name": "stock", **SP, "scheduler_name": "my-scheduler"},
        "Pods would stay Pending forever",
    ),
    (
        "volcano-without-its-crd",
        {"name": "stock", "gang_scheduler": "volcano"},
        "podgroups.scheduling.volcano.sh is missing or not Established",
    ),
    (
        "runtime-in-another-namespace",
        {"name": "local", "namespace": "rt-a", **SP},
        "TrainingRuntime rt-a/local not found: a TrainingRuntime local is in namespace rt-b: set namespace",
    ),
    (
        "cluster-runtime-asked-in-a-namespace",
        {"name": "stock", "namespace": "rt-b", **SP},
        "a ClusterTrainingRuntime stock exists: leave namespace unset",
    ),
    (
        "no-replicated-jobs",
        {"name": "empty", **SP},
        "ClusterTrainingRuntime empty has no spec.template.spec.replicatedJobs",
    ),
    (
        "absent-copy-not-ours",
        {"name": "stock", "gang_name": "taken", **SP, "state": "absent"},
        "refusing to delete it",
    ),
]


@pytest.mark.parametrize("args,text", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_fails_naming_the_fix_and_changes_nothing(trainer, api, args, text):
    before = _runtimes(api)
    res = run_module(trainer, "trainer_runtime_gang", args)
    assert res.get("failed") is True, res
    msg = res["msg"]
    assert text in msg, msg
    for python in ("Traceback", "Error(", "KeyError", "NoneType", "object has no attribute", "Internal error"):
        assert python not in msg, msg
    assert _runtimes(api) == before, "a refused run changed a runtime"


def test_copy_check_real_idempotent_then_holds_5_on_4_gpus_and_runs_4(trainer, api, core, ns):
    args = {"name": "stock", "gang_name": "stock-gang", **SP, "schedule_timeout": 600}
    before = _runtimes(api)

    check = run_module(trainer, "trainer_runtime_gang", args, check=True)
    assert check["changed"] is True, check
    assert check["scheduler_name"] == "scheduler-plugins-scheduler" and check["kind"] == "ClusterTrainingRuntime"
    assert check["diff"]["before"] == {} and check["diff"]["after"]["spec"]["podGroupPolicy"], check["diff"]
    assert _runtimes(api) == before and _get(api, "stock-gang") is None, "check mode changed the cluster"

    real = run_module(trainer, "trainer_runtime_gang", args)
    assert real["changed"] is True, real
    assert _same(real) == _same(check), "check-mode result differs from the real run"
    copy_ = _get(api, "stock-gang")
    assert copy_["metadata"]["labels"]["gangsched.kubeflow/gang-of"] == "stock"
    assert copy_["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gangsched.kubeflow"
    assert copy_["spec"]["podGroupPolicy"] == {"coscheduling": {"scheduleTimeoutSeconds": 600}}
    js = copy_["spec"]["template"]["spec"]
    assert js["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    assert js["successPolicy"]["operator"] == "All" and js["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    (pod,) = _pods(copy_)
    assert pod["schedulerName"] == "scheduler-plugins-scheduler" and pod["restartPolicy"] == "OnFailure"
    assert pod["containers"][0]["resources"]["requests"] == {"nvidia.com/gpu": "1"}
    assert _runtimes(api)[("", "stock")] == before[("", "stock")], "the runtime copied was changed"

    again = run_module(trainer, "trainer_runtime_gang", args)
    assert again["changed"] is False and again["changes"] == [], again
    assert again["diff"]["before"] == again["diff"]["after"]
    again_check = run_module(trainer, "trainer_runtime_gang", args, check=True)
    assert again_check["changed"] is False and _same(again_check) == _same(again)

    sel = "jobset.sigs.k8s.io/jobset-name="
    with kube.PodWatcher(trainer, ns, sel + "big") as w:
        kube.apply(trainer, [scenarios.trainjob(ns, "big", "stock-gang", 5)])
        kube.wait_for(lambda: kube.podgroup(api, ns, "big") is not None, 30, "the TrainJob's PodGroup")
        kube.wait_for(
            lambda: sum(
                any(c.type == "PodScheduled" and c.status == "False" for c in p.status.conditions or [])
                for p in core.list_namespaced_pod(ns, label_selector=sel + "big").items
            )
            == 5,
            60,
            "the scheduler to refuse all 5 pods",
        )
        time.sleep(HOLD)
        s = w.snapshot()
    assert len(s.pending()) == 5 and s.ever_bound() == set(), f"pods bound while the gang could not fit: {s.events}"
    assert kube.podgroup(api, ns, "big")["spec"]["minMember"] == 5
    _co(api).delete_namespaced_custom_object(G, V, ns, "trainjobs", "big")
    kube.wait_for(lambda: not core.list_namespaced_pod(ns, label_selector=sel + "big").items, 60, "big's pods gone")
    with kube.PodWatcher(trainer, ns, sel + "fits") as w:
        kube.apply(trainer, [scenarios.trainjob(ns, "fits", "stock-gang", 4)])
        kube.wait_for(lambda: len(w.snapshot().running()) == 4, 60, "all 4 pods Running")


def test_in_place_edit_is_idempotent_and_taken_back(trainer, api):
    args = {"name": "inplace", **SP}
    real = run_module(trainer, "trainer_runtime_gang", args)
    assert real["changed"] is True and "podGroupPolicy coscheduling" in real["changes"], real
    assert real["diff"]["before"]["spec"] != real["diff"]["after"]["spec"]
    rt = _get(api, "inplace")
    assert rt["spec"]["podGroupPolicy"] == {"coscheduling": {"scheduleTimeoutSeconds": 60}}
    assert _pods(rt)[0]["schedulerName"] == "scheduler-plugins-scheduler"
    assert real["runtime"]["metadata"]["resourceVersion"] == rt["metadata"]["resourceVersion"]
    rv = rt["metadata"]["resourceVersion"]
    again = run_module(trainer, "trainer_runtime_gang", args)
    assert again["changed"] is False, again
    assert run_module(trainer, "trainer_runtime_gang", args, check=True)["changed"] is False
    assert _get(api, "inplace")["metadata"]["resourceVersion"] == rv

    back_check = run_module(trainer, "trainer_runtime_gang", {**args, "state": "absent"}, check=True)
    assert back_check["changed"] is True and _get(api, "inplace")["metadata"]["resourceVersion"] == rv
    back = run_module(trainer, "trainer_runtime_gang", {**args, "state": "absent"})
    assert back["changed"] is True and _same(back) == _same(back_check), back
    rt = _get(api, "inplace")
    assert "podGroupPolicy" not in rt["spec"] and "schedulerName" not in _pods(rt)[0]
    assert run_module(trainer, "trainer_runtime_gang", {**args, "state": "absent"})["changed"] is False


def test_jobset_defaults_let_the_copy_run_without_jobsets_mutating_webhook(trainer, api, core, ns):
    """JobSet's defaulting webhook taken away for the test (and put back after it: the lab is shared)."""
    run_module(
        trainer, "trainer_runtime_gang", {"name": "stock", "gang_name": "stock-gang", **SP, "schedule_timeout": 600}
    )
    bare = run_module(
        trainer, "trainer_runtime_gang", {"name": "stock", "gang_name": "bare", **SP, "jobset_defaults": False}
    )
    assert bare["changed"] is True and "network" not in bare["runtime"]["spec"]["template"]["spec"], bare
    adm = k.AdmissionregistrationV1Api(api)
    conf = adm.read_mutating_webhook_configuration(scenarios.JOBSET_WEBHOOKS[0])
    webhooks = conf.webhooks
    conf.webhooks = [w for w in webhooks if not any("jobsets" in (r.resources or []) for r in w.rules or [])]
    assert conf.webhooks, "JobSet's pod webhook is kept; only its JobSet defaulting goes"
    adm.replace_mutating_webhook_configuration(conf.metadata.name, conf)
    try:
        _without_jobset_defaulting(trainer, api, core, ns)
    finally:
        conf = adm.read_mutating_webhook_configuration(scenarios.JOBSET_WEBHOOKS[0])
        conf.webhooks = webhooks
        adm.replace_mutating_webhook_configuration(conf.metadata.name, conf)


def _without_jobset_defaulting(trainer, api, core, ns: str) -> None:
    sel = "jobset.sigs.k8s.io/jobset-name="

    kube.apply(trainer, [scenarios.trainjob(ns, "bare", "bare", 4)])
    refused = kube.wait_for(
        lambda: [
            e.message
            for e in core.list_namespaced_event(ns).items
            if e.involved_object.name == "bare" and e.reason == "TrainJobResourcesCreationFailed"
        ],
        60,
        "Trainer to report the control's JobSet refused",
    )
    # JobSet v0.11.1's validating webhook dereferences the successPolicy its defaulting webhook would have set
    assert 'admission webhook "vjobset.kb.io" denied the request' in refused[0], refused
    assert _co(api).list_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", ns, "jobsets")["items"] == []
    assert not core.list_namespaced_pod(ns, label_selector=sel + "bare").items
    _co(api).delete_namespaced_custom_object(G, V, ns, "trainjobs", "bare")

    with kube.PodWatcher(trainer, ns, sel + "whole") as w:
        kube.apply(trainer, [scenarios.trainjob(ns, "whole", "stock-gang", 4)])
        kube.wait_for(lambda: len(w.snapshot().running()) == 4, 60, "all 4 pods Running without the webhook")
    js = _co(api).get_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", ns, "jobsets", "whole")
    assert js["spec"]["network"]["enableDNSHostnames"] is True and js["spec"]["successPolicy"]["operator"] == "All"
