# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the objects a smoke test creates — a PodGroup and pods, a PyTorchJob /
TFJob / MPIJob for the Kubeflow operators, or a Kubeflow Trainer v2 TrainJob and its TrainingRuntime —
every one labelled with the run id, and the selector of the pods whose verdict counts. Pure: no I/O.
Not a public API."""

from __future__ import annotations

import copy

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api, _native, _podgroups

RUN_LABEL = "gangsched.kubeflow/smoke-run"
IMAGE = "registry.k8s.io/pause:3.10"

TRAINER_API = _api.api_version("TrainJob")
JOB_API = {kind: _api.api_version(kind) for kind in ("PyTorchJob", "TFJob", "MPIJob", "TrainJob", "Job")}
# the smoke test's job workloads -> the CRD that must be Established, the operator that serves it
JOB_CRDS = {
    "pytorchjob": ("pytorchjobs.kubeflow.org", "training_operator"),
    "tfjob": ("tfjobs.kubeflow.org", "training_operator"),
    "mpijob": ("mpijobs.kubeflow.org", "mpi_operator"),
    "trainjob": ("trainjobs.trainer.kubeflow.org", "trainer"),
}
# (kind, apiVersion) of everything a smoke run may create: jobs before their PodGroups and pods, so an
# operator does not recreate what was just deleted, and a TrainJob before its runtime: Trainer's
# validating webhook checks every update of a TrainJob against its runtime, so once the runtime is gone
# not even the garbage collector's removal of a finalizer from the TrainJob is let through
RUN_KINDS = (
    *JOB_API.items(),
    ("TrainingRuntime", TRAINER_API),
    *(("PodGroup", _podgroups.api_version(gang)) for gang in _podgroups.GANG_SCHEDULERS),
    ("PodGroup", _native.API_VERSION),
    ("Workload", _native.API_VERSION),
    ("Pod", "v1"),
)
# what a removal waits for until gone besides pods: a TrainJob is deleted in the background (no update
# of it, so neither Trainer's webhook nor Trainer itself needs to be up) and the garbage collector then
# removes its JobSet, Jobs, pods and PodGroup; its runtime goes once Trainer drops its resource-in-use
# finalizer
WAITED_KINDS = ("TrainJob", "TrainingRuntime")


# Koordinator's gang labels (seed 003): a pod joins the gang ``name`` of at least ``min-available``
# members by these two labels and koord-scheduler's schedulerName; no PodGroup object is involved
LABEL_GANG_NAME = "pod-group.scheduling.sigs.k8s.io/name"
LABEL_GANG_MIN = "pod-group.scheduling.sigs.k8s.io/min-available"
# where a job kind keeps its replicas' pod templates
REPLICA_SPECS = {
    "PyTorchJob": "pytorchReplicaSpecs",
    "TFJob": "tfReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
}
# MPIJob's launcher is not a member: it starts once the workers run
NOT_MEMBERS = {"MPIJob": ("Launcher",)}


def label_gang(doc: dict, scheduler_name: str, min_available: int | None = None, name: str | None = None) -> dict:
    """A copy of a Pod or a Kubeflow job whose pods form a label gang: the two labels and
    ``scheduler_name`` on the pod, or on every member replica's pod template. The gang is named after
    the object unless ``name`` is given; ``min_available`` defaults to the job's member pods (1 for a Pod).
    Raises ValueError naming what is wrong."""

    if not isinstance(doc, dict) or not doc.get("kind") or not (doc.get("metadata") or {}).get("name"):
        raise ValueError("needs a Pod or a Kubeflow job with kind and metadata.name")
    out = copy.deepcopy(doc)
    kind = out["kind"]
    gang = name or out["metadata"]["name"]
    if kind == "Pod":
        templates, members = [out], 1
    elif kind in REPLICA_SPECS:
        specs = (out.get("spec") or {}).get(REPLICA_SPECS[kind]) or {}
        chosen = {r: s for r, s in specs.items() if r not in NOT_MEMBERS.get(kind, ())}
        if not chosen:
            raise ValueError(f"{kind} {gang} has no spec.{REPLICA_SPECS[kind]} with a member replica")
        templates = [s.setdefault("template", {}) for s in chosen.values()]
        members = sum(int(s.get("replicas", 1)) for s in chosen.values())
    else:
        raise ValueError(f"kind {kind} is not a Pod or a Kubeflow job ({', '.join(REPLICA_SPECS)})")
    want = members if min_available is None else min_available
    if not isinstance(want, int) or isinstance(want, bool) or want < 1:
        raise ValueError(f"min_available must be a whole number of at least 1, got {want!r}")
    for t in templates:
        t.setdefault("metadata", {}).setdefault("labels", {}).update({LABEL_GANG_NAME: gang, LABEL_GANG_MIN: str(want)})
        t.setdefault("spec", {})["schedulerName"] = scheduler_name
    return out


def member_container(name: str, resources: dict) -> dict:
    """A member's container: the pause image, ``resources`` requested and limited."""
    return {
        "name": name,
        "image": IMAGE,
        "resources": {"limits": dict(resources), "requests": dict(resources)},
    }


def pods(ns: str, name: str, run_id: str, replicas: int, resources: dict, gang: str | None, scheduler_name: str):
    """``gang`` None: plain pods for the default scheduler (the no-gang control)."""
    labels = {RUN_LABEL: run_id, "gangsched.kubeflow/gang": name}
    docs, annotations, pod_labels = [], {}, dict(labels)
    if gang in _podgroups.LABEL_GANG_SCHEDULERS:
        pod_labels.update({LABEL_GANG_NAME: name, LABEL_GANG_MIN: str(replicas)})
    elif gang in _podgroups.NATIVE_GANG_SCHEDULERS:
        docs += [_native.workload(ns, name, labels, replicas), _native.podgroup(ns, name, name, labels, replicas)]
    elif gang:
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
                    "containers": [member_container("member", resources)],
                },
            }
        )
        if gang in _podgroups.NATIVE_GANG_SCHEDULERS:
            _native.join(docs[-1]["spec"], name)
    return docs, f"gangsched.kubeflow/gang={name}"


def indexed_job(ns: str, name: str, run_id: str, replicas: int, resources: dict, gang: str | None):
    """An Indexed batch/v1 Job of ``replicas`` pods run at once; ``gang`` native: the Job controller puts them in
    one native gang (its Workload and PodGroup, the Job integration), None: no gang (the control)."""
    labels = {RUN_LABEL: run_id, "gangsched.kubeflow/gang": name}
    job = {
        "apiVersion": JOB_API["Job"],
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "completionMode": "Indexed",
            "completions": replicas,
            "parallelism": replicas,
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    "restartPolicy": "Never",
                    "containers": [member_container("member", resources)],
                },
            },
        },
    }
    if gang in _podgroups.NATIVE_GANG_SCHEDULERS:
        job = _native.gang_job(job)
    return [job], f"gangsched.kubeflow/gang={name}"


def _replica(n: int, container: str, resources: dict, labels: dict, restart: str = "Never") -> dict:
    return {
        "replicas": n,
        "restartPolicy": restart,
        "template": {"metadata": {"labels": labels}, "spec": {"containers": [member_container(container, resources)]}},
    }


def kubeflow_job(
    kind: str,
    ns: str,
    name: str,
    run_id: str,
    replicas: int,
    resources: dict,
    gang: str | None = None,
    scheduler_name: str | None = None,
):
    """A PyTorchJob (1 Master + N-1 Workers), TFJob (1 PS + N-1 Workers) or MPIJob (N workers, the
    launcher not counted) whose gang is ``replicas`` pods: through the operator's gang flag, or for a
    label-gang scheduler (``gang``) by the labels on its member templates."""
    docs, selector = _kubeflow_job(kind, ns, name, run_id, replicas, resources)
    if gang in _podgroups.LABEL_GANG_SCHEDULERS:
        docs = [label_gang(docs[0], scheduler_name, replicas, name)]
    return docs, selector


def _kubeflow_job(kind: str, ns: str, name: str, run_id: str, replicas: int, resources: dict):
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


def collection_path(doc: dict) -> str:
    """The namespaced collection URL of an object."""
    return _api.path(doc["kind"], doc["metadata"]["namespace"], api_version_=doc["apiVersion"])
