"""Why is my job Pending, however the user got there? Failures gang_info already names, reached other ways than the
first reproductions, on the lab with the real vc-scheduler, training-operator, mpi-operator and
kube-controller-manager:

- a gang bigger than the cluster: a PyTorchJob of 5 one-GPU members on 4 GPUs, which Volcano never lets in, so
  training-operator creates no pod (named from its PodGroup's minResources before any pod exists); an MPIJob of 5
  one-GPU workers, through mpi-operator;
- a quota that splits a gang: a ResourceQuota of 2 pods and a 5-member PyTorchJob (training-operator's
  FailedCreatePod), and an MPIJob (mpi-operator's MPIJobFailed) — the Job controller's FailedCreate is
  test_why_pending's;
- a stale PodGroup: a held PyTorchJob deleted with --cascade=orphan (its PodGroup left with no owner and no pod), and
  a running one deleted so (its pods left behind, still bound) — a PodGroup whose owner reference names a job that is
  gone is test_why_pending's;
- an operator whose ServiceAccount may not create its PodGroups, and a vc-scheduler that may not list the HyperNodes
  it waits for at its start, found by gang_info's SubjectAccessReviews.

Each is named with its object, cause and fix, and given as the why of ``job=``."""

from __future__ import annotations

import pytest
from ansible_run import run_module

from lab import kube, scenarios

GPU = "nvidia.com/gpu"


def _about(info: dict, obj: str) -> list[dict]:
    return [p for p in info["problems"] if p["object"] == obj]


def _info(lab, job: dict | None = None) -> dict:
    return run_module(lab, "gang_info", {"partial_threshold_seconds": 1, **({"job": job} if job else {})})


def _named(lab, obj: str, words: str):
    """The problem about ``obj`` whose message holds ``words``, once gang_info names it (None until then)."""
    found = [p for p in _about(_info(lab), obj) if words in p["message"]]
    return found[0] if found else None


def _podgroup(lab, ns: str, name: str, field: str) -> str:
    out = kube.kubectl(
        lab, "get", "podgroups.scheduling.volcano.sh", name, "-n", ns, "-o", f"jsonpath={{{field}}}", check=False
    )
    return out.stdout.strip() if out.returncode == 0 else ""


def _pods(lab, ns: str, label: str) -> list[str]:
    out = kube.kubectl(lab, "get", "pods", "-n", ns, "-l", label, "-o", "jsonpath={.items[*].spec.nodeName}")
    return out.stdout.split()


@pytest.fixture(scope="module")
def operators(volcano):
    scenarios.install_training_operator(volcano)
    scenarios.install_mpi_operator(volcano)
    return volcano


def test_a_pytorchjob_bigger_than_the_cluster_is_named_before_any_pod_exists(operators, namespace):
    """5 one-GPU members on the lab's 4 GPUs: Volcano keeps the PodGroup Pending, training-operator makes no pod."""
    kube.apply(operators, [scenarios.pytorchjob(namespace, "huge", 4)])
    kube.wait_for(lambda: _podgroup(operators, namespace, "huge", ".status.phase") == "Pending", 60, "its PodGroup")
    p = kube.wait_for(
        lambda: _named(operators, f"PodGroup {namespace}/huge", "can never start"), 60, "the gang named unfit"
    )
    assert "declares 5 member(s) asking for 5 GPU(s) together (its minResources)" in p["message"], p
    assert "all schedulable nodes have 4" in p["message"] and "cluster autoscaler" in p["message"], p
    assert "make the gang smaller" in p["fix"] and "add GPU nodes" in p["fix"], p
    assert _pods(operators, namespace, "training.kubeflow.org/job-name=huge") == [], "no pod was ever made"
    job = _info(operators, {"kind": "PyTorchJob", "namespace": namespace, "name": "huge"})["job"]
    assert job["found"] and job["pods"] == [] and "can never start" in job["why"], job
    assert not job["why"].startswith("no pod yet"), job["why"]


def test_an_mpijob_bigger_than_the_cluster_is_named_too(operators, namespace):
    """Another operator, the same failure: mpi-operator's PodGroup of 5 workers (its launcher counted) on 4 GPUs."""
    kube.apply(operators, [scenarios.mpijob(namespace, "wide", 5)])

    def unfit():
        # from its PodGroup while no worker exists, from the workers once mpi-operator has made them
        found = [p for p in _info(operators)["problems"] if f"{namespace}/wide" in p["object"]]
        return [p for p in found if "can never start" in p["message"]]

    (p,) = kube.wait_for(unfit, 90, "the MPIJob's gang named unfit")
    assert "all schedulable nodes have 4" in p["message"], p
    job = _info(operators, {"kind": "MPIJob", "namespace": namespace, "name": "wide"})["job"]
    assert "can never start" in job["why"], job


def _quota(ns: str, pods: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "two", "namespace": ns},
        "spec": {"hard": {"pods": str(pods)}},
    }


def _counted(lab, ns: str) -> bool:
    out = kube.kubectl(lab, "get", "resourcequota", "two", "-n", ns, "-o", "jsonpath={.status.hard}", check=False)
    return "pods" in out.stdout


@pytest.mark.parametrize("kind", ["PyTorchJob", "MPIJob"])
def test_a_quota_that_splits_an_operators_gang_is_named(operators, namespace, kind):
    """A ResourceQuota of 2 pods: the operator makes 2 members, the API server refuses the others, and the operator
    records it with its own event reason (training-operator FailedCreatePod, mpi-operator MPIJobFailed)."""
    kube.apply(operators, [_quota(namespace, 2)])
    kube.wait_for(lambda: _counted(operators, namespace), 30, "the quota's status")
    job = (
        scenarios.pytorchjob(namespace, "split", 3) if kind == "PyTorchJob" else scenarios.mpijob(namespace, "split", 4)
    )
    kube.apply(operators, [job])
    obj = f"{kind} {namespace}/split"
    p = kube.wait_for(lambda: _named(operators, obj, "ResourceQuota refused them"), 90, "the refused creations")
    assert "exceeded quota: two" in p["message"] and f"namespace {namespace}" in p["fix"], p
    why = _info(operators, {"kind": kind, "namespace": namespace, "name": "split"})["job"]["why"]
    assert "ResourceQuota refused them" in why, why


def test_a_held_job_deleted_with_cascade_orphan_leaves_a_stale_podgroup_that_is_named(operators, namespace):
    """The garbage collector takes the owner reference off the PodGroup and leaves it: no owner, no pod, no job of its
    name. Named stale; job= on the deleted job says it is gone and its gang object remains."""
    kube.apply(operators, [scenarios.pytorchjob(namespace, "left", 4)])  # 5 on 4 GPUs: held, no pod
    kube.wait_for(lambda: _podgroup(operators, namespace, "left", ".status.phase") == "Pending", 60, "held")
    kube.kubectl(operators, "-n", namespace, "delete", "pytorchjob", "left", "--cascade=orphan")
    kube.wait_for(
        lambda: _podgroup(operators, namespace, "left", ".metadata.ownerReferences") == "", 60, "the reference dropped"
    )
    p = kube.wait_for(lambda: _named(operators, f"PodGroup {namespace}/left", "stale gang object"), 60, "stale")
    assert "no pod, no owner and no job of its name" in p["message"], p
    assert "still counts against its queue" in p["message"] and "--cascade=orphan" in p["message"], p
    assert f"kubectl -n {namespace} delete podgroups.scheduling.volcano.sh left" in p["fix"], p
    job = _info(operators, {"kind": "PyTorchJob", "namespace": namespace, "name": "left"})["job"]
    assert job["found"] is False and job["gang"]["name"] == "left", job
    assert job["why"].startswith(f"PyTorchJob {namespace}/left is gone, but its gang object PodGroup "), job["why"]
    assert "stale gang object" in job["why"], job["why"]
    assert not _named(operators, f"PodGroup {namespace}/left", "can never start"), "stale, not also unfit"
    kube.kubectl(operators, "-n", namespace, "delete", "podgroups.scheduling.volcano.sh", "left")


def test_a_running_job_deleted_with_cascade_orphan_leaves_its_pods_and_is_named(operators, namespace):
    kube.apply(operators, [scenarios.pytorchjob(namespace, "ran", 1)])
    label = "training.kubeflow.org/job-name=ran"
    kube.wait_for(lambda: len(_pods(operators, namespace, label)) == 2, 90, "the job's 2 pods bound")
    kube.kubectl(operators, "-n", namespace, "delete", "pytorchjob", "ran", "--cascade=orphan")
    p = kube.wait_for(lambda: _named(operators, f"PodGroup {namespace}/ran", "left behind"), 60, "the pods left")
    assert f"2 pod(s) of the deleted job ({label}, 2 bound)" in p["message"], p
    assert f"delete pods -l {label}" in p["fix"], p
    assert len(_pods(operators, namespace, label)) == 2


def test_an_operator_that_may_not_create_its_podgroups_is_named_without_a_smoke_test(operators, namespace):
    """training-operator's ClusterRole applied again without its PodGroup rights: gang_info asks a SubjectAccessReview
    as its ServiceAccount and names the rights it lacks (no smoke test run); given back, nothing."""
    obj = "Deployment kubeflow/training-operator"
    scenarios.install_training_operator(operators, podgroup_rights=False)
    try:
        p = kube.wait_for(lambda: _named(operators, obj, "may not create scheduling.volcano.sh/podgroups"), 30, obj)
        assert "SubjectAccessReview as that ServiceAccount" in p["message"], p
        assert "component: training_operator, gang_scheduler: volcano" in p["fix"], p
    finally:
        scenarios.install_training_operator(operators)
    kube.wait_for(lambda: _named(operators, obj, "may not") is None, 30, "the rights back, nothing named")


def test_a_volcano_scheduler_that_may_not_watch_hypernodes_is_named(operators, namespace):
    """The other component whose rights gang_info asks: vc-scheduler v1.15 waits at its start until it has listed
    HyperNodes, so without that right (the lab's own ClusterRole applied without it, as a ClusterRole written for v1.10
    would be) it schedules nothing; gang_info names the right and the Deployment."""
    from lab.scenarios import volcano as vc

    role, binding = vc.vc_scheduler_rbac()
    narrow = {**role, "rules": [r for r in role["rules"] if r["apiGroups"] != ["topology.volcano.sh"]]}
    kube.apply(operators, [narrow])
    obj = "Deployment volcano-system/vc-scheduler"
    try:
        p = kube.wait_for(lambda: _named(operators, obj, "may not list topology.volcano.sh/hypernodes"), 30, obj)
        assert "its ServiceAccount volcano-system/vc-scheduler" in p["message"], p
    finally:
        kube.apply(operators, [role, binding])
    kube.wait_for(lambda: _named(operators, obj, "may not") is None, 30, "the rights back, nothing named")
