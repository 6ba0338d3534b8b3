# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the objects a smoke test creates — a PodGroup and pods, a PyTorchJob /
TFJob / MPIJob for the Kubeflow operators, or a Kubeflow Trainer v2 TrainJob and its TrainingRuntime —
every one labelled with the run id, and the selector of the pods whose verdict counts. Pure: no I/O.
Not a public API."""

from __future__ import annotations

import copy

from ansible_collections.gangsched.kubeflow.plugins.module_utils import (
    _discovery,
    _images,
    _native,
    _podgroups,
    _runtimes,
)

RUN_LABEL = "gangsched.kubeflow/smoke-run"
IMAGE = "registry.k8s.io/pause:3.10"

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
JOB_API = {
    "PyTorchJob": "kubeflow.org/v1",
    "TFJob": "kubeflow.org/v1",
    "MPIJob": "kubeflow.org/v2beta1",
    "TrainJob": TRAINER_API,
    "Job": "batch/v1",
}
PLURALS = {
    "Pod": "pods",
    "Job": "jobs",
    "Workload": "workloads",
    "PodGroup": "podgroups",
    "PyTorchJob": "pytorchjobs",
    "TFJob": "tfjobs",
    "MPIJob": "mpijobs",
    "TrainJob": "trainjobs",
    "TrainingRuntime": "trainingruntimes",
    "ClusterTrainingRuntime": "clustertrainingruntimes",
}
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
    import copy

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
                    "containers": [_container("member", resources)],
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
                    "containers": [_container("member", resources)],
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
        "template": {"metadata": {"labels": labels}, "spec": {"containers": [_container(container, resources)]}},
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


def kind_path(kind: str, api_version: str, ns: str | None = None) -> str:
    """The collection URL of a kind, in namespace ``ns`` or (None) in all namespaces."""
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    return f"{base}{f'/namespaces/{ns}' if ns else ''}/{PLURALS[kind]}"


def collection_path(doc: dict) -> str:
    """The namespaced collection URL of an object."""
    return kind_path(doc["kind"], doc["apiVersion"], doc["metadata"]["namespace"])


# ---- Kubeflow Trainer v2: a TrainJob on a gang runtime ----------------------------------------------
# on every pod of a JobSet; Trainer names a TrainJob's JobSet (and its PodGroup) after the TrainJob
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER_STEP = "trainer"
# the trainer step's container: Trainer gives it the TrainJob's numNodes, resourcesPerNode, image, command
NODE = "node"
# the manager of the TrainJob's runtime patch that labels the JobSet, Jobs and pods of a user's runtime
PATCH_MANAGER = "gangsched.kubeflow/smoke-test"
SCHEDULE_TIMEOUT = 600  # the coscheduling PodGroup's, as the smoke test's own PodGroups
# what a TrainJob needs running besides the gang scheduler: controller -> the images it runs (repository's
# last path components -> kind: a mirror under any registry matches), its CRD, its name in messages
TRAINJOB_CONTROLLERS = {
    "trainer": {
        "images": _discovery.TRAINER_IMAGES,
        "crd": "trainjobs.trainer.kubeflow.org",
        "label": "Kubeflow Trainer v2 (ghcr.io/kubeflow/trainer/trainer-controller-manager)",
    },
    "jobset": {
        "images": {"jobset/jobset": "jobset"},
        "crd": "jobsets.jobset.x-k8s.io",
        "label": "JobSet (registry.k8s.io/jobset/jobset)",
    },
}


def _pod_templates(runtime: dict) -> list[tuple[dict, dict]]:
    """(replicated job, its pod spec) of a runtime's JobSet template."""
    jobs = ((((runtime.get("spec") or {}).get("template") or {}).get("spec") or {}).get("replicatedJobs")) or []
    return [
        (rj, ((((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {})) for rj in jobs
    ]


def _step(rj: dict) -> str | None:
    return (((rj.get("template") or {}).get("metadata") or {}).get("labels") or {}).get(ANCESTOR)


def controllers(deployments: list[dict]) -> dict[str, list[dict]]:
    """Per controller of TRAINJOB_CONTROLLERS, the Deployments that run its image."""
    out: dict[str, list[dict]] = {key: [] for key in TRAINJOB_CONTROLLERS}
    for dep in deployments:
        for c in ((dep.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or []:
            for key, spec in TRAINJOB_CONTROLLERS.items():
                if _images.image_kind(c.get("image", ""), spec["images"]) and dep not in out[key]:
                    out[key].append(dep)
    return out


def controllers_missing(deployments: list[dict]) -> list[str]:
    """What a TrainJob needs running and is not, in words: per controller, no Deployment runs its image,
    or none of those has a ready replica."""
    out = []
    for key, found in controllers(deployments).items():
        label = TRAINJOB_CONTROLLERS[key]["label"]
        if not found:
            out.append(f"no Deployment runs {label}: install it")
        elif not any(((d.get("status") or {}).get("readyReplicas") or 0) > 0 for d in found):
            names = ", ".join(f"{d['metadata']['namespace']}/{d['metadata']['name']}" for d in found)
            out.append(f"{label} has no ready replica (Deployment {names}): scale it up and check its pods")
    return out


def training_runtime(ns: str, name: str, run_id: str, resources: dict) -> dict:
    """The smoke run's own TrainingRuntime, without a gang: one replicated job, Trainer's trainer step
    (container ``node``, the pause image, ``resources`` requested and limited), the run label on the
    runtime, its JobSet, Job and pod templates, and what JobSet's mutating webhook would fill spelled
    out (_runtimes.jobset_defaults), so it needs no webhook."""
    labels = {RUN_LABEL: run_id, "gangsched.kubeflow/gang": name}
    pod = {"terminationGracePeriodSeconds": 0, "containers": [_container(NODE, resources)]}
    node = {
        "name": NODE,
        "template": {
            "metadata": {"labels": {**labels, ANCESTOR: TRAINER_STEP}},
            "spec": {"template": {"metadata": {"labels": dict(labels)}, "spec": pod}},
        },
    }
    runtime = {
        "apiVersion": TRAINER_API,
        "kind": "TrainingRuntime",
        "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
        "spec": {
            "mlPolicy": {"numNodes": 1},
            "template": {"metadata": {"labels": dict(labels)}, "spec": {"replicatedJobs": [node]}},
        },
    }
    return _runtimes.jobset_defaults(runtime)[0]


def plain_copy(runtime: dict, ns: str, name: str, run_id: str) -> dict:
    """A TrainingRuntime ``ns/name`` with the spec of ``runtime`` but no gang: no podGroupPolicy and no
    schedulerName (its pods go to the default scheduler); labelled with the run, JobSet's defaults spelled
    out."""
    spec = copy.deepcopy(runtime.get("spec") or {})
    spec.pop("podGroupPolicy", None)
    out = {
        "apiVersion": TRAINER_API,
        "kind": "TrainingRuntime",
        "metadata": {"name": name, "namespace": ns, "labels": {RUN_LABEL: run_id, "gangsched.kubeflow/gang": name}},
        "spec": spec,
    }
    for _rj, pod in _pod_templates(out):
        pod.pop("schedulerName", None)
    return _runtimes.jobset_defaults(out)[0]


def run_patch(runtime: dict, labels: dict) -> list[dict]:
    """A TrainJob's runtimePatches that put ``labels`` on its JobSet and on every replicated job's Job and
    pod template (a user's runtime carries no run label of its own)."""
    jobs = [
        {
            "name": rj["name"],
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {"template": {"metadata": {"labels": dict(labels)}}},
            },
        }
        for rj, _pod in _pod_templates(runtime)
        if rj.get("name")
    ]
    return [
        {
            "manager": PATCH_MANAGER,
            "trainingRuntimeSpec": {
                "template": {"metadata": {"labels": dict(labels)}, "spec": {"replicatedJobs": jobs}}
            },
        }
    ]


def trainjob(
    ns: str,
    name: str,
    run_id: str,
    replicas: int,
    resources: dict,
    gang: str | None = None,
    scheduler_name: str | None = None,
    runtime: dict | None = None,
) -> tuple[list[dict], str]:
    """The objects of a smoke TrainJob of ``replicas`` nodes, in the order they are created, and the
    selector of its pods. ``runtime`` None: on a TrainingRuntime of the run's own (training_runtime),
    gang-scheduled by ``gang`` under ``scheduler_name`` (_runtimes.gang_runtime), or without a gang
    (``gang`` None: the control). ``runtime`` a user's ClusterTrainingRuntime: on that runtime as it is,
    or for the control (``gang`` None) on its plain_copy; its trainer step runs the pause image with
    ``resources`` per node, and runtimePatches label the JobSet, Jobs and pods with the run."""
    labels = {RUN_LABEL: run_id, "gangsched.kubeflow/gang": name}
    trainer: dict = {"numNodes": replicas}
    patches = None
    if runtime is None:
        rt = training_runtime(ns, name, run_id, resources)
        if gang:
            rt = _runtimes.gang_runtime(
                rt,
                gang,
                scheduler_name,
                schedule_timeout=SCHEDULE_TIMEOUT,
                queue="default" if gang == "volcano" else None,
            )[0]
        docs, ref = [rt], {"kind": "TrainingRuntime", "name": name}
    else:
        docs = [] if gang else [plain_copy(runtime, ns, name, run_id)]
        ref = (
            {"kind": runtime["kind"], "name": runtime["metadata"]["name"]}
            if gang
            else {"kind": "TrainingRuntime", "name": name}
        )
        trainer.update(
            image=IMAGE,
            command=["/pause"],
            resourcesPerNode={"limits": dict(resources), "requests": dict(resources)},
        )
        patches = run_patch(runtime, labels)
    spec: dict = {"runtimeRef": {"apiGroup": _runtimes.GROUP, **ref}, "trainer": trainer}
    if patches:
        spec["runtimePatches"] = patches
    docs.append(
        {
            "apiVersion": TRAINER_API,
            "kind": "TrainJob",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": spec,
        }
    )
    return docs, f"{JOBSET_NAME_LABEL}={name}"


def trainjob_members(runtime: dict | None, num_nodes: int) -> int:
    """The pods of a TrainJob of ``num_nodes`` nodes on ``runtime`` (None: the run's own, one per node):
    the trainer step's job runs one per node, every other job its parallelism (default 1), times the
    job's replicas. Trainer's PodGroup must count all of them (minMember)."""
    if runtime is None:
        return num_nodes
    total = 0
    for rj, _pod in _pod_templates(runtime):
        job = (rj.get("template") or {}).get("spec") or {}
        count = num_nodes if _step(rj) == TRAINER_STEP else int(job.get("parallelism") or 1)
        total += count * int(rj.get("replicas") or 1)
    return total


def runtime_problem(runtime: dict, gang: str, scheduler_name: str) -> str | None:
    """Why a user's runtime cannot be proven gang-scheduled by ``gang`` under ``scheduler_name``, with the
    fix; None when it can. A runtime without the gang would start a TrainJob partially (or run a fitting
    one whole without any gang): the smoke test refuses to call that a proof."""
    what = f"{runtime.get('kind')} {(runtime.get('metadata') or {}).get('name')}"
    want = _runtimes.POLICY.get(gang)
    fix = (
        f"make it gang-scheduled with the gangsched.kubeflow.trainer_runtime_gang filter "
        f"(gang_scheduler={gang}, scheduler_name={scheduler_name}) and apply it"
    )
    policy = (runtime.get("spec") or {}).get("podGroupPolicy") or {}
    if not policy:
        return (
            f"{what} has no spec.podGroupPolicy: Trainer makes no PodGroup for its TrainJobs, so they are not "
            f"gang-scheduled (a TrainJob that does not fit starts partially and holds the GPUs it got); {fix}"
        )
    if want not in policy:
        return (
            f"{what} has podGroupPolicy {', '.join(sorted(policy))}, not {want}: its PodGroups are not those "
            f"of {gang} and {scheduler_name!r} ignores them (a partial start); {fix}"
        )
    for rj, pod in _pod_templates(runtime):
        got = pod.get("schedulerName") or "default-scheduler"
        if got != scheduler_name:
            return (
                f"{what}: the pods of replicatedJob {rj.get('name')} name scheduler {got!r}, not "
                f"{scheduler_name!r} (Trainer never sets it): they would start without their gang; {fix}"
            )
        if rj.get("dependsOn"):
            after = ", ".join(str((d or {}).get("name", "?")) for d in rj["dependsOn"])
            return (
                f"{what}: replicatedJob {rj.get('name')} dependsOn {after}, so its pods are made only once those "
                "jobs' are done, while the PodGroup waits for all of them "
                "at once: such a gang can never start; prove a runtime whose jobs all start together"
            )
    if not any(
        _step(rj) == TRAINER_STEP and any(c.get("name") == NODE for c in pod.get("containers") or [])
        for rj, pod in _pod_templates(runtime)
    ):
        return (
            f"{what} has no replicatedJob labelled {ANCESTOR}={TRAINER_STEP} with a container {NODE!r}: the "
            "TrainJob's numNodes and resources per node go there; prove a runtime that has one"
        )
    return None
