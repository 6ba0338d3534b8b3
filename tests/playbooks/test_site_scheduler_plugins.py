"""site.yml with scheduler-plugins on a fresh lab: as a second scheduler, then (after uninstalling it)
as the default scheduler from the rewritten static pod manifest, which uninstall.yml restores byte for
byte."""

from __future__ import annotations

import pytest
import seeds
from ansible_run import module, playbook
from kubernetes import client as k

from lab import kube

pytestmark = pytest.mark.timeout(1500)
SP = {"gangsched_gang_scheduler": "scheduler_plugins"}
DEFAULT = {**SP, "scheduler_plugins_mode": "default", "scheduler_plugins_become": False}


def _flag(lab) -> list[str]:
    dep = k.AppsV1Api(kube.api(lab)).read_namespaced_deployment("training-operator", "kubeflow")
    return [a for a in dep.spec.template.spec.containers[0].command if a.startswith("--gang-scheduler-name")]


def test_second_scheduler(lab, pod_ports_named):
    run = playbook(lab, "site", **SP)
    assert run.rc == 0, run.failures()
    assert _flag(lab) == ["--gang-scheduler-name=scheduler-plugins-scheduler"]
    assert run.verdicts() == ["gang_held_running", "gang_held_pending"]
    pod_ports_named()
    # the healthy installation: gang_info finds nothing wrong but what it reports on every run on 1.35 and later, the
    # release outside Kubernetes' version-skew policy (accepted here as scheduler_plugins_accept_skew)
    probs = module(lab, "gang_info")["problems"]
    assert all("version-skew policy" in p["message"] for p in probs), probs
    # the converged re-run without the smoke test (proven above; a whole re-run, smoke test included, changes
    # nothing in test_site_volcano.py and in the gang_smoke_test Molecule scenario's idempotence step on this path)
    again = playbook(lab, "site", "--skip-tags", "smoke", **SP)
    assert again.rc == 0, again.failures()
    assert again.changed() == [], again.changed()
    assert again.writers_run() == [], again.writers_run()


# ---- the seed guides end to end (tests/playbooks/seeds.py), Coscheduling as the second scheduler -----
def test_seed003_tfjob_gang_all_pending_then_all_running(jobs, pool):
    seeds.check_seed003_gang(jobs, pool, "scheduler_plugins")


def test_seed004_second_gang_waits_whole_until_the_first_is_gone(jobs):
    seeds.check_seed004_gang(jobs, "scheduler_plugins")


def test_seed000_mpijob_of_n_where_n_minus_2_fit_stays_pending(jobs):
    seeds.check_seed000_mpijob(jobs, "scheduler_plugins")


def test_deadlocking_jobs_under_gang_run_one_after_the_other(jobs):
    seeds.check_deadlock_gang(jobs, "scheduler_plugins")


def test_member_deleted_under_load_regangs(lab, jobs):
    seeds.check_member_deleted_under_load(jobs, "scheduler_plugins", lab)


def test_scheduler_name_trap_found_fixed_and_proven(lab):
    """The docs' --gang-scheduler-name=scheduler-plugins, set by hand against the second scheduler
    named scheduler-plugins-scheduler: gang_info flags it, the smoke test fails naming the pods'
    scheduler, operator_gang with the derived name fixes it, the same smoke test passes."""
    apps = k.AppsV1Api(kube.api(lab))
    dep = apps.read_namespaced_deployment("training-operator", "kubeflow")
    cmd = [
        "--gang-scheduler-name=scheduler-plugins" if a.startswith("--gang-scheduler-name") else a
        for a in dep.spec.template.spec.containers[0].command
    ]
    patch = [{"op": "replace", "path": "/spec/template/spec/containers/0/command", "value": cmd}]
    apps.patch_namespaced_deployment("training-operator", "kubeflow", patch)
    kube.kubectl(lab, "-n", "kubeflow", "rollout", "status", "deployment/training-operator", "--timeout=120s")
    assert _flag(lab) == ["--gang-scheduler-name=scheduler-plugins"]
    info = module(lab, "gang_info")
    trap = [p for p in info["problems"] if p["object"] == "Deployment kubeflow/training-operator"]
    assert trap and "scheduler-plugins names no scheduler" in trap[0]["message"], info["problems"]
    smoke = {"gang_scheduler": "scheduler_plugins", "workload": "pytorchjob", "replicas": 3, "timeout": 90}
    failed = module(lab, "gang_smoke_test", expect="running", **smoke)
    assert failed.get("failed") is True and failed["verdict"] == "error", failed
    assert "for scheduler 'scheduler-plugins', not 'scheduler-plugins-scheduler'" in failed["cause"], failed["cause"]
    fixed = module(lab, "operator_gang", operator="training_operator", gang_scheduler="scheduler_plugins", wait=True)
    assert fixed["changed"] is True and fixed["previous"] == "scheduler-plugins", fixed
    assert _flag(lab) == ["--gang-scheduler-name=scheduler-plugins-scheduler"]
    info = module(lab, "gang_info")
    assert [p for p in info["problems"] if p["object"] == "Deployment kubeflow/training-operator"] == []
    passed = module(lab, "gang_smoke_test", expect="running", **smoke)
    assert passed.get("failed") is not True and passed["verdict"] == "gang_held_running", passed
    assert seeds.wildcard_rules(lab) == []


def test_second_scheduler_uninstall(lab):
    gone = playbook(lab, "uninstall", gangsched_uninstall_components=True, **SP)
    assert gone.rc == 0, gone.failures()
    assert _flag(lab) == []
    names = [d.metadata.name for d in k.AppsV1Api(kube.api(lab)).list_namespaced_deployment("scheduler-plugins").items]
    assert names == [], names


def test_default_mode_in_check_mode_passes_and_writes_nothing(lab):
    """site.yml --check in the default mode on a lab where it never ran: the backup directory a real run
    creates first is not there, and check mode neither fails for it nor claims a restore; it reports the
    host files it would change and writes none."""
    manifest = lab.manifests / "kube-scheduler.yaml"
    original = manifest.read_bytes()
    backup_dir, config = lab.root / "backup", lab.etc / "gangsched-scheduler-config.yaml"
    assert not backup_dir.exists() and not config.exists()
    run = playbook(lab, "site", check=True, **DEFAULT)
    assert run.rc == 0, run.failures()
    changed = run.changed()
    for task in ("Static pod | backup directory", "Static pod | KubeSchedulerConfiguration with Coscheduling"):
        assert any(name.endswith(task) for name in changed), (task, changed)
    assert not [name for name in changed if "Static pod | put the original manifest back" in name]
    assert manifest.read_bytes() == original
    assert not backup_dir.exists() and not config.exists()


def test_default_scheduler_and_restore(lab):
    manifest = lab.manifests / "kube-scheduler.yaml"
    original = manifest.read_bytes()
    run = playbook(lab, "site", **DEFAULT)
    assert run.rc == 0, run.failures()
    assert "scheduler-plugins/kube-scheduler" in manifest.read_text()
    assert _flag(lab) == ["--gang-scheduler-name=default-scheduler"]
    assert run.verdicts() == ["gang_held_running", "gang_held_pending"]
    again = playbook(lab, "site", "--skip-tags", "smoke", **DEFAULT)  # as in test_second_scheduler
    assert again.rc == 0, again.failures()
    assert again.changed() == [], again.changed()
    gone = playbook(lab, "uninstall", **DEFAULT)
    assert gone.rc == 0, gone.failures()
    assert manifest.read_bytes() == original
    assert _flag(lab) == []
