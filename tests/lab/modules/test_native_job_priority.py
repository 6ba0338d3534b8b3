"""Kubernetes 1.37.2 with the native gang's gates on (GenericWorkload, WorkloadWithJob): the Job controller gives
every root Job a Workload and a PodGroup, but a Job whose pods have a system-* priority class gets a PodGroup the
API server refuses (its priority above 1000000000) and never creates a pod. gang_info names that Job with its fix,
and not a plain Job beside it, which runs."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from ansible_run import run_module
from kubernetes import client as k

from lab import kube
from lab import versions as V
from lab.cluster import Lab

pytestmark = pytest.mark.skipif(V.KUBERNETES_MINOR != 37, reason="the Workload API of 1.37 (v1beta1) is what is read")
GATES = "GenericWorkload=true,WorkloadWithJob=true"


@pytest.fixture(scope="module")
def gated():
    before = os.environ.get("GANGSCHED_LAB_FEATURE_GATES")
    os.environ["GANGSCHED_LAB_FEATURE_GATES"] = GATES
    lab = Lab(Path(f"{Lab().root}-gates"))
    try:
        lab.down(log=lambda *_: None)
        lab.up(gpu_nodes=1, gpus_per_node=1, cpu_nodes=1, log=lambda *_: None)
        yield lab
    finally:
        lab.down(log=lambda *_: None)
        if before is None:
            os.environ.pop("GANGSCHED_LAB_FEATURE_GATES", None)
        else:
            os.environ["GANGSCHED_LAB_FEATURE_GATES"] = before


def _job(name: str, priority: str | None) -> dict:
    pod = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}
    if priority:
        pod["priorityClassName"] = priority
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"template": {"spec": pod}},
    }


def test_a_system_priority_job_without_its_podgroup_is_named(gated):
    kube.apply(gated, [_job("sysjob", "system-cluster-critical"), _job("plainjob", None)])
    core = k.CoreV1Api(kube.api(gated))
    deadline = time.monotonic() + 60
    while (
        time.monotonic() < deadline
        and not core.list_namespaced_pod("default", label_selector="job-name=plainjob").items
    ):
        time.sleep(1)
    assert core.list_namespaced_pod("default", label_selector="job-name=plainjob").items  # the Job integration works
    info = run_module(gated, "gang_info", {"partial_threshold_seconds": 5})
    deadline = time.monotonic() + 30
    while not [p for p in info["problems"] if p["object"] == "Job default/sysjob"] and time.monotonic() < deadline:
        time.sleep(2)
        info = run_module(gated, "gang_info", {"partial_threshold_seconds": 5})
    assert not info.get("failed"), info.get("msg")
    (p,) = [p for p in info["problems"] if p["object"] == "Job default/sysjob"]
    assert "never creates a pod" in p["message"] and "system-cluster-critical" in p["message"], p
    assert "WorkloadWithJob" in p["fix"], p
    assert [p for p in info["problems"] if "plainjob" in p["object"]] == [], info["problems"]
    # what the problem says: the Workload is there, its PodGroup and its pods are not
    custom = k.CustomObjectsApi(kube.api(gated))
    workloads = custom.list_namespaced_custom_object("scheduling.k8s.io", "v1beta1", "default", "workloads")["items"]
    podgroups = custom.list_namespaced_custom_object("scheduling.k8s.io", "v1beta1", "default", "podgroups")["items"]
    (mine,) = [w for w in workloads if w["spec"]["controllerRef"]["name"] == "sysjob"]
    assert not [g for g in podgroups if g["spec"]["workloadRef"]["workloadName"] == mine["metadata"]["name"]]
    assert not core.list_namespaced_pod("default", label_selector="job-name=sysjob").items
