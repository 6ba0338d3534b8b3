"""The lab tells gang from no gang with the real schedulers, no collection code involved.

4 GPU nodes x 1 GPU; a gang of 5 pods x 1 GPU (minMember 5): under a gang scheduler no pod is ever
bound while only 4 GPUs exist (checked on every watch event, not a final snapshot); one more GPU
node and all 5 run. Under the stock default scheduler the same pods end 4 Running, 1 Pending.
"""

from __future__ import annotations

import pytest

from lab import scenarios

HOLD = 20.0


@pytest.fixture(scope="module")
def scheduler_plugins(lab):
    scenarios.install_scheduler_plugins(lab)
    return lab


def _gang_holds_then_runs(lab, namespace, scheduler, added_nodes):
    seen = scenarios.observe_gang(lab, namespace, "gang", 5, scheduler, hold=HOLD, add_gpus=1)
    if seen["added_node"]:
        added_nodes.append(seen["added_node"])
    assert seen["hold_seconds"] >= HOLD
    assert seen["bound_during_hold"] == [], f"pods bound while the gang could not fit: {seen}"
    assert len(seen["pending_after_hold"]) == 5, seen
    assert seen["all_running_after_s"] is not None, f"gang did not start after adding a GPU: {seen}"
    assert len(seen["running_final"]) == 5, seen


def test_scheduler_plugins_coscheduling_holds_then_runs(scheduler_plugins, namespace, added_nodes):
    _gang_holds_then_runs(scheduler_plugins, namespace, "scheduler-plugins", added_nodes)


def test_volcano_gang_holds_then_runs(volcano, namespace, added_nodes):
    _gang_holds_then_runs(volcano, namespace, "volcano", added_nodes)


def test_default_scheduler_starts_a_partial_gang(lab, namespace):
    seen = scenarios.observe_gang(lab, namespace, "nogang", 5, "default", hold=10)
    assert len(seen["running_after_hold"]) == 4, seen
    assert len(seen["pending_after_hold"]) == 1, seen
