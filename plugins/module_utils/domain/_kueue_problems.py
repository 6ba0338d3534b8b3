# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: Kueue as gang_info reads it (its controller and Configuration, ClusterQueues,
LocalQueues, Workloads, the jobs sent to its queues, and the pods of its admitted workloads folded as the pod scan
decodes them), its facts, and the problems gang_info reports about it, each {object, message, fix} and each only from
what the objects say: a job sent to a LocalQueue that does not exist, an admitted workload started in part, a workload
evicted by waitForPodsReady again and again, a job of a kind Kueue runs no integration for, a ClusterQueue that is not
Active. gang_info does the reads (``runners/_gang_info_kueue``). Pure: no I/O. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import (
    _capacity,
    _component_discovery,
    _images,
    _kueue,
    _pod_facts,
)

GROUP = _kueue.GROUP
QUEUE_LABEL = _kueue.QUEUE_LABEL
CRD = f"clusterqueues.{GROUP}"  # Kueue is read only where this CRD is Established
VERSIONS = ("v1beta2", "v1beta1")  # Kueue's API versions gang_info reads, the newest first
IMAGES = {"kueue": "kueue"}  # registry.k8s.io/kueue/kueue, or a mirror's .../kueue
DEFAULT_FRAMEWORKS = ["batch/job"]  # integrations.frameworks of a Configuration that sets none
ROLE = "role gangsched.kubeflow.kueue"
# on every pod of an admitted workload: its podset; with Topology Aware Scheduling (a beta gate, on) its Workload
PODSET_LABEL = "kueue.x-k8s.io/podset"
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
# where a pod names its job, a JobSet's first (a TrainJob's JobSet has the TrainJob's name), then a Kubeflow job's
JOB_LABELS = ("jobset.sigs.k8s.io/jobset-name", "training.kubeflow.org/job-name", "batch.kubernetes.io/job-name")
# the job kinds Kueue integrates: kind -> (its integration's framework name, apiVersion, plural)
JOBS = _kueue.JOBS
FINISHED = ("Complete", "Completed", "Succeeded", "Failed", "Finished")  # a job's or a Workload's last condition
PODS_READY_TIMEOUT = "PodsReadyTimeout"
DEACTIVATED = "DeactivatedDueToRequeuingLimitExceeded"
FATE = {True: ", and it stays suspended", False: "; it is not suspended, so it runs past Kueue's quota", None: ""}
REQUEUES = 2  # evicted by waitForPodsReady this many times: again and again
EXAMPLES = 3


def served_version(crd: dict | None) -> str | None:
    """The version of Kueue's API gang_info reads (``VERSIONS``, newest first) among those ``crd`` (a CRD of Kueue's)
    serves; None when it serves none of them."""
    served = {v.get("name") for v in ((crd or {}).get("spec") or {}).get("versions") or [] if v.get("served")}
    return next((v for v in VERSIONS if v in served), None)


def condition(obj: dict | None, kind: str) -> dict:
    """The condition ``kind`` of an object's status ({} without)."""
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})


def _true(obj: dict | None, kind: str) -> bool:
    return condition(obj, kind).get("status") == "True"


def _listed(names: list[str], more: str = "more") -> str:
    return ", ".join(names[:EXAMPLES]) + (f" and {len(names) - EXAMPLES} {more}" if len(names) > EXAMPLES else "")


# ---- the controller and its Configuration -----------------------------------------------------------------------
def controllers(deployments: list[dict]) -> list[tuple[dict, dict]]:
    """(Deployment, container) of every container that runs Kueue's image, whatever the Deployment is called."""
    return [
        (dep, c)
        for dep in deployments
        for c in dep["spec"]["template"]["spec"].get("containers") or []
        if _images.image_kind(c.get("image", ""), IMAGES)
    ]


def configuration(text: str | None) -> dict | None:
    """Kueue's Configuration from its file's text: {} (all its defaults) for '' (a controller without --config),
    None where the file was not read or does not parse."""
    import yaml  # the module's requirement, imported where used

    if text is None:
        return None
    try:
        cfg = yaml.safe_load(text) if text else {}
    except yaml.YAMLError:
        return None
    return cfg if isinstance(cfg, dict) else None


def controller_fact(dep: dict, container: dict, config: dict | None, where: str | None) -> dict:
    """A Kueue controller as gang_info reports it; ``where``: the ConfigMap its Configuration was read from.
    ``_config`` (the Configuration, None when unread) is for the problems, not reported."""
    md = dep["metadata"]
    return {
        "deployment": f"{md['namespace']}/{md['name']}",
        "container": container.get("name"),
        "image": container.get("image"),
        "version": _images.image_repo(container.get("image") or "")[1] or None,
        "ready": _component_discovery.ready(dep),
        "configuration": where,
        "_config": config,
    }


def integrations(found: list[dict]) -> list[str] | None:
    """The frameworks Kueue integrates (integrations.frameworks, its default where unset), over all its controllers
    (``controller_fact``); None when there is none or the Configuration of one was not read."""
    if not found or any(c["_config"] is None for c in found):
        return None
    each = [(c["_config"].get("integrations") or {}).get("frameworks") or DEFAULT_FRAMEWORKS for c in found]
    return list(dict.fromkeys(f for frameworks in each for f in frameworks))


def wait_for_pods_ready(found: list[dict]) -> dict | None:
    """waitForPodsReady of the first Configuration read that sets it (its presence turns it on), else None."""
    for c in found:
        w = (c["_config"] or {}).get("waitForPodsReady")
        if isinstance(w, dict) and w.get("enable", True):
            return w
    return None


# ---- the objects, slim -------------------------------------------------------------------------------------------
def _owner(md: dict) -> tuple[str, str] | None:
    refs = md.get("ownerReferences") or []
    ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    return (ref.get("kind"), ref.get("name")) if ref else None


def _finished(obj: dict) -> bool:
    return any(_true(obj, kind) for kind in FINISHED)


def slim_job(kind: str):
    """A scan's keep of a job of ``kind`` sent to a queue: its kind, namespace, name, queue, whether it is live
    (neither finished nor being deleted) and suspended."""

    def keep(job: dict) -> dict:
        md, spec = job.get("metadata") or {}, job.get("spec") or {}
        return {
            "kind": kind,
            "namespace": md.get("namespace"),
            "name": md.get("name"),
            "queue": (md.get("labels") or {}).get(QUEUE_LABEL),
            "live": not md.get("deletionTimestamp") and not _finished(job),
            "suspended": bool(spec.get("suspend") or (spec.get("runPolicy") or {}).get("suspend")),
        }

    return keep


def slim_workload(w: dict) -> dict:
    """What gang_info reads of a Workload: its names, owner, queue, podsets' sizes and containers' resources,
    conditions, requeue count and the ClusterQueue that admitted it (the podsets' templates are otherwise dropped)."""
    md, spec, st = w.get("metadata") or {}, w.get("spec") or {}, w.get("status") or {}
    podsets = []
    for ps in spec.get("podSets") or []:
        pod = ((ps.get("template") or {}).get("spec")) or {}
        containers = {
            k: [{"resources": c.get("resources") or {}} for c in pod.get(k) or []]
            for k in ("containers", "initContainers")
        }
        podsets.append({"name": ps.get("name"), "count": ps.get("count", 1), "spec": containers})
    return {
        "namespace": md.get("namespace"),
        "name": md.get("name"),
        "owner": _owner(md),
        "queue": spec.get("queueName"),
        "active": spec.get("active", True) is not False,
        "podsets": podsets,
        "status": {
            "conditions": [
                {k: c.get(k) for k in ("type", "status", "reason", "message")} for c in st.get("conditions") or []
            ],
            "requeue_count": (st.get("requeueState") or {}).get("count") or 0,
            "cluster_queue": (st.get("admission") or {}).get("clusterQueue"),
        },
    }


def _summed(flavors: list[dict], key: str) -> dict:
    out: dict[str, float] = {}
    for r in (r for f in flavors or [] for r in f.get("resources") or []):
        if r.get("name") and r.get(key) is not None:
            out[r["name"]] = out.get(r["name"], 0.0) + _capacity.quantity(r[key])
    return {k: _capacity.num(v) for k, v in sorted(out.items())}


def quota(cq: dict) -> dict:
    """Resource -> the ClusterQueue's nominalQuota summed over its flavors (and resource groups)."""
    groups = (cq.get("spec") or {}).get("resourceGroups") or []
    return _summed([f for g in groups for f in g.get("flavors") or []], "nominalQuota")


def cluster_queue_fact(cq: dict) -> dict:
    st = cq.get("status") or {}
    active = condition(cq, "Active").get("status")
    return {
        "name": cq["metadata"]["name"],
        "quota": quota(cq),
        "used": _summed(st.get("flavorsReservation") or st.get("flavorsUsage") or [], "total"),
        "pending_workloads": st.get("pendingWorkloads", 0),
        "admitted_workloads": st.get("admittedWorkloads", 0),
        "active": None if active is None else active == "True",
    }


def local_queue_fact(lq: dict) -> dict:
    md = lq.get("metadata") or {}
    return {
        "namespace": md.get("namespace"),
        "name": md.get("name"),
        "cluster_queue": (lq.get("spec") or {}).get("clusterQueue"),
    }


def _evicted(w: dict) -> str | None:
    c = condition(w, "Evicted")
    return c.get("reason") if c.get("status") == "True" else None


def workload_fact(w: dict) -> dict:
    """A Workload (``slim_workload``) as gang_info reports it."""
    ready = condition(w, "PodsReady").get("status")
    return {
        "namespace": w["namespace"],
        "name": w["name"],
        "owner": "/".join(w["owner"]) if w["owner"] else None,
        "queue": w["queue"],
        "admitted": _true(w, "Admitted"),
        "quota_reserved": _true(w, "QuotaReserved"),
        "evicted": _evicted(w),
        "requeue_count": w["status"]["requeue_count"],
        "pods_ready": None if ready is None else ready == "True",
        # Kueue's word while it holds no quota for it (why it waits: over the quota, a LocalQueue missing, ...)
        "said": None if _true(w, "QuotaReserved") else condition(w, "QuotaReserved").get("message"),
    }


def facts(found: list[dict], cqs: list[dict], lqs: list[dict], workloads: list[dict]) -> dict:
    """gang_info's ``kueue`` fact."""
    return {
        "controllers": [{k: v for k, v in c.items() if not k.startswith("_")} for c in found],
        "integrations": integrations(found),
        "wait_for_pods_ready": wait_for_pods_ready(found),
        "cluster_queues": [cluster_queue_fact(cq) for cq in cqs],
        "local_queues": [local_queue_fact(lq) for lq in lqs],
        "workloads": [workload_fact(w) for w in workloads],
    }


# ---- the pods of admitted workloads, folded ------------------------------------------------------------------------
class QueuedPods:
    """The live pods of Kueue's admitted workloads, fed one pod at a time as the pod scan decodes them (a scan's
    keep beside ``_pod_facts.PodFold``; it keeps no pod): per workload (the pod's ``WORKLOAD_ANNOTATION``, else its
    job's name where it carries ``PODSET_LABEL``) its members, the bound and the GPUs they hold, the unbound that
    waited ``threshold`` seconds or more, the longest wait and what the scheduler wrote on them. A time or quantity
    that does not parse is raised when read (``of``), not while the scan decodes."""

    def __init__(self, now: float, threshold: float):
        self.now, self.threshold = now, threshold
        self.restart()

    def restart(self) -> None:
        """Forget every pod folded so far (a scan read again from its start)."""
        self._keys: dict[tuple, dict] = {}
        self._error: ValueError | None = None

    def __call__(self, pod: dict) -> None:
        if self._error is None:
            try:
                self._add(pod)
            except ValueError as e:
                self._error = e

    def _add(self, pod: dict) -> None:
        md, spec, st = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        labels = md.get("labels") or {}
        if md.get("deletionTimestamp") or st.get("phase") in _pod_facts.TERMINAL:
            return
        wl = (md.get("annotations") or {}).get(WORKLOAD_ANNOTATION)
        job = next((labels[k] for k in JOB_LABELS if labels.get(k)), None) if PODSET_LABEL in labels else None
        if not (wl or job):
            return
        g = self._keys.setdefault(
            ("workload" if wl else "job", md.get("namespace"), wl or job),
            {"members": 0, "bound": 0, "held": 0.0, "pending": [], "longest": 0.0, "said": None},
        )
        g["members"] += 1
        if spec.get("nodeName"):
            g["bound"] += 1
            g["held"] += _capacity.pod_request(pod)
            return
        age = self.now - (_pod_facts.timestamp(md.get("creationTimestamp")) or self.now)
        if age >= self.threshold:
            g["pending"].append(md.get("name"))
            g["longest"] = max(g["longest"], age)
            scheduled = condition(pod, "PodScheduled")
            g["said"] = g["said"] or scheduled.get("message")

    def of(self, w: dict) -> dict | None:
        """The pods of Workload ``w`` (``slim_workload``): {members, bound, held, pending, longest, said}; None
        without any."""
        if self._error is not None:
            raise self._error
        ns = w["namespace"]
        return self._keys.get(("workload", ns, w["name"])) or (
            self._keys.get(("job", ns, w["owner"][1])) if w["owner"] else None
        )


# ---- the problems ---------------------------------------------------------------------------------------------------
def _of(w: dict) -> str:
    """The job a Workload stands for ('PyTorchJob ns/name'), else the Workload itself."""
    if w["owner"]:
        return f"{w['owner'][0]} {w['namespace']}/{w['owner'][1]}"
    return f"Workload {w['namespace']}/{w['name']}"


def _owned(workloads: list[dict]) -> dict[tuple, dict]:
    return {(w["owner"][0], w["namespace"], w["owner"][1]): w for w in workloads if w["owner"]}


def _queues(lqs: list[dict]) -> dict[tuple, str | None]:
    """(namespace, LocalQueue) -> its ClusterQueue."""
    return {(f["namespace"], f["name"]): f["cluster_queue"] for f in map(local_queue_fact, lqs)}


def missing_queue_problems(jobs: list[dict], lqs: list[dict], workloads: list[dict], frameworks) -> list[dict]:
    """A live job (``slim_job``) sent to a LocalQueue its namespace does not have (or a Workload Kueue marked
    'LocalQueue X doesn't exist' while it still does not): Kueue never admits it (a job not suspended runs past its
    quota). Not for a kind Kueue runs no integration for (``integration_problems``); ``frameworks``:
    ``integrations`` (None: unknown)."""
    queues, out, seen, said = _queues(lqs), [], set(), {}
    for w in workloads:
        msg = condition(w, "QuotaReserved").get("message") or ""
        if w["owner"] and msg.startswith("LocalQueue ") and msg.endswith("doesn't exist") and not _finished(w):
            said[(w["owner"][0], w["namespace"], w["owner"][1])] = (w, msg)
    suspects = [
        (j["kind"], j["namespace"], j["name"], j["queue"], j["suspended"]) for j in jobs if j["live"] and j["queue"]
    ]
    suspects += [(*key, w["queue"], None) for key, (w, _msg) in said.items()]
    for kind, ns, name, queue, suspended in suspects:
        key = (kind, ns, name)
        if key in seen or (ns, queue) in queues:
            continue
        if frameworks is not None and kind in JOBS and JOBS[kind][0] not in frameworks:
            continue
        seen.add(key)
        there = sorted(n for q_ns, n in queues if q_ns == ns)
        w, msg = said.get(key, (None, None))
        evidence = f"; Kueue says on its Workload {ns}/{w['name']}: {msg!r}" if msg else ""
        cqs = sorted({c for c in queues.values() if c})
        out.append(
            {
                "object": f"{kind} {ns}/{name}",
                "message": f"{kind} {ns}/{name} is sent to LocalQueue {queue!r} (label {QUEUE_LABEL}), which does not "
                f"exist in namespace {ns} (LocalQueues there: {', '.join(there) or 'none'}){evidence}: Kueue never "
                f"admits it{FATE[suspended]}",
                "fix": f"create LocalQueue {ns}/{queue} pointing at a ClusterQueue ({', '.join(cqs) or 'none exists'}; "
                f"kueue_local_queues of {ROLE}), or set the label to a LocalQueue of {ns}",
            }
        )
    return out


def gpus_asked(w: dict) -> float:
    """The GPUs a Workload (``slim_workload``) asks for in all: each podset's count times one pod's request."""
    return sum((ps.get("count") or 0) * _capacity.pod_request(ps) for ps in w["podsets"])


def _gpu_quota(cq: dict | None) -> float | None:
    q = quota(cq).get(_capacity.GPU) if cq else None
    return None if q is None else float(q)


def _cluster_queue(w: dict, lqs: list[dict], cqs: list[dict]) -> dict | None:
    name = w["status"]["cluster_queue"] or _queues(lqs).get((w["namespace"], w["queue"]))
    return next((cq for cq in cqs if cq["metadata"]["name"] == name), None)


def partial_problems(workloads: list[dict], pods: QueuedPods, lqs, cqs, gpus: float, ready: dict | None) -> list[dict]:
    """An admitted Workload whose pods are bound in part, the others unbound for the threshold or longer (``pods``):
    Kueue admits by quota, not by what the nodes can place, so without a gang its job started in part. ``gpus``: the
    GPUs the schedulable nodes hold; ``ready``: waitForPodsReady (None: off)."""
    out = []
    for w in workloads:
        p = pods.of(w)
        if not (_true(w, "Admitted") and not _finished(w) and p and p["bound"] and p["pending"]):
            continue
        cq = _cluster_queue(w, lqs, cqs)
        name, q = (cq or {}).get("metadata", {}).get("name"), _gpu_quota(cq)
        said = f" (the scheduler said: {p['said']})" if p["said"] else ""
        fix = "send its pods to a gang scheduler (one of this collection's gang paths), which binds all of them or none"
        if q is not None and q > gpus and gpus_asked(w):
            fix += f"; and lower ClusterQueue {name}'s {_capacity.GPU} quota ({_capacity.num(q)}) to the "
            fix += f"{_capacity.num(gpus)} the nodes hold (kueue_quota of {ROLE})"
        if ready is None:
            fix += f"; and turn on waitForPodsReady ({ROLE} does) so that Kueue evicts and requeues such a job"
        out.append(
            {
                "object": _of(w),
                "message": f"{_of(w)} was admitted by ClusterQueue {name or '?'} (Workload "
                f"{w['namespace']}/{w['name']}) but only {p['bound']} of its {p['members']} pods are bound: "
                f"{len(p['pending'])} ({_listed(sorted(p['pending']))}) waited {int(p['longest'])}s unbound{said} "
                f"while the bound ones hold {_capacity.num(p['held'])} GPU(s); Kueue admits by quota, not by what the "
                "nodes can place, so the job started in part",
                "fix": fix,
            }
        )
    return out


def requeue_problems(workloads: list[dict], lqs: list[dict], cqs: list[dict], gpus: float) -> list[dict]:
    """A Workload evicted by waitForPodsReady again and again (requeued ``REQUEUES`` times or more, or evicted so now
    after a requeue, or deactivated past its requeue limit), with why where the objects say it: the gang asks for more
    GPUs than the schedulable nodes hold (``gpus``), or its ClusterQueue's GPU quota is more than they hold."""
    out = []
    for w in workloads:
        count, reason = w["status"]["requeue_count"], _evicted(w)
        again = count >= REQUEUES or (reason in (PODS_READY_TIMEOUT, DEACTIVATED) and count >= 1)
        if not again or _finished(w):
            continue
        cq = _cluster_queue(w, lqs, cqs)
        name, q, need = (cq or {}).get("metadata", {}).get("name"), _gpu_quota(cq), gpus_asked(w)
        n, g = _capacity.num(need), _capacity.num(gpus)
        lower = f"lower ClusterQueue {name}'s {_capacity.GPU} quota ({_capacity.num(q or 0)}) to {g}"
        lower += f" (kueue_quota of {ROLE})"
        if need and need > gpus:
            why = f"the job asks for {n} GPUs in all and the schedulable nodes hold {g}: it never fits"
            fix = f"fix the gang's size: at most {g} GPUs in all (fewer pods or fewer GPUs a pod)"
            if q is not None and q > gpus:
                fix += f", and {lower} so that Kueue admits no more than the nodes hold"
        elif need and q is not None and q > gpus:
            why = (
                f"ClusterQueue {name}'s {_capacity.GPU} quota ({_capacity.num(q)}) is more than the schedulable nodes "
                f"hold ({g}): Kueue admits it against GPUs that other pods hold or no node has"
            )
            fix = lower
        else:
            why = f"its pods were not all ready within the timeout, though the job ({n} GPUs) fits the nodes ({g})"
            kind, job = w["owner"] or ("Workload", w["name"])
            fix = f"find why its pods do not start: gang_info with job {{kind: {kind}, namespace: {w['namespace']}, "
            fix += f"name: {job}}}"
        now = f" (now Evicted: {reason})" if reason else ""
        if reason == DEACTIVATED or not w["active"]:
            now = " and then deactivated past its requeue limit (spec.active false): it runs no more until reactivated"
        out.append(
            {
                "object": _of(w),
                "message": f"Workload {w['namespace']}/{w['name']} of {_of(w)} was evicted by waitForPodsReady and "
                f"requeued {count} time(s){now}: {why}",
                "fix": fix,
            }
        )
    return out


def integration_problems(jobs: list[dict], workloads: list[dict], frameworks, where: str | None) -> list[dict]:
    """Live jobs sent to a queue (``slim_job``) of a kind whose integration Kueue does not run (``frameworks``:
    ``integrations``; None, not read: nothing said): Kueue makes no Workload for them, so they are neither queued nor
    counted against a quota. One problem per kind; ``where``: the ConfigMap the Configuration was read from."""
    if frameworks is None:
        return []
    owned, by_kind = _owned(workloads), {}
    for j in jobs:
        if j["live"] and j["queue"] and j["kind"] in JOBS and JOBS[j["kind"]][0] not in frameworks:
            by_kind.setdefault(j["kind"], []).append(j)
    out = []
    for kind, found in sorted(by_kind.items()):
        names = [f"{j['namespace']}/{j['name']}" for j in found]
        none = not any((kind, j["namespace"], j["name"]) in owned for j in found)
        held = [f"{j['namespace']}/{j['name']}" for j in found if j["suspended"]]
        fate = f"{_listed(held)} stay(s) suspended, with nothing to resume it" if held else "they run unqueued"
        out.append(
            {
                "object": f"{kind} {_listed(names)}",
                "message": f"{len(found)} {kind}(s) ({_listed(names)}) are sent to a Kueue queue (label "
                f"{QUEUE_LABEL}), but Kueue runs without the integration {JOBS[kind][0]} (integrations.frameworks"
                f"{' of ConfigMap ' + where if where else ''}: {', '.join(frameworks)}): it makes no Workload for "
                f"them{' (and has made none)' if none else ''}, so they are neither queued nor counted against a "
                f"quota; {fate}",
                "fix": f"add {JOBS[kind][0]} to Kueue's integrations.frameworks (kueue_integrations of {ROLE}, which "
                "restarts Kueue), or remove the label from those jobs",
            }
        )
    return out


FIXES = {
    "Stopped": "remove spec.stopPolicy (or set it to None)",
    "AdmissionCheckNotFound": "create the AdmissionCheck(s) it names, or remove them from spec.admissionChecks",
    "AdmissionCheckInactive": "make the AdmissionCheck(s) it names Active, or remove them from spec.admissionChecks",
    "TopologyNotFound": "create the Topology its flavor names, or remove the flavor's spec.topologyName",
}


def inactive_problems(cqs: list[dict], flavors: list[dict], lqs: list[dict]) -> list[dict]:
    """A ClusterQueue whose Active condition is False, with Kueue's reason and message, the ResourceFlavors it names
    that do not exist (``flavors``: those listed) and the LocalQueues that send to it."""
    have = sorted((f.get("metadata") or {}).get("name") for f in flavors)
    out = []
    for cq in cqs:
        c = condition(cq, "Active")
        if c.get("status") != "False":
            continue
        name = cq["metadata"]["name"]
        groups = (cq.get("spec") or {}).get("resourceGroups") or []
        named = [f.get("name") for g in groups for f in g.get("flavors") or []]
        missing = sorted({f for f in named if f and f not in have})
        senders = sorted(f"{ns}/{n}" for (ns, n), to in _queues(lqs).items() if to == name)
        to = f"LocalQueue(s) {_listed(senders)}" if senders else "it"
        gone = f"; ResourceFlavor(s) {', '.join(missing)} it names do not exist" if missing else ""
        fix = FIXES.get(c.get("reason"), "fix what Kueue's message names")
        if missing or c.get("reason") == "FlavorNotFound":
            fix = (
                f"create ResourceFlavor(s) {', '.join(missing) or 'it names'} (kueue_resource_flavor of {ROLE}), or "
                f"name an existing one in spec.resourceGroups (ResourceFlavors: {', '.join(have) or 'none'})"
            )
        out.append(
            {
                "object": f"ClusterQueue {name}",
                "message": f"ClusterQueue {name} is not Active ({c.get('reason')}: {c.get('message')}){gone}: it "
                f"admits nothing, so every job sent to {to} waits",
                "fix": fix,
            }
        )
    return out
