# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what makes a Kubeflow Trainer v2 runtime (TrainingRuntime,
ClusterTrainingRuntime) gang-scheduled. Trainer has no operator flag: the runtime's
``spec.podGroupPolicy`` makes it create a PodGroup per TrainJob (``coscheduling`` for scheduler-plugins,
``volcano`` for Volcano), and Trainer never sets ``schedulerName``, so every replicated job's pod
template must name the scheduler, else the pods go to the default scheduler carrying an unused PodGroup
label (a silent partial start). The PodGroup's minResources sums container requests: limits alone give
none. Pure: no I/O. Not a public API."""

from __future__ import annotations

import copy

from ansible_collections.gangsched.kubeflow.plugins.module_utils import _podgroups

GROUP = "trainer.kubeflow.org"
KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")
VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"  # the runtime annotation Trainer gives the PodGroup
POLICY = {"scheduler_plugins": "coscheduling", "volcano": "volcano"}
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
    if gang_scheduler == "volcano" and scheduler_name != "volcano":
        raise ValueError(f"{what}: Volcano gangs are scheduled by 'volcano', not {scheduler_name!r}")
    if queue and gang_scheduler != "volcano":
        raise ValueError(f"{what}: a queue is a Volcano setting; leave it out with gang_scheduler={gang_scheduler}")
    if schedule_timeout is not None and (
        isinstance(schedule_timeout, bool) or not isinstance(schedule_timeout, int) or schedule_timeout < 1
    ):
        raise ValueError(f"{what}: schedule_timeout must be a whole number of seconds, at least 1")
    out = copy.deepcopy(runtime)
    spec = out.setdefault("spec", {})
    changes: list[str] = []
    key = POLICY[gang_scheduler]
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
PLURALS = {"TrainingRuntime": "trainingruntimes", "ClusterTrainingRuntime": "clustertrainingruntimes"}
CRDS = {kind: f"{plural}.{GROUP}" for kind, plural in PLURALS.items()}
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
    where = f"namespaces/{namespace}/" if kind == "TrainingRuntime" and namespace else ""
    tail = f"/{name}" if name else ""
    return f"/apis/{GROUP}/{version}/{where}{PLURALS[kind]}{tail}"


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
    out = copy.deepcopy(runtime)
    js = _jobset_spec(out)
    changes: list[str] = []
    kept = {f: copy.deepcopy(js[f]) for f in JOBSET_IMMUTABLE if keep_set and js.get(f) is not None}
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
    meta = copy.deepcopy((existing or {}).get("metadata") or {})
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
        "spec": copy.deepcopy(source.get("spec") or {}),
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
    out = copy.deepcopy(runtime)
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
        "spec": copy.deepcopy(obj.get("spec") or {}),
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


# ---- problems gang_info reports (runtimes, TrainJobs) ------------------------------------------------
# Each function takes the objects as read (runtimes, TrainJobs, the schedulers gang_info found) and
# returns problems {object, message, fix}; gang_info does the reads.
TRAINJOB_CRD = f"trainjobs.{GROUP}"  # its presence says Trainer is installed
TRAINJOB_PLURAL = "trainjobs"
GANG_OF_POLICY = {policy: gang for gang, policy in POLICY.items()}  # coscheduling -> scheduler_plugins
POLICY_SCHEDULER = {"coscheduling": "scheduler-plugins (Coscheduling)", "volcano": "Volcano"}
POLICY_INSTALL = {
    "coscheduling": "install scheduler-plugins with its CRDs (role gangsched.kubeflow.scheduler_plugins)",
    "volcano": "install Volcano with its CRDs (role gangsched.kubeflow.volcano)",
}
DEFAULT_SCHEDULER_NAME = "default-scheduler"  # what a pod without schedulerName gets
FIX_TOOL = "module or filter gangsched.kubeflow.trainer_runtime_gang"


def runtime_pods(runtime: dict) -> list[tuple[str, dict]]:
    """(replicated job, its pod template's spec) of a runtime, read as it is ({} where it has none)."""
    spec = (((runtime.get("spec") or {}).get("template") or {}).get("spec")) or {}
    out = []
    for rj in spec.get("replicatedJobs") or []:
        pod = ((((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec")) or {}
        out.append((rj.get("name") or "?", pod))
    return out


def gang_policy(runtime: dict) -> str | None:
    """The runtime's podGroupPolicy (coscheduling, volcano, or another key Trainer may add); None without."""
    policy = (runtime.get("spec") or {}).get("podGroupPolicy") or {}
    keys = sorted(k for k, v in policy.items() if v is not None)
    return keys[0] if keys else None


def runtime_name(runtime: dict) -> str:
    md = runtime.get("metadata") or {}
    return ref(runtime.get("kind") or "ClusterTrainingRuntime", md.get("namespace"), md.get("name") or "?")


def scheduler_names(runtime: dict) -> dict:
    """Replicated job -> the schedulerName of its pod template (None where it sets none)."""
    return {job: pod.get("schedulerName") or None for job, pod in runtime_pods(runtime)}


def _gang_schedulers(policy: str, schedulers: list[dict]) -> list[dict]:
    """The running schedulers that serve ``policy``'s gangs (its PodGroups): scheduler-plugins' for
    coscheduling, Volcano's for volcano (koord-scheduler ignores both)."""
    gang = GANG_OF_POLICY.get(policy)
    return [s for s in schedulers if s.get("ready") and s.get("kind") == gang]


def _served(policy: str, name: str, schedulers: list[dict]) -> bool:
    """Whether a running scheduler takes pods named ``name`` and honours ``policy``'s PodGroups: a
    Coscheduling profile of scheduler-plugins, a name Volcano's scheduler serves."""
    return any(name in (s.get("gang_profiles") or []) for s in _gang_schedulers(policy, schedulers))


def scheduler_for(policy: str, schedulers: list[dict]) -> str:
    """The schedulerName a runtime of ``policy`` should carry, in words, from the schedulers running."""
    names = sorted({n for s in _gang_schedulers(policy, schedulers) for n in s.get("gang_profiles") or []})
    if len(names) == 1:
        return repr(names[0])
    if names:
        return "one of " + ", ".join(repr(n) for n in names)
    return f"the name of a running {POLICY_SCHEDULER[policy]} scheduler (none runs: {POLICY_INSTALL[policy]})"


def _limits_without_requests(runtime: dict) -> list[str]:
    out = []
    for job, pod in runtime_pods(runtime):
        for c in (pod.get("initContainers") or []) + (pod.get("containers") or []):
            res = c.get("resources") or {}
            missing = sorted(r for r in res.get("limits") or {} if r not in (res.get("requests") or {}))
            if missing:
                out.append(f"{job}/{c.get('name')} ({', '.join(missing)})")
    return out


def runtime_problems(runtime: dict, schedulers: list[dict]) -> list[dict]:
    """What keeps a runtime with a podGroupPolicy from gang-scheduling its TrainJobs: no running
    scheduler for the policy; a replicated job without schedulerName (the default scheduler ignores the
    PodGroup) or the jobs naming different schedulers; a name that no running scheduler serves for the
    policy; containers with limits but no requests (the PodGroup's minResources comes out empty)."""
    policy = gang_policy(runtime)
    if policy not in GANG_OF_POLICY:
        return []
    what = runtime_name(runtime)
    out = []

    def add(message: str, fix: str) -> None:
        out.append({"object": what, "message": message, "fix": fix})

    set_it = (
        f"set schedulerName to {scheduler_for(policy, schedulers)} in every replicated job's pod template ({FIX_TOOL})"
    )
    names = scheduler_names(runtime)
    unset = [job for job, n in names.items() if not n]
    effective = sorted({n or DEFAULT_SCHEDULER_NAME for n in names.values()})
    if not _gang_schedulers(policy, schedulers):
        add(
            f"{what} has podGroupPolicy {policy}, but no {POLICY_SCHEDULER[policy]} scheduler is running: its "
            "TrainJobs' pods are not gang-scheduled (no scheduler honours their PodGroup)",
            f"{POLICY_INSTALL[policy]}, restart Trainer's Deployment so that it watches the new PodGroups, then "
            f"set schedulerName to the new scheduler's name in every replicated job ({FIX_TOOL})",
        )
    elif unset and not _served(policy, DEFAULT_SCHEDULER_NAME, schedulers):
        add(
            f"{what} has podGroupPolicy {policy} but replicated job(s) {', '.join(unset)} set no schedulerName "
            "(Trainer never sets one): their pods go to the default scheduler carrying a PodGroup label it "
            "ignores, so a TrainJob that does not fit starts partially (some pods Running, the rest Pending, "
            "GPUs held), silently",
            set_it,
        )
    elif len(effective) > 1:
        listed = ", ".join(f"{job}: {n or DEFAULT_SCHEDULER_NAME}" for job, n in names.items())
        add(
            f"{what} names different schedulers in its replicated jobs ({listed}): one TrainJob's pods are "
            "split between them and no one scheduler holds the whole gang",
            set_it,
        )
    elif effective and not _served(policy, effective[0], schedulers):
        n = effective[0]
        others = [s for s in schedulers if s.get("ready") and n in (s.get("scheduler_names") or [])]
        if others:
            by = ", ".join(f"{s.get('source')} {s.get('namespace')}/{s.get('name')}" for s in others)
            why = (
                f"which {by} serves without honouring the {policy} PodGroup Trainer creates: the gang is not "
                "held, and a TrainJob that does not fit starts partially"
            )
        else:
            why = (
                f"which no running {POLICY_SCHEDULER[policy]} scheduler serves: the pods stay Pending with no "
                "scheduler to take them, or another scheduler takes them without holding the gang"
            )
        add(f"{what} has podGroupPolicy {policy} and schedulerName {n!r}, {why}", set_it)
    limits = _limits_without_requests(runtime)
    if limits:
        add(
            f"{what} has podGroupPolicy {policy} and container(s) {'; '.join(limits)} with limits but no "
            "requests: Trainer sums requests into the PodGroup's minResources, which comes out without them, so "
            "the scheduler cannot check that the whole gang has room before it starts placing its pods",
            f"set requests (equal to the limits) in those containers ({FIX_TOOL} does)",
        )
    return out


def runtime_fact(runtime: dict, schedulers: list[dict], crd_ok: dict) -> dict:
    """A runtime as gang_info reports it. ``crd_ok``: policy -> whether Trainer follows its PodGroups
    (the CRD exists and existed when Trainer started). Gang-ready: a podGroupPolicy Trainer knows, its
    PodGroups followed, and none of ``runtime_problems``."""
    md = runtime.get("metadata") or {}
    policy = gang_policy(runtime)
    ready = policy in GANG_OF_POLICY and crd_ok.get(policy, False) and not runtime_problems(runtime, schedulers)
    return {
        "kind": runtime.get("kind"),
        "namespace": md.get("namespace"),
        "name": md.get("name"),
        "gang_policy": policy,
        "scheduler_names": scheduler_names(runtime),
        "gang_ready": bool(ready),
    }


def started_before(crd: dict | None, controllers: list[dict]) -> list[dict]:
    """Trainer's controllers whose pod started before the CRD was created (``crd``: as gang_info reports
    a PodGroup CRD, with ``created``; each controller with ``started``, None when no pod runs)."""
    created = (crd or {}).get("created") or ""
    return [c for c in controllers if created and c.get("started") and created > c["started"]]


def crd_followed(crd: dict | None, controllers: list[dict]) -> bool:
    """Whether Trainer follows the PodGroups of this CRD: Established, and existing when Trainer started."""
    return bool((crd or {}).get("established")) and not started_before(crd, controllers)


def restart_command(controller: dict) -> str:
    ns, _sep, name = controller["deployment"].partition("/")
    return f"kubectl -n {ns} rollout restart deployment/{name}"


def podgroup_crd_problems(runtimes: list[dict], crds: dict, controllers: list[dict]) -> list[dict]:
    """The PodGroup CRD of a policy some runtime uses missing, or created after Trainer's pod started
    (Trainer sets up its PodGroup watch at start, only if the CRD exists then). ``crds``: policy ->
    (CRD name, {established, created} as gang_info reports the CRD, or None when missing);
    ``controllers``: Trainer's, each with ``deployment`` (namespace/name) and ``started`` (when its
    oldest running pod started; None when none runs)."""
    out = []
    used: dict[str, list[str]] = {}
    for rt in runtimes:
        p = gang_policy(rt)
        if p in GANG_OF_POLICY:
            used.setdefault(p, []).append(runtime_name(rt))
    for policy, users in sorted(used.items()):
        name, crd = crds[policy]
        listed = ", ".join(users[:3]) + (f" and {len(users) - 3} more" if len(users) > 3 else "")
        if not (crd or {}).get("established"):
            out.append(
                {
                    "object": f"CustomResourceDefinition {name}",
                    "message": f"{listed} use(s) podGroupPolicy {policy}, but CustomResourceDefinition {name} is "
                    f"{'not Established' if crd else 'missing'}: Trainer cannot create their TrainJobs' PodGroups",
                    "fix": f"{POLICY_INSTALL[policy]}, then restart Trainer"
                    + "".join(f" ({restart_command(c)})" for c in controllers[:1]),
                }
            )
            continue
        for c in started_before(crd, controllers):
            out.append(
                {
                    "object": f"Deployment {c['deployment']}",
                    "message": f"Trainer's pod started at {c['started']}, before CustomResourceDefinition {name} "
                    f"was created ({crd['created']}): Trainer sets up its watch of {policy} PodGroups (and of the "
                    "LimitRanges and RuntimeClasses that count towards their minResources) only when their CRD "
                    f"exists at its start, so until it restarts a PodGroup of {listed} that is changed or deleted "
                    "is not reconciled when it happens",
                    "fix": f"restart Trainer: {restart_command(c)}",
                }
            )
    return out


def runtime_of(trainjob: dict, runtimes: list[dict]) -> dict | None:
    """The runtime a TrainJob runs on, among ``runtimes`` (a TrainingRuntime from the TrainJob's own
    namespace); None when it is not there."""
    ns = (trainjob.get("metadata") or {}).get("namespace")
    for rt in runtimes:
        md = rt.get("metadata") or {}
        kind = rt.get("kind")
        if uses(trainjob, kind, md.get("name")) and (kind != "TrainingRuntime" or md.get("namespace") == ns):
            return rt
    return None


def name_clash_problems(trainjobs: list[dict], runtimes: list[dict], jobs: list[dict]) -> list[dict]:
    """A TrainJob on a gang runtime and a Kubeflow v1 job of the same name in one namespace, gang-scheduled on
    the same scheduler: both controllers name their PodGroup after their job (Trainer after the TrainJob,
    training-operator and mpi-operator after theirs), so both own the one PodGroup <group> <ns>/<name> and
    each writes its minMember over the other's. ``jobs``: each {kind, namespace, name, operators: {gang
    scheduler (volcano, scheduler_plugins): the operator that gangs this kind on it}}."""
    by_key: dict[tuple, list[dict]] = {}
    for j in jobs:
        by_key.setdefault((j["namespace"], j["name"]), []).append(j)
    out = []
    for tj in trainjobs:
        md = tj.get("metadata") or {}
        key = (md.get("namespace"), md.get("name"))
        policy = gang_policy(runtime_of(tj, runtimes) or {})
        gang = GANG_OF_POLICY.get(policy)
        for j in by_key.get(key, ()) if gang else ():
            operator = j["operators"].get(gang)
            if not operator:
                continue
            ns, name = key
            out.append(
                {
                    "object": f"TrainJob {ns}/{name}",
                    "message": f"TrainJob {ns}/{name} and {j['kind']} {ns}/{name} are both gang-scheduled by "
                    f"{POLICY_SCHEDULER[policy]} ({operator} for the {j['kind']}) and share one PodGroup, "
                    f"{_podgroups.group(gang)} {ns}/{name}: each controller writes its minMember over the other's, "
                    "so either job can start partially",
                    "fix": f"rename one of them: delete the TrainJob or the {j['kind']} and create it again under "
                    "another name",
                }
            )
    return out


def resources_per_node_problems(version: str | None, trainjobs: list[dict], runtimes: list[dict]) -> list[dict]:
    """Trainer v2.1.x leaves a TrainJob's trainer.resourcesPerNode out of its PodGroup's minResources
    (kubeflow/trainer#2525, fixed in v2.2.0): a gang TrainJob that sets it is pre-checked against the
    runtime's requests, not its own."""
    if (version or "").lstrip("v").split(".")[:2] != ["2", "1"]:
        return []
    out = []
    for tj in trainjobs:
        md = tj.get("metadata") or {}
        if not ((tj.get("spec") or {}).get("trainer") or {}).get("resourcesPerNode"):
            continue
        rt = runtime_of(tj, runtimes)
        policy = gang_policy(rt or {})
        if policy not in GANG_OF_POLICY:
            continue
        out.append(
            {
                "object": f"TrainJob {md.get('namespace')}/{md.get('name')}",
                "message": f"TrainJob {md.get('namespace')}/{md.get('name')} sets trainer.resourcesPerNode, which "
                f"Trainer {version} leaves out of the {policy} PodGroup's minResources (kubeflow/trainer#2525, fixed "
                f"in v2.2.0): the scheduler checks the gang's room against {runtime_name(rt)}'s requests instead",
                "fix": "upgrade Trainer to v2.2.0 or later, or put the resources in the runtime's container requests "
                "and drop resourcesPerNode",
            }
        )
    return out
