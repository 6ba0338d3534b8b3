# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what gang_smoke_test checks before it creates anything — every input,
the report directory, the preflight (CRDs, the scheduler serving the name, nodes and pods) and the
verdict to expect from the capacity. Not a public API."""

from __future__ import annotations

import os
import tempfile

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import (
    _api,
    _capacity,
    _operators,
    _trainjobs,
    _workloads,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service, _together
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry

# namespaces a smoke test does not run in unless allow_system_namespace (the schedulers' own namespaces
# found in the cluster are added to these)
SYSTEM_NAMESPACES = (
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "volcano-system",
    "volcano-monitoring",
    "scheduler-plugins",
)
# the longest name a run creates: smoke-<run id>-control-<n>, a job's smoke-<run id>-gang-worker-<n> service
_NAME_SHAPE = "smoke-{}-control-worker-{}"


def validate(params: dict) -> dict:
    """Resources as numbers; raises on bad input before anything is read, created or written."""
    if params["replicas"] < 1:
        raise GangError(f"replicas must be >= 1 (got {params['replicas']}): a gang needs members")
    check_trainjob(params)
    check_path(params)
    check_queue(params)
    res = params.get("resources")
    if not isinstance(res, dict) or not res:
        raise GangError("resources must be a mapping of resource name to quantity, e.g. {nvidia.com/gpu: 1}")
    out = {}
    for k, v in res.items():
        try:
            q = _capacity.quantity(v)
        except (ValueError, TypeError):
            raise GangError(
                f"resources[{k!r}] = {v!r} is not a Kubernetes quantity; use e.g. 1, '2' or '500m'"
            ) from None
        if q < 0:
            raise GangError(f"resources[{k!r}] = {v!r} is negative")
        out[k] = str(v)
    for t, low in (("timeout", 1), ("liveness_timeout", 1), ("settle_seconds", 0), ("skew_seconds", 0)):
        if params.get(t) is not None and params[t] < low:
            raise GangError(f"{t} must be >= {low} (got {params[t]})")
    ns = params.get("namespace") or ""
    if not _operators.DNS1123_LABEL.match(ns):
        raise GangError(
            f"namespace {ns!r} is not a valid namespace name (lower-case letters, digits and '-', at most 63 "
            "characters, starting and ending with a letter or digit)"
        )
    check_namespace(params, ())
    run_id = params.get("run_id")
    if run_id is not None:
        if not _operators.DNS1123_LABEL.match(run_id):
            raise GangError(
                f"run_id {run_id!r} is not usable: it becomes the label value {_workloads.RUN_LABEL}=<run_id> "
                "and part of object names, so it must be at most 63 lower-case letters, digits and '-', "
                "starting and ending with a letter or digit (e.g. nightly-42)"
            )
        longest = _NAME_SHAPE.format(run_id, params["replicas"])
        if len(longest) > 63:
            most = 63 - len(_NAME_SHAPE.format("", params["replicas"]))
            raise GangError(
                f"run_id {run_id!r} is too long: the names it makes (such as {longest}) must fit 63 characters; "
                f"use at most {most} characters"
            )
    return out


# why a workload is not taken by a gang path that has no reason of its own (GangPath.refuse_workload); each a
# function of (workload, gang_scheduler)
NOT_TAKEN = {
    "trainjob": lambda wl, gang: (
        f"workload=trainjob cannot be tested with gang_scheduler={gang}: a Trainer runtime's podGroupPolicy "
        "makes PodGroups for scheduler-plugins (coscheduling) or Volcano only, and a label gang cannot be put "
        "in a runtime (its size is each TrainJob's numNodes); use gang_scheduler=scheduler_plugins or volcano, "
        "or another workload for koordinator"
    ),
    "job": lambda wl, gang: (
        f"workload=job is a plain Indexed Job made one gang by the path itself (the native gang's Job controller, or "
        f"Koordinator's label gang on its pod template): it needs gang_scheduler=native or koordinator, not {gang}; "
        f"use workload=pods or a Kubeflow job for {gang}"
    ),
}


def check_trainjob(params: dict) -> None:
    """trainer_runtime goes with workload=trainjob only."""
    wl, runtime = params.get("workload"), params.get("trainer_runtime")
    if runtime is not None and wl != "trainjob":
        raise GangError(
            f"trainer_runtime={runtime!r} is a Kubeflow Trainer v2 ClusterTrainingRuntime for workload=trainjob, "
            f"not workload={wl}; set workload=trainjob or leave trainer_runtime out"
        )
    _operators.check_name("trainer_runtime", runtime, "ClusterTrainingRuntime", label=False)


# the workloads Kueue admits as a whole (its integrations for them): not plain pods, whose gang Kueue would not see
QUEUED_WORKLOADS = ("job", "pytorchjob", "tfjob", "mpijob", "trainjob")


def check_queue(params: dict) -> None:
    """cluster_queue goes with a job kind Kueue admits; expect=queued goes with cluster_queue."""
    cq, wl = params.get("cluster_queue"), params.get("workload")
    if cq is not None and not _operators.DNS1123_SUBDOMAIN.match(cq):
        raise GangError(f"cluster_queue {cq!r} is not a ClusterQueue name (a DNS-1123 subdomain); set it to one")
    if cq and wl not in QUEUED_WORKLOADS:
        raise GangError(
            f"cluster_queue={cq!r} sends the gang through Kueue, which admits jobs, not workload={wl}: set workload to "
            f"one of {', '.join(QUEUED_WORKLOADS)} (job with gang_scheduler=native), or leave cluster_queue out"
        )
    if params.get("expect") == "queued" and not cq:
        raise GangError(
            "expect=queued asks for Kueue's hold of the gang for quota, which needs cluster_queue (the ClusterQueue "
            "the gang is sent to); set cluster_queue, or expect running or pending"
        )


def check_path(params: dict) -> None:
    """The workload is one the gang path takes (``GangPath.workloads``: a label gang cannot be put in a Trainer
    runtime, the native gang takes pods or a plain Job, a plain Job is the native gang's Job integration), and the
    native gang's scheduler is kube-scheduler's default profile."""
    wl, gang = params.get("workload"), params.get("gang_scheduler")
    path = _registry.get(gang)
    if wl not in path.workloads:
        raise GangError(path.refuse_workload(wl) or NOT_TAKEN[wl](wl, gang))
    refusal = path.refuse_scheduler_name(params.get("scheduler_name"))
    if refusal:
        raise GangError(refusal)


def check_namespace(params: dict, more: tuple) -> None:
    """The test's namespace is none of the cluster's own or a scheduler's (``more``: found ones)."""
    ns = params.get("namespace")
    if params.get("allow_system_namespace"):
        return
    if ns in SYSTEM_NAMESPACES or ns in more:
        raise GangError(
            f"namespace {ns!r} is a system namespace (Kubernetes' own or a gang scheduler's): a smoke test "
            "creates and deletes pods there and would compete with what runs there; pick another namespace "
            "(the default gangsched-smoke is created and removed again), or set allow_system_namespace=true"
        )


def check_report_dir(path: str | None, check_mode: bool) -> None:
    """report_dir can take the reports: it is (or can be made) a directory this process writes to.
    Created when missing, except in check mode; checked before the test creates anything."""
    if not path:
        return
    full = os.path.abspath(os.path.expanduser(path))
    if os.path.exists(full) and not os.path.isdir(full):
        raise GangError(f"report_dir {path!r} is not a directory; point report_dir at a directory")
    if check_mode:
        parent = full
        while not os.path.exists(parent):
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
            raise GangError(
                f"report_dir {path!r} is not writable ({parent} is not a directory this user may write); "
                "point report_dir at a writable directory"
            )
        return
    try:
        os.makedirs(full, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=full, prefix=".gang-smoke-probe-"):
            pass
    except OSError as e:
        raise GangError(
            f"report_dir {path!r} is not writable ({e.strerror or e}); point report_dir at a writable directory "
            "(nothing was created in the cluster)"
        ) from None


def _job_crds(workload: str) -> list[tuple[str, str]]:
    """(CRD, the component that installs it) of each CRD ``workload`` needs Established."""
    if workload == "trainjob":
        return [(c["crd"], c["label"]) for c in _trainjobs.TRAINJOB_CONTROLLERS.values()]
    return [_workloads.JOB_CRDS[workload]] if workload in _workloads.JOB_CRDS else []


def _runtime_read(name: str) -> tuple[str, str, None]:
    """The read of the user's ClusterTrainingRuntime ``name`` (trainer_runtime): (path, what, query)."""
    return _api.path("ClusterTrainingRuntime", name=name), f"ClusterTrainingRuntime {name}", None


def _nodes(client) -> list:
    return client.scan(_api.path("Node"), what="Nodes", keep=_capacity.slim_node)


def _pods(client) -> list:
    return client.scan(
        _api.path("Pod"),
        what="Pods (all namespaces)",
        keep=_capacity.slim_pod,
        fieldSelector="status.phase!=Succeeded,status.phase!=Failed",
    )


def preflight_reads(params: dict) -> list[tuple]:
    """The reads ``preflight`` makes whatever it finds, before the nodes and the pods, as (path, what, query): asked
    for at once (``_together.ahead``) as the run starts, with those of the sweep, instead of one after another."""
    path = _registry.get(params["gang_scheduler"])
    group = path.served_group()
    reads = [_service.group_read(group[0])] if group else [_service.crd_read(path.crd())] if path.crd() else []
    reads += [_service.crd_read(name) for name, _op in _job_crds(params["workload"])]
    reads += _service.early_lists()
    if params["workload"] == "trainjob" and params.get("trainer_runtime"):
        reads.append(_runtime_read(params["trainer_runtime"]))
    return reads


def preflight(client, params: dict, exclude: frozenset = frozenset()) -> dict:
    """CRDs, the scheduler, its namespace, and nodes and pods for the capacity maths (``exclude``:
    'ns/name' of pods that do not count, such as an earlier run's, about to be removed)."""
    gang = params["gang_scheduler"]
    path = _registry.get(gang)
    if path.served_group():
        problem = path.served_problem(_service.served_versions(client, *path.served_group()))
        if problem:
            raise GangError(f"gang_scheduler={gang}: {problem}; nothing was created")
    elif path.crd():
        crd_name = path.crd()
        if not _service.crd_established(_service.crd(client, crd_name)):
            raise GangError(f"CustomResourceDefinition {crd_name} is missing: install {gang.replace('_', '-')} first")
    wl = params["workload"]
    for name, op in _job_crds(wl):
        if not _service.crd_established(_service.crd(client, name)):
            raise GangError(
                f"CustomResourceDefinition {name} is missing: install {op.replace('_', '-')} first (workload={wl})"
            )
    deployments = _service.list_deployments(client)
    schedulers = _service.find_schedulers(client, deployments)
    check_namespace(params, tuple(s["namespace"] for s in schedulers))
    sname = _registry.derive_scheduler_name(gang, params.get("scheduler_name"), schedulers)
    # a scheduler out of sight (the native gang's kube-scheduler on a managed control plane): the liveness
    # canary (a gang of one it must bind and mark scheduled) is what proves it runs the gang plugin
    running = path.canary_proves_scheduler or [s for s in schedulers if s["ready"] and path.serves(s, sname)]
    trainer: dict = {}
    if wl == "trainjob":
        trainer = trainjob_preflight(client, params, deployments, sname)
    nodes, pods = _together.each(client, lambda scan: scan(client), (_nodes, _pods))
    if exclude:
        pods = [p for p in pods if f"{p['metadata'].get('namespace')}/{p['metadata'].get('name')}" not in exclude]
    return {
        "scheduler_name": sname,
        "scheduler_running": bool(running),
        "schedulers": schedulers,
        "nodes": nodes,
        "pods": pods,
        **trainer,
    }


def trainjob_preflight(client, params: dict, deployments: list[dict], sname: str) -> dict:
    """Trainer and JobSet running (their Deployments, by image), and the user's ClusterTrainingRuntime
    (``trainer_runtime``) read: ``runtime`` (None: the run makes its own), ``runtime_problem`` (why it
    cannot be proven gang-scheduled, with the fix), ``trainer_deployments`` (for the diagnosis)."""
    missing = _trainjobs.controllers_missing(deployments)
    if missing:
        raise GangError(f"workload=trainjob needs Kubeflow Trainer v2 and JobSet running: {'; '.join(missing)}")
    out = {
        "runtime": None,
        "runtime_problem": None,
        "trainer_deployments": _trainjobs.controllers(deployments)["trainer"],
    }
    name = params.get("trainer_runtime")
    if name:
        path, what, _query = _runtime_read(name)
        rt = client.get_or_none(path, what)
        if rt is None:
            raise GangError(
                f"ClusterTrainingRuntime {name} not found (trainer_runtime): name an existing one "
                "(kubectl get clustertrainingruntimes), or leave trainer_runtime out to prove a runtime the test makes"
            )
        out["runtime"] = rt
        out["runtime_problem"] = _trainjobs.runtime_problem(rt, params["gang_scheduler"], sname)
    return out


def expected(params: dict, resources: dict, nodes: list, pods: list) -> tuple[str, dict]:
    gpu = _capacity.GPU
    per_pod = _capacity.quantity(resources[gpu]) if gpu in resources else 0.0
    per_node = _capacity.nodes_capacity(nodes, pods, gpu)
    fits, slots = _capacity.gang_fits(per_node, params["replicas"], per_pod)
    cap = {"free_gpus": sum(n["free"] for n in per_node if n["schedulable"]), "fits": fits, "slots": slots}
    exp = params["expect"]
    if exp == "queued":  # Kueue's quota decides, before any node is looked at
        return exp, cap
    if exp == "auto":
        exp = "running" if fits else "pending"
    if exp == "running" and not fits:
        free = ", ".join(f"{n['name']} {n['free']}" for n in per_node if n["schedulable"] and n["free"]) or "none"
        raise GangError(
            f"expect=running with replicas={params['replicas']} cannot pass: only {slots} member(s) of "
            f"{resources[gpu]} {gpu} fit on the schedulable nodes at once (a member lives on one node; free "
            f"{gpu} per node: {free}), so the gang could never run. Set replicas to at most {slots}, or "
            "expect=pending (or auto) to prove it is held; nothing was created"
        )
    return exp, cap
