"""An interrupted smoke test (SIGINT or SIGTERM to ansible-playbook, or SIGKILL to its whole process
group) leaves nothing behind once the next run, or the cleanup playbook, has run. Every object a
smoke run creates carries the label gangsched.kubeflow/smoke-run=<run id>."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from kubernetes import client as k
from playbook_ansible import BIN, REPO, playbook

from lab import kube, scenarios

RUN_LABEL = "gangsched.kubeflow/smoke-run"
NS = "gangsched-smoke"
LEFTOVERS_TASK = (
    "gangsched.kubeflow.gang_smoke_test : Leftovers of interrupted smoke runs are removed first (they would hold GPUs)"
)


@pytest.fixture(scope="module")
def core(lab):
    scenarios.install_volcano(lab)
    return k.CoreV1Api(kube.api(lab))


def leftovers(lab, core) -> list[str]:
    out = [
        f"Pod {p.metadata.namespace}/{p.metadata.name}"
        for p in core.list_pod_for_all_namespaces(label_selector=RUN_LABEL).items
    ]
    co = k.CustomObjectsApi(kube.api(lab))
    for pg in co.list_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "podgroups", label_selector=RUN_LABEL)[
        "items"
    ]:
        out.append(f"PodGroup {pg['metadata']['namespace']}/{pg['metadata']['name']}")
    out += [f"Namespace {n.metadata.name}" for n in core.list_namespace(label_selector=RUN_LABEL).items]
    return out


def module_processes() -> list[int]:
    p = subprocess.run(["pgrep", "-f", "AnsiballZ_gang_smoke_test"], capture_output=True, text=True)
    return [int(x) for x in p.stdout.split()]


def interrupted_run(lab, core, sig: int, group: bool) -> dict:
    """Start smoke_test.yml, signal it while its oversized gang (5 pods) is being watched (``group``:
    signal ansible-playbook's process group and the module process too)."""
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "GANGSCHED_LAB_DIR": str(lab.root),
    }
    proc = subprocess.Popen(
        [str(BIN / "ansible-playbook"), "-i", str(REPO / "inventories/lab"), "gangsched.kubeflow.smoke_test"],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        kube.wait_for(
            lambda: len(core.list_namespaced_pod(NS, label_selector=RUN_LABEL).items) == 5,
            150,
            "the oversized gang's 5 pods",
        )
        if group:
            # everything at once, as when a CI runner's container goes away: ansible's local connection
            # starts the module in a session of its own, so it is killed by pid
            for pid in module_processes():
                os.kill(pid, sig)
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # the module may outlive ansible-playbook: it notices that nobody reads its output and stops
    t0 = time.monotonic()
    kube.wait_for(lambda: not module_processes(), 120, "the smoke test module to stop")
    return {
        "rc": proc.returncode,
        "output": out,
        "module_outlived_s": time.monotonic() - t0,
        "left": leftovers(lab, core),
    }


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_ansible_playbook_leaves_nothing_after_the_cleanup_playbook(lab, core, sig):
    got = interrupted_run(lab, core, sig, group=False)
    assert got["rc"] != 0, got["output"][-2000:]
    # the orphaned module stopped at its next watch round and removed its own objects
    assert got["module_outlived_s"] < 60 and got["left"] == [], got
    run = playbook(lab, "smoke_cleanup")
    assert run.rc == 0, run.failures()
    assert leftovers(lab, core) == []


def test_killed_playbook_and_module_leave_objects_the_next_run_removes_objects_the_next_run_removes(lab, core):
    got = interrupted_run(lab, core, signal.SIGKILL, group=True)
    # killed outright: no cleanup could run, the oversized gang is still there holding its place
    assert sum(x.startswith("Pod ") for x in got["left"]) == 5 and f"Namespace {NS}" in got["left"], got["left"]
    run = playbook(lab, "smoke_test")
    assert run.rc == 0, run.failures()
    removed = run.results(LEFTOVERS_TASK)[0]["stale_removed"]
    assert sorted(removed) == sorted(got["left"]), (removed, got["left"])
    # with the leftovers gone the fitting gang (all 4 GPUs) runs again
    verdicts = [r["verdict"] for r in run.results("gangsched.kubeflow.gang_smoke_test : Fitting gang runs as a whole")]
    assert verdicts == ["gang_held_running"]
    assert leftovers(lab, core) == []
    again = playbook(lab, "smoke_cleanup")
    assert (
        again.rc == 0
        and again.results("Objects labelled gangsched.kubeflow/smoke-run, in all namespaces")[0]["changed"] is False
    )
    print(
        json.dumps(
            {
                "interrupt": "SIGKILL group",
                "left_after_interrupt": len(got["left"]),
                "removed_by_next_run": len(removed),
            }
        )
    )
