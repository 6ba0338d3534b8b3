# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the facts gang_info gathers (read-only) and the problems it spots.
Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import (
    _api,
    _capacity,
    _component_discovery,
    _flags,
    _gpu_node_facts,
    _images,
    _kueue_problems,
    _operators,
    _pod_facts,
    _podgroups,
    _readiness,
    _support,
    _trainer_runtimes,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service, _together
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _native, _registry
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import (
    _gang_info_gangs,
    _gang_info_job,
    _gang_info_kueue,
    _gang_info_native,
    _gang_info_rights,
    _gang_info_trainer,
)

DEVICE_PLUGIN_IMAGES = {"k8s-device-plugin": "nvidia-device-plugin", "gpu-operator": "gpu-operator"}
# The k8s-device-plugin image also runs these helpers, which advertise no GPU (the chart's MPS control
# daemon and GPU feature discovery): not device plugins
DEVICE_PLUGIN_HELPERS = ("mps-control-daemon", "gpu-feature-discovery")
# where a pod names its gang (the fold's; here for the callers that read it from this module)
GANG_KEYS = _pod_facts.GANG_KEYS
gang_key = _pod_facts.gang_key
# the lists read whatever the cluster holds: (path, what)
VERSION = ("/version", "the API server version")
DAEMONSETS = (_api.path("DaemonSet"), "DaemonSets (all namespaces)")
WEBHOOKS = {
    kind: (_api.path(f"{kind}WebhookConfiguration"), f"{kind}WebhookConfigurations")
    for kind in ("Validating", "Mutating")
}


def early_reads(job: dict | None = None) -> list[tuple]:
    """The reads ``gather`` makes on any cluster, whatever it finds, as (path, what, query): asked for at once as it
    starts (``_together.ahead``), while it reads the nodes and the pods, instead of one after another; with ``job``,
    those of its explanation too."""
    lists = [DAEMONSETS, *WEBHOOKS.values()]
    return [
        (*VERSION, None),
        *_service.early_lists(),
        *[(path, what, _api.list_query()) for path, what in lists],
        *[(path, what, _api.list_query(**query)) for path, what, query in _gang_info_gangs.EVENTS],
        *[_service.crd_read(name) for name in (*_podgroups.CRDS, _trainer_runtimes.TRAINJOB_CRD, _kueue_problems.CRD)],
        _service.group_read(_native.GROUP),
        *_gang_info_job.reads(job),
    ]


def partial_gangs(pods: list[dict], now: float, threshold: float) -> list[dict]:
    """Gangs (PodGroups or Kubeflow jobs) with members bound and others unbound longer than threshold
    (``gather`` folds them as the scan decodes the pods: ``_pod_facts.PodFold``)."""
    return _pod_facts.fold(pods, now, threshold).partial_gangs()


def operator_facts(client, found: list[dict]) -> list[dict]:
    out = []
    for f in found:
        op, dep, c = f["operator"], f["deployment"], f["container"]
        spec = _operators.OPERATORS[op]
        hits = _flags.find(c.get("command"), c.get("args"), spec["flag"], spec["boolean"])
        value = None
        if hits:
            value = hits[-1].value if hits[-1].value is not None else ("true" if spec["boolean"] else None)
        st = dep.get("status") or {}
        out.append(
            {
                "operator": op,
                "deployment": f"{dep['metadata']['namespace']}/{dep['metadata']['name']}",
                "container": c["name"],
                "image": c.get("image"),
                "gang_flag": spec["flag"],
                "gang_value": value,
                "flag_occurrences": len(hits),
                "ready": (st.get("readyReplicas") or 0) > 0,
                "_container": c,
            }
        )
    return out


def webhook_configs(client) -> dict[str, list[dict]]:
    """Every admission webhook configuration, by kind (Validating, Mutating)."""
    return {kind: client.list(path, what=what) for kind, (path, what) in WEBHOOKS.items()}


def _fail_webhooks(configs: dict[str, list[dict]]):
    """(kind, configuration, webhook, 'namespace/name' of its Service) of each failurePolicy: Fail webhook that calls
    a Service."""
    for kind, listed in configs.items():
        for cfg in listed:
            for w in cfg.get("webhooks") or []:
                svc = (w.get("clientConfig") or {}).get("service")
                if svc and w.get("failurePolicy", "Fail") == "Fail":
                    yield kind, cfg, w, f"{svc['namespace']}/{svc['name']}"


def _slices_list(service: str) -> tuple[str, str, dict]:
    """The list of a Service's EndpointSlices ('namespace/name'): (path, what, the list's options)."""
    ns, _sep, name = service.partition("/")
    return (
        _api.path("EndpointSlice", ns),
        f"EndpointSlices of Service {service}",
        {"labelSelector": f"kubernetes.io/service-name={name}"},
    )


def webhooks_without_endpoints(client, configs: dict[str, list[dict]] | None = None) -> list[dict]:
    """failurePolicy: Fail admission webhooks whose Service has no ready endpoint: every request they
    match is refused (a cluster-wide outage when they match pods). ``configs``: ``webhook_configs``, else read here."""
    out, ready = [], {}
    for kind, cfg, w, key in _fail_webhooks(webhook_configs(client) if configs is None else configs):
        if key not in ready:
            path, what, options = _slices_list(key)
            ready[key] = _readiness.endpoint_ready(client.list(path, what, **options)) is None
        if not ready[key]:
            rules = sorted({r for rule in w.get("rules") or [] for r in rule.get("resources") or []})
            out.append(
                {
                    "configuration": f"{kind}WebhookConfiguration {cfg['metadata']['name']}",
                    "webhook": w["name"],
                    "service": key,
                    "resources": rules,
                }
            )
    return out


def problems(
    client, ops: list[dict], schedulers: list[dict], crds: dict, plugins: list[dict], configs: dict | None = None
) -> list[dict]:
    """The problems of the components gang_info finds (``configs``: ``webhook_configs``, else read here)."""
    out = []

    def add(obj, msg, fix):
        out.append({"object": obj, "message": msg, "fix": fix})

    for w in webhooks_without_endpoints(client, configs):
        add(
            w["configuration"],
            f"webhook {w['webhook']} calls Service {w['service']}, which has no ready endpoint: with "
            f"failurePolicy Fail every request for {', '.join(w['resources']) or 'what it matches'} is refused",
            f"bring the pods behind Service {w['service']} back to Ready, or delete the configuration "
            "if its component was removed",
        )

    for o in ops:
        v, obj = o["gang_value"], f"Deployment {o['deployment']}"
        if o["flag_occurrences"] > 1:
            add(
                obj,
                f"--{o['gang_flag']} appears {o['flag_occurrences']} times (the last one wins)",
                "run gangsched.kubeflow.operator_gang to collapse it to one",
            )
        if not v or o["operator"] == "tf_operator":
            continue
        # the path the flag leads to checks it: a koord-scheduler profile, Volcano's name, a Coscheduling profile
        for msg, fix in _registry.flag_path(v, schedulers).flag_problems(o, v, schedulers, crds):
            add(obj, msg, fix)
        clash = _service.mpijob_clash(client, o["operator"], o["_container"])
        if clash:
            add(obj, clash, "add --enable-scheme for each job kind except mpijob")
    if len(plugins) > 1:
        add(
            ", ".join(p["daemonset"] for p in plugins),
            f"{len(plugins)} GPU device plugin DaemonSets run side by side; they fight over nvidia.com/gpu",
            "keep one: the GPU Operator's, or the standalone device plugin",
        )
    for s in schedulers:
        if s["kind"] == "kube_batch":
            add(
                f"{s['source']} {s['namespace']}/{s['name']}",
                "kube-batch is archived and does not run on current Kubernetes",
                "move to Volcano (gangsched.kubeflow.volcano)",
            )
    return out


def path_problems(client, schedulers: list[dict], ops: list[dict], kube_version: str | None, **extra) -> list[dict]:
    """Each gang path's checks of its installation and its gangs (GangPath.cluster_problems), with what they read
    read once (``_gang_info_gangs.path_facts``; ``extra``: now, threshold, the gangs and keyed pods of the fold)."""
    facts = _gang_info_gangs.path_facts(client, schedulers, kube_version, extra.pop("crds", None), extra)
    return _gang_info_gangs.path_problems(client, schedulers, ops, facts)


def _where(s: dict) -> str:
    return f"{s['source']} {s['namespace']}/{s['name']}"


def stalled(pods: list[dict], schedulers: list[dict], ops: list[dict], now: float, threshold: float) -> list[dict]:
    """Problems of gang schedulers that are Ready but make no progress: Pending pods with their
    schedulerName that no scheduler has looked at (no PodScheduled condition at all) for ``threshold``
    seconds or more. Pods naming a gang scheduler nobody serves ('volcano', or an operator's gang flag
    value) are reported the same way. (``gather`` folds the pods as the scan decodes them.)"""
    return stalled_problems(_pod_facts.fold(pods, now, threshold).waiting(), schedulers, ops)


def stalled_problems(
    waiting: dict, schedulers: list[dict], ops: list[dict], explained: dict[str, set[str]] | None = None
) -> list[dict]:
    """``stalled`` from ``_pod_facts.PodFold.waiting``: schedulerName -> (how many such pods, the longest
    waiting as (age s, 'namespace/name'), longest first). ``explained``: schedulerName -> pods a gang path's
    ``untried_problems`` named already (its scheduler leaves them so without being hung), not counted here."""
    out = []
    pointed = _registry.fixed_scheduler_names() | {
        o["gang_value"] for o in ops if o.get("gang_value") not in (None, "true", "false")
    }
    for name, (count, found) in sorted(waiting.items()):
        known = (explained or {}).get(name) or set()
        count -= len(known)
        if count <= 0:
            continue
        # the examples left once the explained are taken out (the longest wait of all stays the figure)
        eg = ", ".join(w for _age, w in found if w not in known) or "the longest waiting were named above"
        serving = [s for s in schedulers if name in (s.get("scheduler_names") or [])]
        ready = [s for s in serving if s["ready"]]
        if ready:
            where = ", ".join(_where(s) for s in ready)
            out.append(
                {
                    "object": where,
                    "message": (
                        f"{where} is Ready but makes no progress: {count} Pending pod(s) with schedulerName "
                        f"{name!r} were neither bound nor rejected by it for {int(found[0][0])}s (e.g. {eg}); it is "
                        "frozen, hung or without its leader lease, and every gang for it waits"
                    ),
                    "fix": (
                        "restart it (kubectl -n "
                        + ready[0]["namespace"]
                        + " rollout restart deployment/"
                        + ready[0]["name"]
                        + ") and read its log; then prove it with gangsched.kubeflow.gang_smoke_test"
                    ),
                }
            )
        elif name in pointed and not serving:
            others = "; ".join(
                f"{_where(s)} serves {', '.join(s.get('scheduler_names') or []) or 'nothing'}" for s in schedulers
            )
            out.append(
                {
                    "object": f"Pods {eg}",
                    "message": (
                        f"{count} Pending pod(s) name scheduler {name!r}, which no running scheduler serves "
                        f"({others or 'no gang scheduler found'}); they will never be scheduled"
                    ),
                    "fix": f"run a scheduler that serves {name!r}, or point the workloads at one that runs",
                }
            )
    return out


def gather(client, params: dict, now: float) -> dict:
    _gang_info_job.check(params.get("job"))
    with _together.ahead(client, early_reads(params.get("job"))):
        first = _first(client)
        # the reads that depend on those, asked for at once too, while the pods are read
        with _together.ahead(client, dependent_reads(first)):
            return _gather(client, params, now, first)


def _first(client) -> dict:
    """What the later reads depend on, read in this order: the version, the nodes, every Deployment, the webhook
    configurations, and the PodGroup CRDs found (name -> what gang_info reports of each)."""
    version = client.get(*VERSION)
    nodes = client.scan(_api.path("Node"), what="Nodes", keep=_capacity.slim_node)
    # one list of every Deployment, classified into schedulers, operators and Trainer's controllers
    deployments = _service.list_deployments(client)
    configs = webhook_configs(client)
    crds = {}
    for name, kind in _podgroups.CRDS.items():
        obj = _service.crd(client, name)
        if obj is not None:
            crds[name] = {
                "scheduler": kind,
                "established": _service.crd_established(obj),
                "versions": [v["name"] for v in obj["spec"].get("versions") or [] if v.get("served")],
                "created": obj["metadata"].get("creationTimestamp"),
            }
    return {"version": version, "nodes": nodes, "deployments": deployments, "configs": configs, "crds": crds}


def dependent_reads(first: dict) -> list[tuple]:
    """The reads ``gather`` makes next that depend on ``_first``'s, as (path, what, query): the schedulers' ConfigMaps,
    the EndpointSlices of the Services failurePolicy: Fail webhooks call, and each gang path's lists."""
    refs = _component_discovery.config_refs(first["deployments"])
    reads = [_service.configmap_read(ns, name) for ns, name, _key in refs]
    for service in dict.fromkeys(service for *_found, service in _fail_webhooks(first["configs"])):
        path, what, options = _slices_list(service)
        reads.append((path, what, _api.list_query(**options)))
    reads += [(path, what, _api.list_query()) for _p, _n, path, what in _gang_info_gangs.path_lists(first["crds"])]
    return reads


def _gather(client, params: dict, now: float, first: dict) -> dict:
    version, nodes, deployments, crds = first["version"], first["nodes"], first["deployments"], first["crds"]
    trainers = _component_discovery.trainers(deployments)
    threshold = params["partial_threshold_seconds"]
    # every pod folded as the scan decodes it, none kept: memory grows with the nodes and gangs, not the pods
    pods = _pod_facts.PodFold(now, threshold, trainers)
    queued = _kueue_problems.QueuedPods(now, threshold)  # the pods of Kueue's admitted workloads
    client.scan(_api.path("Pod"), what="Pods (all namespaces)", keep=_gang_info_kueue.Folds(pods, queued))
    per_node = pods.nodes_capacity(nodes)
    for entry, node in zip(per_node, nodes, strict=True):
        entry["labels"] = node["metadata"].get("labels") or {}
    schedulers = _service.find_schedulers(client, deployments)
    ops = operator_facts(client, _component_discovery.operators(deployments))
    plugins = []
    for ds in client.list(*DAEMONSETS):
        for c in ds["spec"]["template"]["spec"].get("containers") or []:
            kind = _images.image_kind(c.get("image", ""), DEVICE_PLUGIN_IMAGES)
            argv0 = ((c.get("command") or c.get("args") or [""])[0]).rsplit("/", 1)[-1]
            if kind and argv0 not in DEVICE_PLUGIN_HELPERS:
                st = ds.get("status") or {}
                plugins.append(
                    {
                        "daemonset": f"{ds['metadata']['namespace']}/{ds['metadata']['name']}",
                        "kind": kind,
                        "image": c["image"],
                        "desired": st.get("desiredNumberScheduled", 0),
                        "ready": st.get("numberReady", 0),
                    }
                )
                break
    probs = problems(client, ops, schedulers, crds, plugins, first["configs"])
    facts = _gang_info_gangs.path_facts(
        client,
        schedulers,
        version.get("gitVersion"),
        crds,
        {
            "now": now,
            "threshold": threshold,
            "gangs": pods.gangs(),
            "keyed": pods.keyed(),
            "said": pods.said(),
            "orphaned": pods.orphaned(),
            "per_node": per_node,
        },
    )
    probs += _gang_info_gangs.path_problems(client, schedulers, ops, facts)
    probs += _gang_info_gangs.unfit_problems(pods.unfit(per_node, _gang_info_gangs.minimums(facts)))
    probs += _gang_info_gangs.event_problems(client)
    probs += _gang_info_rights.rights_problems(client, ops, schedulers, deployments)
    shared = pods.shared(_gpu_node_facts.replicas(per_node, params.get("gpu_nodes") or {}))
    probs += _gang_info_gangs.shared_problems(shared)
    native_facts, native_probs = _gang_info_native.native_info(client, now, threshold)
    probs += native_probs
    in_use = _gang_info_gangs.in_use(schedulers, facts)
    native_in_use = native_facts.pop("_in_use", [])
    if native_in_use:
        in_use[_native.PATH.name] = _gang_info_gangs.in_use_entry(native_in_use)
    untried_probs, explained = _gang_info_gangs.untried_problems(pods.untried(), schedulers, facts)
    probs += untried_probs
    probs += stalled_problems(pods.waiting(), schedulers, ops, explained)
    probs += _gpu_node_facts.advertised_problems(per_node, params.get("gpu_nodes") or {})
    trainer_facts, trainer_probs = _gang_info_trainer.trainer_info(
        client, trainers, pods.started(), schedulers, crds, ops
    )
    probs += trainer_probs
    trainer_in_use = (trainer_facts or {}).pop("_in_use", [])
    if trainer_in_use:
        in_use["trainer"] = _gang_info_gangs.in_use_entry(trainer_in_use)
    kueue_facts, kueue_probs = _gang_info_kueue.kueue_info(client, deployments, queued, per_node, threshold)
    probs += kueue_probs
    probs = _gang_info_gangs.specific_first(probs)
    for o in ops:
        o.pop("_container")
    controllers = (trainer_facts or {}).get("controllers") or []
    support = _support.of_cluster(schedulers, ops, controllers, version.get("gitVersion"))
    job = (
        _gang_info_job.explain(client, params["job"], {**facts, "kueue": kueue_facts}, ops, probs)
        if params.get("job")
        else None
    )
    gpu = [n for n in per_node if n["capacity"]]
    out = {
        "kubernetes_version": version.get("gitVersion"),
        "nodes": per_node,
        "gpus": {
            "nodes": len(gpu),
            "capacity": _capacity.num(sum(n["capacity"] for n in per_node)),
            "allocatable": _capacity.num(sum(n["allocatable"] for n in per_node)),
            "requested": _capacity.num(sum(n["requested"] for n in per_node)),
            "free": _capacity.num(sum(n["free"] for n in per_node if n["schedulable"])),
        },
        "schedulers": schedulers,
        "podgroup_crds": crds,
        "operators": ops,
        "device_plugins": plugins,
        "trainer": trainer_facts,
        "kueue": kueue_facts,
        "native_gang": native_facts,
        "in_use": in_use,
        "problems": probs,
        "support": support,
        "partial_gangs": pods.partial_gangs(),
    }
    if job is not None:
        out["job"] = job
    return out
