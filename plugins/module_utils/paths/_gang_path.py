# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what a gang path is — the base every path (paths/_volcano, _scheduler_plugins,
_koordinator, _native) overrides where it differs: its names, how a pod joins its gang, what it refuses, the objects
the smoke test creates for it, what the watch reads and what evidence a verdict needs, how the diagnosis names its
scheduler, and its gang_info checks. Pure: no I/O (a read is the caller's, or through the client it passes). Not a
public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import (
    _operators,
    _pod_facts,
    _podgroups,
    _schedulers,
    _workloads,
)

KUBEFLOW_WORKLOADS = ("pytorchjob", "tfjob", "mpijob")
# the owners of waiting PodGroups gang_info reads: the kinds whose minimum an operator sets (_operators.MINIMUM_KINDS)
# and whose members' requests it can read (a member bigger than any node, before any pod exists)
minimum_kinds = tuple(dict.fromkeys((*_operators.MINIMUM_KINDS, *_workloads.REPLICA_SPECS)))


class GangPath:
    """One gang path, as the smoke test proves it and the modules set it up."""

    # the gang_scheduler value, and the path in messages
    name = ""
    title = ""
    # the role that installs it (roles/<role>)
    role = ""
    # the scheduler kind (_schedulers.SCHEDULERS) that runs its gangs; None: kube-scheduler itself
    scheduler_kind: str | None = None
    # the PodGroup kind (_podgroups.PODGROUPS) the operators, Trainer and the smoke test create; None: none
    podgroup_kind: str | None = None
    # what the smoke test takes (the others are refused before anything is read)
    workloads: tuple = ("pods", *KUBEFLOW_WORKLOADS, "trainjob")
    # the Kubeflow operators' gang flag points at it (they create its PodGroups)
    operator_flag = True
    # the scheduler name its gangs always name (Volcano's); None: found among the running schedulers;
    # ``default_scheduler_name``: the one its role installs, where nothing is found (a rendered runtime)
    fixed_scheduler_name: str | None = None
    default_scheduler_name: str | None = None
    # its gangs wait in queues (Volcano's); ``smoke_queue``: the one the smoke PodGroups and TrainJobs name
    queues = False
    smoke_queue: str | None = None
    # a held verdict needs the scheduler's own decision on the gang's PodGroup (nothing else marks the gang), read
    # from PodGroups of ``decision_api_version`` (``scheduled``)
    decision = False
    decision_api_version: str | None = None
    # its scheduler may be out of sight (a managed control plane): the liveness canary alone proves it runs
    canary_proves_scheduler = False
    # in front of it, Kueue (which admits whole jobs): the job the smoke test sends through Kueue, and the variable that
    # must be true for a job to be one gang of this path there, with why (None: nothing)
    kueue_workload = "pytorchjob"
    kueue_requires: tuple[str, str] | None = None

    # ---- the API the path needs, checked before the smoke test creates anything --------------------------------
    def crd(self) -> str | None:
        """The PodGroup CRD that must be Established (None: the path checks served versions instead)."""
        return _podgroups.crd_name(self.podgroup_kind) if self.podgroup_kind else None

    def served_group(self) -> tuple[str, tuple] | None:
        """(API group, resources) whose served versions the path checks, with ``served_problem``."""
        return None

    def served_problem(self, served: list[str]) -> str | None:
        return None

    # ---- how a pod joins a gang, the objects a smoke run creates ----------------------------------------------
    def gang_objects(self, ns: str, name: str, labels: dict, replicas: int) -> list[dict]:
        """The objects a gang of ``replicas`` pods needs before its pods (its PodGroup)."""
        if not self.podgroup_kind:
            return []
        spec: dict = {"minMember": replicas}
        spec.update(self.podgroup_spec())
        return [
            {
                "apiVersion": _podgroups.api_version(self.podgroup_kind),
                "kind": _podgroups.PODGROUPS[self.podgroup_kind]["kind"],
                "metadata": {"name": name, "namespace": ns, "labels": labels},
                "spec": spec,
            }
        ]

    def podgroup_spec(self) -> dict:
        """What the path's smoke PodGroups carry besides minMember."""
        return {}

    def pod_marks(self, name: str, replicas: int) -> tuple[dict, dict]:
        """(labels, annotations) by which a member pod joins gang ``name``."""
        if not self.podgroup_kind:
            return {}, {}
        where, key = _podgroups.member_key(self.podgroup_kind)
        return ({key: name}, {}) if where == "label" else ({}, {key: name})

    def join(self, pod_spec: dict, name: str) -> None:
        """Changes a member pod's spec in place to join gang ``name`` (the native gang's schedulingGroup)."""

    def gang_job(self, job: dict, scheduler_name: str | None = None) -> dict:
        """A plain batch/v1 Job as one gang, its pods for ``scheduler_name`` (the native gang's Job integration, or a
        label gang on its pod template); the Job as it is on a path that makes none."""
        return job

    def kubeflow_job(self, doc: dict, scheduler_name: str | None, replicas: int, name: str) -> dict:
        """A Kubeflow job as the path gangs it besides the operator's flag (a label gang's labels)."""
        return doc

    def run_kinds(self) -> tuple:
        """(kind, apiVersion) of the gang objects a smoke run may create, swept after it."""
        if not self.podgroup_kind:
            return ()
        return (("PodGroup", _podgroups.api_version(self.podgroup_kind)),)

    # the component of _rbac's rule table its scheduler runs as (a Deployment's ServiceAccount), and the rights on its
    # PodGroups without which its gangs are never followed, of those the table grants: no more than its own install
    # grants, so that gang_info names nothing on a healthy one (resource -> verbs); None: its scheduler is not one
    rights_component: str | None = None
    scheduler_rights: dict = {}

    def release_rights(self, version: str | None) -> list[tuple[str, str, str]]:
        """(verb, group, resource) its scheduler's release ``version`` (an image tag) waits for at its start besides its
        PodGroups."""
        return []

    # ---- refusals ------------------------------------------------------------------------------------------------
    def refuse_workload(self, workload: str) -> str | None:
        """The path's own reason not to take ``workload`` (None: the workload's generic reason applies)."""
        return None

    def refuse_scheduler_name(self, given: str | None) -> str | None:
        """Why the smoke test cannot run with scheduler_name ``given`` on this path."""
        return None

    def operator_refusal(self, operator: str, operator_label: str | None, given: str | None) -> str | None:
        """Why an operator's gang flag cannot point at this path (None: it can)."""
        return None

    def runtime_refusal(self) -> str | None:
        """Why a Kubeflow Trainer v2 runtime cannot carry this path's gang (None: it can)."""
        return None

    def runtime_scheduler_refusal(self, given: str | None) -> str | None:
        """Why a Trainer runtime's gang cannot name scheduler ``given`` on this path."""
        return None

    def rbac_refusal(self, component: str) -> str | None:
        """Why gang_rbac grants nothing to ``component`` on this path (None: the rule tables decide)."""
        return None

    # ---- the scheduler -------------------------------------------------------------------------------------------
    def scheduler_name(self, given: str | None, schedulers: list[dict], operator_label: str | None = None) -> str:
        """The scheduler name this path's gangs name (an operator's gang flag value), from ``given`` and the
        schedulers found; ``operator_label`` names the operator in messages. Raises GangError."""
        raise NotImplementedError

    def serves(self, s: dict, sname: str) -> bool:
        """Whether a found scheduler takes this path's gang pods whose schedulerName is ``sname``."""
        # a scheduler that forms its gangs from labels ignores the PodGroups of every other path
        return not _schedulers.label_gangs(s["kind"]) and sname in (s.get("gang_profiles") or [])

    def runs_flag(self, s: dict, sname: str) -> bool:
        """Whether a found scheduler is the one an operator's gang flag ``sname`` leads to (for a warning)."""
        return sname in (s["gang_profiles"] or [])

    def claims_flag(self, value: str, schedulers: list[dict]) -> bool:
        """Whether an operator's gang flag ``value`` names this path's scheduler although the operator's PodGroups
        are not for it (a koord-scheduler profile)."""
        return False

    def describe(self, sname: str) -> str | None:
        """The scheduler behind ``sname`` where it is out of sight (None: found among the schedulers)."""
        return None

    def not_served_hint(self, schedulers: list[dict], sname: str) -> str | None:
        """Why no ready scheduler serves ``sname``, where the path knows a cause (its scheduler's own flag)."""
        return None

    # ---- the watch and the verdict's evidence (paths with ``decision``) -------------------------------------------
    def scheduled(self, pg: dict | None) -> tuple[str | None, str]:
        """The scheduler's decision on a PodGroup: ("True", ""), ("False", its message) or (None, "")."""
        return None, ""

    def group_refusal(self, client, pg: dict) -> str | None:
        """The scheduler's refusal of a Pending PodGroup that has no pod, where it records it elsewhere than on the
        PodGroup (read through ``client``): its words, or None."""
        return None

    def gang_word(self, message: str) -> bool:
        """Whether a member's PodScheduled message is the gang scheduler speaking of the gang itself (no scheduler that
        places pods one by one writes it): the held verdict then follows the rejection at once."""
        return False

    def undecided_gang(self, who: str, timeout) -> str:
        """Why a gang whose members all run, with no decision on its PodGroup, proves nothing."""
        return f"every member runs, but {who} never decided on the gang's PodGroup in {timeout}s"

    # ---- gang_info ----------------------------------------------------------------------------------------------
    def crds_to_read(self, schedulers: list[dict]) -> tuple:
        """CRDs gang_info reads for this path's checks, given the schedulers found."""
        return ()

    def flag_problems(self, o: dict, value: str, schedulers: list[dict], crds: dict) -> list[tuple[str, str]]:
        """(message, fix) of what is wrong with an operator's gang flag ``value`` that points at this path."""
        out = []
        crd = self.crd()
        if crd and not crds.get(crd, {}).get("established"):
            out.append(
                (
                    f"--{o['gang_flag']}={value} needs CustomResourceDefinition {crd}, which is missing",
                    f"install {self.name.replace('_', '-')} with its CRDs",
                )
            )
        return out

    def cluster_problems(self, schedulers: list[dict], ops: list[dict], facts: dict) -> list[dict]:
        """Problems of this path's installation and of the gangs on it, from what gang_info read (``facts``:
        kube_version, crd_state, lists (this path's ``lists``, by name), gangs (the gangs with a live member),
        keyed (PodFold.keyed), said (PodFold.said), now, threshold)."""
        out = self.member_problems(facts.get("keyed") or {}, schedulers) + self.podgroup_problems(facts)
        return out + self.unwatched_problems(schedulers, facts)

    def unwatched_problems(self, schedulers: list[dict], facts: dict) -> list[dict]:
        """This path's PodGroups that wait for the threshold or longer with nothing written on them by a scheduler
        (phase unset or Pending, no condition) and no live member while no scheduler of this path runs: their API
        group is watched by no running scheduler (another path's runs, or none), so the gangs are never looked at,
        and with Volcano's the operator does not even create their pods."""
        if not self.podgroup_kind or "now" not in facts:
            return []
        if any(s["kind"] == self.scheduler_kind and s.get("ready") for s in schedulers):
            return []
        # with no live member: pods of the gang, Pending for a scheduler nobody serves, are named from the pods
        gangs = facts.get("gangs", ())
        unseen = [
            pg
            for pg, key, _owner in self._aged(facts)
            if (pg.get("status") or {}).get("phase") in (None, "Pending")
            and not (pg.get("status") or {}).get("conditions")
            and key not in gangs
        ]
        if not unseen:
            return []
        md = unseen[0].get("metadata") or {}
        running = ", ".join(f"{_schedulers.label(s['kind'])} {where(s)}" for s in schedulers if s.get("ready"))
        group = _podgroups.group(self.podgroup_kind)
        return [
            {
                "object": f"PodGroup {md.get('namespace')}/{md.get('name')}"
                + (f" and {len(unseen) - 1} more" if len(unseen) > 1 else ""),
                "message": f"{len(unseen)} PodGroup(s) of {group} wait with nothing written on them by a scheduler, "
                f"and no {self.title} scheduler runs to watch that API group (running: "
                f"{running or 'no gang scheduler found'}): their gangs are never looked at",
                "fix": f"install or restart {self.title} (gangsched.kubeflow.{self.role}), or point the jobs' operator "
                "at the gang scheduler that runs (gangsched.kubeflow.operator_gang) and submit them again",
            }
        ]

    def lists(self, crds: dict) -> dict[str, tuple[str, str]]:
        """What gang_info lists cluster-wide for this path's checks, by name: (kind, apiVersion); its PodGroups
        where their CRD is Established (``crds``: gang_info's podgroup_crds)."""
        if not self.podgroup_kind or not crds.get(_podgroups.crd_name(self.podgroup_kind), {}).get("established"):
            return {}
        return {"podgroups": ("PodGroup", _podgroups.api_version(self.podgroup_kind))}

    def member_key(self) -> tuple[str, str] | None:
        """Where a pod names its gang on this path (annotation or label, key); None: no such key."""
        kind = self.podgroup_kind or self.scheduler_kind
        return _podgroups.member_key(kind) if kind in _podgroups.PODGROUPS else None

    def member_problems(self, keyed: dict, schedulers: list[dict]) -> list[dict]:
        """Pods that carry this path's member key but name a scheduler that does not gang-schedule them on this
        path (a v1 job's pods on default-scheduler): scheduled one by one, without the gang."""
        key, out = self.member_key(), []
        for (mk, sname), (count, unbound, example) in keyed.items():
            if mk != key or any(self.serves(s, sname) for s in schedulers):
                continue
            out.append(
                {
                    "object": f"Pods {example}" + (f" and {count - 1} more" if count > 1 else ""),
                    "message": f"{count} pod(s) ({unbound} unbound) carry the {key[0]} {key[1]} of a {self.title} gang "
                    f"but schedulerName {sname!r}, which no {self.title} scheduler serves as a gang: they are "
                    "scheduled one by one, so a job that does not fit starts in part (some pods Running, GPUs held)",
                    "fix": f"point the job's operator at {self.title} (gangsched.kubeflow.operator_gang, or the "
                    "Trainer runtime's schedulerName with gangsched.kubeflow.trainer_runtime_gang), then submit the "
                    "job again",
                }
            )
        return out

    def in_use(self, schedulers: list[dict], facts: dict) -> list[str]:
        """The users' objects that need this path's scheduler or API (``facts`` as in ``cluster_problems``): what an
        uninstall of the path would leave unserved. Its PodGroups neither finished nor being deleted, and the live
        pods that carry its member key under a schedulerName its scheduler serves (one entry a name, with the count)."""
        out = []
        for pg in (facts.get("lists") or {}).get("podgroups") or []:
            md = pg.get("metadata") or {}
            if (pg.get("status") or {}).get("phase") not in self.finished_phases and not md.get("deletionTimestamp"):
                out.append(f"PodGroup {md.get('namespace')}/{md.get('name')}")
        key = self.member_key()
        for (mk, sname), (count, _unbound, example) in sorted((facts.get("keyed") or {}).items()):
            if mk == key and any(self.serves(s, sname) for s in schedulers):
                out.append(f"Pod {example}" + (f" and {count - 1} more pod(s)" if count > 1 else "") + f" ({sname})")
        return out

    def missing_podgroup_problems(self, untried: dict, schedulers: list[dict], facts: dict) -> list[tuple[dict, str]]:
        """(problem, the gang's 'namespace/gang') of gangs whose members carry this path's member key naming a PodGroup
        that does not exist (among the PodGroups the path listed), go to a scheduler that serves this path, and were
        never looked at: the scheduler ignores a gang with no PodGroup (vc-scheduler v1.15 skips such a job; v1.10's
        default pod admission refused its pods at creation, which the creation-failure events show). Named for what
        it is, not as a hung scheduler."""
        listed = facts.get("lists") or {}
        if not self.podgroup_kind or "podgroups" not in listed:
            return []
        have = {
            f"{(pg.get('metadata') or {}).get('namespace')}/{(pg.get('metadata') or {}).get('name')}"
            for pg in listed["podgroups"]
        }
        mine, out = self.member_key(), []
        for key, g in sorted(untried.items()):
            if g.get("member_key") != mine or key in have:
                continue
            if not any(self.serves(s, g["scheduler"]) for s in schedulers):
                continue
            ns, name = key.split("/", 1)
            pods = g["untried"]
            out.append(
                (
                    {
                        "object": f"Pods {ns}/{pods[0]}" + (f" and {len(pods) - 1} more" if len(pods) > 1 else ""),
                        "message": f"{len(pods)} pod(s) join {self.title} PodGroup {key} ({mine[0]} {mine[1]}), "
                        f"which does not exist: the {self.title} scheduler ignores a gang without its PodGroup, so "
                        "they are never scheduled (it is not hung)",
                        "fix": f"create PodGroup {name} in namespace {ns} ({_podgroups.api_version(self.podgroup_kind)}"
                        "), or delete the pods and submit their job again so that its operator makes it (check the "
                        "operator's gang flag and its PodGroup rights)",
                    },
                    key,
                )
            )
        return out

    def untried_problems(self, untried: dict, schedulers: list[dict]) -> list[tuple[dict, str]]:
        """(problem, the gang's 'namespace/gang' key in ``untried``) for gangs whose members no scheduler looked at
        (``_pod_facts.PodFold.untried``) where this path's scheduler is known to leave them so: gang_info then does not
        call that scheduler hung for those pods."""
        return []

    def podgroup_problems(self, facts: dict) -> list[dict]:
        """Problems of this path's PodGroups (listed by ``lists``): each path reads its own status."""
        return []

    def _aged(self, facts: dict):
        """(PodGroup, 'namespace/name', its controller's ownerReference or None) of this path's PodGroups that are not
        finished and were made at least the threshold ago."""
        for pg in (facts.get("lists") or {}).get("podgroups") or []:
            md = pg.get("metadata") or {}
            created = _pod_facts.timestamp(md.get("creationTimestamp"))
            if (pg.get("status") or {}).get("phase") in self.finished_phases or created is None:
                continue
            if facts["now"] - created < facts["threshold"] or md.get("deletionTimestamp"):
                continue
            owner = next((o for o in md.get("ownerReferences") or [] if o.get("controller")), None)
            yield pg, f"{md.get('namespace')}/{md.get('name')}", owner

    def stale_candidates(self, facts: dict) -> list[tuple[dict, dict]]:
        """(PodGroup, its controller's ownerReference) of this path's PodGroups that are not finished, have no live
        member and are older than the threshold: gang_info reads each owner, and ``stale_problem`` names those gone."""
        gangs = facts.get("gangs", ())
        return [(pg, owner) for pg, key, owner in self._aged(facts) if owner and key not in gangs]

    def ownerless_candidates(self, facts: dict) -> list[tuple[dict, dict | None]]:
        """(PodGroup, what ``_pod_facts.PodFold.orphaned`` says of its members, or None when it has none) of this
        path's PodGroups that have no controller ownerReference, are not finished, are older than the threshold, and
        have no live member or only members a deleted job left behind (a job deleted with --cascade=orphan takes the
        reference off them all): gang_info looks for a workload of the PodGroup's name, and ``ownerless_problem``
        names those with none. A gang of plain pods (the smoke test's, a user's) has live members of its own."""
        gangs, orphaned = facts.get("gangs", ()), facts.get("orphaned") or {}
        return [
            (pg, orphaned.get(key))
            for pg, key, owner in self._aged(facts)
            if not owner and (key not in gangs or key in orphaned)
        ]

    def owned_waiting(self, facts: dict) -> list[tuple[dict, dict]]:
        """(PodGroup, its controller's ownerReference) whose owner gang_info reads, each once: the stale candidates,
        then the PodGroups whose gang does not run yet (``waiting_phases``), older than the threshold, of a job kind
        whose operator sets the minimum (_operators.MINIMUM_KINDS)."""
        out = self.stale_candidates(facts)
        stale = {id(pg) for pg, _o in out}
        for pg in (facts.get("lists") or {}).get("podgroups") or []:
            md = pg.get("metadata") or {}
            created = _pod_facts.timestamp(md.get("creationTimestamp"))
            if id(pg) in stale or (pg.get("status") or {}).get("phase") not in self.waiting_phases:
                continue
            if created is None or facts["now"] - created < facts["threshold"]:
                continue
            owner = next((o for o in md.get("ownerReferences") or [] if o.get("controller")), None)
            if owner and owner.get("kind") in minimum_kinds:
                out.append((pg, owner))
        return out

    def unstarted_why(self, pg: dict, said: str | None) -> str:
        """gang_info's why for a job whose PodGroup exists and no pod yet, where no problem was found."""
        return (
            f"no pod yet: its gang object {pg['metadata']['name']} is at {said}; the operator creates the pods once "
            "the gang scheduler lets the gang in"
        )

    # the PodGroup phases in which the scheduler has let the gang in and the operator must create its pods
    admitted_phases: tuple = ()

    def unstarted_problem(self, pg: dict, owner: dict, ops: list[dict]) -> dict:
        """A PodGroup the scheduler let in whose job, still there and not finished, has no pod: its operator missed
        the change (or does not run)."""
        md = pg.get("metadata") or {}
        phase = (pg.get("status") or {}).get("phase")
        down = [o["deployment"] for o in ops if not o.get("ready")]
        return {
            "object": f"{owner.get('kind')} {md.get('namespace')}/{owner.get('name')}",
            "message": f"its {self.title} PodGroup is {phase}, let in by the scheduler, yet the job has no pod: its "
            "operator has not created them"
            + (f" (operator Deployment {', '.join(down)} is not ready)" if down else " (it missed the change)")
            + (", and the gang holds its queue's share meanwhile" if self.queues else ""),
            "fix": "bring the operator back (kubectl -n <namespace> rollout restart deployment/<operator>); it creates "
            "the pods when it sees the PodGroup admitted",
        }

    # the PodGroup phases of a gang none of whose members runs yet
    waiting_phases: tuple = ("Pending", "Inqueue", "PreScheduling", "Scheduling", None)

    # the PodGroup phases of a gang that is over (its PodGroup is kept until its job goes)
    finished_phases: tuple = ("Completed", "Finished", "Failed", "Succeeded")

    def stale_problem(self, pg: dict, owner: dict) -> dict:
        md = pg.get("metadata") or {}
        phase = (pg.get("status") or {}).get("phase") or "no phase"
        return {
            "object": f"PodGroup {md.get('namespace')}/{md.get('name')}",
            "message": f"the {self.title} PodGroup is {phase} with no pod, and its {owner.get('kind')} "
            f"{md.get('namespace')}/{owner.get('name')} is gone: a stale gang object"
            + (" that still counts against its queue" if self.queues else ""),
            "fix": f"delete it (kubectl -n {md.get('namespace')} delete "
            f"podgroups.{_podgroups.group(self.podgroup_kind)} {md.get('name')}); the operator that owned it no "
            "longer removes it",
        }

    def ownerless_problem(self, pg: dict, orphans: dict | None, kinds: tuple) -> dict:
        """A PodGroup with no owner and no workload of its name (of ``kinds``) in its namespace, with or without pods
        that its deleted job left behind (``orphans``: ``ownerless_candidates``)."""
        md = pg.get("metadata") or {}
        ns, name = md.get("namespace"), md.get("name")
        phase = (pg.get("status") or {}).get("phase") or "no phase"
        delete = f"kubectl -n {ns} delete podgroups.{_podgroups.group(self.podgroup_kind)} {name}"
        counts = " that still counts against its queue" if self.queues else ""
        if orphans:
            return {
                "object": f"PodGroup {ns}/{name}",
                "message": f"the {self.title} PodGroup ({phase}) has no owner and no job of its name is left in "
                f"namespace {ns} (looked for: {', '.join(kinds)}), yet {orphans['members']} pod(s) of the deleted "
                f"job ({orphans['job_label']}, {orphans['bound']} bound) are left behind with no controller: a stale "
                f"gang object{counts}, and pods that hold GPUs for a job that no longer exists (deleted with "
                "--cascade=orphan)",
                "fix": f"delete the pods (kubectl -n {ns} delete pods -l {orphans['job_label']}) and the PodGroup "
                f"({delete}), or submit the job again to take them over",
            }
        return {
            "object": f"PodGroup {ns}/{name}",
            "message": f"the {self.title} PodGroup is {phase} with no pod, no owner and no job of its name in "
            f"namespace {ns} (looked for: {', '.join(kinds)}): a stale gang object{counts}, left by a job deleted "
            "with --cascade=orphan (or made for pods that were never created)",
            "fix": f"delete it ({delete}); no controller removes a PodGroup that has no owner",
        }


def where(s: dict) -> str:
    return f"{s['source']} {s['namespace']}/{s['name']}"


def label(s: dict) -> str:
    return f"{_schedulers.label(s['kind'])} {where(s)}"
