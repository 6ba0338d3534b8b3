"""Kueue as gang_info reads it (domain/_kueue_problems), on hand-made objects: a healthy set (Kueue with its
Configuration, a ResourceFlavor, an Active ClusterQueue, a LocalQueue, an admitted Job with all its pods bound) gives
its facts and no problem; then each problem with a case that triggers it and one that does not: a job sent to a
LocalQueue that does not exist (from the job's label, or from Kueue's word on its Workload), an admitted workload
started in part, a workload evicted by waitForPodsReady again and again (a gang bigger than the nodes, a quota bigger
than the nodes, neither), a job of a kind Kueue runs no integration for, a ClusterQueue that is not Active."""

from __future__ import annotations

import copy

import pytest
import yaml
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _kueue_problems as K

T0 = "2026-01-01T00:00:00Z"
NOW = 1767225600.0 + 300  # T0 + 5 minutes
NS, LQ, CQ, RF = "team-a", "gpu", "gpu-cluster-queue", "gpu"
CONFIG = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "integrations": {"frameworks": ["batch/job", "kubeflow.org/pytorchjob"]},
    "waitForPodsReady": {"timeout": "5m"},
}


def _dep(image="registry.k8s.io/kueue/kueue:v0.17.0", ready=1, name="kueue-controller-manager") -> dict:
    return {
        "metadata": {"namespace": "kueue-system", "name": name},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "manager",
                            "image": image,
                            "args": ["--config=/controller_manager_config.yaml", "--zap-log-level=2"],
                            "volumeMounts": [
                                {
                                    "name": "manager-config",
                                    "mountPath": "/controller_manager_config.yaml",
                                    "subPath": "controller_manager_config.yaml",
                                }
                            ],
                        }
                    ],
                    "volumes": [{"name": "manager-config", "configMap": {"name": "kueue-manager-config"}}],
                }
            }
        },
        "status": {"readyReplicas": ready},
    }


def _controllers(config=CONFIG) -> list[dict]:
    (dep, c), *_rest = K.controllers([_dep()])
    text = None if config is None else yaml.safe_dump(config)
    return [K.controller_fact(dep, c, K.configuration(text), "kueue-system/kueue-manager-config")]


def _cq(name=CQ, flavor=RF, gpus=4, active="True", reason="Ready", message="Can admit new workloads", used=0) -> dict:
    res = [
        {"name": "cpu", "nominalQuota": "64"},
        {"name": "memory", "nominalQuota": "256Gi"},
        {"name": "nvidia.com/gpu", "nominalQuota": gpus},
    ]
    return {
        "metadata": {"name": name},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                    "flavors": [{"name": flavor, "resources": res}],
                }
            ]
        },
        "status": {
            "conditions": [{"type": "Active", "status": active, "reason": reason, "message": message}],
            "flavorsReservation": [{"name": flavor, "resources": [{"name": "nvidia.com/gpu", "total": str(used)}]}],
            "pendingWorkloads": 0,
            "admittedWorkloads": 1,
        },
    }


def _lq(ns=NS, name=LQ, cq=CQ) -> dict:
    return {"metadata": {"namespace": ns, "name": name}, "spec": {"clusterQueue": cq}}


def _rf(name=RF) -> dict:
    return {"metadata": {"name": name}, "spec": {}}


def _job(name="train", kind="Job", queue=LQ, ns=NS, done=False, suspend=False) -> dict:
    raw = {
        "metadata": {"namespace": ns, "name": name, "labels": {K.QUEUE_LABEL: queue}},
        "spec": {"runPolicy": {"suspend": suspend}} if kind != "Job" else {"suspend": suspend},
        "status": {"conditions": [{"type": "Complete", "status": "True"}] if done else []},
    }
    return K.slim_job(kind)(raw)


def _conds(**status) -> list[dict]:
    """Conditions from type=status or type=(status, reason[, message])."""
    out = []
    for kind, v in status.items():
        st, reason, message = (v, kind, "") if isinstance(v, str) else (*v, "")[:3]
        out.append({"type": kind, "status": st, "reason": reason, "message": message})
    return out


def _wl(job="train", kind="Job", pods=2, gpus=1, queue=LQ, count=None, active=None, admitted=True, **conds) -> dict:
    if admitted and not conds:
        conds = {"QuotaReserved": "True", "Admitted": "True", "PodsReady": "True"}
    spec = {
        "queueName": queue,
        "podSets": [
            {
                "name": "main",
                "count": pods,
                "template": {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}},
            }
        ],
    }
    if active is not None:
        spec["active"] = active
    status = {"conditions": _conds(**conds)}
    if count is not None:
        status["requeueState"] = {"count": count}
    if admitted:
        status["admission"] = {"clusterQueue": CQ}
    raw = {
        "metadata": {
            "namespace": NS,
            "name": f"{kind.lower()}-{job}-1a2b3",
            "ownerReferences": [{"kind": kind, "name": job, "controller": True}],
        },
        "spec": spec,
        "status": status,
    }
    return K.slim_workload(raw)


def _pod(name, node=None, wl="job-train-1a2b3", created=T0, job=None, said=None) -> dict:
    md = {"namespace": NS, "name": name, "creationTimestamp": created, "labels": {K.PODSET_LABEL: "main"}}
    if wl:
        md["annotations"] = {K.WORKLOAD_ANNOTATION: wl}
    if job:
        md["labels"]["batch.kubernetes.io/job-name"] = job
    spec = {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]}
    status = {"phase": "Running" if node else "Pending"}
    if node:
        spec["nodeName"] = node
    elif said:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "message": said}]
    return {"metadata": md, "spec": spec, "status": status}


def _fold(*pods, threshold=60.0) -> K.QueuedPods:
    fold = K.QueuedPods(NOW, threshold)
    for p in pods:
        fold(p)
    return fold


def _all(controllers, cqs, lqs, flavors, workloads, jobs, pods, gpus=4.0) -> list[dict]:
    """Every problem, as the runner asks for them."""
    frameworks = K.integrations(controllers)
    where = controllers[0]["configuration"] if controllers else None
    out = K.missing_queue_problems(jobs, lqs, workloads, frameworks)
    out += K.partial_problems(workloads, pods, lqs, cqs, gpus, K.wait_for_pods_ready(controllers))
    out += K.requeue_problems(workloads, lqs, cqs, gpus)
    out += K.integration_problems(jobs, workloads, frameworks, where)
    out += K.inactive_problems(cqs, flavors, lqs)
    return out


def _healthy() -> dict:
    return {
        "controllers": _controllers(),
        "cqs": [_cq(used=2)],
        "lqs": [_lq()],
        "flavors": [_rf()],
        "workloads": [_wl()],
        "jobs": [_job()],
        "pods": _fold(_pod("train-0", "n1"), _pod("train-1", "n2")),
    }


def test_a_healthy_kueue_has_its_facts_and_no_problem():
    h = _healthy()
    assert _all(**h) == []
    facts = K.facts(h["controllers"], h["cqs"], h["lqs"], h["workloads"])
    assert facts["controllers"] == [
        {
            "deployment": "kueue-system/kueue-controller-manager",
            "container": "manager",
            "image": "registry.k8s.io/kueue/kueue:v0.17.0",
            "version": "v0.17.0",
            "ready": True,
            "configuration": "kueue-system/kueue-manager-config",
        }
    ]
    assert facts["integrations"] == ["batch/job", "kubeflow.org/pytorchjob"]
    assert facts["wait_for_pods_ready"] == {"timeout": "5m"}
    assert facts["cluster_queues"] == [
        {
            "name": CQ,
            "quota": {"cpu": 64, "memory": 256 * 1024**3, "nvidia.com/gpu": 4},
            "used": {"nvidia.com/gpu": 2},
            "pending_workloads": 0,
            "admitted_workloads": 1,
            "active": True,
        }
    ]
    assert facts["local_queues"] == [{"namespace": NS, "name": LQ, "cluster_queue": CQ}]
    assert facts["workloads"] == [
        {
            "namespace": NS,
            "name": "job-train-1a2b3",
            "owner": "Job/train",
            "queue": LQ,
            "admitted": True,
            "quota_reserved": True,
            "evicted": None,
            "requeue_count": 0,
            "pods_ready": True,
            "said": None,
        }
    ]


@pytest.mark.parametrize(
    ("versions", "want"),
    [
        ([("v1beta1", True), ("v1beta2", True)], "v1beta2"),
        ([("v1beta1", True), ("v1beta2", False)], "v1beta1"),
        ([("v1alpha1", True)], None),
    ],
)
def test_the_newest_served_version_is_read(versions, want):
    crd = {"spec": {"versions": [{"name": n, "served": s} for n, s in versions]}}
    assert K.served_version(crd) == want
    assert K.served_version(None) is None


def test_the_configuration_and_its_defaults():
    assert K.configuration("") == {}  # no --config: all of Kueue's defaults
    assert K.configuration(None) is None and K.configuration("a: [") is None and K.configuration("- x") is None
    assert K.integrations(_controllers({"kind": "Configuration"})) == K.DEFAULT_FRAMEWORKS
    assert K.integrations(_controllers(None)) is None  # not read: not known
    assert K.integrations([]) is None
    assert K.wait_for_pods_ready(_controllers({"kind": "Configuration"})) is None
    assert K.wait_for_pods_ready(_controllers({"waitForPodsReady": {"enable": False}})) is None


def test_only_kueue_images_are_its_controllers():
    deps = [_dep(), _dep("registry.example.com/mirror/kueue:v0.17.0", 0, "q"), _dep("volcanosh/vc-scheduler:v1.10.0")]
    assert [d["metadata"]["name"] for d, _c in K.controllers(deps)] == ["kueue-controller-manager", "q"]


# ---- 1. a job sent to a LocalQueue that does not exist ---------------------------------------------------------------
def test_a_job_sent_to_a_missing_local_queue():
    h = _healthy()
    h["jobs"].append(_job("lost", queue="nope"))
    h["workloads"].append(_wl("lost", queue="nope", admitted=False, QuotaReserved="False"))
    (p,) = _all(**h)
    assert p["object"] == f"Job {NS}/lost"
    assert "LocalQueue 'nope'" in p["message"] and f"LocalQueues there: {LQ}" in p["message"]
    assert f"create LocalQueue {NS}/nope" in p["fix"] and CQ in p["fix"]


@pytest.mark.parametrize(("suspend", "fate"), [(True, "it stays suspended"), (False, "runs past Kueue's quota")])
def test_a_job_sent_to_a_missing_local_queue_is_held_or_runs_unqueued(suspend, fate):
    h = _healthy()
    h["jobs"].append(_job("lost", queue="nope", suspend=suspend))
    (p,) = _all(**h)
    assert fate in p["message"]


def test_kueues_word_on_the_workload_is_evidence_too():
    h = _healthy()
    wl = _wl("lost", queue="nope", admitted=False)
    wl["status"]["conditions"] = _conds(QuotaReserved=("False", "Inadmissible", "LocalQueue nope doesn't exist"))
    h["workloads"].append(wl)  # its job was not listed (a kind gang_info does not list)
    (p,) = _all(**h)
    assert p["object"] == f"Job {NS}/lost" and "LocalQueue nope doesn't exist" in p["message"]
    # once the LocalQueue is there, a stale condition says nothing
    h["lqs"].append(_lq(name="nope"))
    assert _all(**h) == []


def test_a_finished_job_or_one_whose_queue_exists_is_no_problem():
    h = _healthy()
    h["jobs"] += [_job("old", queue="nope", done=True), _job("other")]
    assert _all(**h) == []


# ---- 2. admitted, started in part ------------------------------------------------------------------------------------
def test_an_admitted_workload_bound_in_part():
    h = _healthy()
    h["workloads"] = [_wl(pods=3)]
    h["pods"] = _fold(_pod("train-0", "n1"), _pod("train-1", "n2"), _pod("train-2", said="0/4 nodes are available"))
    (p,) = _all(**h)
    assert p["object"] == f"Job {NS}/train"
    assert "only 2 of its 3 pods are bound" in p["message"] and "train-2" in p["message"]
    assert "0/4 nodes are available" in p["message"] and "hold 2 GPU(s)" in p["message"]
    assert "gang scheduler" in p["fix"] and "waitForPodsReady" not in p["fix"]  # it is on


def test_bound_in_part_names_a_quota_above_the_nodes_and_waitforpodsready_off():
    h = _healthy()
    h["controllers"] = _controllers({"integrations": {"frameworks": ["batch/job"]}})
    h["cqs"] = [_cq(gpus=8)]
    h["workloads"] = [_wl(pods=3)]
    h["pods"] = _fold(_pod("train-0", "n1"), _pod("train-1", "n2"), _pod("train-2"))
    (p,) = _all(**h)
    assert "quota (8) to the 4 the nodes hold" in p["fix"] and "turn on waitForPodsReady" in p["fix"]


def test_pods_found_by_their_job_without_the_workload_annotation():
    h = _healthy()
    h["workloads"] = [_wl(pods=2)]
    h["pods"] = _fold(_pod("train-0", "n1", wl=None, job="train"), _pod("train-1", wl=None, job="train"))
    assert [p["object"] for p in _all(**h)] == [f"Job {NS}/train"]


@pytest.mark.parametrize(
    "case",
    ["young", "not admitted", "none bound", "terminating", "no kueue label"],
)
def test_not_bound_in_part(case):
    h = _healthy()
    h["workloads"] = [_wl(pods=2)]
    pods = [_pod("train-0", "n1"), _pod("train-1")]
    if case == "young":
        pods[1]["metadata"]["creationTimestamp"] = "2026-01-01T00:04:30Z"  # 30 s before NOW
    elif case == "not admitted":
        h["workloads"] = [_wl(pods=2, admitted=False, QuotaReserved="False")]
    elif case == "none bound":
        pods[0] = _pod("train-0")
    elif case == "terminating":
        pods[1]["metadata"]["deletionTimestamp"] = T0
    else:
        for p in pods:
            p["metadata"].pop("annotations")
    h["pods"] = _fold(*pods)
    assert _all(**h) == []


def test_the_fold_restarts_and_raises_a_bad_time_when_read():
    fold = _fold(_pod("train-0", "n1"), _pod("train-1"))
    fold.restart()
    assert fold.of(_wl()) is None
    bad = _pod("train-1")
    bad["metadata"]["creationTimestamp"] = "yesterday"
    fold(bad)
    with pytest.raises(ValueError):
        fold.of(_wl())


# ---- 3. evicted by waitForPodsReady again and again ------------------------------------------------------------------
def _evicted(count, reason="PodsReadyTimeout", **kw):
    return _wl(
        count=count,
        admitted=False,
        QuotaReserved=("False", "Pending"),
        Evicted=("True", reason, "Exceeded the PodsReady timeout"),
        **kw,
    )


def test_a_gang_bigger_than_the_nodes_evicted_again_and_again():
    h = _healthy()
    h["cqs"] = [_cq(gpus=8)]
    h["workloads"] = [_evicted(3, pods=5)]
    (p,) = _all(**h)
    assert p["object"] == f"Job {NS}/train"
    assert "requeued 3 time(s) (now Evicted: PodsReadyTimeout)" in p["message"]
    assert "asks for 5 GPUs in all and the schedulable nodes hold 4: it never fits" in p["message"]
    assert "at most 4 GPUs" in p["fix"] and f"lower ClusterQueue {CQ}'s nvidia.com/gpu quota (8) to 4" in p["fix"]


def test_a_quota_bigger_than_the_nodes():
    h = _healthy()
    h["cqs"] = [_cq(gpus=8)]
    h["workloads"] = [_wl(pods=3, count=2)]  # re-admitted after two evictions
    (p,) = _all(**h)
    assert "quota (8) is more than the schedulable nodes hold (4)" in p["message"]
    assert p["fix"].startswith(f"lower ClusterQueue {CQ}'s nvidia.com/gpu quota (8) to 4")


def test_evicted_though_it_fits_points_at_the_job():
    h = _healthy()
    h["workloads"] = [_evicted(1, pods=2)]
    (p,) = _all(**h)
    assert "fits the nodes" in p["message"] and "gang_info with job {kind: Job" in p["fix"]


def test_a_job_without_gpus_is_not_blamed_on_the_gpu_quota():
    h = _healthy()
    h["cqs"] = [_cq(gpus=8)]
    h["workloads"] = [_evicted(2, pods=5, gpus=0)]
    (p,) = _all(**h)
    assert "fits the nodes" in p["message"] and "quota" not in p["fix"]


def test_deactivated_past_the_requeue_limit():
    h = _healthy()
    h["workloads"] = [_evicted(2, reason=K.DEACTIVATED, pods=5, active=False)]
    (p,) = _all(**h)
    assert "deactivated past its requeue limit" in p["message"]


@pytest.mark.parametrize(
    "wl",
    [
        _wl(count=1),  # once, and admitted again
        _wl(count=None, admitted=False, Evicted=("True", "Preempted")),
        _wl(count=5, Finished="True"),
    ],
)
def test_not_evicted_again_and_again(wl):
    h = _healthy()
    h["workloads"] = [wl]
    assert _all(**h) == []


# ---- 4. a kind without its integration -------------------------------------------------------------------------------
def test_jobs_of_a_kind_kueue_does_not_integrate():
    h = _healthy()
    h["controllers"] = _controllers({"integrations": {"frameworks": ["batch/job"]}})
    h["jobs"] += [_job("a", "PyTorchJob"), _job("b", "PyTorchJob", queue="nope", suspend=True)]
    (p,) = _all(**h)  # b's missing LocalQueue is not what holds it
    assert p["object"] == f"PyTorchJob {NS}/a, {NS}/b"
    assert "without the integration kubeflow.org/pytorchjob" in p["message"]
    assert "ConfigMap kueue-system/kueue-manager-config: batch/job" in p["message"]
    assert "(and has made none)" in p["message"] and f"{NS}/b stay(s) suspended" in p["message"]
    assert "add kubeflow.org/pytorchjob" in p["fix"] and "kueue_integrations" in p["fix"]


def test_an_integrated_kind_or_an_unread_configuration_says_nothing():
    h = _healthy()
    h["jobs"].append(_job("a", "PyTorchJob"))
    assert _all(**h) == []
    h["controllers"] = _controllers(None)
    h["jobs"].append(_job("c", "TFJob"))
    assert _all(**h) == []


# ---- 5. a ClusterQueue that is not Active ----------------------------------------------------------------------------
def test_a_cluster_queue_whose_flavor_is_missing():
    h = _healthy()
    msg = "Can't admit new workloads: references missing ResourceFlavor(s): ghost."
    h["cqs"].append(_cq("broken", flavor="ghost", active="False", reason="FlavorNotFound", message=msg))
    h["lqs"].append(_lq("team-b", "broken", "broken"))
    (p,) = _all(**h)
    assert p["object"] == "ClusterQueue broken"
    assert (
        f"(FlavorNotFound: {msg})" in p["message"] and "ResourceFlavor(s) ghost it names do not exist" in p["message"]
    )
    assert "LocalQueue(s) team-b/broken" in p["message"]
    assert "create ResourceFlavor(s) ghost" in p["fix"] and f"ResourceFlavors: {RF}" in p["fix"]


def test_a_stopped_cluster_queue():
    h = _healthy()
    h["cqs"] = [_cq(active="False", reason="Stopped", message="Can't admit new workloads: is stopped.")]
    (p,) = _all(**h)
    assert "stopPolicy" in p["fix"] and f"LocalQueue(s) {NS}/{LQ}" in p["message"]


def test_a_cluster_queue_without_conditions_yet_is_no_problem():
    h = _healthy()
    cq = copy.deepcopy(_cq())
    cq["status"] = {}
    h["cqs"] = [cq]
    assert _all(**h) == []
    assert K.cluster_queue_fact(cq)["active"] is None and K.cluster_queue_fact(cq)["used"] == {}
