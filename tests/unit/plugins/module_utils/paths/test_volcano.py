"""The Volcano path's checks of what holds a gang back, from the objects alone: a PodGroup whose queue is missing,
whose minResources exceed its queue's capability, or that Volcano left Pending with its word that the queue
cannot take it; a healthy PodGroup and queue say nothing."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _volcano

NOW = 1_800_000_000.0
OLD = "2027-01-01T00:00:00Z"  # two weeks before NOW
FACTS = {"now": NOW, "threshold": 60}


def _pg(queue=None, phase="Pending", min_resources=None, conditions=(), created=OLD):
    return {
        "metadata": {"name": "job1", "namespace": "team", "creationTimestamp": created},
        "spec": {"minMember": 4, **({"queue": queue} if queue else {}), "minResources": min_resources or {}},
        "status": {"phase": phase, "conditions": list(conditions)},
    }


def _queue(name="default", state="Open", capability=None):
    return {"metadata": {"name": name}, "spec": {"capability": capability or {}}, "status": {"state": state}}


QUEUES = {
    "default": _queue(),
    "team-a": _queue("team-a", capability={"nvidia.com/gpu": "4"}),
    "shut": _queue("shut", "Closed"),
}


@pytest.mark.parametrize(
    "pg, queues, words",
    [
        (_pg("nope"), QUEUES, ["queue 'nope', which does not exist", "create Queue nope"]),
        (
            _pg("team-a", min_resources={"nvidia.com/gpu": "8"}),
            QUEUES,
            ["nvidia.com/gpu 8 > 4", "never enqueued", "raise Queue team-a's spec.capability"],
        ),
        (
            _pg(conditions=[{"type": "Unschedulable", "status": "True", "reason": "NotInqueueable", "message": "m"}]),
            QUEUES,
            ["has not let the gang into its queue 'default'", ": m (queue:"],
        ),
    ],
    ids=["missing", "capability", "not-inqueueable"],
)
def test_a_queue_that_holds_a_gang_is_named_with_the_fix(pg, queues, words):
    p = _volcano.queue_problem(pg, queues, FACTS)
    assert p["object"] == "PodGroup team/job1"
    for w in words:
        assert w in p["message"] + p["fix"], p


@pytest.mark.parametrize(
    "pg",
    [
        _pg("team-a", min_resources={"nvidia.com/gpu": "4"}),  # within the capability
        _pg("shut"),  # a Closed queue: vc-scheduler still places its gangs (the lab shows it)
        _pg(conditions=[{"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources", "message": "x"}]),
    ],
    ids=["within-capability", "closed", "not-about-the-queue"],
)
def test_nothing_is_said_without_the_evidence(pg):
    assert _volcano.queue_problem(pg, QUEUES, FACTS) is None


def test_a_fresh_pending_podgroup_is_not_yet_held():
    fresh = _pg(conditions=[{"type": "Unschedulable", "status": "True", "reason": "NotInqueueable"}])
    assert _volcano.queue_problem(fresh, QUEUES, {"now": NOW, "threshold": 10**10}) is None


def test_only_waiting_podgroups_are_checked_and_only_where_queues_were_read():
    running = _pg("nope", phase="Running")
    facts = {**FACTS, "lists": {"podgroups": [running, _pg("nope")], "queues": list(QUEUES.values())}}
    assert [p["object"] for p in _volcano.PATH.podgroup_problems(facts)] == ["PodGroup team/job1"]
    assert _volcano.PATH.podgroup_problems({**FACTS, "lists": {"podgroups": [_pg("nope")], "queues": []}}) == []


def test_a_configuration_without_what_a_gang_needs_is_named():
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _schedulers

    full = 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
    bare = 'actions: "allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n'
    s = {"source": "Deployment", "namespace": "volcano-system", "name": "vc-scheduler"}
    assert _volcano.conf_problems({**s, "conf": _schedulers.volcano_conf(full)}) == []
    (p,) = _volcano.conf_problems({**s, "conf": _schedulers.volcano_conf(bare)})
    assert "lacks the enqueue action, the gang plugin (actions: allocate, backfill; plugins: priority)" in p["message"]
    assert _volcano.conf_problems({**s, "conf": None}) == []  # not read: nothing said
    assert _schedulers.volcano_conf(": [") is None and _schedulers.volcano_conf(None) is None


SCHED = {
    "source": "Deployment",
    "namespace": "volcano-system",
    "name": "vc-scheduler",
    "conf": {"actions": ["enqueue", "allocate", "backfill"], "plugins": ["priority", "gang"]},
}


def _lender(name="team-b", gpus="2", reclaimable=None):
    q = _queue(name)
    q["status"]["allocated"] = {"nvidia.com/gpu": gpus}
    if reclaimable is not None:
        q["spec"]["reclaimable"] = reclaimable
    return q


def _take_back(podgroups, queues, sched=SCHED):
    return _volcano.take_back_problems(sched, {**FACTS, "lists": {"podgroups": podgroups, "queues": queues}})


def test_a_waiting_gang_with_a_priority_and_no_preempt_action_is_named():
    ranked = _pg()
    ranked["spec"]["priorityClassName"] = "high"
    (p,) = _take_back([ranked, _pg()], [_queue()])
    assert p["object"] == "Deployment volcano-system/vc-scheduler"
    assert "1 waiting PodGroup(s) set a priority (such as team/job1, priorityClassName high)" in p["message"], p
    assert "add preempt" in p["fix"], p
    with_preempt = {**SCHED, "conf": {**SCHED["conf"], "actions": ["enqueue", "allocate", "preempt", "backfill"]}}
    assert _take_back([ranked], [_queue()], with_preempt) == []


def test_a_gang_waiting_while_another_queue_holds_gpus_and_no_reclaim_action_is_named():
    (p,) = _take_back([_pg("team-a")], [_queue("team-a"), _lender()])
    assert (
        "wait in queue(s) team-a while other reclaimable queues hold GPUs (team-b (nvidia.com/gpu 2))" in (p["message"])
    ), p
    assert "add reclaim" in p["fix"], p


@pytest.mark.parametrize(
    "podgroups, queues, sched",
    [
        ([_pg("team-a")], [_queue("team-a"), _lender(reclaimable=False)], SCHED),  # the lender keeps what it has
        ([_pg("team-a")], [_queue("team-a"), _lender(gpus="0")], SCHED),  # no GPU held elsewhere
        ([_pg("team-a", phase="Running")], [_queue("team-a"), _lender()], SCHED),  # nothing waits
        ([_pg("team-a", created="2099-01-01T00:00:00Z")], [_queue("team-a"), _lender()], SCHED),  # just made
        ([_pg("team-a")], [_queue("team-a"), _lender()], {**SCHED, "conf": None}),  # configuration not read
        ([_pg("team-b")], [_lender()], SCHED),  # it waits in the queue that holds them: nothing to take back
    ],
    ids=["not-reclaimable", "no-gpus", "running", "fresh", "conf-unread", "same-queue"],
)
def test_no_take_back_problem_without_the_evidence(podgroups, queues, sched):
    assert _take_back(podgroups, queues, sched) == []
