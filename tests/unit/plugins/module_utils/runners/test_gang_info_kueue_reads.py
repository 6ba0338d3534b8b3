"""gang_info's reads of Kueue (runners/_gang_info_kueue) against a recording fake cluster: without Kueue's CRD one
read and ``kueue: null``; with it one read of its ConfigMap, one list of each of its kinds, one discovery read per
job API version and one list (with the queue-name label) per job kind served, none of a kind not served; the facts
and problems from what was read; a ConfigMap it may not read leaves the integrations unknown; both pod folds see
every pod and restart together."""

from __future__ import annotations

import yaml
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _kueue_problems, _pod_facts
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import Forbidden, NotFound
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _gang_info_kueue

CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/clusterqueues.kueue.x-k8s.io"
CM = "/api/v1/namespaces/kueue-system/configmaps/kueue-manager-config"
KQ = "/apis/kueue.x-k8s.io/v1beta2/"
NODES = [{"name": f"n{i}", "allocatable": 1, "schedulable": True} for i in range(4)]


class FakeClient:
    """Objects by path (a list path holds a list); every call recorded as (verb, path, labelSelector)."""

    def __init__(self, objects: dict, forbidden=()):
        self.objects, self.forbidden, self.calls = objects, set(forbidden), []

    def _read(self, verb, path, query=None):
        self.calls.append((verb, path, (query or {}).get("labelSelector")))
        if path in self.forbidden:
            raise Forbidden(f"Forbidden to read {path}", 403)
        if path not in self.objects:
            raise NotFound(f"{path} not found", 404)
        return self.objects[path]

    def get_or_none(self, path, what=""):
        try:
            return self._read("get", path)
        except NotFound:
            return None

    def list_or_empty(self, path, what="", **query):
        try:
            return list(self._read("list", path, query))
        except NotFound:
            return []

    def scan(self, path, what="", keep=None, **query):
        return [keep(o) for o in self._read("scan", path, query)]


def _crd() -> dict:
    return {
        "spec": {"versions": [{"name": "v1beta1", "served": True}, {"name": "v1beta2", "served": True}]},
        "status": {"conditions": [{"type": "Established", "status": "True"}]},
    }


def _deployment() -> dict:
    container = {
        "name": "manager",
        "image": "registry.k8s.io/kueue/kueue:v0.17.0",
        "args": ["--config=/controller_manager_config.yaml"],
        "volumeMounts": [
            {"name": "cfg", "mountPath": "/controller_manager_config.yaml", "subPath": "controller_manager_config.yaml"}
        ],
    }
    return {
        "metadata": {"namespace": "kueue-system", "name": "kueue-controller-manager"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [container],
                    "volumes": [{"name": "cfg", "configMap": {"name": "kueue-manager-config"}}],
                }
            }
        },
        "status": {"readyReplicas": 1},
    }


def _cluster(frameworks=("batch/job",)) -> dict:
    config = {"integrations": {"frameworks": list(frameworks)}, "waitForPodsReady": {"timeout": "10s"}}
    cq = {
        "metadata": {"name": "cq"},
        "spec": {
            "resourceGroups": [
                {"flavors": [{"name": "gpu", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 4}]}]}
            ]
        },
        "status": {"conditions": [{"type": "Active", "status": "True"}]},
    }
    queued = {_kueue_problems.QUEUE_LABEL: "gpu"}
    return {
        CRD: _crd(),
        CM: {"data": {"controller_manager_config.yaml": yaml.safe_dump(config)}},
        KQ + "clusterqueues": [cq],
        KQ + "localqueues": [{"metadata": {"namespace": "a", "name": "gpu"}, "spec": {"clusterQueue": "cq"}}],
        KQ + "resourceflavors": [{"metadata": {"name": "gpu"}}],
        KQ + "workloads": [],
        # kubeflow.org/v1 serves PyTorchJobs only; the other job APIs are not served
        "/apis/kubeflow.org/v1": {"resources": [{"name": "pytorchjobs"}, {"name": "pytorchjobs/status"}]},
        "/apis/batch/v1/jobs": [{"metadata": {"namespace": "a", "name": "j", "labels": queued}, "spec": {}}],
        "/apis/kubeflow.org/v1/pytorchjobs": [{"metadata": {"namespace": "a", "name": "p", "labels": queued}}],
    }


def test_without_kueues_crd_one_read_and_no_facts():
    client = FakeClient({})
    assert _gang_info_kueue.kueue_info(client, [_deployment()], None, NODES, 60) == (None, [])
    assert client.calls == [("get", CRD, None)]


def test_one_read_per_kind_and_none_of_a_kind_not_served():
    client = FakeClient(_cluster())
    pods = _kueue_problems.QueuedPods(0.0, 60)
    facts, probs = _gang_info_kueue.kueue_info(client, [_deployment()], pods, NODES, 60)
    label = _kueue_problems.QUEUE_LABEL
    assert client.calls == [
        ("get", CRD, None),
        ("get", CM, None),
        ("list", KQ + "clusterqueues", None),
        ("list", KQ + "localqueues", None),
        ("list", KQ + "resourceflavors", None),
        ("scan", KQ + "workloads", None),
        ("get", "/apis/kubeflow.org/v1", None),
        ("get", "/apis/kubeflow.org/v2beta1", None),
        ("get", "/apis/jobset.x-k8s.io/v1alpha2", None),
        ("get", "/apis/trainer.kubeflow.org/v1alpha1", None),
        ("list", "/apis/batch/v1/jobs", label),
        ("list", "/apis/kubeflow.org/v1/pytorchjobs", label),
    ]
    assert facts["integrations"] == ["batch/job"] and facts["wait_for_pods_ready"] == {"timeout": "10s"}
    assert facts["controllers"][0]["configuration"] == "kueue-system/kueue-manager-config"
    assert facts["cluster_queues"][0]["quota"] == {"nvidia.com/gpu": 4}
    # the PyTorchJob is sent to a queue, and Kueue runs without its integration
    assert [p["object"] for p in probs] == ["PyTorchJob a/p"]
    assert "ConfigMap kueue-system/kueue-manager-config: batch/job" in probs[0]["message"]


def test_a_configmap_it_may_not_read_leaves_the_integrations_unknown():
    client = FakeClient(_cluster(), forbidden=[CM])
    facts, probs = _gang_info_kueue.kueue_info(client, [_deployment()], _kueue_problems.QueuedPods(0.0, 60), NODES, 60)
    assert facts["integrations"] is None and probs == []


def test_both_folds_see_every_pod_and_restart_together():
    pod = {
        "metadata": {
            "namespace": "a",
            "name": "p-0",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "annotations": {_kueue_problems.WORKLOAD_ANNOTATION: "job-j-1"},
            "labels": {"training.kubeflow.org/job-name": "p"},
        },
        "spec": {"nodeName": "n0"},
        "status": {"phase": "Running"},
    }
    gangs, queued = _pod_facts.PodFold(0.0, 60), _kueue_problems.QueuedPods(0.0, 60)
    both = _gang_info_kueue.Folds(gangs, queued)
    both(pod)
    wl = {"namespace": "a", "name": "job-j-1", "owner": None}
    assert gangs.gangs() == {"a/p"} and queued.of(wl)["bound"] == 1
    both.restart()
    assert gangs.gangs() == set() and queued.of(wl) is None
