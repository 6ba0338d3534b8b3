# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the objects a smoke test creates — a PodGroup and pods, or a
PyTorchJob / TFJob / MPIJob for the Kubeflow operators — every one labelled with the run id, and
the selector of the pods whose verdict counts. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils import _podgroups

RUN_LABEL = "gangsched.kubeflow/smoke-run"
IMAGE = "registry.k8s.io/pause:3.10"

JOB_API = {"PyTorchJob": "kubeflow.org/v1", "TFJob": "kubeflow.org/v1", "MPIJob": "kubeflow.org/v2beta1"}
PLURALS = {"Pod": "pods", "PodGroup": "podgroups", "PyTorchJob": "pytorchjobs", "TFJob": "tfjobs", "MPIJob": "mpijobs"}
# (kind, apiVersion) of everything a smoke run may create: jobs before their PodGroups and pods, so
# an operator does not recreate what was just deleted
# the smoke test's job workloads -> the CRD that must be Established, the operator that serves it
JOB_CRDS = {
    "pytorchjob": ("pytorchjobs.kubeflow.org", "training_operator"),
    "tfjob": ("tfjobs.kubeflow.org", "training_operator"),
    "mpijob": ("mpijobs.kubeflow.org", "mpi_operator"),
}
RUN_KINDS = (
    *JOB_API.items(),
    *(("PodGroup", _podgroups.api_version(gang)) for gang in _podgroups.GANG_SCHEDULERS),
    ("Pod", "v1"),
)


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
        spec = {"minMember": replicas}
        if gang == "volcano":
            spec["queue"] = "default"
        else:
            spec["scheduleTimeoutSeconds"] = 600
        where, key = _podgroups.member_key(gang)
        (annotations if where == "annotation" else pod_labels)[key] = name
        docs.append(
            {
                "apiVersion": _podgroups.api_version(gang),
                "kind": _podgroups.PODGROUPS[gang]["kind"],
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
        k = "PyTorchJob"
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
        k = "TFJob"
    else:  # mpijob (v2beta1): the workers are the gang; the launcher waits for them
        body = {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "Running"},
            "mpiReplicaSpecs": {
                "Launcher": _replica(1, "launcher", {"cpu": "100m"}, labels, "OnFailure"),
                "Worker": _replica(replicas, "worker", resources, labels),
            },
        }
        k = "MPIJob"
        sel = f"gangsched.kubeflow/gang={name},training.kubeflow.org/job-role=worker"
        return [
            {
                "apiVersion": JOB_API[k],
                "kind": k,
                "metadata": {"name": name, "namespace": ns, "labels": labels},
                "spec": body,
            }
        ], sel
    doc = {
        "apiVersion": JOB_API[k],
        "kind": k,
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": body,
    }
    return [doc], f"gangsched.kubeflow/gang={name}"


def kind_path(kind: str, api_version: str, ns: str | None = None) -> str:
    """The collection URL of a kind, in namespace ``ns`` or (None) in all namespaces."""
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    return f"{base}{f'/namespaces/{ns}' if ns else ''}/{PLURALS[kind]}"


def collection_path(doc: dict) -> str:
    """The namespaced collection URL of an object."""
    return kind_path(doc["kind"], doc["apiVersion"], doc["metadata"]["namespace"])
