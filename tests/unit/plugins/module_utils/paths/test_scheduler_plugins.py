"""The scheduler-plugins path's checks of what holds a gang back, from the objects alone: a PodGroup whose members
Coscheduling let go at Permit (the PodScheduled message the scheduler wrote on them, folded by PodFold.said), named
with the wait that was too short (the PodGroup's scheduleTimeoutSeconds, else the profile's permitWaitingTimeSeconds
read from the scheduler's configuration); a gang that waits for any other reason says nothing of it."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _pod_facts, _schedulers
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _scheduler_plugins

NOW = 1_800_000_000.0
OLD = "2027-01-01T00:00:00Z"
TIMEOUT = "rejected due to timeout after waiting 2s at plugin Coscheduling"
GATED = "Scheduling is blocked due to non-empty scheduling gates"
CONFIG = """
profiles:
- schedulerName: gang-a
  plugins: {multiPoint: {enabled: [{name: Coscheduling}]}}
  pluginConfig: [{name: Coscheduling, args: {permitWaitingTimeSeconds: 5}}]
- schedulerName: gang-b
  plugins: {multiPoint: {enabled: [{name: Coscheduling}]}}
- schedulerName: plain
"""
SCHEDULERS = [{"kind": "scheduler_plugins", "ready": True, "scheduler_names": ["gang-a"], "gang_profiles": ["gang-a"]}]


def _pg(timeout=None, name="job1"):
    spec = {"minMember": 3, **({"scheduleTimeoutSeconds": timeout} if timeout else {})}
    return {"metadata": {"name": name, "namespace": "team", "creationTimestamp": OLD}, "spec": spec, "status": {}}


def _pod(name, message=None, node=None):
    conds = [{"type": "PodScheduled", "status": "False", "message": message}] if message else []
    return {
        "metadata": {"name": name, "namespace": "team", "labels": {"scheduling.x-k8s.io/pod-group": "job1"}},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": "Pending", "conditions": conds},
    }


def _problems(pods, pg, schedulers=SCHEDULERS):
    said = _pod_facts.fold(pods, NOW, 60).said()
    facts = {"now": NOW, "threshold": 60, "said": said, "lists": {"podgroups": [pg]}}
    return _scheduler_plugins.PATH.permit_problems(facts, schedulers)


def test_the_permit_waits_of_each_gang_profile_are_read_with_the_default():
    assert _schedulers.permit_waits(CONFIG) == {"gang-a": 5, "gang-b": 60}
    assert _schedulers.permit_waits(None) is None and _schedulers.permit_waits(":") is None


def test_the_fold_keeps_what_the_scheduler_wrote_on_unbound_members_distinct_and_bounded():
    pods = [_pod("a", TIMEOUT), _pod("b", "rejection in Unreserve"), _pod("c", TIMEOUT), _pod("d", "x"), _pod("e", "y")]
    pods.append(_pod("f", "on a node", node="n1"))
    assert _pod_facts.fold(pods, NOW, 60).said() == {"team/job1": [TIMEOUT, "rejection in Unreserve", "x"]}


def test_a_gang_let_go_at_permit_is_named_with_its_own_timeout():
    (p,) = _problems([_pod("a", TIMEOUT), _pod("b", "rejection in Unreserve"), _pod("c", GATED)], _pg(timeout=2))
    assert p["object"] == "PodGroup team/job1"
    assert "after waiting 2s at Permit" in p["message"] and "its scheduleTimeoutSeconds (2)" in p["message"], p
    assert GATED in p["message"] and "Unreserve" not in p["message"], p
    assert "raise the PodGroup's scheduleTimeoutSeconds" in p["fix"] and "scheduling gate" in p["fix"], p


def test_without_its_own_timeout_the_profiles_permit_wait_is_named():
    sched = [{**SCHEDULERS[0], "permit_waits": {"gang-a": 5}}]
    (p,) = _problems([_pod("a", TIMEOUT)], _pg(), sched)
    assert "permitWaitingTimeSeconds (gang-a 5; the PodGroup sets none)" in p["message"], p


@pytest.mark.parametrize(
    "pods",
    [
        [],
        [_pod("a", GATED), _pod("b")],
        [_pod("a", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."), _pod("b", node="n1")],
        [_pod("a", TIMEOUT, node="n1")],
    ],
    ids=["no-pods", "gated", "no-room", "bound"],
)
def test_a_gang_waiting_for_another_reason_is_not_said_to_time_out(pods):
    assert _problems(pods, _pg(timeout=2)) == []


def test_a_configuration_that_is_not_a_mapping_serves_nothing_and_says_nothing():
    assert _schedulers.coscheduling_profiles("- a\n- b\n") == ([], [])
    assert _schedulers.permit_waits("- a\n") is None and _schedulers.coscheduling_prebind("just text") is None


HELD = "0/4 nodes are available: pre-filter pod a cannot proceed due to gated pods in the same PodGroup."


def _held(pods, pg):
    said = _pod_facts.fold(pods, NOW, 60).said()
    facts = {"now": NOW, "threshold": 60, "said": said, "lists": {"podgroups": [pg]}}
    return _scheduler_plugins.PATH.gated_problems(facts)


def test_a_gang_held_at_prefilter_by_gated_members_is_named_with_how_to_find_the_gates():
    (p,) = _held([_pod("a", HELD), _pod("b", HELD), _pod("c", GATED)], _pg())
    assert p["object"] == "PodGroup team/job1"
    assert "minMember (3)" in p["message"] and "'pre-filter pod a cannot proceed due to gated pods" in p["message"], p
    assert f"its gated members '{GATED}'" in p["message"], p
    assert "kubectl -n team get pods -l scheduling.x-k8s.io/pod-group=job1" in p["fix"], p
    assert "spec.schedulingGates" in p["fix"], p


@pytest.mark.parametrize(
    "pods",
    [[_pod("a", GATED), _pod("b")], [_pod("a", TIMEOUT), _pod("c", GATED)], [_pod("a", HELD, node="n1")]],
    ids=["gated-not-yet-tried", "permit-timeout", "bound"],
)
def test_a_gang_not_held_at_prefilter_by_its_gates_is_not_said_to_be(pods):
    assert _held(pods, _pg()) == []
