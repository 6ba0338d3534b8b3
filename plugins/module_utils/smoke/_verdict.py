# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the all-or-nothing verdict of a gang, fed pod watch events.

States: the gang is *held pending* only on the scheduler's own evidence: no member bound, and for the
skew window after the scheduler marked every member unschedulable once all were there (its decision:
nothing to wait for beyond the window in which it would bind the others); for a moment only where the scheduler's
word speaks of the gang itself (the PodGroup's condition, or a member message the path reads as its gang
scheduler's), as no scheduler that places pods one by one writes it. A gang that merely stays
unbound (no member bound for the settle time, no such marks) is *unproven*: a frozen scheduler, or
one that does not serve the members' schedulerName, looks exactly like that, so at the deadline it is
*inconclusive*, never held pending. *held running* once every member runs;
*partial* as soon as some members are bound while another stays unbound longer than the skew window
(a gang scheduler binds all members within moments of each other). Events may come out of order or
again after a re-list: per pod, an event older (by resourceVersion) than the last one seen is
ignored, and "ever bound" is remembered across deletions and re-lists. Not a public API."""

from __future__ import annotations

from dataclasses import dataclass, field

GANG_HELD_RUNNING = "gang_held_running"
GANG_HELD_PENDING = "gang_held_pending"
PARTIAL = "partial"
TIMEOUT = "timeout"
ERROR = "error"
# no member bound and no rejection by the scheduler: nothing proves the gang was held by a live scheduler
INCONCLUSIVE = "inconclusive"
# sent through Kueue (cluster_queue): Kueue holds the whole job for quota, suspended, not one pod made
KUEUE_HELD_QUOTA = "kueue_held_quota"
VERDICTS = (GANG_HELD_RUNNING, GANG_HELD_PENDING, PARTIAL, TIMEOUT, ERROR, INCONCLUSIVE, KUEUE_HELD_QUOTA)
# the verdict each expect value asks for
EXPECTED = {"running": GANG_HELD_RUNNING, "pending": GANG_HELD_PENDING, "queued": KUEUE_HELD_QUOTA}


def _rv(obj: dict) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


@dataclass
class PodState:
    name: str
    rv: int = 0
    node: str | None = None
    phase: str = "Pending"
    bound_at: float | None = None
    running_at: float | None = None
    unschedulable: str | None = None
    marks: list[float] = field(default_factory=list)
    deleted: bool = False


@dataclass
class Gang:
    size: int
    skew_seconds: float = 5.0
    pods: dict[str, PodState] = field(default_factory=dict)
    timeline: list[dict] = field(default_factory=list)
    started: float | None = None
    all_present_at: float | None = None
    partial_at: float | None = None
    held_pending_by: str | None = None
    # the scheduler's Unschedulable condition on the gang's PodGroup (Volcano writes it; an operator that
    # holds the pods back until the PodGroup is admitted leaves no pods to mark)
    group_rejected_at: float | None = None
    group_message: str | None = None
    # a path whose scheduler's own decision on the PodGroup is the evidence both ways (GangPath.decision: the native
    # gang's PodGroupInitiallyScheduled, as a kube-scheduler without the gang plugin binds such pods one by one and
    # marks nothing): the path's reading of that decision, GangPath.scheduled; None for every other path
    decide: object = None
    group_scheduled_at: float | None = None
    # the path's reading of a member's PodScheduled message (GangPath.gang_word): True where the scheduler speaks of
    # the gang itself (Volcano's gang plugin, Coscheduling's rejection of the PodGroup); with such a word, or the
    # PodGroup's own condition, the rejection is the gang scheduler's decision and needs only ``confirm_seconds``
    gang_word: object = None
    confirm_seconds: float = 1.0

    # ---- feeding -----------------------------------------------------------------------------
    def observe(self, kind: str, pod: dict, t: float) -> None:
        if self.started is None:
            self.started = t
        meta = pod.get("metadata") or {}
        name = meta.get("name", "")
        st = self.pods.get(name)
        rv = _rv(pod)
        if st is not None and rv and rv < st.rv:
            return  # stale (out of order, or an old object replayed by a re-list)
        if st is None:
            st = self.pods[name] = PodState(name)
        st.rv = max(st.rv, rv)
        if kind == "DELETED":
            if not st.deleted:
                st.deleted = True
                self._record(t, st, "Deleted")
            return
        st.deleted = False
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        node = spec.get("nodeName")
        phase = status.get("phase") or "Pending"
        unsched = None
        for c in status.get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("status") == "False":
                unsched = c.get("message") or c.get("reason") or "Unschedulable"
        before = (st.node, st.phase, st.unschedulable)
        if node and st.bound_at is None:
            st.bound_at = t
        if phase == "Running" and st.running_at is None:
            st.running_at = t
        if unsched and unsched != st.unschedulable:
            st.marks.append(t)  # the scheduler (re)wrote its verdict on this pod
        st.node, st.phase, st.unschedulable = node, phase, unsched
        if before != (st.node, st.phase, st.unschedulable):
            self._record(t, st, phase if node or phase != "Pending" else ("Unschedulable" if unsched else "Pending"))
        if self.all_present_at is None and len(self.live()) >= self.size:
            self.all_present_at = t
        self.check_partial(t)

    def observe_group(self, pg: dict | None, t: float) -> None:
        """The gang's PodGroup as read at t: its Unschedulable condition while the scheduler keeps it from
        being admitted (phase Pending); admitted (Inqueue, Running), its pods are the evidence again."""
        if self.decide is not None:
            decided, message = self.decide(pg)
            if decided == "True" and self.group_scheduled_at is None:
                self.group_scheduled_at = t
            elif decided == "False" and self.group_rejected_at is None:
                self.group_rejected_at, self.group_message = t, message or "Unschedulable"
            return
        status = (pg or {}).get("status") or {}
        if status.get("phase") != "Pending":
            self.group_rejected_at = self.group_message = None
            return
        for c in status.get("conditions") or []:
            if c.get("type") == "Unschedulable" and c.get("status") == "True" and self.group_rejected_at is None:
                self.group_rejected_at = t
                self.group_message = c.get("message") or c.get("reason") or "Unschedulable"

    def observe_group_refusal(self, message: str | None, t: float) -> None:
        """The scheduler's refusal of the gang's PodGroup as recorded elsewhere than on it (Volcano v1.15's event on a
        PodGroup with no pod yet, GangPath.group_refusal), read at t while the PodGroup is Pending."""
        if message and self.group_rejected_at is None:
            self.group_rejected_at, self.group_message = t, message

    def _record(self, t: float, st: PodState, state: str) -> None:
        self.timeline.append({"t": round(t - (self.started or t), 3), "pod": st.name, "state": state, "node": st.node})

    # ---- queries -----------------------------------------------------------------------------
    def live(self) -> list[PodState]:
        return [p for p in self.pods.values() if not p.deleted]

    def bound(self) -> list[str]:
        return sorted(p.name for p in self.live() if p.node)

    def running(self) -> list[str]:
        return sorted(p.name for p in self.live() if p.phase == "Running")

    def unbound(self) -> list[str]:
        return sorted(p.name for p in self.live() if not p.node)

    def ever_bound(self) -> list[str]:
        return sorted(p.name for p in self.pods.values() if p.bound_at is not None)

    def check_partial(self, t: float) -> bool:
        """Partial: some members bound and another unbound (or missing) longer than the skew window."""
        if self.partial_at is not None:
            return True
        bound_times = [p.bound_at for p in self.live() if p.node and p.bound_at is not None]
        if not bound_times:
            return False
        missing = self.size - len(self.bound())
        if missing > 0 and t - min(bound_times) > self.skew_seconds:
            self.partial_at = t
            return True
        return False

    def rejected_since(self) -> float | None:
        """When the scheduler had marked every member unschedulable, each after all members were there
        (an earlier mark, such as "not enough siblings yet", does not count; later ones, as a scheduler
        re-tries each cycle, do not move it); None while it has not."""
        live = self.live()
        if self.all_present_at is None:
            return None
        group = None
        if self.group_rejected_at is not None and not any(p.node for p in live):
            group = max(self.group_rejected_at, self.all_present_at)
        if len(live) < self.size or (self.decide is not None):
            return group  # the native gang: the PodGroup's condition, not a mark any scheduler writes
        firsts = []
        for p in live:
            if p.node or not p.unschedulable:
                return group
            after = [m for m in p.marks if m >= self.all_present_at]
            if after:
                firsts.append(after[0])
        # every member stands marked unschedulable, and the scheduler rejected at least one of them
        # after the whole gang was there: it saw the complete gang and refused it. A member marked only
        # earlier keeps its mark without a new event when the scheduler re-rejects it with the same
        # message (scheduler-plugins' Coscheduling does; its queue may also hold it back for minutes)
        if not firsts:
            return group
        return max(firsts) if group is None else min(group, max(firsts))

    def held_running(self) -> bool:
        """Every member runs, and for the native gang kube-scheduler marked its PodGroup scheduled."""
        return len(self.running()) >= self.size and (self.decide is None or self.group_scheduled_at is not None)

    def verdict(self, t: float, settle_seconds: float, expect: str) -> str | None:
        """The verdict at time t, or None while it cannot be told yet."""
        if self.check_partial(t):
            return PARTIAL
        if self.held_running():
            return GANG_HELD_RUNNING
        if expect == "pending" and not self.ever_bound() and self.all_present_at is not None:
            rejected = self.rejected_since()
            if rejected is not None and t - rejected >= self.window():
                self.held_pending_by = "rejected"
                return GANG_HELD_PENDING
        return None

    def gang_said(self) -> bool:
        """Whether the scheduler's rejection speaks of the gang itself: its PodGroup's condition (or the path's
        decision), or a member's message the path reads as its gang scheduler's word on the gang."""
        if self.group_rejected_at is not None:
            return True
        word = self.gang_word
        return word is not None and any(p.unschedulable and word(p.unschedulable) for p in self.live() if not p.node)

    def window(self) -> float:
        """How long a rejection of every member must stand before the gang counts as held pending: a moment
        (``confirm_seconds``) for the gang scheduler's word on the gang, the skew window for marks alone."""
        return min(self.confirm_seconds, self.skew_seconds) if self.gang_said() else self.skew_seconds

    def decided_at(self) -> float | None:
        """When the scheduler decided: the last member bound (every member bound), or its rejection of the whole gang
        (``rejected_since``); None before."""
        bound = [p.bound_at for p in self.live() if p.node and p.bound_at is not None]
        if bound and len(bound) >= self.size:
            return max(bound)
        if self.all_present_at is not None and not self.ever_bound():
            return self.rejected_since()
        return None

    def wake(self, t: float, expect: str) -> float | None:
        """Seconds from t until the verdict may change without another event (a rejection's window ending), or None
        when only an event can change it."""
        if expect != "pending" or self.ever_bound() or self.all_present_at is None:
            return None
        rejected = self.rejected_since()
        return None if rejected is None else max(0.0, rejected + self.window() - t)

    def unproven(self, t: float, settle_seconds: float) -> bool:
        """No member ever bound, every member there for the settle time, and no rejection of the whole
        gang by the scheduler: the gang is unbound, but nothing says a scheduler decided so."""
        return (
            not self.ever_bound()
            and self.all_present_at is not None
            and t - self.all_present_at >= settle_seconds
            and self.rejected_since() is None
        )

    def not_rejected(self) -> list[str]:
        """Unbound members the scheduler has not marked unschedulable since the whole gang was there."""
        if self.group_rejected_at is not None:
            return []
        live = self.live()
        seen_whole = any(m >= self.all_present_at for p in live for m in p.marks if self.all_present_at is not None)
        out = []
        for p in live:
            after = [m for m in p.marks if self.all_present_at is not None and m >= self.all_present_at]
            if not p.node and not (p.unschedulable and (after or seen_whole)):
                out.append(p.name)
        return sorted(out)

    def final(self, t: float, settle_seconds: float) -> str:
        """At the deadline: what was seen, when no earlier verdict was reached. Held pending needs the
        scheduler's rejection; an unbound gang without it is inconclusive."""
        if self.check_partial(t):
            return PARTIAL
        if self.held_running():
            return GANG_HELD_RUNNING
        if len(self.running()) >= self.size:
            return INCONCLUSIVE  # the native gang ran, but kube-scheduler never said it scheduled it as one
        if not self.ever_bound() and self.all_present_at is not None and self.rejected_since() is not None:
            self.held_pending_by = "rejected"
            return GANG_HELD_PENDING
        if self.unproven(t, settle_seconds):
            return INCONCLUSIVE
        return TIMEOUT

    def summary(self) -> dict:
        return {
            "pods": len(self.live()),
            "bound": self.bound(),
            "running": self.running(),
            "unbound": self.unbound(),
            "ever_bound": self.ever_bound(),
            "unschedulable": {p.name: p.unschedulable for p in self.live() if p.unschedulable},
            "held_pending_by": self.held_pending_by,
            "podgroup_unschedulable": self.group_message,
            **({"podgroup_scheduled": self.group_scheduled_at is not None} if (self.decide is not None) else {}),
            "not_rejected": self.not_rejected() if self.all_present_at is not None and not self.ever_bound() else [],
            "decided_seconds": _rounded(self.decided_at()),
        }


def _rounded(t: float | None) -> float | None:
    return None if t is None else round(t, 2)
