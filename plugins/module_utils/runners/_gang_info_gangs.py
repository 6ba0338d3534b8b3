# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: gang_info's reads of what holds a gang back — each gang path's lists (its PodGroups,
Volcano's queues) read once cluster-wide and handed to the path's checks, the owners of PodGroups left without a pod
(a stale gang object), the FailedCreate events of the jobs (a quota or an admission webhook that let only part of a
gang be created), and the gangs that can never fit. Part of gang_info's runner (``_gang_info``), imported by it
only. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api, _operators
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import ApiError, Forbidden
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry

OWNER_READS = 20  # the owners of stale-looking PodGroups read in one run, at most
EVENT_LISTS = 50  # the (kind, namespace) pairs whose objects are listed to tell the FailedCreate events still true
EVENT_EXAMPLES = 3
# the FailedCreate events' list: (path, what, query)
EVENTS = (_api.path("Event"), "FailedCreate events", {"fieldSelector": "reason=FailedCreate"})


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
    """Each gang path's checks (GangPath.cluster_problems) on its own lists, then the owners of its PodGroups that
    wait (an owner read each, at most OWNER_READS): gone (a stale PodGroup), or a job whose operator set a minimum the
    job cannot meet (_operators.minimum_problem)."""
    out, reads = [], 0
    for p in _registry.PATHS.values():
        mine = {**facts, "lists": (facts.get("lists") or {}).get(p.name, {})}
        out += p.cluster_problems(schedulers, ops, mine)
        if "now" not in facts:
            continue
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
                continue
            if id(pg) in stale and (pg.get("status") or {}).get("phase") in p.admitted_phases and not _over(found):
                out.append(p.unstarted_problem(pg, owner, ops))
                continue
            why = _operators.minimum_problem(found, (pg.get("spec") or {}).get("minMember"))
            if why:
                out.append({"object": what, "message": why[0], "fix": why[1]})
    return out


# names an in_use entry gives at most, the count beside them
IN_USE_NAMES = 20


def untried_problems(untried: dict, schedulers: list[dict]) -> tuple[list[dict], dict[str, set[str]]]:
    """Each gang path's word on gangs whose members no scheduler looked at (GangPath.untried_problems, from
    ``_pod_facts.PodFold.untried``): the problems, and schedulerName -> the pods ('namespace/name') they explain."""
    out, explained = [], {}
    for p in _registry.PATHS.values():
        for problem, key in p.untried_problems(untried, schedulers):
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
    return any(c.get("type") in ("Succeeded", "Failed", "Complete") and c.get("status") == "True" for c in conds)


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


def event_problems(client) -> list[dict]:
    """The jobs whose controller could not create pods (FailedCreate events, read once): a namespace quota that let
    only part of a gang be created, or an admission webhook that refused the members (Volcano's, while the gang's
    PodGroup is missing or its queue is not Open). The jobs' kind is listed once per namespace (EVENT_LISTS at most):
    the events of a job that is gone, or was made again, are not its problem any more."""
    try:
        events = client.list(EVENTS[0], what=EVENTS[1], **EVENTS[2])
    except Forbidden as e:
        return [
            {
                "object": "Events (all namespaces)",
                "message": f"gang_info may not list events ({e.msg}): the jobs a quota or an admission webhook let "
                "create only part of their pods are not checked",
                "fix": "grant list on events (docs/automation-user-rbac.yml in the collection's repository)",
            }
        ]
    by_object: dict[tuple, list] = {}
    for e in events:
        io, msg = e.get("involvedObject") or {}, e.get("message") or ""
        cause = "quota" if "exceeded quota" in msg else "admission" if "admission webhook" in msg else None
        if cause:
            key = (io.get("kind"), io.get("namespace"), io.get("name"), io.get("uid"), cause)
            by_object.setdefault(key, []).append((e.get("count") or 1, msg))
    out, alive = [], _alive(client, {(kind, ns) for kind, ns, _n, _u, _c in by_object})
    for (kind, ns, name, uid, cause), found in sorted(by_object.items(), key=lambda kv: tuple(map(str, kv[0]))):
        there = alive.get((kind, ns))
        if there is not None and uid not in there:
            continue  # the job the events were about is gone, or was made again (the events outlive it by an hour)
        count = sum(c for c, _m in found)
        said = found[-1][1]
        if cause == "quota":
            message = (
                f"its controller could not create {count} pod(s): a namespace ResourceQuota refused them ({said}); "
                "the gang's other members may hold GPUs while these never come"
            )
            fix = f"raise the ResourceQuota of namespace {ns} to hold the whole gang, or make the job smaller"
        else:
            message = f"an admission webhook refused {count} of its pods ({said})"
            fix = (
                "check the gang's PodGroup (Volcano admits its pods once it exists and its queue is Open) and the "
                "webhook's component; then the controller creates the pods again"
            )
        out.append({"object": f"{kind} {ns}/{name}", "message": message, "fix": fix})
    return out


def _alive(client, where: set[tuple]) -> dict[tuple, set]:
    """(kind, namespace) -> the uids of that kind's objects there, each listed once (EVENT_LISTS at most, the kinds the
    collection knows); a pair not listed (no right to, its CRD gone, past the bound) is absent: its events stand."""
    out = {}
    for kind, ns in sorted(where, key=lambda kn: tuple(map(str, kn)))[:EVENT_LISTS]:
        if kind not in _api.KINDS or not ns:
            continue
        try:
            items = client.list(_api.path(kind, ns), what=f"{kind}s in {ns}")
        except ApiError:
            continue
        out[(kind, ns)] = {(o.get("metadata") or {}).get("uid") for o in items}
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
