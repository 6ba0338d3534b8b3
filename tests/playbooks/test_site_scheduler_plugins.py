"""site.yml with scheduler-plugins on a fresh lab: as a second scheduler, then (after uninstalling it)
as the default scheduler from the rewritten static pod manifest, which uninstall.yml restores byte for
byte."""

from __future__ import annotations

import pytest
from kubernetes import client as k
from playbook_ansible import playbook

from lab import kube

pytestmark = pytest.mark.timeout(1500)
SP = {"gangsched_gang_scheduler": "scheduler_plugins"}
DEFAULT = {**SP, "scheduler_plugins_mode": "default", "scheduler_plugins_become": False}


def _flag(lab) -> list[str]:
    dep = k.AppsV1Api(kube.api(lab)).read_namespaced_deployment("training-operator", "kubeflow")
    return [a for a in dep.spec.template.spec.containers[0].command if a.startswith("--gang-scheduler-name")]


def _verdicts(run) -> list[str]:
    return [
        r["verdict"]
        for name in ("Fitting gang runs as a whole", "Oversized gang stays entirely Pending")
        for r in run.results(f"gangsched.kubeflow.gang_smoke_test : {name}")
    ]


def test_second_scheduler(lab):
    run = playbook(lab, "site", **SP)
    assert run.rc == 0, run.failures()
    assert _flag(lab) == ["--gang-scheduler-name=scheduler-plugins-scheduler"]
    assert _verdicts(run) == ["gang_held_running", "gang_held_pending"]
    again = playbook(lab, "site", **SP)
    assert again.rc == 0 and again.changed() == [], again.changed()
    gone = playbook(lab, "uninstall", gangsched_uninstall_components=True, **SP)
    assert gone.rc == 0, gone.failures()
    assert _flag(lab) == []
    names = [d.metadata.name for d in k.AppsV1Api(kube.api(lab)).list_namespaced_deployment("scheduler-plugins").items]
    assert names == [], names


def test_default_scheduler_and_restore(lab):
    manifest = lab.manifests / "kube-scheduler.yaml"
    original = manifest.read_bytes()
    run = playbook(lab, "site", **DEFAULT)
    assert run.rc == 0, run.failures()
    assert "scheduler-plugins/kube-scheduler" in manifest.read_text()
    assert _flag(lab) == ["--gang-scheduler-name=default-scheduler"]
    assert _verdicts(run) == ["gang_held_running", "gang_held_pending"]
    again = playbook(lab, "site", **DEFAULT)
    assert again.rc == 0 and again.changed() == [], again.changed()
    gone = playbook(lab, "uninstall", **DEFAULT)
    assert gone.rc == 0, gone.failures()
    assert manifest.read_bytes() == original
    assert _flag(lab) == []
