"""The native_gang filter: pods and a Job shaped for kube-scheduler's own gang, and bad input as a filter error."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gangsched.kubeflow.plugins.filter.gang import FilterModule, native_gang


def test_registered_and_shapes_a_list_of_pods():
    assert FilterModule().filters()["native_gang"] is native_gang
    pods = [{"kind": "Pod", "metadata": {"name": f"w{i}", "namespace": "ml"}, "spec": {}} for i in range(2)]
    out = native_gang(pods, name="train", min_count="2")
    assert [(d["kind"], d["metadata"]["name"]) for d in out] == [
        ("Workload", "train"),
        ("PodGroup", "train"),
        ("Pod", "w0"),
        ("Pod", "w1"),
    ]


def test_a_single_pod_is_a_gang_of_one():
    out = native_gang({"kind": "Pod", "metadata": {"name": "solo"}, "spec": {}})
    assert out[1]["spec"]["schedulingPolicy"]["gang"]["minCount"] == 1 and "namespace" not in out[1]["metadata"]


@pytest.mark.parametrize("bad", [None, "text", [{"kind": "Service", "metadata": {"name": "s"}}]])
def test_bad_input_is_a_filter_error_naming_the_filter(bad):
    with pytest.raises(AnsibleFilterError, match="^native_gang: "):
        native_gang(bad)
