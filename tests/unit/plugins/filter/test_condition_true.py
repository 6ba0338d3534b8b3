"""The condition_true filter: which objects count as ready, and bad input."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gangsched.kubeflow.plugins.filter.gang import condition_true


def _obj(name, conditions, generation=None, observed=None):
    md = {"name": name}
    st = {"conditions": conditions}
    if generation is not None:
        md["generation"] = generation
    if observed is not None:
        st["observedGeneration"] = observed
    return {"metadata": md, "status": st}


def test_only_objects_with_the_condition_true():
    objs = [
        _obj("a", [{"type": "Established", "status": "True"}, {"type": "NamesAccepted", "status": "True"}]),
        _obj("b", [{"type": "Established", "status": "False"}]),
        _obj("c", [{"type": "NamesAccepted", "status": "True"}]),
        {"metadata": {"name": "d"}},
        _obj("e", [{"type": "Established", "status": "True"}]),
    ]
    assert condition_true(objs, "Established") == ["a", "e"]
    assert condition_true(objs, "NamesAccepted") == ["a", "c"]
    assert condition_true([], "Available") == []


def test_a_condition_of_an_older_generation_does_not_count():
    avail = [{"type": "Available", "status": "True"}]
    objs = [
        _obj("rolled-out", avail, generation=3, observed=3),
        _obj("rolling", avail, generation=4, observed=3),
        _obj("no-generation-reported", avail, generation=2),
    ]
    assert condition_true(objs, "Available") == ["rolled-out", "no-generation-reported"]


def test_not_a_list_names_the_fix():
    with pytest.raises(AnsibleFilterError, match="needs a list of Kubernetes objects, got dict"):
        condition_true({"resources": []}, "Available")
