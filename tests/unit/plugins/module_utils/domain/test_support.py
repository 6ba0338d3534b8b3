"""Each component's release against the Kubernetes minors its upstream supports: within, outside, or not known (no
range stated upstream, or a release the table has no row for), each with its source."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _support


@pytest.mark.parametrize(
    "component, version, kube, within, supported",
    [
        ("volcano", "v1.10.0", "v1.30.4", True, "1.21-1.30"),
        ("volcano", "v1.10.0", "v1.37.2", False, "1.21-1.30"),
        ("scheduler_plugins", "v0.33.5", "v1.34.1", True, "1.33-1.34"),
        ("scheduler_plugins", "v0.33.5", "v1.37.2", False, "1.33-1.34"),
        ("training_operator", "v1.8.1", "v1.37.2", True, "1.25+"),
        ("training_operator", "v1.8.1", "v1.24.0", False, "1.25+"),
        ("mpi_operator", "v0.6.0", "v1.37.2", None, None),
        ("volcano", "v9.9.9", "v1.37.2", None, None),
        ("volcano", "latest", "v1.37.2", None, None),
        ("volcano", "v1.10.0", None, None, None),
    ],
)
def test_a_release_against_the_clusters_minor(component, version, kube, within, supported):
    s = _support.standing(component, "Deployment ns/x", version, kube)
    assert (s["within"], s["supported"]) == (within, supported), s
    assert (s["source"] is None) == (_support.row(component, version) is None or kube is None)


def test_a_release_upstream_states_no_range_for_gives_what_it_is_built_on():
    s = _support.standing("mpi_operator", "Deployment mpi-operator/mpi-operator", "v0.6.0", "v1.37.2")
    assert s["built_on"] == "1.31" and "go.mod" in s["source"]
    line = "mpi_operator v0.6.0: built on Kubernetes 1.31, upstream states no range; the cluster runs v1.37.2"
    assert _support.line(s) == line


def test_the_report_line_says_outside_with_the_range():
    s = _support.standing("volcano", "Deployment volcano-system/volcano-scheduler", "v1.10.0", "v1.37.2")
    line = "volcano v1.10.0: upstream supports Kubernetes 1.21-1.30, the cluster runs v1.37.2 (OUTSIDE). Fix: "
    assert _support.line(s).startswith(line), _support.line(s)
    assert "run a volcano release whose upstream supports Kubernetes 1.37" in s["fix"], s
    within = _support.standing("volcano", "Deployment volcano-system/volcano-scheduler", "v1.10.0", "v1.30.1")
    assert "fix" not in within and "Fix" not in _support.line(within)


def test_every_row_names_its_source_and_a_sane_range():
    for component, rows in _support.SUPPORT.items():
        for line, low, high, kind, source in rows:
            assert line.startswith("v") and source and (high is None or low <= high), (component, line)
            assert kind in (_support.STATED, _support.BUILT_ON) and (kind == _support.STATED or high == low)


def test_what_gang_info_found_is_each_given_its_standing():
    schedulers = [{"kind": "volcano", "source": "Deployment", "namespace": "v", "name": "s", "version": "v1.10.0"}]
    ops = [{"operator": "training_operator", "deployment": "kubeflow/training-operator", "image": "kubeflow/t:v1.8.1"}]
    trainers = [{"deployment": "kubeflow-system/trainer", "version": "v2.2.0"}]
    got = _support.of_cluster(schedulers, ops, trainers, "v1.37.2")
    assert [(s["component"], s["within"]) for s in got] == [
        ("volcano", False),
        ("training_operator", True),
        ("trainer", None),
    ]
