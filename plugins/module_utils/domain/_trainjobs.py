# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the Kubeflow Trainer v2 objects a smoke test creates — a TrainJob on a gang runtime
(its own TrainingRuntime, or a user's ClusterTrainingRuntime labelled through runtimePatches), the controllers a
TrainJob needs running, the pods it makes, and why a user's runtime cannot be proven. Pure: no I/O. Not a public
API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import (
    _component_discovery,
    _images,
    _trainer_runtimes,
    _workloads,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._manifests import copy_plain

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
        "images": _component_discovery.TRAINER_IMAGES,
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
    out (_trainer_runtimes.jobset_defaults), so it needs no webhook."""
    labels = {_workloads.RUN_LABEL: run_id, "gangsched.kubeflow/gang": name}
    pod = {"terminationGracePeriodSeconds": 0, "containers": [_workloads.member_container(NODE, resources)]}
    node = {
        "name": NODE,
        "template": {
            "metadata": {"labels": {**labels, ANCESTOR: TRAINER_STEP}},
            "spec": {"template": {"metadata": {"labels": dict(labels)}, "spec": pod}},
        },
    }
    runtime = {
        "apiVersion": _workloads.TRAINER_API,
        "kind": "TrainingRuntime",
        "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
        "spec": {
            "mlPolicy": {"numNodes": 1},
            "template": {"metadata": {"labels": dict(labels)}, "spec": {"replicatedJobs": [node]}},
        },
    }
    return _trainer_runtimes.jobset_defaults(runtime)[0]


def plain_copy(runtime: dict, ns: str, name: str, run_id: str) -> dict:
    """A TrainingRuntime ``ns/name`` with the spec of ``runtime`` but no gang: no podGroupPolicy and no
    schedulerName (its pods go to the default scheduler); labelled with the run, JobSet's defaults spelled
    out."""
    spec = copy_plain(runtime.get("spec") or {})
    spec.pop("podGroupPolicy", None)
    out = {
        "apiVersion": _workloads.TRAINER_API,
        "kind": "TrainingRuntime",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {_workloads.RUN_LABEL: run_id, "gangsched.kubeflow/gang": name},
        },
        "spec": spec,
    }
    for _rj, pod in _pod_templates(out):
        pod.pop("schedulerName", None)
    return _trainer_runtimes.jobset_defaults(out)[0]


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
    queue: str | None = None,
) -> tuple[list[dict], str]:
    """The objects of a smoke TrainJob of ``replicas`` nodes, in the order they are created, and the
    selector of its pods. ``runtime`` None: on a TrainingRuntime of the run's own (training_runtime),
    gang-scheduled by ``gang`` under ``scheduler_name`` (_trainer_runtimes.gang_runtime, in ``queue`` where the
    path has queues), or without a gang
    (``gang`` None: the control). ``runtime`` a user's ClusterTrainingRuntime: on that runtime as it is,
    or for the control (``gang`` None) on its plain_copy; its trainer step runs the pause image with
    ``resources`` per node, and runtimePatches label the JobSet, Jobs and pods with the run."""
    labels = {_workloads.RUN_LABEL: run_id, "gangsched.kubeflow/gang": name}
    trainer: dict = {"numNodes": replicas}
    patches = None
    if runtime is None:
        rt = training_runtime(ns, name, run_id, resources)
        if gang:
            rt = _trainer_runtimes.gang_runtime(
                rt,
                gang,
                scheduler_name,
                schedule_timeout=SCHEDULE_TIMEOUT,
                queue=queue,
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
            image=_workloads.IMAGE,
            command=["/pause"],
            resourcesPerNode={"limits": dict(resources), "requests": dict(resources)},
        )
        patches = run_patch(runtime, labels)
    spec: dict = {"runtimeRef": {"apiGroup": _trainer_runtimes.GROUP, **ref}, "trainer": trainer}
    if patches:
        spec["runtimePatches"] = patches
    docs.append(
        {
            "apiVersion": _workloads.TRAINER_API,
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
    want = _trainer_runtimes.POLICY.get(gang)
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
