# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to this collection: the objects a smoke test creates — a PodGroup and pods, or a
PyTorchJob / TFJob / MPIJob for the Kubeflow operators — every one labelled with the run id, and
the selector of the pods whose verdict counts. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils._service import PODGROUP_API

RUN_LABEL = "gangsched.kubeflow/smoke-run"
IMAGE = "registry.k8s.io/pause:3.10"


def _container(name: str, resources: dict) -> dict:
    return {
        "name": name,
        "image": IMAGE,
        "resources": {"limits": dict(resources), "requests": dict(resources)},
    }


def pods(ns: str, name: str, run_id: str, replicas: int, resources: dict, gang: str | None, scheduler_name: str):
    """``gang`` None: plain pods for the default scheduler (the no-gang control)."""
    labels = {RUN_LABEL: run_id, "gangsched.kubeflow/gang": name}
    docs, annotations, pod_labels = [], {}, dict(labels)
    if gang:
        group, version = PODGROUP_API[gang]
        spec = {"minMember": replicas}
        if gang == "volcano":
            spec["queue"] = "default"
            annotations["scheduling.k8s.io/group-name"] = name
        else:
            spec["scheduleTimeoutSeconds"] = 600
            pod_labels["scheduling.x-k8s.io/pod-group"] = name
        docs.append(
            {
                "apiVersion": f"{group}/{version}",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": ns, "labels": labels},
                "spec": spec,
            }
        )
    for i in range(replicas):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{name}-{i}", "namespace": ns, "labels": pod_labels, "annotations": annotations},
                "spec": {
                    "schedulerName": scheduler_name,
                    "terminationGracePeriodSeconds": 0,
                    "restartPolicy": "Never",
                    "containers": [_container("member", resources)],
                },
            }
        )
    return docs, f"gangsched.kubeflow/gang={name}"


def _replica(n: int, container: str, resources: dict, labels: dict, restart: str = "Never") -> dict:
    return {
        "replicas": n,
        "restartPolicy": restart,
        "template": {"metadata": {"labels": labels}, "spec": {"containers": [_container(container, resources)]}},
    }


def kubeflow_job(kind: str, ns: str, name: str, run_id: str, replicas: int, resources: dict):
    """A PyTorchJob (1 Master + N-1 Workers), TFJob (1 PS + N-1 Workers) or MPIJob (N workers, the
    launcher not counted) whose gang is ``replicas`` pods."""
    labels = {RUN_LABEL: run_id, "gangsched.kubeflow/gang": name}
    policy = {"schedulingPolicy": {"minAvailable": replicas}}
    if kind == "pytorchjob":
        specs = {
            "Master": _replica(1, "pytorch", resources, labels),
            "Worker": _replica(replicas - 1, "pytorch", resources, labels),
        }
        body = {"runPolicy": policy, "pytorchReplicaSpecs": specs}
        api, k = "kubeflow.org/v1", "PyTorchJob"
        if replicas == 1:
            specs.pop("Worker")
    elif kind == "tfjob":
        specs = {
            "PS": _replica(1, "tensorflow", resources, labels),
            "Worker": _replica(replicas - 1, "tensorflow", resources, labels),
        }
        if replicas == 1:
            specs.pop("Worker")
        body = {"runPolicy": policy, "tfReplicaSpecs": specs}
        api, k = "kubeflow.org/v1", "TFJob"
    else:  # mpijob (v2beta1): the workers are the gang; the launcher waits for them
        body = {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "Running"},
            "mpiReplicaSpecs": {
                "Launcher": _replica(1, "launcher", {"cpu": "100m"}, labels, "OnFailure"),
                "Worker": _replica(replicas, "worker", resources, labels),
            },
        }
        api, k = "kubeflow.org/v2beta1", "MPIJob"
        sel = f"gangsched.kubeflow/gang={name},training.kubeflow.org/job-role=worker"
        return [
            {"apiVersion": api, "kind": k, "metadata": {"name": name, "namespace": ns, "labels": labels}, "spec": body}
        ], sel
    doc = {"apiVersion": api, "kind": k, "metadata": {"name": name, "namespace": ns, "labels": labels}, "spec": body}
    return [doc], f"gangsched.kubeflow/gang={name}"


def collection_path(doc: dict) -> str:
    """The namespaced collection URL of an object."""
    ns = doc["metadata"]["namespace"]
    group_version = doc["apiVersion"]
    plural = {
        "Pod": "pods",
        "PodGroup": "podgroups",
        "PyTorchJob": "pytorchjobs",
        "TFJob": "tfjobs",
        "MPIJob": "mpijobs",
    }[doc["kind"]]
    base = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    return f"{base}/namespaces/{ns}/{plural}"
