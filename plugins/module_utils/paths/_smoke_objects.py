# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the gang a smoke test creates on a path — its gang objects (a PodGroup, a Workload)
and pods that join it, an Indexed Job, or a Kubeflow job as the path gangs it — every one labelled with the run id,
and the selector of the pods whose verdict counts; and every kind a run may create, in the order a sweep removes
them. Pure: no I/O. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api, _workloads
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry

# (kind, apiVersion) of everything a smoke run may create, in the order a sweep removes them: jobs before their
# gang objects and pods (_workloads.JOB_RUN_KINDS), then every path's gang objects, then pods
# (and the LocalQueue of a run through Kueue, after its job)
RUN_KINDS = (
    *_workloads.JOB_RUN_KINDS,
    ("LocalQueue", _api.api_version("LocalQueue")),
    *_registry.run_kinds(),
    ("Pod", "v1"),
)


def pods(ns: str, name: str, run_id: str, replicas: int, resources: dict, gang: str | None, scheduler_name: str):
    """A gang of ``replicas`` pods on path ``gang`` (its gang objects first); ``gang`` None: plain pods for the
    default scheduler (the no-gang control)."""
    path = _registry.get(gang) if gang else None
    labels = {_workloads.RUN_LABEL: run_id, "gangsched.kubeflow/gang": name}
    docs: list[dict] = []
    pod_labels, annotations = dict(labels), {}
    if path is not None:
        docs += path.gang_objects(ns, name, labels, replicas)
        more_labels, annotations = path.pod_marks(name, replicas)
        pod_labels.update(more_labels)
    for i in range(replicas):
        spec = {
            "schedulerName": scheduler_name,
            "terminationGracePeriodSeconds": 0,
            "restartPolicy": "Never",
            "containers": [_workloads.member_container("member", resources)],
        }
        if path is not None:
            path.join(spec, name)
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{name}-{i}", "namespace": ns, "labels": pod_labels, "annotations": annotations},
                "spec": spec,
            }
        )
    return docs, f"gangsched.kubeflow/gang={name}"


def indexed_job(
    ns: str, name: str, run_id: str, replicas: int, resources: dict, gang: str | None, scheduler_name: str | None = None
):
    """An Indexed batch/v1 Job of ``replicas`` pods run at once, as path ``gang`` makes it one gang (the native
    gang's Job integration: its Workload and PodGroup; Koordinator's label gang on its pod template, for
    ``scheduler_name``); None: no gang (the control)."""
    labels = {_workloads.RUN_LABEL: run_id, "gangsched.kubeflow/gang": name}
    job = {
        "apiVersion": _workloads.JOB_API["Job"],
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
                    "containers": [_workloads.member_container("member", resources)],
                },
            },
        },
    }
    if gang:
        job = _registry.get(gang).gang_job(job, scheduler_name)
    return [job], f"gangsched.kubeflow/gang={name}"


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
    """A PyTorchJob, TFJob or MPIJob whose gang is ``replicas`` pods (_workloads.kubeflow_job): through the
    operator's gang flag, or as path ``gang`` gangs it besides (a label gang's labels on its member templates)."""
    docs, selector = _workloads.kubeflow_job(kind, ns, name, run_id, replicas, resources)
    if gang:
        docs = [_registry.get(gang).kubeflow_job(docs[0], scheduler_name, replicas, name)]
    return docs, selector
