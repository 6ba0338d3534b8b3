"""The verdict state machine fed synthetic watch-event streams, including out-of-order events and a
lost watch followed by a re-list."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _verdict as V


def pod(name, rv, node=None, phase="Pending", unschedulable=False):
    msg = unschedulable if isinstance(unschedulable, str) else None
    conds = (
        [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", **({"message": msg} if msg else {})}]
        if unschedulable
        else []
    )
    return {
        "metadata": {"name": name, "resourceVersion": str(rv)},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase, "conditions": conds},
    }


def feed(gang, events):
    for t, kind, obj in events:
        gang.observe(kind, obj, t)


def test_all_pending_for_settle_time_without_rejection_is_unproven_never_held_pending():
    g = V.Gang(size=3)
    # no scheduler marked them (none runs for them, a frozen one, one serving another name): nothing tells
    feed(g, [(0.0, "ADDED", pod(f"p{i}", 10 + i)) for i in range(3)])
    assert g.verdict(5.0, settle_seconds=10, expect="pending") is None
    assert not g.unproven(5.0, 10)
    assert g.verdict(10.0, settle_seconds=10, expect="pending") is None
    assert g.unproven(10.0, 10)
    assert g.final(60.0, 10) == V.INCONCLUSIVE
    assert g.summary()["held_pending_by"] is None
    assert g.summary()["not_rejected"] == ["p0", "p1", "p2"]


def test_every_member_rejected_after_all_exist_is_held_pending_after_the_skew_window():
    g = V.Gang(size=3, skew_seconds=5)
    feed(g, [(0.0, "ADDED", pod(f"p{i}", 10 + i)) for i in range(3)])
    feed(
        g,
        [
            (1.0 + i / 10, "MODIFIED", pod(f"p{i}", 20 + i, unschedulable="3/3 tasks in gang unschedulable"))
            for i in range(3)
        ],
    )
    assert g.verdict(6.1, settle_seconds=20, expect="pending") is None  # within the window after the last mark
    assert g.verdict(6.2, settle_seconds=20, expect="pending") == V.GANG_HELD_PENDING
    assert g.summary()["held_pending_by"] == "rejected"
    # not for a gang expected to run: it waits for its members to run, or times out
    assert g.verdict(6.2, settle_seconds=20, expect="running") is None


def test_rejections_before_the_gang_was_complete_do_not_count_alone():
    g = V.Gang(size=3, skew_seconds=5)
    early = "pod p0 cannot find enough sibling pods"
    feed(g, [(0.0, "ADDED", pod("p0", 1, unschedulable=early)), (0.5, "ADDED", pod("p1", 2, unschedulable=early))])
    feed(g, [(1.0, "ADDED", pod("p2", 3))])
    # every member exists, two stand marked from before: no rejection of the complete gang yet
    assert g.rejected_since() is None
    assert g.verdict(10.0, settle_seconds=20, expect="pending") is None


def test_a_complete_gang_rejected_with_earlier_marks_standing_counts():
    """scheduler-plugins re-rejects an early-marked member with the same message (no new event) or holds
    it in its queue: its standing mark counts once the scheduler rejected a member of the whole gang."""
    g = V.Gang(size=3, skew_seconds=5)
    early = "pod p0 cannot find enough sibling pods"
    feed(g, [(0.0, "ADDED", pod("p0", 1, unschedulable=early)), (0.5, "ADDED", pod("p1", 2, unschedulable=early))])
    feed(g, [(1.0, "ADDED", pod("p2", 3)), (2.0, "MODIFIED", pod("p2", 4, unschedulable="gang rejected"))])
    assert g.rejected_since() == 2.0 and g.not_rejected() == []
    assert g.verdict(6.9, settle_seconds=20, expect="pending") is None
    assert g.verdict(7.0, settle_seconds=20, expect="pending") == V.GANG_HELD_PENDING


def test_rejections_before_the_gang_was_complete_then_all_again():
    g = V.Gang(size=3, skew_seconds=5)
    early = "pod p0 cannot find enough sibling pods"
    feed(g, [(0.0, "ADDED", pod("p0", 1, unschedulable=early)), (0.5, "ADDED", pod("p1", 2, unschedulable=early))])
    feed(g, [(1.0, "ADDED", pod("p2", 3)), (2.0, "MODIFIED", pod("p2", 4, unschedulable="gang rejected"))])
    assert g.rejected_since() == 2.0
    # the scheduler rejects the complete gang: that counts
    feed(
        g,
        [
            (11.0, "MODIFIED", pod("p0", 5, unschedulable="gang rejected")),
            (11.5, "MODIFIED", pod("p1", 6, unschedulable="gang rejected")),
        ],
    )
    assert g.rejected_since() == 11.5
    # a scheduler that re-tries each cycle writes new messages ("can possibly be assigned to n2"): the
    # window runs from when every member had been marked, not from the latest mark
    feed(
        g,
        [
            (12.0 + i, "MODIFIED", pod("p0", 10 + i, unschedulable=f"can possibly be assigned to n{i}"))
            for i in range(5)
        ],
    )
    assert g.rejected_since() == 11.5
    g2 = V.Gang(size=3, skew_seconds=5)  # the same feed, decided at once: 5 s after the first whole-gang rejection
    feed(g2, [(0.0, "ADDED", pod("p0", 1, unschedulable=early)), (0.5, "ADDED", pod("p1", 2, unschedulable=early))])
    feed(g2, [(1.0, "ADDED", pod("p2", 3)), (2.0, "MODIFIED", pod("p2", 4, unschedulable="gang rejected"))])
    assert g2.verdict(7.0, settle_seconds=20, expect="pending") == V.GANG_HELD_PENDING


def test_a_member_never_rejected_waits_for_the_settle_time():
    g = V.Gang(size=2, skew_seconds=5)
    feed(
        g,
        [(0.0, "ADDED", pod("a", 1)), (0.0, "ADDED", pod("b", 2)), (1.0, "MODIFIED", pod("a", 3, unschedulable="no"))],
    )
    assert g.verdict(15.0, settle_seconds=20, expect="pending") is None
    assert g.verdict(20.0, settle_seconds=20, expect="pending") is None
    assert g.unproven(20.0, 20) and g.not_rejected() == ["b"]
    assert g.final(180.0, 20) == V.INCONCLUSIVE
    # the scheduler rejects the last one late: the rejection is the evidence, the settle time is not
    feed(g, [(30.0, "MODIFIED", pod("b", 4, unschedulable="no"))])
    assert not g.unproven(30.0, 20)
    assert g.verdict(35.0, settle_seconds=20, expect="pending") == V.GANG_HELD_PENDING
    assert g.summary()["held_pending_by"] == "rejected" and g.summary()["not_rejected"] == []


def test_rejected_members_and_one_bound_is_partial_not_pending():
    g = V.Gang(size=3, skew_seconds=5)
    feed(g, [(0.0, "ADDED", pod(n, i)) for i, n in enumerate("abc")])
    feed(g, [(0.5, "MODIFIED", pod("a", 10, node="n1"))])
    feed(g, [(0.6, "MODIFIED", pod(n, 11 + i, unschedulable="0/4 nodes are available")) for i, n in enumerate("bc")])
    assert g.rejected_since() is None
    assert g.verdict(5.0, settle_seconds=20, expect="pending") is None
    assert g.verdict(5.6, settle_seconds=20, expect="pending") == V.PARTIAL


def test_not_held_pending_before_all_members_exist():
    g = V.Gang(size=3)
    feed(g, [(0.0, "ADDED", pod("p0", 1)), (0.0, "ADDED", pod("p1", 2))])
    assert g.verdict(60.0, settle_seconds=10, expect="pending") is None
    assert g.final(60.0, 10) == V.TIMEOUT


def test_all_bound_together_then_running_is_held_running():
    g = V.Gang(size=2)
    feed(
        g,
        [
            (0.0, "ADDED", pod("a", 1)),
            (0.0, "ADDED", pod("b", 2)),
            (1.0, "MODIFIED", pod("a", 3, node="n1")),
            (1.2, "MODIFIED", pod("b", 4, node="n2")),
            (1.5, "MODIFIED", pod("a", 5, node="n1", phase="Running")),
            (1.6, "MODIFIED", pod("b", 6, node="n2", phase="Running")),
        ],
    )
    assert g.verdict(1.6, 10, "running") == V.GANG_HELD_RUNNING
    assert g.ever_bound() == ["a", "b"]


def test_some_bound_others_unbound_past_skew_is_partial():
    g = V.Gang(size=3, skew_seconds=5)
    feed(g, [(0.0, "ADDED", pod(n, i)) for i, n in enumerate("abc")])
    feed(g, [(1.0, "MODIFIED", pod("a", 10, node="n1")), (1.1, "MODIFIED", pod("b", 11, node="n2"))])
    assert g.verdict(5.0, 10, "running") is None  # within the skew window
    assert g.verdict(6.2, 10, "running") == V.PARTIAL
    # partial is final even if the last member binds later
    feed(g, [(7.0, "MODIFIED", pod("c", 12, node="n3", phase="Running"))])
    assert g.verdict(7.0, 10, "running") == V.PARTIAL


def test_partial_counts_a_member_that_was_never_created():
    g = V.Gang(size=3, skew_seconds=2)
    feed(g, [(0.0, "ADDED", pod("a", 1, node="n1", phase="Running")), (0.0, "ADDED", pod("b", 2, node="n2"))])
    assert g.verdict(3.0, 10, "running") == V.PARTIAL


def test_out_of_order_event_is_ignored():
    g = V.Gang(size=1)
    feed(g, [(0.0, "ADDED", pod("a", 5, node="n1", phase="Running")), (0.5, "MODIFIED", pod("a", 3))])
    assert g.running() == ["a"] and g.bound() == ["a"]


def test_relist_after_lost_watch_keeps_history_and_drops_deleted():
    g = V.Gang(size=2)
    feed(g, [(0.0, "ADDED", pod("a", 1)), (0.0, "ADDED", pod("b", 2))])
    # watch lost; meanwhile a was bound and deleted, b recreated; the re-list shows only b (newer)
    feed(g, [(3.0, "MODIFIED", pod("a", 7, node="n1"))])  # seen before the loss
    feed(g, [(4.0, "DELETED", pod("a", 9)), (4.0, "MODIFIED", pod("b", 10))])  # re-list result
    assert g.ever_bound() == ["a"]
    assert [p.name for p in g.live()] == ["b"]
    assert any(ev["state"] == "Deleted" and ev["pod"] == "a" for ev in g.timeline)


def test_timeline_records_state_changes_only():
    g = V.Gang(size=1)
    feed(
        g,
        [
            (0.0, "ADDED", pod("a", 1, unschedulable=True)),
            (0.1, "MODIFIED", pod("a", 2, unschedulable=True)),
            (1.0, "MODIFIED", pod("a", 3, node="n", phase="Running")),
        ],
    )
    assert [e["state"] for e in g.timeline] == ["Unschedulable", "Running"]


def test_expect_running_never_reports_pending_early_but_final_does():
    g = V.Gang(size=2)
    feed(g, [(0.0, "ADDED", pod("a", 1)), (0.0, "ADDED", pod("b", 2))])
    assert g.verdict(100.0, 10, "running") is None
    assert g.final(100.0, 10) == V.INCONCLUSIVE  # unbound, never rejected: nothing proven
    feed(g, [(101.0, "MODIFIED", pod(n, 3 + i, unschedulable="0/4 nodes")) for i, n in enumerate("ab")])
    assert g.verdict(200.0, 10, "running") is None
    assert g.final(200.0, 10) == V.GANG_HELD_PENDING  # rejected by the scheduler: held, not as expected


def _pg(phase, unschedulable=True):
    conds = [{"type": "Unschedulable", "status": "True", "message": "5/0 tasks in gang unschedulable"}]
    return {"status": {"phase": phase, "conditions": conds if unschedulable else []}}


def test_podgroup_kept_pending_by_the_scheduler_is_its_rejection_when_the_operator_holds_the_pods_back():
    g = V.Gang(size=5, skew_seconds=5)
    g.all_present_at = 1.0  # the PodGroup is there; the operator creates no pod until it is admitted
    g.observe_group(_pg("Pending", unschedulable=False), 1.0)
    assert g.rejected_since() is None and g.unproven(30.0, 20)
    g.observe_group(_pg("Pending"), 3.0)
    assert g.rejected_since() == 3.0 and g.not_rejected() == []
    # the PodGroup's own condition is the gang scheduler's word on the gang: a moment confirms it, not the skew window
    assert g.wake(3.5, "pending") == 0.5
    assert g.verdict(3.9, 20, "pending") is None
    assert g.verdict(4.0, 20, "pending") == V.GANG_HELD_PENDING and g.held_pending_by == "rejected"
    assert g.summary()["podgroup_unschedulable"] == "5/0 tasks in gang unschedulable"
    assert g.summary()["decided_seconds"] == 3.0


def test_admitted_podgroup_does_not_count_as_rejected():
    g = V.Gang(size=2, skew_seconds=1)
    g.all_present_at = 0.0
    g.observe_group(_pg("Pending"), 0.5)
    g.observe_group(_pg("Inqueue"), 1.0)  # admitted: its pods come, they are the evidence
    assert g.rejected_since() is None and g.verdict(10.0, 20, "pending") is None


def _unschedulable(name, message, rv=1):
    status = {"conditions": [{"type": "PodScheduled", "status": "False", "message": message}]}
    return {"metadata": {"name": name, "resourceVersion": str(rv)}, "spec": {}, "status": status}


def test_members_rejected_in_the_gang_schedulers_own_words_are_held_after_a_moment():
    g = V.Gang(size=2, skew_seconds=5, gang_word=lambda m: "pod group is not ready" in m)
    g.observe("ADDED", _unschedulable("a", "pod group is not ready, 2 Pending, 2 minAvailable"), 0.5)
    g.observe("ADDED", _unschedulable("b", "0/4 nodes are available"), 0.6)
    assert g.rejected_since() == 0.6 and g.window() == 1.0 and g.wake(1.0, "pending") == pytest.approx(0.6)
    assert g.verdict(1.5, 20, "pending") is None and g.verdict(1.6, 20, "pending") == V.GANG_HELD_PENDING
    assert g.summary()["decided_seconds"] == 0.6


def test_marks_in_no_gang_schedulers_words_wait_the_skew_window():
    g = V.Gang(size=2, skew_seconds=5, gang_word=lambda m: "pod group is not ready" in m)
    g.observe("ADDED", _unschedulable("a", "0/4 nodes are available"), 0.5)
    g.observe("ADDED", _unschedulable("b", "0/4 nodes are available"), 0.6)
    assert g.window() == 5 and g.verdict(5.5, 20, "pending") is None
    assert g.verdict(5.6, 20, "pending") == V.GANG_HELD_PENDING
    assert V.Gang(size=2).wake(1.0, "pending") is None  # nothing there yet: only an event can change it


def test_volcano_1_15s_event_on_a_podgroup_with_no_pod_is_its_rejection():
    """vc-scheduler v1.15 writes no condition on a PodGroup with no pod: its enqueue's refusal is an event on it
    (reason Unschedulable), read through the path; the newest of this PodGroup's, while it is Pending."""
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _volcano

    class Events:
        def __init__(self, events):
            self.events, self.asked = events, []

        def list_or_empty(self, path, what="", **query):
            self.asked.append((path, query))
            return self.events

    def ev(msg, uid="u1", at="2027-01-01T00:00:0{}Z"):
        return {"involvedObject": {"uid": uid}, "message": msg, "lastTimestamp": at.format(len(msg) % 10)}

    pg = {"metadata": {"name": "big", "namespace": "t", "uid": "u1"}, "status": {"phase": "Pending"}}
    client = Events([ev("resource in cluster is overused: overused nvidia.com/gpu"), ev("old one", uid="u0")])
    said = _volcano.PATH.group_refusal(client, pg)
    assert said == "resource in cluster is overused: overused nvidia.com/gpu"
    ((path, query),) = client.asked
    assert path == "/api/v1/namespaces/t/events"
    assert query == {"fieldSelector": "involvedObject.kind=PodGroup,involvedObject.name=big,reason=Unschedulable"}
    assert _volcano.PATH.group_refusal(Events([]), pg) is None
    assert _volcano.PATH.group_refusal(client, {**pg, "status": {"phase": "Inqueue"}}) is None
    g = V.Gang(size=5, skew_seconds=5)
    g.all_present_at = 1.0
    g.observe_group(_pg("Pending", unschedulable=False), 1.0)
    g.observe_group_refusal(said, 2.0)
    assert g.rejected_since() == 2.0 and g.verdict(3.0, 20, "pending") == V.GANG_HELD_PENDING
    assert g.summary()["podgroup_unschedulable"] == said
