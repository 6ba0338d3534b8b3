# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the scheduler-plugins gang path — Coscheduling in a second kube-scheduler or in the
default one, its scheduling.x-k8s.io PodGroups (a pod joins by the label scheduling.x-k8s.io/pod-group) made by the
Kubeflow operators and Trainer, its releases against Kubernetes' version-skew policy, and what gang_info checks of
it. Pure: no I/O. Not a public API."""

from __future__ import annotations

import re

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _podgroups, _schedulers
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _gang_path, _volcano

_semver = _schedulers.semver
SMOKE_TIMEOUT = 600  # the smoke PodGroups' scheduleTimeoutSeconds
# what the scheduler writes on a member Coscheduling let go at Permit: the rest of its gang was not placed in time
GANG_WORD = re.compile(
    r"PodGroup \S+ gets rejected|optimistic rejection in PostFilter|rejection in Unreserve|at plugin Coscheduling"
)
PERMIT_TIMEOUT = re.compile(r"rejected due to timeout after waiting (\S+) at plugin Coscheduling")
# what Coscheduling (v0.34 and later) writes on a member while a gated member leaves the gang short of minMember
GATED_MEMBERS = re.compile(r"pre-filter pod \S+ cannot proceed due to gated pods in the same PodGroup")
GATE_WORD = "scheduling gates"  # in a gated pod's own PodScheduled message (reason SchedulingGated)
MEMBER_LABEL = _podgroups.PODGROUPS["scheduler_plugins"]["member"][1]

# scheduler-plugins releases are built on one Kubernetes minor each (v0.X.y on 1.X); the newest served is built
# on 1.34, so no release fits a cluster of 1.36 or later within the version-skew policy
SCHEDULER_PLUGINS_NEWEST_MINOR = 34


def scheduler_plugins_skew(tag: str | None, kube_version: str | None) -> str | None:
    """Why a scheduler-plugins release is outside Kubernetes' version-skew policy on this cluster: a
    kube-scheduler may be at most one minor older than the API server, and never newer. None when within it
    or when either version is unknown.

    >>> scheduler_plugins_skew("v0.33.5", "v1.34.2") is None
    True
    >>> scheduler_plugins_skew("v0.33.5", "v1.37.2")[:60]
    'scheduler-plugins v0.33.5 is built on Kubernetes 1.33 and the'
    """
    v, k = _semver(tag), _semver(kube_version)
    if v is None or k is None or v[0] != 0 or k[1] - v[1] in (0, 1):
        return None
    how = "newer than" if v[1] > k[1] else f"{k[1] - v[1]} minors older than"
    return (
        f"scheduler-plugins {tag} is built on Kubernetes 1.{v[1]} and the cluster runs {kube_version}: its scheduler "
        f"is {how} the API server, outside Kubernetes' version-skew policy (a kube-scheduler at most one minor "
        "older, never newer)"
    )


def scheduler_plugins_skew_fix(kube_version: str | None) -> str:
    """What to do about a skewed scheduler-plugins: a fitting release where one exists, else another gang path."""
    k = _semver(kube_version)
    if k is not None and k[1] - 1 <= SCHEDULER_PLUGINS_NEWEST_MINOR:
        return (
            f"run a scheduler-plugins v0.{k[1]}.x or v0.{k[1] - 1}.x release (scheduler_plugins_version), or "
            "Volcano (gangsched_gang_scheduler: volcano)"
        )
    return (
        f"no scheduler-plugins release is built on Kubernetes 1.{SCHEDULER_PLUGINS_NEWEST_MINOR + 1} or later: run "
        "Volcano (gangsched_gang_scheduler: volcano) on this cluster; running scheduler-plugins anyway was accepted "
        "with scheduler_plugins_accept_skew, and this stays reported"
    )


class SchedulerPlugins(_gang_path.GangPath):
    name = "scheduler_plugins"
    title = "scheduler-plugins"
    role = "scheduler_plugins"
    scheduler_kind = "scheduler_plugins"
    podgroup_kind = "scheduler_plugins"
    rights_component = "scheduler_plugins_scheduler"
    scheduler_rights = {"podgroups": ("list", "watch")}
    default_scheduler_name = "scheduler-plugins-scheduler"

    def gang_word(self, message: str) -> bool:
        # Coscheduling rejecting the PodGroup for a member that cannot be placed, or letting its waiting members go
        return bool(GANG_WORD.search(message))

    def podgroup_spec(self) -> dict:
        return {"scheduleTimeoutSeconds": SMOKE_TIMEOUT}

    def operator_refusal(self, operator, operator_label, given):
        if operator == "tf_operator":
            return (
                "tf_operator's legacy --enable-gang-scheduling works only with kube-batch/Volcano PodGroups; "
                "use gang_scheduler=volcano, or move to training-operator for scheduler-plugins"
            )
        return None

    def runtime_scheduler_refusal(self, given):
        if given == _volcano.NAME:
            return (
                "scheduler_name='volcano' with gang_scheduler=scheduler_plugins: the pods would go to Volcano with a "
                "coscheduling PodGroup it ignores. Set gang_scheduler=volcano, or scheduler_name to the "
                "scheduler-plugins profile"
            )
        return None

    def scheduler_name(self, given, schedulers, operator_label=None) -> str:
        served = _schedulers.gang_profiles_of(schedulers, self.scheduler_kind)
        if given:
            if given == _volcano.NAME:
                raise GangError(
                    "scheduler_name='volcano' with gang_scheduler=scheduler_plugins would switch the operator to "
                    "Volcano; set gang_scheduler=volcano instead"
                )
            if not served and not any(s["kind"] == self.scheduler_kind for s in schedulers):
                raise GangError(
                    f"No scheduler-plugins scheduler serves {given!r}: none is deployed. Install scheduler-plugins "
                    "(role gangsched.kubeflow.scheduler_plugins) first"
                )
            if served and given not in served:
                raise GangError(
                    f"No scheduler-plugins scheduler serves the profile {given!r} with Coscheduling (found: "
                    f"{', '.join(served)}). Pods would stay Pending forever; set scheduler_name to one of them"
                )
            return given
        if len(served) == 1:
            return served[0]
        if not served:
            raise GangError(
                "Cannot determine the scheduler-plugins scheduler name: no scheduler-plugins kube-scheduler with a "
                "Coscheduling profile was found (Deployments in all namespaces, the kube-scheduler static pod). "
                "Install it first or set scheduler_name"
            )
        raise GangError(
            f"Cannot determine the scheduler-plugins scheduler name: several Coscheduling profiles run "
            f"({', '.join(served)}); set scheduler_name to one of them"
        )

    def flag_problems(self, o, value, schedulers, crds):
        out = super().flag_problems(o, value, schedulers, crds)
        running = {n for s in schedulers if s["ready"] for n in s["gang_profiles"]}
        if value in running:
            return out
        profiles = _schedulers.gang_profiles_of(schedulers, self.scheduler_kind)
        if value == "scheduler-plugins" and profiles:
            out.append(
                (
                    f"--{o['gang_flag']}=scheduler-plugins names no scheduler: the running Coscheduling "
                    f"profile is {', '.join(profiles)}; members would stay Pending forever",
                    "run gangsched.kubeflow.operator_gang with gang_scheduler=scheduler_plugins "
                    f"(derives {profiles[0]})",
                )
            )
        else:
            out.append(
                (
                    f"--{o['gang_flag']}={value} names a scheduler that is not running",
                    f"deploy a Coscheduling profile named {value}, or fix the flag with "
                    "gangsched.kubeflow.operator_gang",
                )
            )
        return out

    def permit_problems(self, facts: dict, schedulers: list[dict]) -> list[dict]:
        """PodGroups whose members Coscheduling let go at Permit (their PodScheduled condition says "rejected due to
        timeout after waiting"): the members it placed waited the PodGroup's scheduleTimeoutSeconds (else the
        profile's permitWaitingTimeSeconds) and the rest of the gang was not placed within it."""
        said = facts.get("said") or {}
        waits = {n: w for s in schedulers for n, w in (s.get("permit_waits") or {}).items()}
        out = []
        for pg in (facts.get("lists") or {}).get("podgroups") or []:
            md, spec = pg.get("metadata") or {}, pg.get("spec") or {}
            key = f"{md.get('namespace')}/{md.get('name')}"
            told = said.get(key) or []
            hit = next((m for m in (PERMIT_TIMEOUT.search(t) for t in told) if m), None)
            if hit is None:
                continue
            timeout = spec.get("scheduleTimeoutSeconds")
            if isinstance(timeout, int):
                whose = f"its scheduleTimeoutSeconds ({timeout})"
            else:
                profiles = ", ".join(f"{n} {w}" for n, w in sorted(waits.items())) or "60 by default"
                whose = f"the Coscheduling profile's permitWaitingTimeSeconds ({profiles}; the PodGroup sets none)"
            others = [t for t in told if not PERMIT_TIMEOUT.search(t) and "rejection in Unreserve" not in t]
            out.append(
                {
                    "object": f"PodGroup {key}",
                    "message": f"Coscheduling let its placed members go after waiting {hit.group(1)} at Permit for "
                    f"the rest of the gang ({spec.get('minMember')} members): {whose} is shorter than the time its "
                    "members take to be placed, so the gang is tried again and again and never starts"
                    + (f"; what its other unplaced members were told: {'; '.join(others)}" if others else ""),
                    "fix": "raise the PodGroup's scheduleTimeoutSeconds (the job's runPolicy.schedulingPolicy."
                    "scheduleTimeoutSeconds, or the Trainer runtime's coscheduling.scheduleTimeoutSeconds) or the "
                    "profile's permitWaitingTimeSeconds above the time the whole gang takes to be placed, and see "
                    "why its last members come late (created slowly, held by a scheduling gate, no room yet)",
                }
            )
        return out

    def gated_problems(self, facts: dict) -> list[dict]:
        """PodGroups Coscheduling holds at PreFilter because members carry scheduling gates (v0.34 and later: a gated
        member does not count towards minMember, so no member is placed until the gates are lifted); before v0.34 the
        same gang is placed in part and let go at Permit, which ``permit_problems`` names."""
        said = facts.get("said") or {}
        out = []
        for pg in (facts.get("lists") or {}).get("podgroups") or []:
            md, spec = pg.get("metadata") or {}, pg.get("spec") or {}
            ns, name = md.get("namespace"), md.get("name")
            told = said.get(f"{ns}/{name}") or []
            hit = next((m.group(0) for m in (GATED_MEMBERS.search(t) for t in told) if m), None)
            if hit is None:
                continue
            gated = [t for t in told if GATE_WORD in t]
            out.append(
                {
                    "object": f"PodGroup {ns}/{name}",
                    "message": f"Coscheduling places none of its members while members held by scheduling gates "
                    f"leave fewer than its minMember ({spec.get('minMember')}) free to schedule: its members were told "
                    f"'{hit}'" + (f", its gated members '{gated[0]}'" if gated else ""),
                    "fix": f"lift the gates (kubectl -n {ns} get pods -l {MEMBER_LABEL}={name} "
                    "-o custom-columns=POD:.metadata.name,GATES:.spec.schedulingGates[*].name names them): the "
                    "controller that set a gate lifts it when it lets the pod go (Kueue when it admits the job), "
                    "else remove spec.schedulingGates from those pods",
                }
            )
        return out

    def cluster_problems(self, schedulers, ops, facts):
        """The gang pods it does not see, the PodGroups Coscheduling let go at Permit or holds for gated members, and
        scheduler-plugins schedulers whose release is outside Kubernetes' version-skew policy on this cluster (reported
        on every run, also where the role was told to accept the skew)."""
        kube = facts.get("kube_version")
        out = super().cluster_problems(schedulers, ops, facts) + self.permit_problems(facts, schedulers)
        out += self.gated_problems(facts)
        for s in schedulers:
            why = scheduler_plugins_skew(s.get("version"), kube) if s["kind"] == self.scheduler_kind else None
            if why:
                out.append({"object": _gang_path.where(s), "message": why, "fix": scheduler_plugins_skew_fix(kube)})
        return out


PATH = SchedulerPlugins()
