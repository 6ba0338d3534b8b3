# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: gang_info's reads of Kubeflow Trainer v2 (its controllers, runtimes, TrainJobs and
the v1 jobs that could share a TrainJob's PodGroup), its facts and its problems (``_trainer_runtime_problems`` decides).
Part of gang_info's runner (``_gang_info``), imported by it only. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import (
    _api,
    _capacity,
    _component_discovery,
    _images,
    _operators,
    _podgroups,
    _trainer_runtime_problems,
    _trainer_runtimes,
    _workloads,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service


def pod_keep(trainers: list[dict]):
    """A slim copy of a pod (``_capacity.slim_pod``), and for the pods of Trainer's Deployments
    (``_component_discovery.trainers``) also when they and their containers started: all that gang_info's facts
    read of a pod. ``gather`` keeps no pod (``_pod_facts.PodFold``)."""
    if not trainers:
        return _capacity.slim_pod
    deps = [t["deployment"] for t in trainers]

    def keep(pod: dict) -> dict:
        out = _capacity.slim_pod(pod)
        md = pod.get("metadata") or {}
        if any(
            md.get("namespace") == d["metadata"]["namespace"]
            and _component_discovery.selects((d.get("spec") or {}).get("selector"), md.get("labels"))
            for d in deps
        ):
            st = pod.get("status") or {}
            out["status"]["startTime"] = st.get("startTime")
            out["status"]["containerStatuses"] = [
                {"name": c.get("name"), "state": {"running": (c.get("state") or {}).get("running")}}
                for c in st.get("containerStatuses") or []
            ]
        return out

    return keep


def trainer_controllers(found: list[dict], started: list[str | None]) -> list[dict]:
    """``found``: ``_component_discovery.trainers``; ``started``: when each one's pods started
    (``_pod_facts.PodFold.started``, i.e. ``_component_discovery.deployment_started``)."""
    out = []
    for f, start in zip(found, started, strict=True):
        dep, c = f["deployment"], f["container"]
        out.append(
            {
                "deployment": f"{dep['metadata']['namespace']}/{dep['metadata']['name']}",
                "container": c["name"],
                "image": c.get("image"),
                "version": _images.image_repo(c.get("image") or "")[1] or None,
                "ready": _component_discovery.ready(dep),
                "started": start,
            }
        )
    return out


def gang_kinds(ops: list[dict]) -> dict:
    """(kind, apiVersion) -> {gang scheduler: operator}, of the Kubeflow v1 job kinds an operator gang-schedules:
    ``volcano`` when its gang flag says volcano (a PodGroup scheduling.volcano.sh), else ``scheduler_plugins`` (a
    PodGroup scheduling.x-k8s.io); either way the PodGroup is named after the job. ``ops``: ``operator_facts``
    (with ``_container``)."""
    out: dict = {}
    for o in ops:
        v = o["gang_value"]
        if not v:
            continue
        gang = _operators.podgroup_scheduler(v)
        label = _operators.OPERATORS[o["operator"]]["label"]
        if o["operator"] == "training_operator":
            schemes = _operators.enabled_schemes(o["_container"])
            for kind in _workloads.REPLICA_SPECS:
                if schemes is None or kind.lower() in schemes:
                    out.setdefault((kind, "kubeflow.org/v1"), {}).setdefault(gang, label)
        elif o["operator"] == "mpi_operator":
            out.setdefault(("MPIJob", _workloads.JOB_API["MPIJob"]), {}).setdefault(gang, label)
    return out


def _slim_trainjob(tj: dict) -> dict:
    md, spec = tj.get("metadata") or {}, tj.get("spec") or {}
    trainer = spec.get("trainer") or {}
    conds = (tj.get("status") or {}).get("conditions") or []
    return {
        "metadata": {"namespace": md.get("namespace"), "name": md.get("name")},
        # neither finished (Complete, Failed) nor being deleted: a user's job that needs Trainer's controllers
        "_live": not md.get("deletionTimestamp")
        and not any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in conds),
        "spec": {
            "runtimeRef": spec.get("runtimeRef") or {},
            "trainer": {"resourcesPerNode": trainer["resourcesPerNode"]} if trainer.get("resourcesPerNode") else {},
        },
    }


def trainer_info(
    client, found: list[dict], started: list[str | None], schedulers: list[dict], crds: dict, ops: list[dict]
):
    """Kubeflow Trainer v2: (its facts, its problems). One CRD read when Trainer is not installed; else
    one list per runtime kind and one of TrainJobs, and, only when a TrainJob on a gang runtime could
    share its PodGroup with a Kubeflow v1 job, one list per job kind an operator gangs on that same scheduler."""
    controllers = trainer_controllers(found, started)
    crd = _service.crd(client, _trainer_runtimes.TRAINJOB_CRD)
    facts = {"installed": _service.crd_established(crd), "controllers": controllers, "runtimes": []}
    if not facts["installed"]:
        return facts, []
    version = _trainer_runtimes.served_version(crd)
    runtimes = []
    for kind in _trainer_runtimes.KINDS:
        for rt in client.list_or_empty(_trainer_runtimes.path(kind, version, None), what=f"{kind}s (all namespaces)"):
            rt["kind"] = kind
            runtimes.append(rt)
    trainjobs = _service.scan_or_empty(
        client,
        _api.path("TrainJob", api_version_=f"{_trainer_runtimes.GROUP}/{version}"),
        "TrainJobs (all namespaces)",
        _slim_trainjob,
    )
    facts["_in_use"] = [
        f"TrainJob {t['metadata']['namespace']}/{t['metadata']['name']}" for t in trainjobs if t["_live"]
    ]
    crd_of = {}
    for policy, gang in _trainer_runtimes.GANG_OF_POLICY.items():
        name = _podgroups.crd_name(gang)
        crd_of[policy] = (name, crds.get(name))
    crd_ok = {p: _trainer_runtime_problems.crd_followed(c, controllers) for p, (_name, c) in crd_of.items()}
    facts["runtimes"] = [_trainer_runtime_problems.runtime_fact(rt, schedulers, crd_ok) for rt in runtimes]
    probs = [p for rt in runtimes for p in _trainer_runtime_problems.runtime_problems(rt, schedulers)]
    probs += _trainer_runtime_problems.podgroup_crd_problems(runtimes, crd_of, controllers)
    for v in sorted({c["version"] for c in controllers if c["version"]}):
        probs += _trainer_runtime_problems.resources_per_node_problems(v, trainjobs, runtimes)
    # the gangs TrainJobs make PodGroups of, and the v1 job kinds an operator makes PodGroups of on the same gang
    policies = {
        _trainer_runtime_problems.gang_policy(_trainer_runtime_problems.runtime_of(tj, runtimes) or {})
        for tj in trainjobs
    }
    trainjob_gangs = {_trainer_runtimes.GANG_OF_POLICY.get(p) for p in policies}
    kinds = {k: by_gang for k, by_gang in gang_kinds(ops).items() if trainjob_gangs & set(by_gang)}
    if kinds:
        jobs = []
        for (kind, api_version), by_gang in sorted(kinds.items()):
            jobs += _service.scan_or_empty(
                client,
                _api.path(kind, api_version_=api_version),
                f"{kind}s (all namespaces)",
                lambda j, kind=kind, by_gang=by_gang: {
                    "kind": kind,
                    "namespace": (j.get("metadata") or {}).get("namespace"),
                    "name": (j.get("metadata") or {}).get("name"),
                    "operators": by_gang,
                },
            )
        probs += _trainer_runtime_problems.name_clash_problems(trainjobs, runtimes, jobs)
    return facts, probs
