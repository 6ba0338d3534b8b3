"""scheduler-plugins as the cluster's default scheduler, kubeadm-style: the static pod manifest's image
and config are rewritten, the lab restarts the scheduler from it with the scheduler-plugins build, and
a gang of pods with schedulerName default-scheduler is held, then started, by Coscheduling."""

from __future__ import annotations

import pytest

from lab import build, kube, scenarios


@pytest.fixture
def sp_as_default(lab):
    docs = scenarios.crds("scheduler-plugins", "coscheduling")
    kube.apply(lab, docs, server_side=True)
    scenarios.wait_crds_established(lab, [d["metadata"]["name"] for d in docs])
    before = scenarios.scheduler_lease_holder(lab)
    scenarios.sp_default_scheduler(lab)
    try:
        kube.wait_for(
            lambda: scenarios.scheduler_lease_holder(lab) not in (None, before), 60, "the restarted scheduler's lease"
        )
        yield lab
    finally:
        held = scenarios.scheduler_lease_holder(lab)
        scenarios.restore_default_scheduler(lab)
        kube.wait_for(
            lambda: scenarios.scheduler_lease_holder(lab) not in (None, held), 60, "the stock scheduler's lease"
        )


def test_static_manifest_switch_runs_the_scheduler_plugins_build(sp_as_default):
    log = next(iter(sorted(sp_as_default.pods.glob("kube-system_kube-scheduler*/*.log"))), None)
    assert log is not None, list(sp_as_default.pods.glob("*"))
    starts = [
        line for line in log.read_text(errors="replace").splitlines() if line.startswith("=== ") and " start #" in line
    ]
    assert starts, f"no start line in {log}"
    argv = starts[-1].split(": ", 1)[1].split()
    assert argv[0] == str(build.binary_path("sp-scheduler")), starts[-1]
    assert any(a.startswith("--config=") for a in argv), starts[-1]


def test_coscheduling_as_default_scheduler_holds_then_runs(sp_as_default, namespace, added_nodes):
    seen = scenarios.observe_gang(
        sp_as_default,
        namespace,
        "gang",
        5,
        "scheduler-plugins",
        hold=20,
        add_gpus=1,
        scheduler_name="default-scheduler",
    )
    if seen["added_node"]:
        added_nodes.append(seen["added_node"])
    assert seen["bound_during_hold"] == [], f"pods bound while the gang could not fit: {seen}"
    assert len(seen["pending_after_hold"]) == 5, seen
    assert seen["all_running_after_s"] is not None, f"gang did not start after adding a GPU: {seen}"
    assert len(seen["running_final"]) == 5, seen
