# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: gang_info's reads of what holds a gang back — each gang path's lists (its PodGroups,
Volcano's queues) read once cluster-wide and handed to the path's checks, the owners of PodGroups left without a pod
(a stale gang object), the FailedCreate events of the jobs (a quota or an admission webhook that let only part of a
gang be created), and the gangs that can never fit. Part of gang_info's runner (``_gang_info``), imported by it
only. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api, _capacity, _operators, _workloads
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import ApiError, Forbidden
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service, _together
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry

OWNER_READS = 20  # the owners of stale-looking PodGroups read in one run, at most
EVENT_LISTS = 50  # the (kind, namespace) pairs whose objects are listed to tell the FailedCreate events still true
EVENT_EXAMPLES = 3
# The reason each controller that creates a gang's members gives the event it records when a creation is refused, as
# their sources write it: kube-controller-manager's Job (and ReplicaSet) controller FailedCreate, training-operator
# (v1.8) FailedCreatePod, mpi-operator (v0.8) MPIJobFailed (also its reason for a failed job: only the messages that
# say a pod was not created count), JobSet JobCreationFailed (its child Jobs), Trainer TrainJobResourcesCreationFailed
# (a TrainJob's JobSet or PodGroup). reason -> what the message must hold (None: any).
CREATE_FAILED = {
    "FailedCreate": None,
    "FailedCreatePod": None,
    "MPIJobFailed": "created failed",
    "JobCreationFailed": None,
    "TrainJobResourcesCreationFailed": None,
}
# the lists of those events, one a reason (a field selector takes one value): (path, what, query)
EVENTS = tuple(
    (_api.path("Event"), f"{reason} events", {"fieldSelector": f"reason={reason}"}) for reason in CREATE_FAILED
)


def path_lists(crds: dict | None):
    """(path's name, list's name, path, what) of each list a gang path's checks read, given the PodGroup CRDs found."""
    for p in _registry.PATHS.values():
        for name, (kind, api_version) in p.lists(crds or {}).items():
            yield p.name, name, _api.path(kind, api_version_=api_version), f"{kind}s ({p.title}, all namespaces)"


def path_facts(client, schedulers: list[dict], kube_version: str | None, crds: dict | None, extra: dict) -> dict:
    """What every path's checks read, each read once: the CRDs they ask for, and per path its lists."""
    names = sorted({n for p in _registry.PATHS.values() for n in p.crds_to_read(schedulers)})
    facts = {
        "kube_version": kube_version,
        "crd_state": {n: _service.crd_established(_service.crd(client, n)) for n in names},
        **extra,
    }
    lists: dict[str, dict] = {}
    for path_name, name, path, what in path_lists(crds):
        lists.setdefault(path_name, {})[name] = client.list_or_empty(path, what=what)
    facts["lists"] = lists
    return facts


def path_problems(client, schedulers: list[dict], ops: list[dict], facts: dict) -> list[dict]:
    """Each gang path's checks (GangPath.cluster_problems) on its own lists; then, of its PodGroups that wait, a gang
    that can never fit from what it declares (its minResources, its job's members: before any pod exists); the owners
    of those that wait (an owner read each, at most OWNER_READS): gone (a stale PodGroup), or a job whose operator set
    a minimum the job cannot meet (_operators.minimum_problem); and the PodGroups with no owner at all whose workload
    is gone (``ownerless``). The gangs that can never fit come first: no other cause matters while they hold; but a
    stale PodGroup is named stale only (whether it would fit matters to no job)."""
    out, unfit, reads, gone = [], [], 0, set()
    for p in _registry.PATHS.values():
        mine = {**facts, "lists": (facts.get("lists") or {}).get(p.name, {})}
        out += p.cluster_problems(schedulers, ops, mine)
        if "now" not in facts:
            continue
        unfit += declared_unfit(p, mine)
        stale = {id(pg) for pg, _o in p.stale_candidates(mine)}
        for pg, owner in p.owned_waiting(mine):
            if owner.get("kind") not in _api.KINDS or reads >= OWNER_READS:
                continue
            reads += 1
            md = pg.get("metadata") or {}
            what = f"{owner['kind']} {md.get('namespace')}/{owner.get('name')}"
            try:
                found = client.get_or_none(_api.path(owner["kind"], md.get("namespace"), owner.get("name")), what)
            except ApiError:
                continue  # its CRD gone, or no right to read it: not evidence that it is gone
            if found is None or (found.get("metadata") or {}).get("uid") not in (None, owner.get("uid")):
                if id(pg) in stale:
                    out.append(p.stale_problem(pg, owner))
                    gone.add(out[-1]["object"])
                continue
            if id(pg) in stale and (pg.get("status") or {}).get("phase") in p.admitted_phases and not _over(found):
                out.append(p.unstarted_problem(pg, owner, ops))
                continue
            member = _member_unfit(p, pg, found, mine)
            if member:
                unfit.append(member)
                continue
            why = _operators.minimum_problem(found, (pg.get("spec") or {}).get("minMember"))
            if why:
                out.append({"object": what, "message": why[0], "fix": why[1]})
        budget = max(0, OWNER_READS - reads)
        found_stale, used = ownerless(client, p, mine, budget)
        reads += used
        out += found_stale
        gone.update(f["object"] for f in found_stale)
    return [u for u in unfit if u["object"] not in gone] + out


# the workloads whose name a PodGroup with no owner may carry: the operators and Trainer name a job's PodGroup after it
WORKLOAD_KINDS = ("PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob", "TrainJob", "JobSet", "Job")


def ownerless(client, p, facts: dict, budget: int) -> tuple[list[dict], int]:
    """The path's PodGroups with no owner (GangPath.ownerless_candidates) for which no workload of their name
    (``WORKLOAD_KINDS``) exists in their namespace: stale, with or without pods left behind. Each candidate costs one
    read of each kind, asked together; ``budget`` candidates at most. (problems, candidates read)."""
    out, used = [], 0
    for pg, orphans in p.ownerless_candidates(facts)[:budget]:
        used += 1
        md = pg.get("metadata") or {}
        ns, name = md.get("namespace"), md.get("name")

        def ask(kind, ns=ns, name=name):
            try:
                return client.get_or_none(_api.path(kind, ns, name), f"{kind} {ns}/{name}")
            except ApiError:
                return False  # no right to read it, or its API broken: not evidence that it is gone

        found = _together.each(client, ask, WORKLOAD_KINDS)
        if all(f is None for f in found):
            out.append(p.ownerless_problem(pg, orphans, WORKLOAD_KINDS))
    return out, used


def _schedulable(facts: dict) -> tuple[float, float]:
    """(the most GPUs one schedulable node has, all schedulable nodes' together), from gang_info's per_node."""
    nodes = [n for n in facts.get("per_node") or [] if n.get("schedulable", True)]
    return max((n["allocatable"] for n in nodes), default=0.0), sum(n["allocatable"] for n in nodes)


def declared_unfit(p, facts: dict) -> list[dict]:
    """The path's waiting PodGroups with no live member whose minResources ask for more GPUs than all schedulable
    nodes have together: the gang can never start, and as its scheduler never lets it in, its operator creates no pod
    (nothing Pending that a cluster autoscaler would add nodes for). Checked whether or not pods exist: a gang with
    pods is counted from them (``unfit_problems``)."""
    if "per_node" not in facts:
        return []
    _most, total = _schedulable(facts)
    gangs, out = facts.get("gangs", ()), []
    for pg in (facts.get("lists") or {}).get("podgroups") or []:
        md, spec = pg.get("metadata") or {}, pg.get("spec") or {}
        key = f"{md.get('namespace')}/{md.get('name')}"
        if key in gangs or (pg.get("status") or {}).get("phase") not in p.waiting_phases or md.get("deletionTimestamp"):
            continue
        want = (spec.get("minResources") or {}).get(_capacity.GPU)
        try:
            need = _capacity.quantity(want) if want is not None else 0.0
        except ValueError:
            continue
        if need > total:
            out.append(
                _unfit_problem(
                    p,
                    pg,
                    f"{spec.get('minMember')} member(s) asking for {_capacity.num(need)} GPU(s) together "
                    f"(its minResources), and all schedulable nodes have {_capacity.num(total)}",
                    "make the gang smaller (replicas, or its minimum) or add GPU nodes",
                )
            )
    return out


def _member_unfit(p, pg: dict, job: dict, facts: dict) -> dict | None:
    """A waiting PodGroup with no live member whose job (read) declares a member asking for more GPUs than any
    schedulable node has."""
    md = pg.get("metadata") or {}
    if "per_node" not in facts or f"{md.get('namespace')}/{md.get('name')}" in facts.get("gangs", ()):
        return None
    most, _total = _schedulable(facts)
    try:
        members = _workloads.declared_members(job)
    except ValueError:
        return None
    big = [(rtype, asks) for rtype, n, asks in members if n and asks > most]
    if not big:
        return None
    rtype, asks = big[0]
    return _unfit_problem(
        p,
        pg,
        f"its {job.get('kind')}'s {rtype} members ask for {_capacity.num(asks)} GPU(s) each, and no schedulable node "
        f"has more than {_capacity.num(most)}",
        f"ask for at most {_capacity.num(most)} GPU(s) a member (more members, fewer GPUs each), or add a node that "
        "has more",
    )


def _unfit_problem(p, pg: dict, numbers: str, fix: str) -> dict:
    md = pg.get("metadata") or {}
    return {
        "object": f"PodGroup {md.get('namespace')}/{md.get('name')}",
        "message": f"the gang of {p.title} PodGroup {md.get('namespace')}/{md.get('name')} declares {numbers}: it can "
        "never start. No member pod exists yet: the operator creates them once the gang scheduler lets the gang in, "
        "which it never will, so nothing is Pending for a cluster autoscaler to add nodes for",
        "fix": fix + " (a cluster autoscaler does not see a gang that has no pod: add the nodes yourself, or give the "
        "autoscaler a minimum)",
    }


# names an in_use entry gives at most, the count beside them
IN_USE_NAMES = 20


def untried_problems(
    untried: dict, schedulers: list[dict], facts: dict | None = None
) -> tuple[list[dict], dict[str, set[str]]]:
    """Each gang path's word on gangs whose members no scheduler looked at (GangPath.untried_problems, from
    ``_pod_facts.PodFold.untried``; with ``facts``, the paths' lists, also GangPath.missing_podgroup_problems): the
    problems, and schedulerName -> the pods ('namespace/name') they explain."""
    out, explained = [], {}
    for p in _registry.PATHS.values():
        found = p.untried_problems(untried, schedulers)
        if facts is not None:
            mine = {**facts, "lists": (facts.get("lists") or {}).get(p.name, {})}
            found = [*p.missing_podgroup_problems(untried, schedulers, mine), *found]
        for problem, key in found:
            out.append(problem)
            ns, g = key.split("/", 1)[0], untried[key]
            explained.setdefault(g["scheduler"], set()).update(f"{ns}/{n}" for n in g["untried"])
    return out, explained


def in_use_entry(objects: list[str]) -> dict:
    """An entry of gang_info's in_use: how many objects, and the first IN_USE_NAMES of them."""
    return {"count": len(objects), "objects": objects[:IN_USE_NAMES]}


def in_use(schedulers: list[dict], facts: dict) -> dict[str, dict]:
    """Each gang path's users' objects (GangPath.in_use) as ``in_use_entry``, for the paths that have any."""
    out = {}
    for p in _registry.PATHS.values():
        objects = p.in_use(schedulers, {**facts, "lists": (facts.get("lists") or {}).get(p.name, {})})
        if objects:
            out[p.name] = in_use_entry(objects)
    return out


def _over(job: dict) -> bool:
    """Whether a job's conditions say it finished (Succeeded, Failed, Complete)."""
    conds = (job.get("status") or {}).get("conditions") or []
    done = ("Succeeded", "Failed", "Complete", "Completed")
    return any(c.get("type") in done and c.get("status") == "True" for c in conds)


def minimums(facts: dict) -> dict[str, int]:
    """'namespace/name' -> minMember of every PodGroup the paths listed."""
    out = {}
    for lists in (facts.get("lists") or {}).values():
        for pg in lists.get("podgroups") or []:
            md, spec = pg.get("metadata") or {}, pg.get("spec") or {}
            if isinstance(spec.get("minMember"), int):
                out[f"{md.get('namespace')}/{md.get('name')}"] = spec["minMember"]
    return out


def unfit_problems(unfit: list[dict]) -> list[dict]:
    """A gang that can never fit, with the numbers, from PodFold.unfit."""
    out = []
    for u in unfit:
        if u["why"] == "member":
            message = (
                f"pod {u['pod']} asks for {u['asks']} GPU(s) and no schedulable node has more than {u['most']}: the "
                f"gang {u['gang']} can never start, and it holds its queue's share or blocks others while it waits"
            )
            fix = f"ask for at most {u['most']} GPU(s) a pod (more pods, fewer GPUs each), or add a node that has more"
        else:
            message = (
                f"the gang {u['gang']} needs {u['members']} members asking for {u['asks']} GPU(s) together, and all "
                f"schedulable nodes have {u['most']}: it can never start"
            )
            fix = "make the gang smaller (replicas, or its minimum) or add GPU nodes"
        out.append({"object": f"Pod {u['pod']}", "message": message, "fix": fix})
    return out


# what a controller creates for a job where it is not its pods: JobSet its Jobs, Trainer a TrainJob's JobSet, PodGroup
MADE = {"JobSet": "Job(s)", "TrainJob": "object(s) (its JobSet or PodGroup)"}
# what refused a creation, from the API server's message: (cause, words the message holds, fix; {ns}: the namespace)
REFUSALS = (
    (
        "quota",
        ("exceeded quota",),
        "raise the ResourceQuota of namespace {ns} to hold the whole gang, or make the job smaller",
    ),
    (
        "admission webhook",
        ("admission webhook",),
        "check the gang's PodGroup (Volcano admits its pods once it exists "
        "and its queue is Open) and the webhook's component; then the controller creates the pods again",
    ),
    (
        "LimitRange",
        ("usage per", "limit to request ratio"),
        "set the job's requests and limits within the LimitRange "
        "of namespace {ns} (kubectl -n {ns} describe limitrange), or change the LimitRange",
    ),
    (
        "PodSecurity admission",
        ("violates PodSecurity",),
        "make the job's pod template meet namespace {ns}'s "
        "pod-security.kubernetes.io/enforce level, or lower that label",
    ),
)


def _refusal(message: str) -> tuple[str, str] | None:
    """(cause, fix) of a creation refused, from its event's message; None for a failure that is no refusal (a timeout,
    a namespace being deleted): the controller tries again by itself."""
    for cause, words, fix in REFUSALS:
        if any(w in message for w in words):
            return cause, fix
    if "forbidden" in message or "denied" in message or "Invalid value" in message:
        return (
            "the API server",
            "read the refusal in the message above, change what it names, then the controller creates the pods again",
        )
    return None


def created_refused(events: list[dict]) -> dict[tuple, list]:
    """(kind, namespace, name, uid, cause, fix) -> [(count, message)] of the creation-failure events that say a
    creation was refused (``CREATE_FAILED``, ``REFUSALS``)."""
    by_object: dict[tuple, list] = {}
    for e in events:
        io, msg = e.get("involvedObject") or {}, e.get("message") or e.get("note") or ""
        must = CREATE_FAILED.get(e.get("reason"), "")
        if must is not None and must not in msg:
            continue
        why = _refusal(msg)
        if why:
            key = (io.get("kind"), io.get("namespace"), io.get("name"), io.get("uid"), *why)
            by_object.setdefault(key, []).append((e.get("count") or 1, msg))
    return by_object


def event_problems(client) -> list[dict]:
    """The jobs whose controller could not create their members (the creation-failure events of every controller
    that makes a gang's members, ``CREATE_FAILED``, read once): a namespace quota that let only part of a gang be
    created, an admission webhook (Volcano's, while the gang's PodGroup is missing or its queue is not Open), a
    LimitRange or PodSecurity admission that refused the members. The jobs' kind is listed once per namespace
    (EVENT_LISTS at most): the events of a job that is gone, was made again, or finished are not its problem any
    more."""
    events = []
    for path, what, query in EVENTS:
        try:
            events += client.list(path, what=what, **query)
        except Forbidden as e:
            return [
                {
                    "object": "Events (all namespaces)",
                    "message": f"gang_info may not list events ({e.msg}): the jobs a quota or an admission webhook let "
                    "create only part of their pods are not checked",
                    "fix": "grant list on events (docs/automation-user-rbac.yml in the collection's repository)",
                }
            ]
    by_object = created_refused(events)
    out, alive = [], _alive(client, {(key[0], key[1]) for key in by_object})
    for (kind, ns, name, uid, cause, fix), found in sorted(by_object.items(), key=lambda kv: tuple(map(str, kv[0]))):
        there = alive.get((kind, ns))
        if there is not None and (uid not in there or there[uid]):
            continue  # the job is gone, made again (the events outlive it by an hour) or over
        count = sum(c for c, _m in found)
        said = found[-1][1]
        made = MADE.get(kind, "pod(s)")
        if cause == "quota":
            message = (
                f"its controller could not create {count} {made}: a namespace ResourceQuota refused them ({said}); "
                "the gang's other members may hold GPUs while these never come"
            )
        elif cause == "admission webhook":
            message = f"an admission webhook refused {count} of its {made.replace('(s)', 's')} ({said})"
        else:
            message = (
                f"its controller could not create {count} {made}: {'a ' if cause != 'the API server' else ''}"
                f"{cause} refused them ({said}); the gang never has all its members"
            )
        problem = {"object": f"{kind} {ns}/{name}", "message": message, "fix": fix.format(ns=ns)}
        if cause == "the API server":
            problem[GENERIC] = True  # dropped where another check names the same object (its cause, not its symptom)
        out.append(problem)
    return out


# the mark of a problem that only repeats a refusal another check may explain (``specific_first``)
GENERIC = "_generic"


def specific_first(problems: list[dict]) -> list[dict]:
    """``problems`` less the generic refusals (``GENERIC``) of an object another problem names: a TrainJob whose
    PodGroup the API server refused because a PyTorchJob of its name already owns it is named once, for that clash.
    The mark is taken off the rest."""
    named = {p["object"] for p in problems if not p.get(GENERIC)}
    out = []
    for p in problems:
        if p.pop(GENERIC, False) and p["object"] in named:
            continue
        out.append(p)
    return out


def _alive(client, where: set[tuple]) -> dict[tuple, dict]:
    """(kind, namespace) -> {uid: whether it finished} of that kind's objects there, each listed once (EVENT_LISTS at
    most, the kinds the collection knows); a pair not listed (no right to, its CRD gone, past the bound) is absent: its
    events stand."""
    out = {}
    for kind, ns in sorted(where, key=lambda kn: tuple(map(str, kn)))[:EVENT_LISTS]:
        if kind not in _api.KINDS or not ns:
            continue
        try:
            items = client.list(_api.path(kind, ns), what=f"{kind}s in {ns}")
        except ApiError:
            continue
        out[(kind, ns)] = {(o.get("metadata") or {}).get("uid"): _over(o) for o in items}
    return out


def shared_problems(shared: list[dict]) -> list[dict]:
    """A gang that fits only because its members share physical GPUs (PodFold.shared)."""
    out = []
    for g in shared:
        where = ", ".join(f"{n} (each GPU shared {r} ways)" for n, r in sorted(g["nodes"].items()))
        out.append(
            {
                "object": f"Gang {g['gang']}",
                "message": f"its {g['bound']} bound member(s) share physical GPUs on {where}: the gang fits because "
                "the device plugin advertises each GPU several times (time-slicing or MPS), so its members compete "
                "for the same GPU's memory and time",
                "fix": "give a gang that needs whole GPUs nodes without sharing (a node selector, or the device "
                "plugin's sharing config off there), or size it for shared GPUs",
            }
        )
    return out
