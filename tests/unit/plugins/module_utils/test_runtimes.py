"""Kubeflow Trainer v2 runtimes made gang-scheduled: podGroupPolicy, schedulerName in every replicated
job's pod template, requests where only limits are set, Volcano's queue; refusals named."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils import _runtimes


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
    out, changes = _runtimes.gang_runtime(rt, "scheduler_plugins", "scheduler-plugins-scheduler", 600)
    assert out["spec"]["podGroupPolicy"] == {"coscheduling": {"scheduleTimeoutSeconds": 600}}
    for pod in _pods(out):
        assert pod["schedulerName"] == "scheduler-plugins-scheduler"
        assert pod["containers"][0]["resources"]["requests"] == {"nvidia.com/gpu": "1"}
    assert "schedulerName" not in _pods(rt)[0], "the input was changed"
    assert len(changes) == 5, changes
    again, nothing = _runtimes.gang_runtime(out, "scheduler_plugins", "scheduler-plugins-scheduler", 600)
    assert again == out and nothing == []


def test_volcano_runtime_with_queue_keeps_the_timeout_out():
    out, _ = _runtimes.gang_runtime(
        _runtime(kind="TrainingRuntime", limits_only=False), "volcano", "volcano", queue="q"
    )
    assert out["spec"]["podGroupPolicy"] == {"volcano": {}}
    assert out["metadata"]["annotations"] == {"scheduling.volcano.sh/queue-name": "q"}
    assert _pods(out)[0]["containers"][0]["resources"]["requests"] == {"cpu": "1"}


def test_the_runtimes_own_timeout_is_kept_unless_given():
    rt = _runtime()
    rt["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 90}}
    out, _ = _runtimes.gang_runtime(rt, "scheduler_plugins", "default-scheduler")
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
        _runtimes.gang_runtime({**_runtime(), **over}, *args)
