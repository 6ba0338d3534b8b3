"""site.yml with Kueue in front of Volcano (gangsched_kueue=true) on a fresh lab of 4 one-GPU nodes: check mode first,
which creates nothing; then a ClusterQueue of 6 GPUs (more than the lab has, so that an admitted gang can still be one
the scheduler cannot place) and waitForPodsReady at 30 s. Kueue runs from the Deployment the role applied, as its own
ServiceAccount, with no call refused, and only its own kinds' and its integrations' webhooks (none on pods); the smoke
test sends its gangs through the ClusterQueue: 4 admitted and Running together, 5 admitted and held whole by Volcano,
7 held by Kueue for quota; gang_info finds no problem; a second run changes nothing. Then PyTorchJobs sent to a
LocalQueue, as users send them: one of 4 GPUs admitted and all 4 Running together; while it runs, one of 3 GPUs over
the quota held by Kueue (suspended, not one pod, no PodGroup; why.yml's explanation quotes Kueue); one of 2 GPUs within
the quota admitted, then held whole by Volcano (no member ever bound) and evicted by waitForPodsReady, its job
suspended again and requeued. uninstall.yml refuses while Kueue holds those workloads, changing nothing, and once they
are gone removes Kueue and keeps the queues and CRDs; asked to remove the CRDs too, it refuses while Kueue is gone (its
finalizer on the queues), and with Kueue back removes every queue object, then the CRDs."""

from __future__ import annotations

import json
import time

import pytest
from ansible_run import module, playbook
from kubernetes import client as k

from lab import kube, scenarios

pytestmark = pytest.mark.timeout(1500)

NS, QUEUE, CQ = "team-a", "gpu", "gpu-cluster-queue"
KUEUE_NS, KUEUE = "kueue-system", "kueue-controller-manager"
USER = f"system:serviceaccount:{KUEUE_NS}:{KUEUE}"
EXTRA = {
    "gangsched_gang_scheduler": "volcano",
    "gangsched_kueue": True,
    "kueue_quota": {"nvidia.com/gpu": 6, "cpu": "64", "memory": "256Gi"},
    "kueue_local_queues": [{"namespace": NS, "name": QUEUE}],
    "kueue_wait_for_pods_ready_timeout": "30s",
}
KQ = ("kueue.x-k8s.io", "v1beta2")
JOB_LABEL = "training.kubeflow.org/job-name"
GPU = "nvidia.com/gpu"


def _co(lab) -> k.CustomObjectsApi:
    return k.CustomObjectsApi(kube.api(lab))


def _job(name: str, workers: int) -> dict:
    """A PyTorchJob of 1 + ``workers`` one-GPU pods sent to the LocalQueue."""
    job = scenarios.operators.pytorchjob(NS, name, workers)
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": QUEUE}
    return job


def _pytorchjob(lab, name: str) -> dict:
    return _co(lab).get_namespaced_custom_object("kubeflow.org", "v1", NS, "pytorchjobs", name)


def _workload(lab, job: str) -> dict | None:
    """The Workload Kueue made for the PyTorchJob ``job`` (its owner)."""
    items = _co(lab).list_namespaced_custom_object(*KQ, NS, "workloads")["items"]
    mine = [w for w in items if any(o.get("name") == job for o in w["metadata"].get("ownerReferences") or [])]
    return mine[0] if mine else None


def _condition(obj: dict | None, kind: str) -> dict:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def _pods(lab, job: str) -> list[k.V1Pod]:
    core = k.CoreV1Api(kube.api(lab))
    return core.list_namespaced_pod(NS, label_selector=f"{JOB_LABEL}={job}").items


def _podgroup(lab, job: str) -> dict | None:
    try:
        return _co(lab).get_namespaced_custom_object("scheduling.volcano.sh", "v1beta1", NS, "podgroups", job)
    except k.ApiException as e:
        if e.status == 404:
            return None
        raise


def test_check_mode_on_a_fresh_lab_writes_nothing(lab):
    """Before anything is installed: check mode passes, reports what it would create, and creates nothing."""
    kube.ensure_namespace(k.CoreV1Api(kube.api(lab)), NS)
    run = playbook(lab, "site", check=True, **EXTRA)
    assert run.rc == 0, run.failures()
    assert any(
        "would create ResourceFlavor gpu, ClusterQueue gpu-cluster-queue" in m
        for m in run.messages("the queues the dry run could not predict")
    )
    names = {n.metadata.name for n in k.CoreV1Api(kube.api(lab)).list_namespace().items}
    assert KUEUE_NS not in names, names
    crds = k.ApiextensionsV1Api(kube.api(lab)).list_custom_resource_definition().items
    assert not [c.metadata.name for c in crds if c.metadata.name.endswith(".kueue.x-k8s.io")]


@pytest.fixture(scope="module")
def site(lab):
    kube.ensure_namespace(k.CoreV1Api(kube.api(lab)), NS)
    return playbook(lab, "site", **EXTRA)


def test_site_installs_kueue_in_front_of_volcano_and_proves_the_gang(lab, site, pod_ports_named):
    assert site.rc == 0, site.failures()
    # the smoke test through Kueue: 4 admitted and Running together, 5 admitted (within 6) and held whole by Volcano,
    # 7 held by Kueue for quota
    assert site.verdicts() == ["gang_held_running", "gang_held_pending", "kueue_held_quota"], site.verdicts()
    apps = k.AppsV1Api(kube.api(lab))
    assert apps.read_namespaced_deployment(KUEUE, KUEUE_NS).status.available_replicas == 1
    adm = k.AdmissionregistrationV1Api(kube.api(lab))
    kinds = set()
    for conf in (
        adm.read_mutating_webhook_configuration("kueue-mutating-webhook-configuration"),
        adm.read_validating_webhook_configuration("kueue-validating-webhook-configuration"),
    ):
        for w in conf.webhooks:
            assert w.client_config.ca_bundle, f"{w.name}: no CA written by Kueue's rotator"
            kinds.update(r for rule in w.rules for r in rule.resources)
    assert "pods" not in kinds and "deployments" not in kinds and "statefulsets" not in kinds, kinds
    assert {"jobs", "pytorchjobs", "mpijobs", "trainjobs", "clusterqueues", "workloads"} <= kinds, kinds
    cq = _co(lab).get_cluster_custom_object(*KQ, "clusterqueues", CQ)
    assert _condition(cq, "Active").get("status") == "True", cq.get("status")
    # gang_info reads Kueue and finds nothing wrong on the healthy lab
    info = module(lab, "gang_info")
    assert info["problems"] == [], info["problems"]
    assert [q["name"] for q in info["kueue"]["cluster_queues"]] == [CQ], info["kueue"]
    pod_ports_named()


def test_second_run_changes_nothing(lab, site):
    run = playbook(lab, "site", "--skip-tags", "smoke", **EXTRA)
    assert run.rc == 0, run.failures()
    assert run.changed() == []
    assert all(s["changed"] == 0 for s in run.stats.values()), run.stats


def test_admitted_gang_runs_whole_over_quota_is_held_by_kueue_and_an_unplaceable_one_is_evicted(lab, site):
    co = _co(lab)
    kube.apply(lab, [_job("fits", 3)])
    # admitted (4 of 6 GPUs), then all 4 Running together on the lab's 4 GPUs
    kube.wait_for(lambda: _condition(_workload(lab, "fits"), "Admitted").get("status") == "True", 60, "fits admitted")
    kube.wait_for(
        lambda: sum(p.status.phase == "Running" for p in _pods(lab, "fits")) == 4 or None, 90, "fits: 4 Running"
    )

    # over the quota (4 + 3 > 6): Kueue holds it, suspended, and no pod or PodGroup is ever made
    kube.apply(lab, [_job("over", 2)])
    kube.wait_for(lambda: _workload(lab, "over"), 30, "the Workload of over")
    # within the quota (4 + 2 <= 6) but no GPU free: admitted, then Volcano holds the whole gang
    kube.apply(lab, [_job("nofit", 1)])
    kube.wait_for(lambda: _condition(_workload(lab, "nofit"), "Admitted").get("status") == "True", 60, "nofit admitted")
    seen_bound: set[str] = set()
    deadline = time.monotonic() + 90
    evicted = {}
    while time.monotonic() < deadline:
        for p in _pods(lab, "nofit"):
            if p.spec.node_name:
                seen_bound.add(p.metadata.name)
        over_pods = _pods(lab, "over")
        assert over_pods == [], [p.metadata.name for p in over_pods]
        evicted = _condition(_workload(lab, "nofit"), "Evicted")
        if evicted.get("status") == "True":
            break
        time.sleep(1)
    assert seen_bound == set(), f"members of the unplaceable gang bound: {sorted(seen_bound)}"
    assert evicted.get("status") == "True" and evicted.get("reason") == "PodsReadyTimeout", json.dumps(evicted)

    over = _workload(lab, "over")
    reserved = _condition(over, "QuotaReserved")
    assert reserved.get("status") == "False" and "couldn't assign flavors" in reserved.get("message", ""), reserved
    assert _pytorchjob(lab, "over")["spec"]["runPolicy"]["suspend"] is True
    assert _podgroup(lab, "over") is None
    # why.yml's explanation of it: Kueue's word first, as no scheduler has seen it
    why = module(lab, "gang_info", job={"kind": "PyTorchJob", "namespace": NS, "name": "over"})["job"]
    assert why["why"].startswith("held by Kueue, not admitted") and "insufficient" in why["why"], why["why"]
    assert why["kueue"]["workload"]["name"] == over["metadata"]["name"], why["kueue"]
    # the evicted one: suspended again, requeued, its pods gone
    kube.wait_for(lambda: _pytorchjob(lab, "nofit")["spec"]["runPolicy"].get("suspend") is True, 60, "nofit suspended")
    nofit = _workload(lab, "nofit")
    assert (nofit["status"].get("requeueState") or {}).get("count", 0) >= 1, nofit["status"]
    kube.wait_for(lambda: not _pods(lab, "nofit"), 60, "nofit's pods removed")
    # the admitted gang kept running through all this
    assert sum(p.status.phase == "Running" for p in _pods(lab, "fits")) == 4
    # what Kueue reserved never exceeds the quota (the evicted gang may be admitted again after its backoff)
    cq = co.get_cluster_custom_object(*KQ, "clusterqueues", CQ)
    gpus = [r for f in cq["status"].get("flavorsReservation") or [] for r in f["resources"] if r["name"] == GPU]
    assert gpus and int(gpus[0]["total"]) <= 6, cq["status"]
    # every call Kueue made through all this as its own ServiceAccount was allowed (no right missing from the table)
    denied = lab.rbac_refusals(USER)
    assert denied == [], [(e["verb"], e["requestURI"], e["responseStatus"].get("message")) for e in denied]
    assert lab.audit_events(user=USER), f"no call of {USER} in the audit log"


def test_uninstall_refuses_while_kueue_holds_workloads_then_keeps_the_queues(lab, site):
    co = _co(lab)
    run = playbook(lab, "uninstall", **EXTRA)
    assert run.rc != 0 and "Kueue still holds or runs" in run.failures(), run.failures()
    assert k.AppsV1Api(kube.api(lab)).read_namespaced_deployment(KUEUE, KUEUE_NS)
    for name in ("fits", "over", "nofit"):
        co.delete_namespaced_custom_object("kubeflow.org", "v1", NS, "pytorchjobs", name)
    kube.wait_for(lambda: not co.list_namespaced_custom_object(*KQ, NS, "workloads")["items"], 90, "the Workloads gone")
    run = playbook(lab, "uninstall", **EXTRA)
    assert run.rc == 0, run.failures()
    apps = k.AppsV1Api(kube.api(lab))
    assert KUEUE not in {d.metadata.name for d in apps.list_namespaced_deployment(KUEUE_NS).items}
    adm = k.AdmissionregistrationV1Api(kube.api(lab))
    assert "kueue-mutating-webhook-configuration" not in {
        c.metadata.name for c in adm.list_mutating_webhook_configuration().items
    }
    # the queues stay (kueue_uninstall_queues false), and so do the CRDs
    assert co.get_cluster_custom_object(*KQ, "clusterqueues", CQ)
    assert co.get_namespaced_custom_object(*KQ, NS, "localqueues", QUEUE)

    # the CRDs asked to go with Kueue gone: refused (only Kueue removes the queues' finalizer), nothing changed
    run = playbook(lab, "uninstall", **EXTRA, kueue_uninstall_crds=True)
    assert run.rc != 0 and "only Kueue removes the finalizer" in run.failures(), run.failures()
    assert co.get_cluster_custom_object(*KQ, "clusterqueues", CQ)
    # with Kueue back: every queue object, then the CRDs, gone
    run = playbook(lab, "site", "--skip-tags", "smoke", **EXTRA)
    assert run.rc == 0, run.failures()
    run = playbook(lab, "uninstall", **EXTRA, kueue_uninstall_crds=True)
    assert run.rc == 0, run.failures()
    crds = k.ApiextensionsV1Api(kube.api(lab)).list_custom_resource_definition().items
    assert not [c.metadata.name for c in crds if c.metadata.name.endswith(".kueue.x-k8s.io")]
