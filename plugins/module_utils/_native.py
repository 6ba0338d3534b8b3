# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what the collection knows about kube-scheduler's own gang scheduling (the
Workload and PodGroup API of scheduling.k8s.io) and the traps of its releases. Pure: no I/O. Not a public API."""

from __future__ import annotations

GROUP = "scheduling.k8s.io"
# the Workload API's version by Kubernetes minor (1.35 v1alpha1: Workload only; 1.36 v1alpha2; 1.37 v1beta1),
# each off by default (the GenericWorkload gate, and the API group in kube-apiserver's --runtime-config)
VERSIONS = {35: "v1alpha1", 36: "v1alpha2", 37: "v1beta1"}
# a PodGroup's spec.priority may be at most this; the built-in system-* priority classes are above it
MAX_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"


def podgroup_workload(podgroup: dict) -> str | None:
    """The name of the Workload a PodGroup belongs to (``spec.workloadRef.workloadName``).

    >>> podgroup_workload({"spec": {"workloadRef": {"workloadName": "w", "templateName": "t"}}})
    'w'
    """
    return (((podgroup.get("spec") or {}).get("workloadRef")) or {}).get("workloadName")


def system_priority_job_workloads(workloads: list[dict], now: float, threshold: float) -> list[tuple[dict, list[str]]]:
    """The Workloads the Job controller made for a Job (its integration, the WorkloadWithJob gate) at least
    ``threshold`` seconds ago whose pod group templates carry a system-* priority class, each with those classes.
    ``now`` and the Workloads' creationTimestamp (as ``_created``, set by the caller) in seconds since the epoch."""
    out = []
    for w in workloads:
        spec = w.get("spec") or {}
        if (spec.get("controllerRef") or {}).get("kind") != "Job" or now - w.get("_created", now) < threshold:
            continue
        classes = sorted(
            {
                t.get("priorityClassName")
                for t in spec.get("podGroupTemplates") or []
                if str(t.get("priorityClassName") or "").startswith(SYSTEM_PRIORITY_CLASS_PREFIX)
            }
        )
        if classes:
            out.append((w, classes))
    return out


def job_priority_problems(workloads: list[dict], podgroups: list[dict], now: float, threshold: float) -> list[dict]:
    """Of ``system_priority_job_workloads``, those without a PodGroup: Kubernetes 1.37.2's Job controller copies the
    class's priority (2000000000 and more) into the PodGroup, which the API server refuses above 1000000000, so the
    Job never creates a pod."""
    with_group = {((pg.get("metadata") or {}).get("namespace"), podgroup_workload(pg)) for pg in podgroups}
    out = []
    for w, classes in system_priority_job_workloads(workloads, now, threshold):
        md = w.get("metadata") or {}
        if (md.get("namespace"), md.get("name")) in with_group:
            continue
        ns, job = md.get("namespace"), w["spec"]["controllerRef"].get("name")
        out.append(
            {
                "object": f"Job {ns}/{job}",
                "message": f"Job {ns}/{job} never creates a pod: the Job controller made it Workload {md.get('name')} "
                f"but no PodGroup, as its pods' priority class {', '.join(classes)} is above a PodGroup's limit of "
                f"{MAX_PRIORITY} and the API server refuses the PodGroup the controller copies it into (a bug of "
                "Kubernetes 1.37.2 with the WorkloadWithJob gate on; a chart's hook Job, such as Volcano's "
                "admission-init, then times the install out)",
                "fix": "turn the WorkloadWithJob feature gate off on kube-controller-manager (and kube-apiserver), or "
                f"give the Job's pods a priority class of at most {MAX_PRIORITY}; the Job starts once it has its "
                "PodGroup",
            }
        )
    return out
