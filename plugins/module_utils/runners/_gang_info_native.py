# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: gang_info's reads of kube-scheduler's own gang (scheduling.k8s.io), its facts
and its problems (``_native`` decides). Part of gang_info's runner (``_gang_info``), imported by it only.
Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api, _pod_facts
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import NotFound
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _native


def _slim_workload(w: dict) -> dict:
    md, spec = w.get("metadata") or {}, w.get("spec") or {}
    return {
        "metadata": {
            "namespace": md.get("namespace"),
            "name": md.get("name"),
            "deletionTimestamp": md.get("deletionTimestamp"),
        },
        "spec": {
            "controllerRef": spec.get("controllerRef"),
            "podGroupTemplates": [
                {"priorityClassName": t.get("priorityClassName")} for t in spec.get("podGroupTemplates") or []
            ],
        },
        "_created": _pod_facts.timestamp(md.get("creationTimestamp")),
    }


def native_info(client, now: float, threshold: float) -> tuple[dict, list[dict]]:
    """kube-scheduler's own gang (scheduling.k8s.io): (its facts, its problems). One read of the group's discovery
    (open to every user); where a Workload API version is served, one of its resources, one list of the control
    plane's mirror pods in kube-system (their --feature-gates), one of Workloads and one of PodGroups."""
    facts: dict = {
        "served_versions": [],
        "version": None,
        "supported": False,
        "unsupported_reason": None,
        "kube_scheduler_gate": None,
        "job_integration": None,
        "podgroups": None,
        "held_podgroups": [],
    }
    listed = _service.served_versions(client, _native.GROUP)
    facts["served_versions"] = [v for v in _native.VERSIONS.values() if v in listed]
    facts["unsupported_reason"] = _native.version_problem(facts["served_versions"])
    if not facts["served_versions"]:
        return facts, []
    api = _api.group_path(_native.API_VERSION)
    served: set = set()
    if _native.SUPPORTED_VERSION in facts["served_versions"]:
        try:
            served = {r.get("name") for r in (client.get(api, what="the Workload API") or {}).get("resources") or []}
        except NotFound:
            pass  # listed by the group, but its resources not served
    control_plane = client.list_or_empty(
        _api.path("Pod", "kube-system"),
        what="the control plane's pods in kube-system",
        labelSelector="tier=control-plane",
    )
    gates = _native.control_plane_gates(control_plane)
    # a component seen without the flag runs upstream's default: off (beta and alpha gates of the native gang)
    if "kube-scheduler" in gates:
        facts["kube_scheduler_gate"] = gates["kube-scheduler"].get("GenericWorkload", False)
    if "kube-controller-manager" in gates:
        facts["job_integration"] = gates["kube-controller-manager"].get("WorkloadWithJob", False)
    if not {"workloads", "podgroups"} <= served:
        return facts, _native.gate_problems(control_plane, served=False)
    facts["version"], facts["supported"] = _native.SUPPORTED_VERSION, True
    workloads = _service.scan_or_empty(
        client, _api.path("Workload", api_version_=_native.API_VERSION), "Workloads (all namespaces)", _slim_workload
    )
    workloads = [w for w in workloads if w["_created"] is not None]
    if any((w["spec"].get("controllerRef") or {}).get("kind") == "Job" for w in workloads):
        facts["job_integration"] = True  # the Job controller made a Workload: its integration is on
    podgroups = client.list_or_empty(
        _api.path("PodGroup", api_version_=_native.API_VERSION), what="PodGroups of scheduling.k8s.io (all namespaces)"
    )
    facts["podgroups"] = len(podgroups)
    facts["_in_use"] = [
        f"{kind} {(o.get('metadata') or {}).get('namespace')}/{(o.get('metadata') or {}).get('name')}"
        for kind, objs in (("Workload", workloads), ("PodGroup", podgroups))
        for o in objs
        if not (o.get("metadata") or {}).get("deletionTimestamp")
    ]
    facts["held_podgroups"] = _native.held_podgroups(podgroups)
    probs = _native.gate_problems(control_plane, served=True)
    probs += _native.job_priority_problems(workloads, podgroups, now, threshold)
    return facts, probs
