"""Kubeflow Trainer v2 runtimes made gang-scheduled: podGroupPolicy, schedulerName in every replicated
job's pod template, requests where only limits are set, Volcano's queue; refusals named."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _trainer_runtimes


def _runtime(kind="ClusterTrainingRuntime", limits_only=True, jobs=("node",)):
    res = {"limits": {"nvidia.com/gpu": "1"}} if limits_only else {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": kind,
        "metadata": {"name": "torch-distributed"},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": j,
                            "template": {
                                "spec": {"template": {"spec": {"containers": [{"name": j, "resources": res}]}}}
                            },
                        }
                        for j in jobs
                    ]
                }
            },
        },
    }


def _pods(rt):
    return [rj["template"]["spec"]["template"]["spec"] for rj in rt["spec"]["template"]["spec"]["replicatedJobs"]]


def test_coscheduling_runtime_names_the_scheduler_in_every_job_and_requests_what_it_limits():
    rt = _runtime(jobs=("initializer", "node"))
    out, changes = _trainer_runtimes.gang_runtime(rt, "scheduler_plugins", "scheduler-plugins-scheduler", 600)
    assert out["spec"]["podGroupPolicy"] == {"coscheduling": {"scheduleTimeoutSeconds": 600}}
    for pod in _pods(out):
        assert pod["schedulerName"] == "scheduler-plugins-scheduler"
        assert pod["containers"][0]["resources"]["requests"] == {"nvidia.com/gpu": "1"}
    assert "schedulerName" not in _pods(rt)[0], "the input was changed"
    assert len(changes) == 5, changes
    again, nothing = _trainer_runtimes.gang_runtime(out, "scheduler_plugins", "scheduler-plugins-scheduler", 600)
    assert again == out and nothing == []


def test_volcano_runtime_with_queue_keeps_the_timeout_out():
    out, _ = _trainer_runtimes.gang_runtime(
        _runtime(kind="TrainingRuntime", limits_only=False), "volcano", "volcano", queue="q"
    )
    assert out["spec"]["podGroupPolicy"] == {"volcano": {}}
    assert out["metadata"]["annotations"] == {"scheduling.volcano.sh/queue-name": "q"}
    assert _pods(out)[0]["containers"][0]["resources"]["requests"] == {"cpu": "1"}


def test_the_runtimes_own_timeout_is_kept_unless_given():
    rt = _runtime()
    rt["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 90}}
    out, _ = _trainer_runtimes.gang_runtime(rt, "scheduler_plugins", "default-scheduler")
    assert out["spec"]["podGroupPolicy"]["coscheduling"]["scheduleTimeoutSeconds"] == 90


@pytest.mark.parametrize(
    "over,args,words",
    [
        ({"kind": "TrainJob"}, ("scheduler_plugins", "s"), "needs a TrainingRuntime"),
        ({"apiVersion": "kubeflow.org/v1"}, ("scheduler_plugins", "s"), "is not trainer.kubeflow.org"),
        ({}, ("koordinator", "koord-scheduler"), "cannot carry a label gang"),
        ({}, ("scheduler_plugins", ""), "scheduler_name is required"),
        ({}, ("volcano", "other"), "scheduled by 'volcano'"),
        ({}, ("scheduler_plugins", "s", None, "q"), "a queue is a Volcano setting"),
        ({}, ("scheduler_plugins", "s", 0), "schedule_timeout must be"),
        ({"spec": {}}, ("scheduler_plugins", "s"), "has no spec.template.spec.replicatedJobs"),
    ],
)
def test_bad_input_is_named(over, args, words):
    with pytest.raises(ValueError, match=words):
        _trainer_runtimes.gang_runtime({**_runtime(), **over}, *args)


# ---- JobSet's defaults, the gang copy, the way back (trainer_runtime_gang) ------------------------------
def _js(rt):
    return rt["spec"]["template"]["spec"]


def test_jobset_defaults_fill_what_the_webhook_would_and_only_that():
    rt = _runtime(jobs=("initializer", "node"))
    out, changes = _trainer_runtimes.jobset_defaults(rt)
    js = _js(out)
    assert js["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    assert js["successPolicy"] == {"operator": "All"}
    assert js["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    for rj in js["replicatedJobs"]:
        assert rj["template"]["spec"]["completionMode"] == "Indexed"
        assert rj["template"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert len(changes) == 4 + 2 * 2, changes
    assert "network" not in _js(rt), "the input was changed"
    again, nothing = _trainer_runtimes.jobset_defaults(out)
    assert again == out and nothing == []


def test_jobset_defaults_keep_what_is_set():
    rt = _runtime()
    js = _js(rt)
    js["network"] = {"enableDNSHostnames": False, "subdomain": "x"}
    js["successPolicy"] = {"operator": "Any", "targetReplicatedJobs": ["node"]}
    js["failurePolicy"] = {"rules": [{"action": "FailJobSet"}, {"name": "mine", "action": "RestartJobSet"}]}
    js["volumeClaimPolicies"] = [{"templates": []}, {"retentionPolicy": {"whenDeleted": "Retain"}}]
    job = js["replicatedJobs"][0]["template"]["spec"]
    job["completionMode"] = "NonIndexed"
    job["template"]["spec"]["restartPolicy"] = "Never"
    out, changes = _trainer_runtimes.jobset_defaults(rt)
    js = _js(out)
    assert js["network"] == {"enableDNSHostnames": False, "subdomain": "x", "publishNotReadyAddresses": True}
    assert js["successPolicy"] == {"operator": "Any", "targetReplicatedJobs": ["node"]}
    assert [r["name"] for r in js["failurePolicy"]["rules"]] == ["failurePolicyRule0", "mine"]
    assert [v["retentionPolicy"]["whenDeleted"] for v in js["volumeClaimPolicies"]] == ["Delete", "Retain"]
    job = js["replicatedJobs"][0]["template"]["spec"]
    assert job["completionMode"] == "NonIndexed" and job["template"]["spec"]["restartPolicy"] == "Never"
    assert sorted(changes) == sorted(
        [
            "JobSet startupPolicy AnyOrder",
            "JobSet network publishNotReadyAddresses true",
            "JobSet failurePolicy rule 0 name failurePolicyRule0",
            "JobSet volumeClaimPolicy 0 retentionPolicy whenDeleted Delete",
        ]
    )


def test_gang_copy_is_labelled_ours_and_keeps_the_copys_metadata():
    src = _runtime(kind="TrainingRuntime")
    src["metadata"].update(
        namespace="team-a",
        resourceVersion="5",
        uid="u-src",
        labels={"team": "a"},
        annotations={"note": "x", _trainer_runtimes.LAST_APPLIED: "{...}"},
    )
    new = _trainer_runtimes.gang_copy(src, "torch-gang")
    assert new["metadata"] == {
        "name": "torch-gang",
        "namespace": "team-a",
        "labels": {
            "team": "a",
            "app.kubernetes.io/managed-by": "gangsched.kubeflow",
            _trainer_runtimes.GANG_OF: "torch-distributed",
        },
        "annotations": {"note": "x"},
    }
    assert new["spec"] == src["spec"] and new["spec"] is not src["spec"]
    assert _trainer_runtimes.copy_owner(new) == "torch-distributed" and _trainer_runtimes.copy_owner(src) is None
    existing = {**new, "metadata": {**new["metadata"], "resourceVersion": "9", "uid": "u-copy", "labels": {"x": "y"}}}
    again = _trainer_runtimes.gang_copy(src, "torch-gang", existing)
    assert again["metadata"]["resourceVersion"] == "9" and again["metadata"]["uid"] == "u-copy"
    assert again["metadata"]["labels"]["x"] == "y" and again["metadata"]["labels"][_trainer_runtimes.GANG_OF]


def test_ungang_removes_our_policy_and_our_scheduler_name_only():
    ganged, _ = _trainer_runtimes.gang_runtime(_runtime(jobs=("initializer", "node")), "scheduler_plugins", "sp", 60)
    _pods(ganged)[0]["schedulerName"] = "someone-elses"
    out, changes = _trainer_runtimes.ungang_runtime(ganged, "scheduler_plugins", "sp")
    assert "podGroupPolicy" not in out["spec"]
    assert [p.get("schedulerName") for p in _pods(out)] == ["someone-elses", None]
    assert changes == ["podGroupPolicy coscheduling removed", "replicatedJob node: schedulerName sp removed"]
    assert _trainer_runtimes.ungang_runtime(out, "scheduler_plugins", "sp")[1] == []
    with pytest.raises(ValueError, match="carries podGroupPolicy coscheduling, not volcano: set gang_scheduler=sc"):
        _trainer_runtimes.ungang_runtime(ganged, "volcano", "volcano")


def test_differences_name_the_fields_by_name_not_position():
    a = _runtime(jobs=("initializer", "node"))
    b = _trainer_runtimes.view(a)
    b["spec"]["template"]["spec"]["replicatedJobs"].reverse()
    assert _trainer_runtimes.differences(_trainer_runtimes.view(a), b) == []
    c = _trainer_runtimes.view(a)
    c["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["containers"][0][
        "image"
    ] = "new"
    c["metadata"]["labels"]["l"] = "v"
    del c["spec"]["mlPolicy"]
    assert _trainer_runtimes.differences(_trainer_runtimes.view(a), c) == [
        "metadata.labels.l added",
        "spec.mlPolicy removed",
        "spec.template.spec.replicatedJobs[node].template.spec.template.spec.containers[node].image added",
    ]
    many = _trainer_runtimes.differences({"a": list(range(30))}, {"a": list(range(1, 31))}, limit=3)
    assert many == ["a[0] changed", "a[1] changed", "a[2] changed", "and 27 more"]


def test_view_leaves_out_kubectls_last_applied_and_the_rest_of_metadata():
    rt = _runtime()
    rt["metadata"].update(resourceVersion="3", annotations={_trainer_runtimes.LAST_APPLIED: "{}", "a": "b"})
    assert _trainer_runtimes.view(rt) == {"metadata": {"labels": {}, "annotations": {"a": "b"}}, "spec": rt["spec"]}
    assert _trainer_runtimes.view(None) == {}


@pytest.mark.parametrize(
    "ref,kind,name,uses",
    [
        ({"name": "t"}, "ClusterTrainingRuntime", "t", True),
        ({"name": "t", "kind": "TrainingRuntime"}, "ClusterTrainingRuntime", "t", False),
        ({"name": "t", "kind": "TrainingRuntime", "apiGroup": "trainer.kubeflow.org"}, "TrainingRuntime", "t", True),
        ({"name": "t", "apiGroup": "other.io"}, "ClusterTrainingRuntime", "t", False),
        ({"name": "u"}, "ClusterTrainingRuntime", "t", False),
    ],
)
def test_which_trainjobs_use_a_runtime(ref, kind, name, uses):
    assert _trainer_runtimes.uses({"spec": {"runtimeRef": ref}}, kind, name) is uses


def test_paths_kinds_and_versions():
    assert (
        _trainer_runtimes.kind_of("team-a") == "TrainingRuntime"
        and _trainer_runtimes.kind_of(None) == "ClusterTrainingRuntime"
    )
    assert _trainer_runtimes.path("TrainingRuntime", "v1alpha1", "a", "t") == (
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/a/trainingruntimes/t"
    )
    assert (
        _trainer_runtimes.path("ClusterTrainingRuntime", "v1", None)
        == "/apis/trainer.kubeflow.org/v1/clustertrainingruntimes"
    )
    assert _trainer_runtimes.path("TrainingRuntime", "v1", None) == "/apis/trainer.kubeflow.org/v1/trainingruntimes"
    crd = {
        "spec": {"versions": [{"name": "v1alpha1", "served": True}, {"name": "v1", "served": True, "storage": True}]}
    }
    assert _trainer_runtimes.served_version(crd) == "v1" and _trainer_runtimes.served_version(None) == "v1alpha1"


def test_jobset_defaults_leave_the_immutable_fields_set_in_a_runtime_that_exists():
    rt = _runtime()
    _js(rt)["network"] = {"subdomain": "x"}
    out, changes = _trainer_runtimes.jobset_defaults(rt, keep_set=True)
    assert _js(out)["network"] == {"subdomain": "x"}, "the runtime CRD refuses a change to a set network"
    assert _js(out)["successPolicy"] == {"operator": "All"} and _js(out)["startupPolicy"]
    assert not any("network" in c for c in changes) and "JobSet successPolicy operator All" in changes
    assert _trainer_runtimes.immutable_changes(rt, out) == []
    full, _ = _trainer_runtimes.jobset_defaults(rt)
    assert _trainer_runtimes.immutable_changes(rt, full) == ["network"]
