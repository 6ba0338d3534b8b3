# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what makes a Kubeflow Trainer v2 runtime (TrainingRuntime,
ClusterTrainingRuntime) gang-scheduled. Trainer has no operator flag: the runtime's
``spec.podGroupPolicy`` makes it create a PodGroup per TrainJob (``coscheduling`` for scheduler-plugins,
``volcano`` for Volcano), and Trainer never sets ``schedulerName``, so every replicated job's pod
template must name the scheduler, else the pods go to the default scheduler carrying an unused PodGroup
label (a silent partial start). The PodGroup's minResources sums container requests: limits alone give
none. The problems gang_info reports about them are _trainer_runtime_problems'. Pure: no I/O. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._manifests import copy_plain

GROUP = _api.TRAINER
KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")
VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"  # the runtime annotation Trainer gives the PodGroup
# the PodGroup kind (_podgroups.PODGROUPS) Trainer makes -> the podGroupPolicy key that makes it
VOLCANO_POLICY, COSCHEDULING_POLICY = "volcano", "coscheduling"
VOLCANO_SCHEDULER = "volcano"  # the scheduler name of the pods of a Volcano PodGroup
POLICY = {"scheduler_plugins": COSCHEDULING_POLICY, "volcano": VOLCANO_POLICY}
GANG_OF_POLICY = {policy: gang for gang, policy in POLICY.items()}  # coscheduling -> scheduler_plugins
DEFAULT_TIMEOUT = 60  # Trainer's default scheduleTimeoutSeconds


def _pod_specs(runtime: dict) -> list[tuple[str, dict]]:
    jobs = ((((runtime.get("spec") or {}).get("template") or {}).get("spec") or {}).get("replicatedJobs")) or []
    out = []
    for rj in jobs:
        pod = rj.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
        out.append((rj.get("name") or "?", pod.setdefault("spec", {})))
    return out


def gang_runtime(
    runtime: dict,
    gang_scheduler: str,
    scheduler_name: str,
    schedule_timeout: int | None = None,
    queue: str | None = None,
) -> tuple[dict, list[str]]:
    """A copy of ``runtime`` gang-scheduled by ``gang_scheduler`` under ``scheduler_name``, and what was
    changed, in words. Raises ValueError naming what is wrong."""
    if not isinstance(runtime, dict) or runtime.get("kind") not in KINDS:
        raise ValueError(f"needs a TrainingRuntime or ClusterTrainingRuntime, got kind {(runtime or {}).get('kind')!r}")
    if not str(runtime.get("apiVersion", "")).startswith(GROUP + "/"):
        raise ValueError(f"apiVersion {runtime.get('apiVersion')!r} is not {GROUP}/<version>")
    name = (runtime.get("metadata") or {}).get("name") or "?"
    what = f"{runtime['kind']} {name}"
    if gang_scheduler not in POLICY:
        raise ValueError(
            f"{what}: Trainer's podGroupPolicy knows coscheduling (scheduler_plugins) and volcano, not "
            f"{gang_scheduler!r}; a runtime cannot carry a label gang either (its size is the TrainJob's numNodes)"
        )
    if not scheduler_name:
        raise ValueError(f"{what}: scheduler_name is required (the scheduler that runs the {gang_scheduler} gangs)")
    key = POLICY[gang_scheduler]
    if key == VOLCANO_POLICY and scheduler_name != VOLCANO_SCHEDULER:
        raise ValueError(f"{what}: Volcano gangs are scheduled by 'volcano', not {scheduler_name!r}")
    if queue and key != VOLCANO_POLICY:
        raise ValueError(f"{what}: a queue is a Volcano setting; leave it out with gang_scheduler={gang_scheduler}")
    if schedule_timeout is not None and (
        isinstance(schedule_timeout, bool) or not isinstance(schedule_timeout, int) or schedule_timeout < 1
    ):
        raise ValueError(f"{what}: schedule_timeout must be a whole number of seconds, at least 1")
    out = copy_plain(runtime)
    spec = out.setdefault("spec", {})
    changes: list[str] = []
    old = spec.get("podGroupPolicy") or {}
    if key == "coscheduling":
        timeout = schedule_timeout or (old.get("coscheduling") or {}).get("scheduleTimeoutSeconds") or DEFAULT_TIMEOUT
        policy = {"coscheduling": {"scheduleTimeoutSeconds": timeout}}
    else:
        policy = {"volcano": dict(old.get("volcano") or {})}
    if old != policy:
        spec["podGroupPolicy"] = policy
        changes.append(f"podGroupPolicy {key}")
    if queue:
        ann = out.setdefault("metadata", {}).setdefault("annotations", {})
        if ann.get(VOLCANO_QUEUE) != queue:
            ann[VOLCANO_QUEUE] = queue
            changes.append(f"queue {queue}")
    pods = _pod_specs(out)
    if not pods:
        raise ValueError(f"{what} has no spec.template.spec.replicatedJobs to schedule")
    for job, pod in pods:
        if pod.get("schedulerName") != scheduler_name:
            pod["schedulerName"] = scheduler_name
            changes.append(f"replicatedJob {job}: schedulerName {scheduler_name}")
        for c in (pod.get("initContainers") or []) + (pod.get("containers") or []):
            res = c.get("resources") or {}
            limits, requests = res.get("limits") or {}, res.get("requests") or {}
            missing = {r: v for r, v in limits.items() if r not in requests}
            if missing:
                # a new dict: containers may share one resources object (a YAML alias)
                c["resources"] = {**res, "requests": {**requests, **missing}}
                changes.append(f"replicatedJob {job} container {c.get('name')}: requests {', '.join(sorted(missing))}")
    return out, changes


# ---- the module trainer_runtime_gang: JobSet's defaults, the gang copy, the way back ----------------
VERSION = "v1alpha1"  # the API version the runtimes are read and written in when the CRD does not say
CRDS = {kind: f"{_api.KINDS[kind][2]}.{GROUP}" for kind in KINDS}
TRAINJOB_CRD = f"trainjobs.{GROUP}"  # its presence says Trainer is installed
TRAINJOB_PLURAL = "trainjobs"
GANG_OF = "gangsched.kubeflow/gang-of"  # on a gang copy: the name of the runtime it copies
MANAGED_BY = {"app.kubernetes.io/managed-by": "gangsched.kubeflow"}
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"  # kubectl's, never carried to a copy
LABEL_VALUE_MAX = 63

# what JobSet's mutating webhook (v0.11.1) fills in a JobSet when unset; without the webhook the
# controller meets nil fields and the Jobs are refused
JOBSET_SUCCESS = {"operator": "All"}
JOBSET_STARTUP = {"startupPolicyOrder": "AnyOrder"}
JOBSET_COMPLETION_MODE = "Indexed"
JOBSET_RESTART_POLICY = "OnFailure"
JOBSET_RULE_NAME = "failurePolicyRule{}"
JOBSET_RETENTION = {"whenDeleted": "Delete"}
# JobSet fields a runtime's CRD refuses to change once set (its validation rule self == oldSelf)
JOBSET_IMMUTABLE = ("failurePolicy", "network", "startupPolicy", "successPolicy", "volumeClaimPolicies")


def kind_of(namespace: str | None) -> str:
    """A namespaced TrainingRuntime when a namespace is given, else a ClusterTrainingRuntime."""
    return "TrainingRuntime" if namespace else "ClusterTrainingRuntime"


def ref(kind: str, namespace: str | None, name: str) -> str:
    """A runtime as messages name it: 'TrainingRuntime team-a/torch', 'ClusterTrainingRuntime torch'."""
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def path(kind: str, version: str, namespace: str | None, name: str | None = None) -> str:
    """The API path of a runtime (``name``) or of the collection of its kind."""
    return _api.path(kind, namespace, name, f"{GROUP}/{version}")


def served_version(crd: dict | None) -> str:
    """The version a runtime CRD stores (else the first it serves, else VERSION)."""
    versions = ((crd or {}).get("spec") or {}).get("versions") or []
    for v in versions:
        if v.get("storage") and v.get("served", True):
            return v["name"]
    for v in versions:
        if v.get("served", True) and v.get("name"):
            return v["name"]
    return VERSION


def _jobset_spec(runtime: dict) -> dict:
    return runtime.setdefault("spec", {}).setdefault("template", {}).setdefault("spec", {})


def jobset_defaults(runtime: dict, keep_set: bool = False) -> tuple[dict, list[str]]:
    """A copy of ``runtime`` whose JobSet template spells out what JobSet's mutating webhook would fill,
    only where unset: ``network`` (enableDNSHostnames, publishNotReadyAddresses true), ``successPolicy``
    (operator All), ``startupPolicy`` (AnyOrder), each replicated job's Job ``completionMode`` Indexed and
    pod ``restartPolicy`` OnFailure, the failure policy's rule names and the volume claim policies' retention
    (Delete). A runtime so written works with or without the webhook. Returns it and what was filled, in
    words. ``keep_set``: for a runtime already in the cluster, leave the ``JOBSET_IMMUTABLE`` fields that
    are set as they are (the CRD refuses a change to them); only those missing as a whole are added."""
    out = copy_plain(runtime)
    js = _jobset_spec(out)
    changes: list[str] = []
    kept = {f: copy_plain(js[f]) for f in JOBSET_IMMUTABLE if keep_set and js.get(f) is not None}
    if js.get("successPolicy") is None:
        js["successPolicy"] = dict(JOBSET_SUCCESS)
        changes.append("JobSet successPolicy operator All")
    if js.get("startupPolicy") is None:
        js["startupPolicy"] = dict(JOBSET_STARTUP)
        changes.append("JobSet startupPolicy AnyOrder")
    if js.get("network") is None:
        js["network"] = {}
    for field in ("enableDNSHostnames", "publishNotReadyAddresses"):
        if js["network"].get(field) is None:
            js["network"][field] = True
            changes.append(f"JobSet network {field} true")
    for i, rule in enumerate(((js.get("failurePolicy") or {}).get("rules")) or []):
        if isinstance(rule, dict) and not rule.get("name"):
            rule["name"] = JOBSET_RULE_NAME.format(i)
            changes.append(f"JobSet failurePolicy rule {i} name {rule['name']}")
    for i, claims in enumerate(js.get("volumeClaimPolicies") or []):
        if isinstance(claims, dict) and claims.get("retentionPolicy") is None:
            claims["retentionPolicy"] = dict(JOBSET_RETENTION)
            changes.append(f"JobSet volumeClaimPolicy {i} retentionPolicy whenDeleted Delete")
    for rj in js.get("replicatedJobs") or []:
        job = rj.setdefault("template", {}).setdefault("spec", {})
        name = rj.get("name") or "?"
        if job.get("completionMode") is None:
            job["completionMode"] = JOBSET_COMPLETION_MODE
            changes.append(f"replicatedJob {name}: completionMode {JOBSET_COMPLETION_MODE}")
        pod = job.setdefault("template", {}).setdefault("spec", {})
        if not pod.get("restartPolicy"):
            pod["restartPolicy"] = JOBSET_RESTART_POLICY
            changes.append(f"replicatedJob {name}: restartPolicy {JOBSET_RESTART_POLICY}")
    if kept:
        js.update(kept)
        changes = [c for c in changes if not any(c.startswith(_IMMUTABLE_WORDS[f]) for f in kept)]
    return out, changes


_IMMUTABLE_WORDS = {
    "failurePolicy": "JobSet failurePolicy ",
    "network": "JobSet network ",
    "startupPolicy": "JobSet startupPolicy ",
    "successPolicy": "JobSet successPolicy ",
    "volumeClaimPolicies": "JobSet volumeClaimPolicy ",
}


def immutable_changes(before: dict, after: dict) -> list[str]:
    """The ``JOBSET_IMMUTABLE`` fields set in the runtime ``before`` that ``after`` changes: a write the
    runtime's CRD refuses."""
    a = (((before.get("spec") or {}).get("template") or {}).get("spec")) or {}
    b = (((after.get("spec") or {}).get("template") or {}).get("spec")) or {}
    return [f for f in JOBSET_IMMUTABLE if a.get(f) is not None and a.get(f) != b.get(f)]


def copy_owner(obj: dict | None) -> str | None:
    """The runtime a gang copy was made from (its label ``GANG_OF``), None when ``obj`` is not one of ours."""
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(GANG_OF) or None


def gang_copy(source: dict, name: str, existing: dict | None = None) -> dict:
    """The copy of ``source`` under ``name`` (same kind, same namespace) before it is made gang-scheduled:
    the source's spec, its labels and annotations (not kubectl's last-applied configuration) over those the
    copy already has, and the labels naming it ours and the runtime it copies. ``existing``: the copy as
    it is (its metadata is kept: resourceVersion, uid, what others added)."""
    src_meta = source.get("metadata") or {}
    meta = copy_plain((existing or {}).get("metadata") or {})
    if not existing:
        meta = {"name": name}
        if src_meta.get("namespace"):
            meta["namespace"] = src_meta["namespace"]
    meta.pop("managedFields", None)
    meta["labels"] = {
        **(meta.get("labels") or {}),
        **(src_meta.get("labels") or {}),
        **MANAGED_BY,
        GANG_OF: src_meta.get("name"),
    }
    src_ann = {k: v for k, v in (src_meta.get("annotations") or {}).items() if k != LAST_APPLIED}
    ann = {**(meta.get("annotations") or {}), **src_ann}
    if ann:
        meta["annotations"] = ann
    else:
        meta.pop("annotations", None)
    return {
        "apiVersion": source.get("apiVersion"),
        "kind": source.get("kind"),
        "metadata": meta,
        "spec": copy_plain(source.get("spec") or {}),
    }


def _pod_specs_as_they_are(runtime: dict) -> list[tuple[str, dict]]:
    jobs = ((((runtime.get("spec") or {}).get("template") or {}).get("spec") or {}).get("replicatedJobs")) or []
    out = []
    for rj in jobs:
        pod = ((((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec")) or None
        if isinstance(pod, dict):
            out.append((rj.get("name") or "?", pod))
    return out


def ungang_runtime(runtime: dict, gang_scheduler: str, scheduler_name: str) -> tuple[dict, list[str]]:
    """A copy of ``runtime`` without the ``gang_scheduler`` podGroupPolicy, and without the pod templates'
    schedulerName where it is ``scheduler_name`` (another name is someone else's choice and stays).
    Requests, the Volcano queue annotation and JobSet's defaults stay: harmless without a gang. Raises
    ValueError when the runtime carries the other scheduler's podGroupPolicy."""
    if gang_scheduler not in POLICY:
        raise ValueError(f"gang_scheduler {gang_scheduler!r} has no podGroupPolicy (coscheduling or volcano)")
    meta = runtime.get("metadata") or {}
    what = f"{runtime.get('kind')} {meta.get('name') or '?'}"
    out = copy_plain(runtime)
    spec = out.get("spec") or {}
    changes: list[str] = []
    key = POLICY[gang_scheduler]
    policy = spec.get("podGroupPolicy")
    if policy:
        others = sorted(k for k in policy if k != key)
        if others and key not in policy:
            theirs = {v: k for k, v in POLICY.items()}.get(others[0], others[0])
            raise ValueError(
                f"{what} carries podGroupPolicy {others[0]}, not {key}: set gang_scheduler={theirs} to remove it"
            )
        spec.pop("podGroupPolicy")
        changes.append(f"podGroupPolicy {key} removed")
    for job, pod in _pod_specs_as_they_are(out):
        if scheduler_name and pod.get("schedulerName") == scheduler_name:
            pod.pop("schedulerName")
            changes.append(f"replicatedJob {job}: schedulerName {scheduler_name} removed")
    return out, changes


def view(obj: dict | None) -> dict:
    """What trainer_runtime_gang compares and shows of a runtime: its labels, its annotations (not kubectl's
    last-applied configuration) and its spec; {} for no runtime."""
    if not obj:
        return {}
    meta = obj.get("metadata") or {}
    ann = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
    return {
        "metadata": {"labels": dict(meta.get("labels") or {}), "annotations": ann},
        "spec": copy_plain(obj.get("spec") or {}),
    }


def _named(items: list) -> bool:
    names = [i.get("name") for i in items if isinstance(i, dict)]
    return len(names) == len(items) and all(names) and len(set(names)) == len(names)


def differences(before, after, where: str = "", limit: int = 20) -> list[str]:
    """Where ``after`` differs from ``before``, in words: one entry per changed, added or removed field
    (list items with names are matched by name, others by position); at most ``limit`` entries."""
    out: list[str] = []

    def walk(a, b, at: str) -> None:
        if a == b:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for k in list(a) + [k for k in b if k not in a]:
                sub = f"{at}.{k}" if at else str(k)
                if k not in b:
                    out.append(f"{sub} removed")
                elif k not in a:
                    out.append(f"{sub} added")
                else:
                    walk(a[k], b[k], sub)
            return
        if isinstance(a, list) and isinstance(b, list) and _named(a) and _named(b):
            bn = {i["name"]: i for i in b}
            an = {i["name"]: i for i in a}
            for n, item in an.items():
                if n not in bn:
                    out.append(f"{at}[{n}] removed")
                else:
                    walk(item, bn[n], f"{at}[{n}]")
            out.extend(f"{at}[{n}] added" for n in bn if n not in an)
            return
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{at}[{i}]")
            return
        out.append(f"{at or 'the object'} changed")

    walk(before, after, where)
    if len(out) > limit:
        return out[:limit] + [f"and {len(out) - limit} more"]
    return out


def uses(trainjob: dict, kind: str, name: str) -> bool:
    """Whether a TrainJob runs on the runtime ``kind``/``name`` (a TrainingRuntime only from its own
    namespace; runtimeRef's kind defaults to ClusterTrainingRuntime)."""
    r = ((trainjob.get("spec") or {}).get("runtimeRef")) or {}
    return (
        r.get("name") == name
        and (r.get("kind") or "ClusterTrainingRuntime") == kind
        and (r.get("apiGroup") or GROUP) == GROUP
    )
