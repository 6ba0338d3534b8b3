"""Turning kube-scheduler's own gang on in kubeadm's static pod manifests: the flags set in place (other gates and API
groups kept, idempotent, the Job integration's gate put back as the original had it), the manifests refused, the
releases refused, and the Jobs the Job integration would break."""

from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gangsched.kubeflow.plugins.filter import gang
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _native_control_plane as cp


def _pod(component: str, *flags: str, image: str | None = None, args: bool = False) -> dict:
    c = {"name": component, "image": image or f"registry.k8s.io/{component}:v1.37.2"}
    if args:
        c["command"], c["args"] = [component], list(flags)
    else:
        c["command"] = [component, "--v=2", *flags]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": component}, "spec": {"containers": [c]}}


def _flags(pod: dict) -> list[str]:
    c = pod["spec"]["containers"][0]
    return [a for a in (c.get("command") or []) + (c.get("args") or []) if a.startswith("--") and a != "--v=2"]


def test_apiserver_gets_the_gate_and_the_api_version_keeping_what_it_had():
    pod = _pod("kube-apiserver", "--feature-gates=Foo=false", "--runtime-config=api/all=true")
    out = cp.with_gates(pod, "kube-apiserver", 37, False)
    assert _flags(out) == [
        "--feature-gates=Foo=false,GenericWorkload=true",
        "--runtime-config=api/all=true,scheduling.k8s.io/v1beta1=true",
    ]
    assert _flags(pod) == ["--feature-gates=Foo=false", "--runtime-config=api/all=true"]  # the input is not changed
    assert cp.with_gates(out, "kube-apiserver", 37, False) == out  # a second run changes nothing


def test_a_gate_set_off_is_turned_on_and_a_repeated_flag_left_once():
    pod = _pod("kube-scheduler", "--feature-gates=GenericWorkload=false", "--feature-gates=Bar=true")
    assert _flags(cp.with_gates(pod, "kube-scheduler", 37, False)) == ["--feature-gates=GenericWorkload=true,Bar=true"]


def test_flags_in_args_stay_in_args():
    pod = _pod("kube-controller-manager", "--leader-elect=true", args=True)
    out = cp.with_gates(pod, "kube-controller-manager", 37, True)
    assert out["spec"]["containers"][0]["command"] == ["kube-controller-manager"]
    assert out["spec"]["containers"][0]["args"][-1] == "--feature-gates=GenericWorkload=true,WorkloadWithJob=true"


@pytest.mark.parametrize(
    ("original", "expected"),
    [
        (None, "--feature-gates=GenericWorkload=true"),
        ("--feature-gates=WorkloadWithJob=false", "--feature-gates=WorkloadWithJob=false,GenericWorkload=true"),
    ],
)
def test_the_job_integration_off_again_puts_back_what_the_original_had(original, expected):
    before = _pod("kube-controller-manager", *([original] if original else []))
    on = cp.with_gates(before, "kube-controller-manager", 37, True)
    assert "WorkloadWithJob=true" in _flags(on)[0]
    assert _flags(cp.with_gates(on, "kube-controller-manager", 37, False, before)) == [expected]


def test_kube_scheduler_never_gets_the_job_gate():
    assert cp.wanted_gates("kube-scheduler", True) == {"GenericWorkload": "true"}


@pytest.mark.parametrize(
    ("pod", "component", "says"),
    [
        (
            _pod("kube-scheduler", image="registry.k8s.io/scheduler-plugins/kube-scheduler:v0.33.5"),
            "kube-scheduler",
            "a kube-scheduler replaced by scheduler-plugins",
        ),
        (
            _pod("kube-scheduler", image="registry.k8s.io/kube-scheduler:v1.36.3"),
            "kube-scheduler",
            "not Kubernetes 1.37 like the API server",
        ),
        (_pod("kube-apiserver"), "kube-scheduler", "runs image 'registry.k8s.io/kube-apiserver:v1.37.2'"),
        ({"kind": "Deployment"}, "kube-scheduler", "not a Pod manifest"),
    ],
)
def test_manifests_that_are_not_the_component_are_refused(pod, component, says):
    with pytest.raises(ValueError, match=".*") as e:
        cp.with_gates(pod, component, 37, False)
    assert says in str(e.value)
    assert says in gang.native_gang_manifest_problem(pod, component, "v1.37.2")
    with pytest.raises(AnsibleFilterError, match="native_gang_static_pod: "):
        gang.native_gang_static_pod(pod, component, "v1.37.2")


def test_a_mirror_registry_and_a_digest_are_accepted():
    pod = _pod("kube-scheduler", image="mirror.example.com/k8s/kube-scheduler:v1.37.2@sha256:" + "a" * 64)
    assert gang.native_gang_manifest_problem(pod, "kube-scheduler", "v1.37.2") == ""


@pytest.mark.parametrize(
    ("version", "says"),
    [
        ("v1.37.2", None),
        ("v1.37.0-eks-abc", None),
        ("v1.36.3", "scheduling.k8s.io/v1alpha2 (alpha)"),
        ("v1.35.4", "scheduling.k8s.io/v1alpha1 (alpha)"),
        ("v1.33.5", "has no native gang scheduling"),
        ("v1.38.0", "newer than 1.37"),
    ],
)
def test_releases(version, says):
    problem = cp.version_problem(version)
    assert (problem is None) == (says is None)
    if says:
        assert says in problem and problem.endswith("nothing was changed")
    assert gang.native_gang_version_problem(version) == (problem or "")


def test_a_version_that_is_not_one_is_a_clear_filter_error():
    with pytest.raises(AnsibleFilterError, match="'latest' is not a Kubernetes version"):
        gang.native_gang_version_problem("latest")


def _job(name, cls, **extra):
    job = {
        "metadata": {"namespace": "kube-system", "name": name},
        "spec": {"template": {"spec": {"priorityClassName": cls}}},
    }
    job["metadata"].update(extra.pop("metadata", {}))
    job.update(extra)
    return job


def test_jobs_the_job_integration_would_break():
    jobs = [
        _job("hook", "system-cluster-critical"),
        _job("done", "system-node-critical", status={"conditions": [{"type": "Complete", "status": "True"}]}),
        _job(
            "owned", "system-cluster-critical", metadata={"ownerReferences": [{"kind": "CronJob", "controller": True}]}
        ),
        _job("plain", "high"),
    ]
    cron = {
        "metadata": {"namespace": "ops", "name": "nightly"},
        "spec": {"jobTemplate": {"spec": {"template": {"spec": {"priorityClassName": "system-node-critical"}}}}},
    }
    suspended = copy.deepcopy(cron)
    suspended["spec"]["suspend"] = True
    assert cp.system_priority_jobs(jobs, [cron, suspended]) == [
        "CronJob ops/nightly (system-node-critical)",
        "Job kube-system/hook (system-cluster-critical)",
    ]
    problem = gang.native_gang_job_problem("v1.37.2", jobs, [cron])
    assert "Job kube-system/hook (system-cluster-critical)" in problem and problem.endswith("nothing was changed")
    assert gang.native_gang_job_problem("v1.37.3", jobs, [cron]) == ""  # newer than the release checked to have the bug
    assert gang.native_gang_job_problem("v1.37.2", [_job("plain", "high")], []) == ""
