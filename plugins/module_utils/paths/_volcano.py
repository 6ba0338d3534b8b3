# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the Volcano gang path — vc-scheduler serving the scheduler name 'volcano', its
scheduling.volcano.sh PodGroups (a pod joins by the annotation scheduling.k8s.io/group-name) in queues, made by the
Kubeflow operators and Trainer, and what gang_info checks of it. Pure: no I/O. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api, _capacity, _pod_facts, _support
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _gang_path

NAME = "volcano"  # the scheduler name Volcano serves by default, and the value the operators treat as Volcano's
FLAG_FIX = "remove --scheduler-name from the Volcano scheduler's args (it then serves volcano), or add "
QUEUE_API = "scheduling.volcano.sh/v1beta1"
DEFAULT_QUEUE = "default"  # the queue of a PodGroup that names none (Volcano's admission sets it)
# PodGroup phases of a gang that holds no resource yet (Inqueue holds its queue's share)
WAITING = ("Pending", "Inqueue", "Unknown", None)
GPU = _capacity.GPU
EXAMPLES = 3  # the queues a reclaim problem names
# the reason of vc-scheduler's event on a PodGroup its enqueue does not let in
REFUSAL_REASON = "Unschedulable"


# the queues vc-controller-manager makes itself
VOLCANO_QUEUES = ("default", "root")


class Volcano(_gang_path.GangPath):
    name = "volcano"
    title = "Volcano"
    role = "volcano"
    scheduler_kind = "volcano"
    podgroup_kind = "volcano"
    fixed_scheduler_name = NAME
    queues = True
    smoke_queue = "default"
    admitted_phases = ("Inqueue",)
    # Volcano's chart gives vc-scheduler list, watch and update on PodGroups, no get and no status (its PodGroup CRD
    # has no status subresource, and it reads from its informers)
    rights_component = "volcano_scheduler"
    scheduler_rights = {"podgroups": ("list", "watch", "update")}

    def release_rights(self, version):
        """vc-scheduler v1.15 (and its chart's ClusterRole from v1.12 on) lists and watches HyperNodes before it
        schedules anything: without the right it waits for ever, every gang with it."""
        if _release_line(version) < HYPERNODES_SINCE:
            return []
        return [(verb, "topology.volcano.sh", "hypernodes") for verb in ("list", "watch")]

    def unstarted_why(self, pg, said):
        """A Pending PodGroup is held by vc-scheduler's enqueue action, which the operators wait for before they create
        a pod: nothing is Pending for a cluster autoscaler, and what lets it in is the free room, overcommitted."""
        if (pg.get("status") or {}).get("phase") not in ("Pending", None):
            return super().unstarted_why(pg, said)
        return (
            f"held by Volcano's enqueue, no pod yet: its PodGroup {pg['metadata']['name']} is at {said}. Volcano lets "
            "the gang in once its minResources fit the room that is free (times the overcommit plugin's "
            "overcommit-factor, 1.2 unless its configuration sets one) and within its queue, and only then does the "
            "operator create its pods: until then no pod is Pending, so a cluster autoscaler adds no node for it. It "
            "starts when running jobs free room, or with more nodes added by hand"
        )

    def podgroup_spec(self) -> dict:
        return {"queue": self.smoke_queue}

    def scheduler_name(self, given, schedulers, operator_label=None) -> str:
        if given not in (None, NAME):
            who = f"{operator_label} treats" if operator_label else "the Kubeflow operators treat"
            raise GangError(
                f"scheduler_name={given!r} with gang_scheduler=volcano: {who} any value other than 'volcano' as a "
                "scheduler-plugins profile name. Leave scheduler_name unset"
            )
        return NAME

    def group_refusal(self, client, pg):
        """vc-scheduler v1.15 writes no condition on a PodGroup with no pod (its gang plugin skips a job without tasks;
        v1.10 wrote Unschedulable there too): its enqueue's refusal is an event on the PodGroup, reason Unschedulable,
        from the overcommit plugin ("resource in cluster is overused") or the queue's ("queue resource quota
        insufficient"). The newest such event of the PodGroup, None when there is none or it is not Pending."""
        md = pg.get("metadata") or {}
        if (pg.get("status") or {}).get("phase") != "Pending":
            return None
        selector = f"involvedObject.kind=PodGroup,involvedObject.name={md.get('name')},reason={REFUSAL_REASON}"
        events = client.list_or_empty(
            _api.path("Event", md.get("namespace")), what=f"Events of PodGroup {md.get('name')}", fieldSelector=selector
        )
        mine = [e for e in events if (e.get("involvedObject") or {}).get("uid") in (None, md.get("uid"))]
        mine.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
        return (mine[-1].get("message") or REFUSAL_REASON) if mine else None

    def gang_word(self, message: str) -> bool:
        # vc-scheduler's gang plugin on a member of a PodGroup it does not let start
        return "pod group is not ready" in message

    def serves(self, s: dict, sname: str) -> bool:
        return s["kind"] == self.scheduler_kind and sname in (s.get("scheduler_names") or [])

    def runs_flag(self, s: dict, sname: str) -> bool:
        return s["kind"] == self.scheduler_kind

    def runtime_scheduler_refusal(self, given):
        if given not in (None, NAME):
            return (
                f"scheduler_name={given!r} with gang_scheduler=volcano: Volcano gangs are scheduled by 'volcano'. "
                + ("Leave scheduler_name unset")
            )
        return None

    def not_served_hint(self, schedulers, sname):
        found = [s for s in schedulers if s["kind"] == self.scheduler_kind]
        if not found:
            return None
        names = "; ".join(
            f"{_gang_path.label(s)} serves {', '.join(map(repr, s['scheduler_names']))} (--scheduler-name)"
            for s in found
        )
        return (
            f"scheduler not running: no ready scheduler serves {sname!r}: {names}; the gang's pods name "
            f"{sname!r} and would never be looked at. Remove --scheduler-name (or add --scheduler-name={sname})"
        )

    def flag_problems(self, o, value, schedulers, crds):
        out = super().flag_problems(o, value, schedulers, crds)
        ready = [s for s in schedulers if s["kind"] == self.scheduler_kind and s["ready"]]
        if not ready:
            out.append((f"--{o['gang_flag']}={NAME} but no Volcano scheduler is running", "install Volcano"))
        elif not any(NAME in s["scheduler_names"] for s in ready):
            where = "; ".join(
                f"Deployment {s['namespace']}/{s['name']} serves {', '.join(s['scheduler_names'])}" for s in ready
            )
            out.append(
                (
                    f"--{o['gang_flag']}={NAME} names no scheduler: the running Volcano scheduler ({where}, from its "
                    "--scheduler-name) does not serve 'volcano'; members would stay Pending forever, unseen",
                    FLAG_FIX + "--scheduler-name=volcano",
                )
            )
        return out

    def lists(self, crds):
        out = super().lists(crds)
        if out:
            out["queues"] = ("Queue", QUEUE_API)
        return out

    def in_use(self, schedulers, facts):
        """Its PodGroups and gang pods (GangPath.in_use), and the queues users made (all but ``default`` and
        ``root``, which vc-controller-manager makes): Volcano's chart renders its CRDs as templates, so an uninstall of
        the chart deletes them all."""
        queues = [
            f"Queue {(q.get('metadata') or {}).get('name')}"
            for q in (facts.get("lists") or {}).get("queues") or []
            if (q.get("metadata") or {}).get("name") not in VOLCANO_QUEUES
        ]
        return super().in_use(schedulers, facts) + queues

    def podgroup_problems(self, facts):
        """Volcano PodGroups that wait on their queue: one that names a queue that does not exist, whose minResources
        exceed the queue's capability (never enqueued), that Volcano left Pending with its own word that the queue
        cannot take it, or whose queue is not Open where the running vc-scheduler allocates nothing to such a queue
        (from v1.15: its proportion and capacity plugins; ``facts['open_only']``). vc-scheduler v1.10 still places a
        waiting gang of a queue whose status is Closed: there the state only refuses new jobs at admission, which the
        FailedCreate events show."""
        listed = facts.get("lists") or {}
        queues = {(q.get("metadata") or {}).get("name"): q for q in listed.get("queues") or []}
        out = []
        for pg in listed.get("podgroups") or []:
            st = pg.get("status") or {}
            if st.get("phase") not in WAITING or not queues:
                continue
            problem = queue_problem(pg, queues, facts)
            if problem:
                out.append(problem)
        return out

    def cluster_problems(self, schedulers, ops, facts):
        mine = [s for s in schedulers if s["kind"] == self.scheduler_kind]
        # the running vc-scheduler's release decides whether a queue that is not Open holds its gangs
        facts = {**facts, "open_only": any(_release_line(s.get("version")) >= OPEN_ONLY_SINCE for s in mine)}
        out = super().cluster_problems(schedulers, ops, facts) + [p for s in mine for p in conf_problems(s)]
        out += [p for s in mine for p in take_back_problems(s, facts)]
        ready = [s for s in schedulers if s["kind"] == self.scheduler_kind and s["ready"]]
        if not ready or any(NAME in s["scheduler_names"] for s in ready) or any(o["gang_value"] == NAME for o in ops):
            return out
        # no operator points at it yet: the Kubeflow operators' Volcano gangs would still be unseen
        return out + [
            {
                "object": f"Deployment {s['namespace']}/{s['name']}",
                "message": f"the Volcano scheduler serves only {', '.join(s['scheduler_names'])} (--scheduler-name), "
                "not 'volcano': the pods of Kubeflow jobs gang-scheduled by Volcano (schedulerName volcano) would "
                "stay Pending, unseen, while it reports Ready",
                "fix": FLAG_FIX + "--scheduler-name=volcano",
            }
            for s in ready
        ]


# what a gang needs of vc-scheduler's configuration: enqueue lets a PodGroup in only when its minimum fits, allocate
# places its members, the gang plugin holds them all or none (without it members are placed one by one)
NEEDED_ACTIONS = ("enqueue", "allocate")
NEEDED_PLUGINS = ("gang",)


def conf_problems(s: dict) -> list[dict]:
    """A vc-scheduler whose configuration (read from its ConfigMap) lacks an action or a plugin a gang needs."""
    conf = s.get("conf")
    if not conf:
        return []
    actions = [a for a in NEEDED_ACTIONS if a not in conf["actions"]]
    plugins = [p for p in NEEDED_PLUGINS if p not in conf["plugins"]]
    if not actions and not plugins:
        return []
    lacks = ", ".join([f"the {a} action" for a in actions] + [f"the {p} plugin" for p in plugins])
    effects = []
    if "enqueue" in actions:
        effects.append("PodGroups are let in without checking that their minimum fits")
    if "allocate" in actions:
        effects.append("no pod is placed at all")
    if plugins:
        effects.append("members are placed one by one, so a job that does not fit starts in part")
    return [
        {
            "object": f"{s['source']} {s['namespace']}/{s['name']}",
            "message": f"the Volcano scheduler's configuration lacks {lacks} (actions: {', '.join(conf['actions'])}; "
            f"plugins: {', '.join(conf['plugins'])}): {'; '.join(effects)}",
            "fix": 'add them to its --scheduler-conf ConfigMap (actions: "enqueue, allocate, backfill" and the gang '
            "plugin in the first tier, as the volcano role installs it), then restart it",
        }
    ]


def _waiting(facts: dict) -> list[dict]:
    """The Volcano PodGroups that wait (``WAITING``) and were made at least the threshold ago."""
    out = []
    for pg in (facts.get("lists") or {}).get("podgroups") or []:
        created = _pod_facts.timestamp((pg.get("metadata") or {}).get("creationTimestamp"))
        if (pg.get("status") or {}).get("phase") in WAITING and created is not None:
            if facts["now"] - created >= facts["threshold"]:
                out.append(pg)
    return out


def take_back_problems(s: dict, facts: dict) -> list[dict]:
    """A vc-scheduler whose configuration lacks the action that would free room for a waiting gang: preempt, where a
    waiting PodGroup sets a priorityClassName (a higher-priority gang would evict lower ones), and reclaim, where a
    gang waits while another queue holds GPUs it may be made to give back (a reclaimable queue)."""
    conf = s.get("conf")
    if not conf or "now" not in facts:
        return []
    waiting = _waiting(facts)
    where = f"{s['source']} {s['namespace']}/{s['name']}"
    out = []
    ranked = [pg for pg in waiting if (pg.get("spec") or {}).get("priorityClassName")]
    if ranked and "preempt" not in conf["actions"]:
        md, spec = ranked[0].get("metadata") or {}, ranked[0].get("spec") or {}
        out.append(
            {
                "object": where,
                "message": f"{len(ranked)} waiting PodGroup(s) set a priority (such as {md.get('namespace')}/"
                f"{md.get('name')}, priorityClassName {spec['priorityClassName']}) and the Volcano scheduler's "
                f"configuration has no preempt action (actions: {', '.join(conf['actions'])}): a gang of higher "
                "priority never evicts lower ones and waits for them to finish",
                "fix": 'add preempt to its --scheduler-conf actions ("enqueue, allocate, preempt, backfill"), with the '
                "priority plugin in the first tier, then restart it; or drop the priority if waiting is intended",
            }
        )
    queues = (facts.get("lists") or {}).get("queues") or []
    waits_in = {(pg.get("spec") or {}).get("queue") or DEFAULT_QUEUE for pg in waiting}
    lenders = [
        q
        for q in queues
        if (q.get("metadata") or {}).get("name") not in waits_in
        and (q.get("spec") or {}).get("reclaimable", True) is not False
        and _capacity.quantity(((q.get("status") or {}).get("allocated") or {}).get(GPU) or "0") > 0
    ]
    if waiting and lenders and "reclaim" not in conf["actions"]:
        held = ", ".join(f"{q['metadata']['name']} ({GPU} {q['status']['allocated'][GPU]})" for q in lenders[:EXAMPLES])
        out.append(
            {
                "object": where,
                "message": f"{len(waiting)} PodGroup(s) wait in queue(s) {', '.join(sorted(waits_in))} while other "
                f"reclaimable queues hold GPUs ({held}), and the Volcano scheduler's configuration has no reclaim "
                f"action (actions: {', '.join(conf['actions'])}): a queue never takes its share back, its gangs wait "
                "for the other queues' jobs to finish",
                "fix": 'add reclaim to its --scheduler-conf actions ("enqueue, allocate, reclaim, backfill") with the '
                "proportion or capacity plugin, then restart it; or mark the lending queues reclaimable: false if "
                "waiting is intended",
            }
        )
    return out


# the first vc-scheduler release line whose proportion and capacity plugins allocate nothing to a queue whose
# status.state is not Open (v1.10's allocate to a Closed queue's waiting gangs); v1.11 to v1.14 were not served here to
# read, so the line is the first one read that does
OPEN_ONLY_SINCE = (1, 15)
# the first release line whose vc-scheduler waits for HyperNodes at its start
HYPERNODES_SINCE = (1, 12)


def _release_line(version: str | None) -> tuple[int, int]:
    """(major, minor) of an image tag ('v1.15.1' -> (1, 15)); (0, 0) when it is none."""
    return _support.release_line(version) or (0, 0)


def _queue_numbers(q: dict) -> str:
    spec, st = q.get("spec") or {}, q.get("status") or {}
    parts = [f"capability {spec['capability']}"] if spec.get("capability") else []
    parts += [f"{k} {st[k]}" for k in ("allocated", "inqueue", "pending", "running") if st.get(k)]
    return ", ".join(parts) or "no capability set"


def queue_problem(pg: dict, queues: dict, facts: dict) -> dict | None:
    """Why a waiting Volcano PodGroup is held by its queue, from the PodGroup and the Queue objects; None when
    nothing there says so."""
    md, spec, st = pg.get("metadata") or {}, pg.get("spec") or {}, pg.get("status") or {}
    obj = f"PodGroup {md.get('namespace')}/{md.get('name')}"
    qname = spec.get("queue") or DEFAULT_QUEUE
    q = queues.get(qname)
    if q is None:
        return {
            "object": obj,
            "message": f"its job names Volcano queue {qname!r}, which does not exist (queues: "
            f"{', '.join(sorted(queues))}): Volcano never enqueues it and its pods stay Pending",
            "fix": f"create Queue {qname}, or set the job's queue (runPolicy.schedulingPolicy.queue, or the runtime "
            f"annotation scheduling.volcano.sh/queue-name) to one that exists, such as {DEFAULT_QUEUE}",
        }
    state = (q.get("status") or {}).get("state")
    if facts.get("open_only") and state != "Open":
        return {
            "object": obj,
            "message": f"its Volcano queue {qname!r} is {state or 'without a state'}, not Open: the running "
            "vc-scheduler (v1.15 on) allocates nothing to a queue that is not Open, so the gang waits however much "
            "room there is"
            + ("" if state else " (vc-controller-manager's queue controller sets the state: check that it runs)"),
            "fix": f"open it (vcctl queue operate --action open --name {qname}, or delete a Command that closed it), "
            "or submit the job to an Open queue",
        }
    cap, want = (q.get("spec") or {}).get("capability") or {}, spec.get("minResources") or {}
    over = [r for r in sorted(want) if r in cap and _capacity.quantity(want[r]) > _capacity.quantity(cap[r])]
    if over:
        numbers = ", ".join(f"{r} {want[r]} > {cap[r]}" for r in over)
        return {
            "object": obj,
            "message": f"the gang needs more than its Volcano queue {qname!r} may ever hold ({numbers}, "
            "minResources against the queue's capability): it is never enqueued, whatever else finishes",
            "fix": f"raise Queue {qname}'s spec.capability for {', '.join(over)}, or submit the job to a queue whose "
            "capability holds it",
        }
    created = _pod_facts.timestamp(md.get("creationTimestamp"))
    if st.get("phase") != "Pending" or created is None or facts["now"] - created < facts["threshold"]:
        return None
    said = [
        c
        for c in st.get("conditions") or []
        if c.get("status") == "True"
        and (c.get("reason") == "NotInqueueable" or "queue" in (c.get("message") or "").lower())
    ]
    if not said:
        return None
    return {
        "object": obj,
        "message": f"Volcano has not let the gang into its queue {qname!r} for {int(facts['now'] - created)}s: "
        f"{said[-1].get('message') or said[-1].get('reason')} (queue: {_queue_numbers(q)})",
        "fix": f"wait for jobs of queue {qname} to finish, raise its capability, or submit the job to another queue",
    }


PATH = Volcano()
