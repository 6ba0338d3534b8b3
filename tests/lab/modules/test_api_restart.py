"""The API server restarts while a module runs (the lab stops kube-apiserver and starts it again with
the same flags): operator_gang waiting on a rollout and gang_smoke_test watching its pods reconnect,
re-list and return the right result; an outage longer than the module's timeout is a clear timeout
error, not a traceback."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from ansible_run import run_module
from kubernetes import client as k
from lab_objects import operator_like

from lab import kube, nodes

RUN_LABEL = "gangsched.kubeflow/smoke-run"
HOLD = "gangsched-test/hold"  # pods of the held Deployment schedule only onto a node with this label


@pytest.fixture
def hold(api):
    """A label value no node carries yet; release() puts it on the CPU node, and it is removed after."""
    value = "h" + uuid.uuid4().hex[:8]  # never all digits (a YAML number, not the string nodeSelector wants)
    core = k.CoreV1Api(api)
    labelled: list[str] = []

    def release() -> None:
        node = next(n for n in core.list_node().items if "nvidia.com/gpu" not in (n.status.capacity or {}))
        core.patch_node(node.metadata.name, {"metadata": {"labels": {HOLD: value}}})
        labelled.append(node.metadata.name)

    yield value, release
    for name in labelled:
        core.patch_node(name, {"metadata": {"labels": {HOLD: None}}})


def _operator_gang_args(ns: str, wait_timeout: int) -> dict:
    return {
        "operator": "training_operator",
        "namespace": ns,
        "name": "op",
        "gang_scheduler": "volcano",
        "wait": True,
        "wait_timeout": wait_timeout,
    }


def _generation_bumped(api, ns, name):
    dep = k.AppsV1Api(api).read_namespaced_deployment(name, ns)
    command = dep.spec.template.spec.containers[0].command
    return dep.metadata.generation > 1 and "--gang-scheduler-name=volcano" in command


def test_operator_gang_rollout_wait_survives_an_api_server_restart(volcano, api, namespace, hold):
    value, release = hold
    kube.apply(volcano, [operator_like(namespace, "op", command=["/manager"], node_selector={HOLD: value})])
    before = volcano.pid("kube-apiserver")
    args = _operator_gang_args(namespace, wait_timeout=120)
    with ThreadPoolExecutor(1) as ex:
        fut = ex.submit(run_module, volcano, "operator_gang", args)
        kube.wait_for(lambda: _generation_bumped(api, namespace, "op"), 60, "operator_gang's patch")
        # the new pod cannot schedule yet, so the module is inside its rollout wait now
        assert not fut.done()
        down = volcano.restart("kube-apiserver", down_for=5, log=lambda *_: None)
        assert volcano.pid("kube-apiserver") != before and down >= 5
        assert not fut.done(), "the module returned while the rollout could not have completed"
        release()
        res = fut.result(timeout=150)
    assert res.get("failed") is not True, res.get("msg")
    assert res["changed"] is True and res["flag"] == "--gang-scheduler-name=volcano"
    dep = k.AppsV1Api(api).read_namespaced_deployment("op", namespace)
    assert dep.spec.template.spec.containers[0].command == ["/manager", "--gang-scheduler-name=volcano"]
    assert (dep.status.updated_replicas, dep.status.available_replicas) == (1, 1)


def test_outage_longer_than_the_wait_is_a_clear_timeout(volcano, api, namespace, hold):
    value, _release = hold
    kube.apply(volcano, [operator_like(namespace, "op", command=["/manager"], node_selector={HOLD: value})])
    args = _operator_gang_args(namespace, wait_timeout=3)
    with ThreadPoolExecutor(1) as ex:
        fut = ex.submit(run_module, volcano, "operator_gang", args)
        kube.wait_for(lambda: _generation_bumped(api, namespace, "op"), 60, "operator_gang's patch")
        volcano.restart("kube-apiserver", down_for=6, log=lambda *_: None)
        res = fut.result(timeout=120)
    assert res.get("failed") is True, res
    assert res["msg"].startswith("Timed out after 3s waiting for the rollout of Deployment " + f"{namespace}/op"), res
    assert "API errors meanwhile: Failed to reach the Kubernetes API" in res["msg"], res["msg"]
    # a failed task with the collection's message, not a module crash (MODULE FAILURE + a traceback)
    assert "module_stderr" not in res and "Traceback" not in res["_stderr"] + res["msg"], res


def test_smoke_test_watch_survives_an_api_server_restart(volcano, api, core, added_nodes, namespace):
    # a namespace of the test's own: the namespace controller's pace after the restart (a whole-namespace
    # delete waits for its discovery) is not what this test is about; the run's pods being gone is
    ns = namespace
    args = {
        "gang_scheduler": "volcano",
        "namespace": ns,
        "replicas": 5,  # 4 usable GPUs: the gang waits, whole, for the fifth (tainted until after the restart)
        "expect": "running",
        "timeout": 150,
        "settle_seconds": 5,
    }
    # a fifth GPU the gang cannot use yet: counted as free (expect=running with more members than fit
    # is refused before anything is created), kept from the members by a taint they do not tolerate
    held = nodes.add(api, gpus=1)
    added_nodes.append(held)
    core.patch_node(held, {"spec": {"taints": [{"key": "lab.gangsched.io/hold", "effect": "NoSchedule"}]}})
    nodes.wait_ready(api, names=[held])
    before = volcano.pid("kube-apiserver")
    with ThreadPoolExecutor(1) as ex:
        fut = ex.submit(run_module, volcano, "gang_smoke_test", args)

        def five_pending():
            try:
                pods = core.list_namespaced_pod(ns, label_selector=RUN_LABEL).items
            except k.ApiException:
                return False
            return len(pods) == 5 and all(p.status.phase == "Pending" for p in pods)

        kube.wait_for(five_pending, 60, "the smoke test's 5 pods")
        volcano.restart("kube-apiserver", down_for=5, log=lambda *_: None)
        assert not fut.done()
        # only after the restart does the gang fit: the verdict needs events the module saw after it
        core.patch_node(held, {"spec": {"taints": None}})
        res = fut.result(timeout=200)
    assert volcano.pid("kube-apiserver") != before
    assert res.get("failed") is not True, res.get("msg")
    assert res["verdict"] == "gang_held_running", res
    assert len(res["gang"]["running"]) == 5 and res["left_behind"] == [], res
    assert core.list_pod_for_all_namespaces(label_selector=RUN_LABEL).items == []


def test_a_smoke_test_right_after_a_control_plane_restart_proves_both_verdicts(volcano, core):
    """kube-apiserver restarted right before gang_smoke_test, and kube-controller-manager held (frozen) for the first
    seconds of each run, as after a control-plane restart: the run's new namespace has no ServiceAccount yet and the
    API server refuses its pods until kube-controller-manager makes one; the run waits for it and ends with its
    verdict, for a gang that fits and then for one that does not. No error."""
    import os
    import signal
    import threading

    volcano.restart("kube-apiserver", down_for=1, log=lambda *_: None)
    for replicas, verdict in ((4, "gang_held_running"), (5, "gang_held_pending")):
        ns = f"t-restart-{uuid.uuid4().hex[:6]}"
        kcm = volcano.pid("kube-controller-manager")
        os.kill(kcm, signal.SIGSTOP)
        thaw = threading.Timer(6, os.kill, (kcm, signal.SIGCONT))
        thaw.start()
        try:
            args = {"gang_scheduler": "volcano", "namespace": ns, "replicas": replicas, "timeout": 120}
            # the API server's first seconds refuse every client (its RBAC not loaded yet), and client-go backs its
            # watches off, up to 30 s apart after restarts in quick succession (this file's other tests restart it
            # too): vc-scheduler may see the canary only then, so the canary is given longer than its default
            args["liveness_timeout"] = 90
            res = run_module(volcano, "gang_smoke_test", {**args, "settle_seconds": 5})
        finally:
            thaw.cancel()
            os.kill(kcm, signal.SIGCONT)
        assert res.get("failed") is not True, res.get("msg")
        assert res["verdict"] == verdict and res["left_behind"] == [], res
        kube.wait_for(lambda ns=ns: not core.list_namespace(field_selector=f"metadata.name={ns}").items, 120, "gone")
