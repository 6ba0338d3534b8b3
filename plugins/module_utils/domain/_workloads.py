# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the objects a smoke test creates — a PodGroup and pods, a PyTorchJob /
TFJob / MPIJob for the Kubeflow operators, or a Kubeflow Trainer v2 TrainJob and its TrainingRuntime —
every one labelled with the run id, and the selector of the pods whose verdict counts. Pure: no I/O.
Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api, _capacity

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
# (kind, apiVersion) of the jobs a smoke run may create and a TrainJob's runtime: jobs before their PodGroups and
# pods (paths/_smoke_objects.RUN_KINDS adds each path's gang objects, then pods), so an operator does not recreate
# what was just deleted, and a TrainJob before its runtime: Trainer's validating webhook checks every update of a
# TrainJob against its runtime, so once the runtime is gone not even the garbage collector's removal of a finalizer
# from the TrainJob is let through
JOB_RUN_KINDS = (*JOB_API.items(), ("TrainingRuntime", TRAINER_API))
# what a removal waits for until gone besides pods: a TrainJob is deleted in the background (no update
# of it, so neither Trainer's webhook nor Trainer itself needs to be up) and the garbage collector then
# removes its JobSet, Jobs, pods and PodGroup; its runtime goes once Trainer drops its resource-in-use
# finalizer
WAITED_KINDS = ("TrainJob", "TrainingRuntime")


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


def declared_members(job: dict, resource: str = _capacity.GPU) -> list[tuple[str, int, float]]:
    """(replica type, replicas, what one member asks of ``resource``) of a Kubeflow job's members as its spec declares
    them, before any pod exists (MPIJob's launcher left out); [] for a kind without replica specs."""
    key = REPLICA_SPECS.get(job.get("kind"))
    specs = ((job.get("spec") or {}).get(key) or {}) if key else {}
    out = []
    for rtype, rs in sorted(specs.items()):
        if rtype in NOT_MEMBERS.get(job.get("kind"), ()) or not isinstance(rs, dict):
            continue
        n = rs.get("replicas", 1)
        pod = {"spec": ((rs.get("template") or {}).get("spec")) or {}}
        out.append((rtype, n if isinstance(n, int) else 1, _capacity.pod_request(pod, resource)))
    return out


def member_container(name: str, resources: dict) -> dict:
    """A member's container: the pause image, ``resources`` requested and limited."""
    return {
        "name": name,
        "image": IMAGE,
        "resources": {"limits": dict(resources), "requests": dict(resources)},
    }


def _replica(n: int, container: str, resources: dict, labels: dict, restart: str = "Never") -> dict:
    return {
        "replicas": n,
        "restartPolicy": restart,
        "template": {"metadata": {"labels": labels}, "spec": {"containers": [member_container(container, resources)]}},
    }


def kubeflow_job(kind: str, ns: str, name: str, run_id: str, replicas: int, resources: dict):
    """A PyTorchJob (1 Master + N-1 Workers), TFJob (1 PS + N-1 Workers) or MPIJob (N workers, the
    launcher not counted) whose gang is ``replicas`` pods, as the operator's gang flag gangs it."""
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
