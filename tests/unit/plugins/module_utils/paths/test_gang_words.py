"""Each path's reading of a member's PodScheduled message: the gang scheduler's own word on the gang (the held verdict
then follows the rejection at once), or a mark any scheduler writes (the skew window). Messages as the lab's
schedulers wrote them."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry

GENERIC = "0/6 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/6 nodes are available."


@pytest.mark.parametrize(
    "path, message",
    [
        ("volcano", "pod group is not ready, 5 Pending, 5 minAvailable; Pending: 1 Unschedulable, 4 Schedulable"),
        ("scheduler_plugins", "PodGroup t/s gets rejected due to Pod s-4 is unschedulable even after PostFilter"),
        ("scheduler_plugins", "optimistic rejection in PostFilter"),
        ("scheduler_plugins", "rejected due to timeout after waiting 2s at plugin Coscheduling"),
        ("koordinator", 'Gang "t/s" gets rejected due to member Pod "s-4" is unschedulable with reason "x"'),
    ],
)
def test_the_gang_schedulers_word_on_the_gang_is_read_as_such(path, message):
    assert _registry.get(path).gang_word(message)


@pytest.mark.parametrize("path", ["volcano", "scheduler_plugins", "koordinator", "native"])
def test_a_mark_any_scheduler_writes_is_not(path):
    assert not _registry.get(path).gang_word(GENERIC)


def test_a_transient_word_is_not_a_decision():
    # koord-scheduler writes it while its cache has not seen the gang's last member yet: the gang may bind a moment on
    assert not _registry.get("koordinator").gang_word("memberGangs [t/s] child pod not collect enough")
