# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: gang_info's explanation of one job — the job, its gang object and what the scheduler
last said about it, its queue and the namespace's quotas, its pods and their events, the operator's gang flag, the
problems of the whole read that touch it, and one line that says why it is Pending (or partial, or running) and what
to do. Part of gang_info's runner (``_gang_info``), imported by it only. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api, _pod_facts, _workloads
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._kueue import QUEUE_LABEL
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry

# a job kind -> the label its controller puts on its pods, valued with the job's name
POD_LABEL = {
    **{kind: "training.kubeflow.org/job-name" for kind in _workloads.REPLICA_SPECS},
    "TrainJob": "jobset.sigs.k8s.io/jobset-name",
    "JobSet": "jobset.sigs.k8s.io/jobset-name",
    "Job": "batch.kubernetes.io/job-name",
}
# PodGroup: a gang object, or a label gang by its name; Workload: Kueue's, explained as the job it admits
KINDS = (*POD_LABEL, "PodGroup", "Workload")
OPERATOR = {workload: op for workload, (_crd, op) in _workloads.JOB_CRDS.items()}  # pytorchjob -> training_operator
EVENTS = 10  # the newest events of the job, its gang object and its pods


def check(job: dict | None) -> None:
    """The job option names a kind the explanation knows, a namespace and a name."""
    if job is None:
        return
    if job.get("kind") not in KINDS:
        raise GangError(
            f"job.kind={job.get('kind')!r} is not one of {', '.join(KINDS)}; set job.kind to the job's kind"
        )
    for key in ("namespace", "name"):
        if not job.get(key):
            raise GangError(f"job.{key} is required: the {key} of the {job['kind']} to explain")


def _podgroup(facts: dict, ns: str, name: str) -> tuple[str | None, dict | None]:
    """(path, PodGroup) named ``ns/name`` among the PodGroups the paths listed: the job's (the operators' and
    Trainer's are named after it), or the PodGroup itself when the kind explained is PodGroup."""
    for path, lists in (facts.get("lists") or {}).items():
        for pg in lists.get("podgroups") or []:
            md = pg.get("metadata") or {}
            if md.get("namespace") == ns and md.get("name") == name:
                return path, pg
    return None, None


def _said(pg: dict | None) -> str | None:
    """What the scheduler last said on a PodGroup: its phase and its newest True condition."""
    if not pg:
        return None
    st = pg.get("status") or {}
    conds = [c for c in st.get("conditions") or [] if c.get("status") == "True"]
    last = conds[-1] if conds else {}
    words = f"phase {st.get('phase') or 'unset'}"
    if last:
        words += f", {last.get('type')}: {last.get('reason') or ''} {last.get('message') or ''}".rstrip()
    return words


def _pods_list(kind: str, ns: str, name: str) -> tuple[str, str, dict]:
    """The list of the job's pods: (path, what, the list's options); a PodGroup's are all the namespace's, filtered."""
    path = _api.path("Pod", ns)
    if kind == "PodGroup":
        return path, f"Pods in {ns}", {}
    return path, f"Pods of {kind} {ns}/{name}", {"labelSelector": f"{POD_LABEL[kind]}={name}"}


def _pods(client, kind: str, ns: str, name: str) -> list[dict]:
    path, what, options = _pods_list(kind, ns, name)
    pods = client.list_or_empty(path, what=what, **options)
    if kind == "PodGroup":
        return [p for p in pods if _pod_facts.gang_key(p) == f"{ns}/{name}"]
    return pods


def _quotas_list(ns: str) -> tuple[str, str, dict]:
    return _api.path("ResourceQuota", ns), f"ResourceQuotas in {ns}", {}


def _events_list(ns: str) -> tuple[str, str, dict]:
    return _api.path("Event", ns), f"Events in {ns}", {}


def reads(job: dict | None) -> list[tuple]:
    """The reads ``explain`` makes of ``job`` (all of them when it is found), as (path, what, query): gather asks for
    them as it starts, with the reads it makes on any cluster."""
    if not job:
        return []
    kind, ns, name = job["kind"], job["namespace"], job["name"]
    if kind == "Workload":
        return []  # its job is known once Kueue's Workloads are read
    out = [] if kind == "PodGroup" else [(_api.path(kind, ns, name), f"{kind} {ns}/{name}", None)]
    for path, what, options in (_pods_list(kind, ns, name), _quotas_list(ns), _events_list(ns)):
        out.append((path, what, _api.list_query(**options)))
    return out


def _pod_row(p: dict) -> dict:
    md, spec, st = p.get("metadata") or {}, p.get("spec") or {}, p.get("status") or {}
    why = next(
        (c.get("message") or c.get("reason") for c in st.get("conditions") or [] if c.get("type") == "PodScheduled"),
        None,
    )
    return {
        "name": md.get("name"),
        "phase": st.get("phase"),
        "node": spec.get("nodeName"),
        "scheduler_name": spec.get("schedulerName") or "default-scheduler",
        "scheduler_said": None if spec.get("nodeName") else why,
    }


def _quotas(client, ns: str) -> list[dict]:
    out = []
    path, what, _options = _quotas_list(ns)
    for q in client.list_or_empty(path, what=what):
        st = q.get("status") or {}
        out.append({"name": q["metadata"]["name"], "hard": st.get("hard") or {}, "used": st.get("used") or {}})
    return out


def _events(client, ns: str, names: set[str]) -> list[str]:
    path, what, _options = _events_list(ns)
    events = client.list_or_empty(path, what=what)
    mine = [e for e in events if (e.get("involvedObject") or {}).get("name") in names]
    mine.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
    return [
        f"{(e.get('involvedObject') or {}).get('kind')} {(e.get('involvedObject') or {}).get('name')}: "
        f"{e.get('reason')}: {e.get('message')}"
        for e in mine[-EVENTS:]
    ]


def _names(obj: str, keys: set[str]) -> bool:
    """Whether a problem's object ('PodGroup ns/name', 'Pods ns/a and 2 more', 'Deployment x, Deployment y') names one
    of ``keys`` ('ns/name') as a whole word (team/a is not team/ab)."""
    return any(word.strip(",()") in keys for word in obj.split())


def _kueue(obj: dict | None, kind: str, ns: str, name: str, kueue: dict | None) -> dict | None:
    """The job's part in Kueue: the LocalQueue its label names (and whether it exists, and where it sends) and the
    Workload Kueue made for it, from gang_info's ``kueue`` fact; None when it names no queue."""
    queue = (((obj or {}).get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL)
    if not queue:
        return None
    kueue = kueue or {}
    lq = next((q for q in kueue.get("local_queues") or [] if (q["namespace"], q["name"]) == (ns, queue)), None)
    wl = next(
        (w for w in kueue.get("workloads") or [] if w["namespace"] == ns and w["owner"] == f"{kind}/{name}"), None
    )
    return {
        "local_queue": queue,
        "local_queue_found": lq is not None,
        "cluster_queue": (lq or {}).get("cluster_queue"),
        "workload": wl,
    }


def _kueue_why(k: dict | None, what: str) -> str | None:
    """Why a job sent to a Kueue queue waits before any gang scheduler sees it: Kueue's own word on its Workload."""
    if not k:
        return None
    wl = k["workload"]
    if wl is None:
        return (
            f"{what} is sent to LocalQueue {k['local_queue']}, but Kueue made no Workload for it: check that Kueue "
            "runs with the integration of its kind (gang_info's kueue.integrations)"
        )
    if wl["admitted"]:
        return None
    again = f", after {wl['requeue_count']} eviction(s) by waitForPodsReady" if wl["requeue_count"] else ""
    return (
        f"held by Kueue, not admitted{again}: its Workload {wl['name']} holds no quota of ClusterQueue "
        f"{k['cluster_queue'] or '(none: its LocalQueue is missing)'}, Kueue says: {wl['said'] or 'nothing yet'}. "
        "It starts when the ClusterQueue's quota frees (jobs before it finish), or with more quota"
    )


def _why(
    found,
    rows: list[dict],
    pg: dict | None,
    said: str | None,
    touching: list[dict],
    what: str,
    kueue=None,
    path: str | None = None,
) -> str:
    """One line: why the job is where it is, and what to do, from the evidence gathered."""
    if not found and pg is not None:
        gone = f"{what} is gone, but its gang object PodGroup {pg['metadata']['namespace']}/{pg['metadata']['name']} "
        if touching:
            return gone + f"remains: {touching[0]['message']}. Fix: {touching[0]['fix']}"
        return gone + (
            f"remains ({said}); it is deleted with the job unless the job was deleted with --cascade=orphan: delete it "
            "if no job of its name is coming back"
        )
    if not found:
        return f"{what} does not exist: check its kind, namespace and name"
    if touching:
        return f"{touching[0]['message']}. Fix: {touching[0]['fix']}"
    held = _kueue_why(kueue, what)
    if held and not rows:
        return held
    bound = [r for r in rows if r["node"]]
    if not rows:
        if pg is not None:
            return _registry.get(path).unstarted_why(pg, said)  # the path of the PodGroup found
        return f"no pod and no gang object yet: check that the operator of {what} runs, and its log"
    if len(bound) == len(rows):
        return f"running: all {len(rows)} pod(s) bound"
    if bound:
        waiting = sorted({r["scheduler_said"] for r in rows if not r["node"] and r["scheduler_said"]})
        if pg is not None and path:
            # the pods carry their gang and no check above found a cause in the configuration: say so
            return (
                f"partial: {len(bound)} of {len(rows)} pods bound, the others Pending, although the pods carry their "
                f"gang (PodGroup {pg['metadata']['name']}: {said}) and no configuration cause was found; the "
                f"scheduler's last words on the unbound: {'; '.join(waiting) or 'none yet'}. A member made again "
                "after its gang started (a restart, an eviction) must fit beside its running siblings: the gang "
                "scheduler held only the first start. Free room for it, or restart the whole job"
            )
        return (
            f"partial: {len(bound)} of {len(rows)} pods bound, the others Pending; a gang scheduler would have held "
            "them all: check that its pods name the gang scheduler and carry its gang"
        )
    refusals = sorted({r["scheduler_said"] for r in rows if r["scheduler_said"]})
    if refusals:
        return (
            f"held as one gang: none of its {len(rows)} pods is bound, and the scheduler said: {refusals[0]}. It "
            "starts when the whole gang fits: free GPUs, or make it smaller"
        )
    return (
        f"Pending: no scheduler has looked at its {len(rows)} pod(s) yet (schedulerName "
        f"{rows[0]['scheduler_name']!r}); check that the scheduler runs and serves that name"
    )


def explain(client, job: dict, facts: dict, ops: list[dict], problems: list[dict]) -> dict:
    """gang_info's ``job`` fact: the chain of one job, from what the run read and a few reads of its namespace. A Kueue
    Workload is explained as the job it admits (its owner), with the Workload named in the why."""
    if job["kind"] == "Workload":
        return _workload(client, job, facts, ops, problems)
    kind, ns, name = job["kind"], job["namespace"], job["name"]
    what = f"{kind} {ns}/{name}"
    found, obj = True, None
    if kind != "PodGroup":
        obj = client.get_or_none(_api.path(kind, ns, name), what)  # the first of ``reads``
        found = obj is not None
    path, pg = _podgroup(facts, ns, name)
    # a job that is gone may have left its gang object and its pods (deleted with --cascade=orphan); a gang with no
    # PodGroup object is formed from its pods' labels (Koordinator's label gang)
    pods = _pods(client, kind, ns, name) if found or pg is not None or kind == "PodGroup" else []
    if kind == "PodGroup" and pg is None:
        found = bool(pods)
    rows = [_pod_row(p) for p in pods]
    said = _said(pg)
    names = {name, *(r["name"] for r in rows)}
    touching = [p for p in problems if _names(p["object"], {f"{ns}/{n}" for n in names})]
    queue = None
    if pg is not None and _registry.get(path).queues:
        qname = (pg.get("spec") or {}).get("queue") or "default"
        listed = (facts.get("lists") or {}).get(path, {}).get("queues") or []
        q = next((q for q in listed if q["metadata"]["name"] == qname), None)
        queue = {
            "name": qname,
            "found": q is not None,
            "spec": (q or {}).get("spec"),
            "status": (q or {}).get("status"),
        }
    op = OPERATOR.get(kind.lower())
    flag = next(
        (
            {"deployment": o["deployment"], "flag": o["gang_flag"], "value": o["gang_value"]}
            for o in ops
            if o["operator"] == op
        ),
        None,
    )
    kueue = _kueue(obj, kind, ns, name, facts.get("kueue"))
    out = {
        "kind": kind,
        "namespace": ns,
        "name": name,
        "found": found,
        "gang": None
        if pg is None
        else {
            "path": path,
            "name": pg["metadata"]["name"],
            "min_member": (pg.get("spec") or {}).get("minMember"),
            "scheduler_said": said,
        },
        "queue": queue,
        "kueue": kueue,
        "quotas": _quotas(client, ns) if found or pg is not None else [],
        "pods": rows,
        "events": _events(client, ns, names) if found or pg is not None else [],
        "operator_flag": flag,
        "problems": touching,
        "why": _why(found, rows, pg, said, touching, what, kueue, path),
    }
    out["summary"] = summary(out)
    return out


def summary(job: dict) -> list[str]:
    """The explanation as lines to read: the why first, then the chain."""
    lines = [f"{job['kind']} {job['namespace']}/{job['name']}: {job['why']}"]
    g, q, flag = job["gang"], job["queue"], job["operator_flag"]
    if g:
        lines.append(f"gang: {g['path']} PodGroup {g['name']}, minMember {g['min_member']}: {g['scheduler_said']}")
    if q:
        state = (q.get("status") or {}).get("state") or "no state"
        lines.append(f"queue: {q['name']} ({state if q['found'] else 'missing'})")
    k = job.get("kueue")
    if k:
        wl = k["workload"] or {}
        state = "admitted" if wl.get("admitted") else f"not admitted ({wl.get('said') or 'no Workload'})"
        to = f"to ClusterQueue {k['cluster_queue']}" if k["local_queue_found"] else "missing"
        lines.append(f"kueue: LocalQueue {k['local_queue']} ({to}), Workload {wl.get('name') or '(none)'}: {state}")
    for quota in job["quotas"]:
        used = ", ".join(f"{k} {quota['used'].get(k, 0)}/{v}" for k, v in sorted(quota["hard"].items()))
        lines.append(f"quota {quota['name']}: {used}")
    for r in job["pods"]:
        where = f"on {r['node']}" if r["node"] else f"unbound ({r['scheduler_said'] or 'no scheduler looked yet'})"
        lines.append(f"pod {r['name']}: {r['phase']}, {where}, schedulerName {r['scheduler_name']}")
    if flag:
        lines.append(f"operator {flag['deployment']}: --{flag['flag']}={flag['value'] or '(unset)'}")
    lines += [f"event {e}" for e in job["events"]]
    lines += [f"problem: {p['object']}: {p['message']}. Fix: {p['fix']}" for p in job["problems"]]
    return lines


def _workload(client, job: dict, facts: dict, ops: list[dict], problems: list[dict]) -> dict:
    """A Kueue Workload (``kueue`` fact's workloads): the explanation of its job, as the why's first words say; a
    Workload Kueue does not hold, or one whose job is of a kind the explanation does not know, is said so."""
    ns, name = job["namespace"], job["name"]
    wl = next(
        (w for w in ((facts.get("kueue") or {}).get("workloads") or []) if (w["namespace"], w["name"]) == (ns, name)),
        None,
    )
    kind, _sep, owner = ((wl or {}).get("owner") or "").partition("/")
    if wl is None or kind not in POD_LABEL:
        why = (
            f"Workload {ns}/{name} is not one of Kueue's (kueue.workloads): check its namespace and name; for "
            "kube-scheduler's own gang, explain its PodGroup (kind PodGroup) or its Job"
            if wl is None
            else f"Kueue Workload {ns}/{name} is for {wl['owner'] or 'no owner'}, a kind this explanation does not "
            "follow: explain that object itself"
        )
        out = {
            "kind": "Workload",
            "namespace": ns,
            "name": name,
            "found": wl is not None,
            "gang": None,
            "queue": None,
            "kueue": None,
            "quotas": [],
            "pods": [],
            "events": [],
            "operator_flag": None,
            "problems": [],
            "why": why,
        }
        out["summary"] = summary(out)
        return out
    out = explain(client, {"kind": kind, "namespace": ns, "name": owner}, facts, ops, problems)
    out["why"] = f"Kueue Workload {ns}/{name} admits {kind} {ns}/{owner}: {out['why']}"
    out["summary"] = summary(out)
    return out
