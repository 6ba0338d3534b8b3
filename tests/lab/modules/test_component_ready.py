"""component_ready on the lab: objects that appear while it waits (a Deployment the controller and
KWOK bring to Available, a CRD the API server Establishes) end the wait with them named in
waited_for; what never becomes ready fails the task within wait_timeout, naming each object and why."""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from ansible_run import run_module
from lab_objects import crd, operator_like

from lab import kube


def _first_read(lab, path: str, timeout: float = 120) -> None:
    """Until the API server's audit log shows a request for ``path`` (the module's first read)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path in (lab.logs / "audit.log").read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise AssertionError(f"no request for {path} in the audit log within {timeout}s")


def test_what_appears_while_it_waits_ends_the_wait(lab, namespace):
    group = f"t{uuid.uuid4().hex[:6]}.gangsched.test"
    args = {"crds": [f"widgets.{group}"], "namespace": namespace, "deployments": ["late"], "wait_timeout": 120}
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(run_module, lab, "component_ready", args)
        _first_read(lab, f"customresourcedefinitions/widgets.{group}")  # it looked and found neither
        kube.apply(lab, [crd(f"widgets.{group}"), operator_like(namespace, "late")])
        res = fut.result(timeout=200)
    kube.kubectl(lab, "delete", "crd", f"widgets.{group}", "--wait=false")
    assert res.get("failed") is not True, res.get("msg")
    assert res["changed"] is False and res["not_ready"] == []
    assert res["waited_for"] == [f"CustomResourceDefinition widgets.{group}", f"Deployment {namespace}/late"], res
    assert res["ready"] == res["waited_for"] and res["seconds"] > 0


def test_what_never_gets_ready_fails_within_the_timeout_naming_it(lab, namespace):
    # its pods wait for a node label no node has: the Deployment exists and is never Available
    kube.apply(lab, [operator_like(namespace, "held", node_selector={"gangsched-test/never": "x"})])
    args = {"crds": ["nothing.gangsched.test"], "namespace": namespace, "deployments": ["held"], "wait_timeout": 5}
    t0 = time.monotonic()
    res = run_module(lab, "component_ready", args, check=True)
    took = time.monotonic() - t0
    assert res.get("failed") is True and took < 5 + 30, (took, res)
    first = "Timed out after 5s waiting for CustomResourceDefinition nothing.gangsched.test: not found"
    assert res["msg"].startswith(first), res["msg"]
    assert f"Deployment {namespace}/held: 0 of 1 updated replicas available" in res["msg"], res["msg"]
    assert "Traceback" not in res["msg"] and "raise wait_timeout" in res["msg"]
    now = run_module(lab, "component_ready", {**args, "wait": False})
    assert now.get("failed") is not True and now["waited_for"] == [] and len(now["not_ready"]) == 2, now


def _daemonset(ns: str, name: str, instance: str) -> dict:
    labels = {"app": name, "app.kubernetes.io/instance": instance}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": name, "image": "example.invalid/plugin:1"}]},
            },
        },
    }


def test_a_charts_daemonsets_by_label_and_the_gpus_they_advertise(lab, namespace):
    """DaemonSets found by their label (none yet at the first read: waited for until KWOK brings their pods up on
    every node), and the lab's allocatable nvidia.com/gpu added up over its nodes; a total no node set reaches fails
    within the timeout, naming it."""
    args = {
        "namespace": namespace,
        "daemonset_selector": "app.kubernetes.io/instance=plugin",
        "allocatable": {"nvidia.com/gpu": 4},
        "return_objects": True,
        "wait_timeout": 120,
    }
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(run_module, lab, "component_ready", args)
        _first_read(lab, f"/namespaces/{namespace}/daemonsets?")
        kube.apply(lab, [_daemonset(namespace, "plugin", "plugin"), _daemonset(namespace, "plugin-mps", "plugin")])
        res = fut.result(timeout=200)
    assert res.get("failed") is not True, res.get("msg")
    label = f"DaemonSets {namespace} -l app.kubernetes.io/instance=plugin"
    assert res["waited_for"] == [label] and res["ready"] == [label, "Nodes' allocatable nvidia.com/gpu"], res
    found = res["objects"][0]["items"]
    assert sorted(d["metadata"]["name"] for d in found) == ["plugin", "plugin-mps"]
    assert all(d["status"]["desiredNumberScheduled"] == d["status"]["numberReady"] > 0 for d in found), found
    res = run_module(lab, "component_ready", {"allocatable": {"nvidia.com/gpu": 999}, "wait_timeout": 3})
    assert res.get("failed") is True, res
    assert "Timed out after 3s waiting for Nodes' allocatable nvidia.com/gpu: 4 allocatable on " in res["msg"], res
