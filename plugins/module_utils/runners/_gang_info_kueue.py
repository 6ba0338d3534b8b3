# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: gang_info's reads of Kueue (its controller's Configuration, its ClusterQueues,
LocalQueues, ResourceFlavors and Workloads, the jobs sent to its queues), its facts and its problems
(``_kueue_problems`` decides). Part of gang_info's runner (``_gang_info``), imported by it only. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import (
    _api,
    _component_discovery,
    _kueue_problems,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import Forbidden
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service


class Folds:
    """One scan's keep that feeds each pod to every fold given (each a keep that returns None), restarted together."""

    def __init__(self, *folds):
        self.folds = folds

    def restart(self) -> None:
        for f in self.folds:
            getattr(f, "restart", lambda: None)()

    def __call__(self, pod: dict) -> None:
        for f in self.folds:
            f(pod)


def _path(version: str, plural: str) -> str:
    """The path of one of Kueue's kinds (``plural``) in ``version``, all namespaces."""
    return f"{_api.group_path(f'{_kueue_problems.GROUP}/{version}')}/{plural}"


def controllers(client, deployments: list[dict]) -> list[dict]:
    """Kueue's controllers among ``deployments`` (``_kueue_problems.controller_fact``), each with its Configuration
    read from the ConfigMap its --config file is mounted from (one read each): its defaults without --config, None
    where the file is not a ConfigMap's or the ConfigMap cannot be read."""
    out = []
    for dep, c in _kueue_problems.controllers(deployments):
        ref = _component_discovery.config_ref(dep, c)
        text, where = ("" if _component_discovery.config_path(c) is None else None), None
        if ref:
            where = f"{ref[0]}/{ref[1]}"
            try:
                text = _service.configmap_value(client, *ref)
            except Forbidden:
                text = None  # not readable by this user: its integrations are not known
        out.append(_kueue_problems.controller_fact(dep, c, _kueue_problems.configuration(text), where))
    return out


def queued_jobs(client) -> list[dict]:
    """The jobs of every kind of ``_kueue_problems.JOBS`` the API server serves that carry a queue-name label
    (``_kueue_problems.slim_job``): one discovery read per API version besides batch/v1, one list per kind served."""
    served: dict[str, set] = {"batch/v1": {"jobs"}}
    for _framework, api, _plural in _kueue_problems.JOBS.values():
        if api not in served:
            found = client.get_or_none(_api.group_path(api), what=f"the API {api}") or {}
            served[api] = {r.get("name") for r in found.get("resources") or []}
    out = []
    for kind, (_framework, api, plural) in _kueue_problems.JOBS.items():
        if plural in served[api]:
            keep = _kueue_problems.slim_job(kind)
            items = client.list_or_empty(
                f"{_api.group_path(api)}/{plural}",
                what=f"{kind}s (all namespaces)",
                labelSelector=_kueue_problems.QUEUE_LABEL,
            )
            out += [keep(j) for j in items]
    return out


def kueue_info(client, deployments: list[dict], pods, per_node: list[dict], threshold: float):
    """Kueue: (its facts, its problems); (None, []) after one CRD read where its ClusterQueue CRD is not
    Established. Else one read of each controller's ConfigMap, one list of ClusterQueues, LocalQueues, ResourceFlavors
    and Workloads, and the jobs sent to its queues (``queued_jobs``). ``pods``: the scan's
    ``_kueue_problems.QueuedPods``; ``per_node``: the nodes' GPU capacity (``_capacity.capacity_per_node``)."""
    crd = _service.crd(client, _kueue_problems.CRD)
    version = _kueue_problems.served_version(crd)
    if not _service.crd_established(crd) or version is None:
        return None, []
    found = controllers(client, deployments)
    cqs = client.list_or_empty(_path(version, "clusterqueues"), what="ClusterQueues")
    lqs = client.list_or_empty(_path(version, "localqueues"), what="LocalQueues (all namespaces)")
    flavors = client.list_or_empty(_path(version, "resourceflavors"), what="ResourceFlavors")
    workloads = _service.scan_or_empty(
        client,
        _path(version, "workloads"),
        "Workloads of Kueue (all namespaces)",
        _kueue_problems.slim_workload,
    )
    jobs = queued_jobs(client)
    facts = _kueue_problems.facts(found, cqs, lqs, workloads)
    frameworks = facts["integrations"]
    gpus = sum(n["allocatable"] for n in per_node if n["schedulable"])
    where = next((c["configuration"] for c in found if c["configuration"]), None)
    probs = _kueue_problems.missing_queue_problems(jobs, lqs, workloads, frameworks)
    probs += _kueue_problems.partial_problems(workloads, pods, lqs, cqs, gpus, facts["wait_for_pods_ready"])
    probs += _kueue_problems.requeue_problems(workloads, lqs, cqs, gpus)
    probs += _kueue_problems.integration_problems(jobs, workloads, frameworks, where)
    probs += _kueue_problems.inactive_problems(cqs, flavors, lqs)
    return facts, probs
