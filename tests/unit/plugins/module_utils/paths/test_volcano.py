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
