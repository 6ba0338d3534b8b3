"""gang_info and Kueue on one fresh lab (4 one-GPU nodes, the default scheduler, no gang scheduler): without Kueue's
CRDs ``kueue`` is null and no request for Kueue's API is sent beyond the one CRD read; then the kueue role (integrations
batch/job only, a ClusterQueue of 8 GPUs, waitForPodsReady at 10 s with a 1 s backoff) and each problem made for real
and named: none on the healthy lab (a Job of 2 GPUs admitted and Running); a Job sent to a LocalQueue that does not
exist; a ClusterQueue whose ResourceFlavor does not exist; a PyTorchJob sent to a queue while Kueue runs without its
integration; a Job of 5 one-GPU pods on the default scheduler admitted within the quota, started in part (4 bound, 1
unbound), then evicted by waitForPodsReady and requeued again and again, the gang bigger than the nodes and the quota
bigger than them named. The release files come from the lab's build cache (no internet)."""

from __future__ import annotations

import json

import pytest
from ansible_run import BIN, REPO, Run, ansible_cli, ansible_env, module
from kubernetes import client as k

from lab import kube, scenarios

pytestmark = pytest.mark.timeout(600)

NS, QUEUE, CQ, FLAVOR = "kq-team", "gpu", "gpu-cluster-queue", "gpu"
KQ = ("kueue.x-k8s.io", "v1beta2")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PLAY = """\
- name: Kueue
  hosts: gangsched_cluster
  gather_facts: false
  roles:
    - role: gangsched.kubeflow.kueue
"""
EXTRA = {
    "kueue_integrations": ["batch/job"],
    "kueue_local_queues": [{"namespace": NS, "name": QUEUE}],
    "kueue_quota": {"nvidia.com/gpu": 8, "cpu": "64", "memory": "256Gi"},
    "kueue_wait_for_pods_ready_timeout": "10s",
    "kueue_requeue_backoff_base_seconds": 1,
    "kueue_requeue_backoff_max_seconds": 2,
}


def _info(lab) -> dict:
    res = module(lab, "gang_info", partial_threshold_seconds=1)
    assert not res.get("failed"), res.get("msg")
    return res


def _about(info: dict, obj: str) -> list[dict]:
    return [p for p in info["problems"] if p["object"] == obj]


def _job(name: str, pods: int, queue: str = QUEUE) -> dict:
    """A batch Job of ``pods`` one-GPU pods at once, sent to ``queue``, for the default scheduler."""
    container = {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"namespace": NS, "name": name, "labels": {QUEUE_LABEL: queue}},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 0,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    }


def _workload(lab, job: str) -> dict | None:
    items = k.CustomObjectsApi(kube.api(lab)).list_namespaced_custom_object(*KQ, NS, "workloads")["items"]
    return next((w for w in items if any(o["name"] == job for o in w["metadata"].get("ownerReferences") or [])), None)


def _condition(obj: dict | None, kind: str) -> dict:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def _kueue_requests(lab, since: int) -> list[tuple[str, str, int]]:
    """(verb, URI, response code) of the audit log's requests for Kueue's API or CRDs from line ``since`` on."""
    lines = (lab.logs / "audit.log").read_text(errors="replace").splitlines()[since:]
    out = []
    for line in lines:
        ev = json.loads(line)
        if ev.get("stage") == "ResponseComplete" and "kueue.x-k8s.io" in ev.get("requestURI", ""):
            out.append((ev["verb"], ev["requestURI"], ev.get("responseStatus", {}).get("code")))
    return out


@pytest.fixture(scope="module")
def kueue(lab, tmp_path_factory):
    kube.ensure_namespace(k.CoreV1Api(kube.api(lab)), NS)
    play = tmp_path_factory.mktemp("kueue") / "kueue.yml"
    play.write_text(PLAY)
    cmd = [str(BIN / "ansible-playbook"), "-i", str(REPO / "inventories/lab"), str(play), "-e", json.dumps(EXTRA)]
    run = Run(ansible_cli(cmd, ansible_env(lab, kubeconfig=False), timeout=600))
    assert run.rc == 0, run.failures()
    return lab


def test_without_kueue_it_is_null_and_only_its_crd_is_read(lab):
    since = len((lab.logs / "audit.log").read_text(errors="replace").splitlines())
    info = _info(lab)
    assert info["kueue"] is None
    asked = _kueue_requests(lab, since)
    assert asked == [
        ("get", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/clusterqueues.kueue.x-k8s.io", 404)
    ]


def test_a_healthy_kueue_is_read_and_names_no_problem(kueue):
    kube.apply(kueue, [_job("fits", 2)])
    kube.wait_for(lambda: _condition(_workload(kueue, "fits"), "PodsReady").get("status") == "True", 90, "fits ready")
    info = _info(kueue)
    assert info["problems"] == [], info["problems"]
    kq = info["kueue"]
    assert [(c["deployment"], c["ready"]) for c in kq["controllers"]] == [
        ("kueue-system/kueue-controller-manager", True)
    ]
    assert kq["integrations"] == ["batch/job"] and kq["wait_for_pods_ready"]["timeout"] == "10s"
    (cq,) = [c for c in kq["cluster_queues"] if c["name"] == CQ]
    assert cq["active"] is True and cq["quota"]["nvidia.com/gpu"] == 8 and cq["used"]["nvidia.com/gpu"] == 2, cq
    assert {"namespace": NS, "name": QUEUE, "cluster_queue": CQ} in kq["local_queues"]
    (wl,) = [w for w in kq["workloads"] if w["owner"] == "Job/fits"]
    assert wl["admitted"] and wl["quota_reserved"] and wl["pods_ready"] and wl["requeue_count"] == 0, wl
    kube.delete(kueue, [_job("fits", 2)])
    core = k.CoreV1Api(kube.api(kueue))
    kube.wait_for(
        lambda: not core.list_namespaced_pod(NS, label_selector="batch.kubernetes.io/job-name=fits").items,
        60,
        "the pods of fits gone",
    )


def test_a_job_sent_to_a_missing_local_queue(kueue):
    kube.apply(kueue, [_job("lost", 1, queue="nope")])
    kube.wait_for(
        lambda: "doesn't exist" in _condition(_workload(kueue, "lost"), "QuotaReserved").get("message", ""),
        60,
        "Kueue's word on the Workload of lost",
    )
    (p,) = _about(_info(kueue), f"Job {NS}/lost")
    assert "LocalQueue 'nope'" in p["message"] and "LocalQueue nope doesn't exist" in p["message"], p
    assert f"create LocalQueue {NS}/nope" in p["fix"], p
    # job= on the Workload itself: explained as the Job it admits, the Workload named first
    wl = _workload(kueue, "lost")["metadata"]["name"]
    job = module(kueue, "gang_info", job={"kind": "Workload", "namespace": NS, "name": wl})["job"]
    assert (job["kind"], job["name"], job["found"]) == ("Job", "lost", True), job
    assert job["why"].startswith(f"Kueue Workload {NS}/{wl} admits Job {NS}/lost: "), job["why"]
    assert "LocalQueue 'nope'" in job["why"], job["why"]
    kube.delete(kueue, [_job("lost", 1, queue="nope")])


def test_a_cluster_queue_whose_flavor_does_not_exist(kueue):
    cq = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "kq-broken"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [{"name": "kq-ghost", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 1}]}],
                }
            ],
        },
    }
    kube.apply(kueue, [cq])
    co = k.CustomObjectsApi(kube.api(kueue))
    kube.wait_for(
        lambda: _condition(co.get_cluster_custom_object(*KQ, "clusterqueues", "kq-broken"), "Active").get("status")
        == "False",
        60,
        "kq-broken inactive",
    )
    (p,) = _about(_info(kueue), "ClusterQueue kq-broken")
    assert "FlavorNotFound" in p["message"] and "ResourceFlavor(s) kq-ghost it names do not exist" in p["message"], p
    assert "create ResourceFlavor(s) kq-ghost" in p["fix"] and f"ResourceFlavors: {FLAVOR}" in p["fix"], p
    kube.delete(kueue, [cq])


def test_a_pytorchjob_sent_to_a_queue_kueue_does_not_integrate(kueue):
    docs = [
        d for d in scenarios.crds("training-operator", "crds") if d["metadata"]["name"] == "pytorchjobs.kubeflow.org"
    ]
    kube.apply(kueue, docs, server_side=True)
    scenarios.wait_crds_established(kueue, ["pytorchjobs.kubeflow.org"])
    job = scenarios.operators.pytorchjob(NS, "unqueued", 1)
    job["metadata"]["labels"] = {QUEUE_LABEL: QUEUE}
    kube.apply(kueue, [job])
    (p,) = _about(_info(kueue), f"PyTorchJob {NS}/unqueued")
    assert "without the integration kubeflow.org/pytorchjob" in p["message"], p
    assert "(and has made none)" in p["message"] and "batch/job" in p["message"], p
    assert "add kubeflow.org/pytorchjob" in p["fix"], p
    assert _workload(kueue, "unqueued") is None  # the evidence is real: Kueue made none
    kube.delete(kueue, [job])


def test_a_gang_bigger_than_the_nodes_starts_in_part_then_is_evicted_again_and_again(kueue):
    kube.apply(kueue, [_job("big", 5)])
    obj = f"Job {NS}/big"

    def partial():
        return [p for p in _about(_info(kueue), obj) if "started in part" in p["message"]]

    (p,) = kube.wait_for(partial, 120, "big admitted and started in part", interval=1)
    assert "only 4 of its 5 pods are bound" in p["message"] and "hold 4 GPU(s)" in p["message"], p
    assert "quota (8) to the 4 the nodes hold" in p["fix"], p

    def again():
        w = _workload(kueue, "big")
        return ((w or {}).get("status") or {}).get("requeueState", {}).get("count", 0) >= 2

    kube.wait_for(again, 120, "big requeued twice", interval=1)
    (p,) = [p for p in _about(_info(kueue), obj) if "evicted by waitForPodsReady" in p["message"]]
    assert "asks for 5 GPUs in all and the schedulable nodes hold 4: it never fits" in p["message"], p
    assert "at most 4 GPUs" in p["fix"] and f"lower ClusterQueue {CQ}'s nvidia.com/gpu quota (8) to 4" in p["fix"], p
    kube.delete(kueue, [_job("big", 5)])
