"""The dns_label test the roles' preflights use: the modules' own DNS-1123 label rule."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.test.gang import TestModule as _TestPlugins

dns_label = _TestPlugins().tests()["dns_label"]


@pytest.mark.parametrize("name", ["volcano-system", "a", "x1", "a" * 63])
def test_labels(name):
    assert dns_label(name)


@pytest.mark.parametrize("name", ["Bad_Name", "-a", "a-", "a.b", "", "a" * 64, None, 7])
def test_not_labels(name):
    assert not dns_label(name)
