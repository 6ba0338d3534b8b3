"""The pod-process runner is real: a component's own ServiceAccount, args and config decide."""

from __future__ import annotations

import time

import pytest
from kubernetes import client as k

from lab import kube, nodes, scenarios

VC = scenarios.VC_NS


@pytest.fixture
def volcano_without_rbac(lab, core):
    kube.delete(lab, scenarios.vc_scheduler()[1:] + scenarios.vc_scheduler_rbac())
    kube.wait_for(
        lambda: not core.list_namespaced_pod(VC, label_selector="app=vc-scheduler").items
        if _ns_exists(core, VC)
        else True,
        60,
        "old vc-scheduler pods gone",
    )
    scenarios.install_volcano_crds(lab)
    # the queue controller opens the default queue (vc-scheduler v1.15 allocates nothing to a queue that is not Open)
    kube.apply(lab, scenarios.vc_scheduler() + scenarios.vc_queue_controller())
    yield lab
    kube.delete(lab, scenarios.vc_scheduler()[1:] + scenarios.vc_scheduler_rbac() + scenarios.vc_queue_controller())


def _ns_exists(core, name: str) -> bool:
    try:
        core.read_namespace(name)
        return True
    except k.ApiException:
        return False


def test_vc_scheduler_without_rights_is_forbidden_then_works_once_bound(volcano_without_rbac, core, namespace):
    lab = volcano_without_rbac
    user = f"system:serviceaccount:{VC}:vc-scheduler"
    # the process really calls the apiserver as its own ServiceAccount, and RBAC refuses it
    needed = {"pods", "nodes", "queues", "podgroups"}
    denied = kube.wait_for(
        lambda: [e for e in lab.rbac_refusals(user) if e["objectRef"].get("resource") in needed],
        90,
        "403s for vc-scheduler's SA on what a scheduler needs",
    )
    assert denied[0]["user"]["username"] == user
    with kube.PodWatcher(lab, namespace, "app=fits") as w:
        kube.apply(lab, scenarios.gang(namespace, "fits", 2, "volcano"))
        time.sleep(10)
        assert w.snapshot().ever_bound() == set(), "a scheduler without RBAC must not bind anything"
        kube.apply(lab, scenarios.vc_scheduler_rbac())
        kube.wait_for(lambda: len(w.snapshot().running()) == 2, 90, "gang to run once vc-scheduler has its rights")


def _podgroup(api, ns: str, name: str):
    co = k.CustomObjectsApi(api)
    try:
        return co.get_namespaced_custom_object("scheduling.volcano.sh", "v1beta1", ns, "podgroups", name)
    except k.ApiException:
        return None


def test_training_operator_creates_volcano_podgroup_and_gang_schedules(volcano, api, namespace, added_nodes):
    lab = volcano
    scenarios.install_training_operator(lab)
    try:
        with kube.PodWatcher(lab, namespace) as w:
            # 1 master + 4 workers x 1 GPU = 5 GPUs on a 4-GPU lab: all must wait
            kube.apply(lab, [scenarios.pytorchjob(namespace, "ptj", workers=4)])
            pg = kube.wait_for(lambda: _podgroup(api, namespace, "ptj"), 60, "PodGroup for the PyTorchJob")
            assert pg["spec"]["minMember"] == 5
            assert pg["spec"]["minResources"]["nvidia.com/gpu"] == "5"
            time.sleep(15)
            s = w.snapshot()
            # Volcano keeps the PodGroup out of the queue (it does not fit), so the operator holds
            # back the pods: nothing is bound, no GPU is held
            assert s.ever_bound() == set(), f"partial gang bound: {s.events}"
            assert _podgroup(api, namespace, "ptj").get("status", {}).get("phase") in (None, "Pending")
            added_nodes.append(nodes.add(api, gpus=1))
            kube.wait_for(lambda: len(w.snapshot().running()) == 5, 90, "all 5 PyTorchJob pods Running")
            pods = k.CoreV1Api(api).list_namespaced_pod(namespace).items
            assert {p.spec.scheduler_name for p in pods} == {"volcano"}
            assert all(p.metadata.annotations.get("scheduling.k8s.io/group-name") == "ptj" for p in pods)
    finally:
        kube.delete(lab, scenarios.training_operator()[3:])


def test_mpi_operator_creates_volcano_podgroup_for_an_mpijob(volcano, api, namespace):
    lab = volcano
    scenarios.install_mpi_operator(lab)
    try:
        with kube.PodWatcher(lab, namespace) as w:
            kube.apply(lab, [scenarios.mpijob(namespace, "mpi", workers=4)])
            pg = kube.wait_for(lambda: _podgroup(api, namespace, "mpi"), 60, "PodGroup for the MPIJob")
            assert pg["spec"]["minMember"] == 5  # launcher + 4 workers
            kube.wait_for(
                lambda: len([n for n in w.snapshot().running() if "worker" in n]) == 4, 90, "4 MPIJob workers Running"
            )
            pods = k.CoreV1Api(api).list_namespaced_pod(namespace).items
            assert {p.spec.scheduler_name for p in pods} == {"volcano"}
    finally:
        kube.delete(lab, scenarios.mpi_operator()[2:])


def test_status_rewritten_by_someone_else_is_put_back(volcano, core):
    """As a kubelet's status sync does: a run pod marked not ready by another writer (the node
    lifecycle controller after missed heartbeats, e.g. across an apiserver restart) is ready again."""
    scenarios.wait_deployment(volcano, VC, "vc-scheduler")
    pod = next(
        p for p in core.list_namespaced_pod(VC, label_selector="app=vc-scheduler").items if p.status.phase == "Running"
    )
    conditions = [
        {"type": c.type, "status": "False" if c.type in ("Ready", "ContainersReady") else c.status}
        for c in pod.status.conditions
    ]
    core.patch_namespaced_pod_status(pod.metadata.name, VC, {"status": {"conditions": conditions}})

    def ready() -> bool:
        p = core.read_namespaced_pod(pod.metadata.name, VC)
        return any(c.type == "Ready" and c.status == "True" for c in p.status.conditions)

    kube.wait_for(ready, 30, "the runner to put its pod's Ready condition back")


def _audit_reads(lab, ns: str, resource: str, name: str) -> int:
    n = 0
    for line in (lab.logs / "audit.log").read_text().splitlines():
        if f'"name":"{name}"' in line and f'"resource":"{resource}"' in line and '"verb":"get"' in line:
            n += 1 if f'"namespace":"{ns}"' in line else 0
    return n


def test_a_configmap_edit_reaches_the_running_pods_volume_and_a_steady_one_is_not_read_again(volcano, core):
    """As the kubelet's Watch change detection: the runner rewrites a running pod's ConfigMap volume when the
    ConfigMap changes (its watch shows a new resourceVersion), and does not read an unchanged one every few
    seconds (it did, every 5 s for every pod, before)."""
    scenarios.wait_deployment(volcano, VC, "vc-scheduler")
    pod = next(
        p for p in core.list_namespaced_pod(VC, label_selector="app=vc-scheduler").items if p.status.phase == "Running"
    )
    conf = volcano.pods / f"{VC}_{pod.metadata.name}" / "volumes" / "config" / "volcano-scheduler.conf"
    kube.wait_for(conf.exists, 30, f"{conf} written")
    before = _audit_reads(volcano, VC, "configmaps", "vc-scheduler-config")
    time.sleep(15)
    reads = _audit_reads(volcano, VC, "configmaps", "vc-scheduler-config") - before
    assert reads <= 1, f"{reads} reads of an unchanged ConfigMap in 15 s (at most one resync a minute expected)"

    text = conf.read_text()
    marker = f"# edited {time.time()}"
    core.patch_namespaced_config_map(
        "vc-scheduler-config", VC, {"data": {"volcano-scheduler.conf": scenarios.VC_CONF + marker + "\n"}}
    )
    try:
        t0 = time.monotonic()
        kube.wait_for(lambda: marker in conf.read_text(), 10, "the edit in the pod's volume")
        print(f"the edit reached the volume in {time.monotonic() - t0:.1f}s")
    finally:
        core.patch_namespaced_config_map("vc-scheduler-config", VC, {"data": {"volcano-scheduler.conf": text}})
