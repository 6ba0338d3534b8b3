"""The report_line and manifest_filename filters: each kind of entry, and bad input naming the fix."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gangsched.kubeflow.plugins.filter.gang import manifest_filename, report_line


def test_report_line_for_each_kind():
    assert (
        report_line(
            {"kind": "nvidia", "daemonset": "nvidia-device-plugin/ndp", "image": "i:1", "desired": 4, "ready": 3},
            "device_plugin",
        )
        == "device plugin: nvidia DaemonSet nvidia-device-plugin/ndp (i:1), 3/4 pod(s) ready"
    )
    line = report_line(
        {
            "kind": "scheduler_plugins",
            "version": "v0.33.5",
            "mode": "second",
            "source": "Deployment",
            "namespace": "scheduler-plugins",
            "name": "scheduler-plugins-scheduler",
            "gang_profiles": ["scheduler-plugins-scheduler"],
            "ready": False,
        },
        "scheduler",
    )
    assert "second mode" in line and "gang profile(s) scheduler-plugins-scheduler" in line
    assert line.endswith("NOT ready")
    op = {"deployment": "kubeflow/training-operator", "gang_flag": "gang-scheduler-name", "ready": True}
    assert report_line({**op, "gang_value": "volcano", "flag_occurrences": 1}, "operator") == (
        "operator: kubeflow/training-operator --gang-scheduler-name=volcano, ready"
    )
    assert "(2 times)" in report_line({**op, "gang_value": "volcano", "flag_occurrences": 2}, "operator")
    assert "no gang flag" in report_line({**op, "gang_value": None, "flag_occurrences": 0}, "operator")
    ok = {"verdict": "gang_held_running", "expected": "running", "ok": True, "reports": {"json": "inv/../r/a.json"}}
    assert report_line(ok, "smoke") == "smoke test: gang_held_running as expected; reports: json r/a.json"
    control = {**ok, "verdict": "gang_held_pending", "control": {"verdict": "partial", "bound": ["c-0", "c-1"]}}
    assert "; the same pods without a gang: partial (2 bound);" in report_line(control, "smoke")
    bad = {"verdict": "partial", "expected": "pending", "ok": False, "cause": "2 of 5 bound", "reports": None}
    assert report_line(bad, "smoke") == (
        "smoke test: partial EXPECTED pending (2 of 5 bound); reports: no report written"
    )
    assert report_line({"object": "Deployment a/b", "message": "m.", "fix": "f"}, "problem") == (
        "PROBLEM Deployment a/b: m. Fix: f"
    )
    support = {"component": "volcano", "version": "v1.10.0", "cluster": "v1.37.2", "within": False}
    assert report_line({**support, "supported": "1.21-1.30"}, "support") == (
        "support: volcano v1.10.0: upstream supports Kubernetes 1.21-1.30, the cluster runs v1.37.2 (OUTSIDE)"
    )


@pytest.mark.parametrize(
    "item,kind,message",
    [({}, "node", "kind='node' is not one of"), ("x", "smoke", "needs a dict"), ({}, "support", "support entry")],
)
def test_report_line_bad_input(item, kind, message):
    with pytest.raises(AnsibleFilterError, match=message):
        report_line(item, kind)


def test_manifest_filename():
    deployment = {"kind": "Deployment", "metadata": {"name": "x", "namespace": "y"}}
    assert manifest_filename(deployment) == "deployment-y-x.yaml"
    assert manifest_filename({"kind": "ClusterRole", "metadata": {"name": "a:b"}}) == "clusterrole-a_b.yaml"
    with pytest.raises(AnsibleFilterError, match="kind and metadata.name"):
        manifest_filename({"kind": "Deployment"})
