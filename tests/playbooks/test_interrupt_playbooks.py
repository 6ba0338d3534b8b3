"""An interrupted smoke test (SIGINT or SIGTERM to ansible-playbook, or SIGKILL to its whole process
group) leaves nothing behind once the next run, or the cleanup playbook, has run. Every object a
smoke run creates carries the label gangsched.kubeflow/smoke-run=<run id>."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from ansible_run import REPO, ansible_env, playbook, playbook_cmd
from kubernetes import client as k

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


def module_processes(lab) -> list[int]:
    """The gang_smoke_test module processes run against this lab (their environment names its directory):
    other labs on the machine (make test's other lanes) run smoke tests of their own, never touched."""
    p = subprocess.run(["pgrep", "-f", "AnsiballZ_gang_smoke_test"], capture_output=True, text=True)
    mine = f"GANGSCHED_LAB_DIR={lab.root}".encode()
    pids = []
    for pid in (int(x) for x in p.stdout.split()):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if mine in env:
            pids.append(pid)
    return pids


def interrupted_run(lab, core, sig: int, group: bool) -> dict:
    """Start smoke_test.yml, signal it while its oversized gang (5 pods) is being watched (``group``:
    signal ansible-playbook's process group and the module process too)."""
    proc = subprocess.Popen(
        playbook_cmd("smoke_test"),
        env=ansible_env(lab, {"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default"}, kubeconfig=False),
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
            pids = module_processes(lab)
            assert pids, "no gang_smoke_test module process of this lab to signal"
            for pid in pids:
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
    kube.wait_for(lambda: not module_processes(lab), 120, "the smoke test module to stop")
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
    # the role's last run returns once its pods are gone: its namespace, deleted, may still be terminating
    assert run.results("gangsched.kubeflow.gang_smoke_test : Oversized gang stays entirely Pending")[0][
        "namespace_terminating"
    ]
    nss = core.list_namespace(label_selector=RUN_LABEL).items
    assert all(n.metadata.deletion_timestamp for n in nss), [n.metadata.name for n in nss]
    assert [x for x in leftovers(lab, core) if not x.startswith("Namespace ")] == []
    # the cleanup playbook at once: it waits for that namespace to go, and changes nothing
    again = playbook(lab, "smoke_cleanup")
    assert (
        again.rc == 0
        and again.results("Objects labelled gangsched.kubeflow/smoke-run, in all namespaces")[0]["changed"] is False
    )
    assert leftovers(lab, core) == []
    print(
        json.dumps(
            {
                "interrupt": "SIGKILL group",
                "left_after_interrupt": len(got["left"]),
                "removed_by_next_run": len(removed),
            }
        )
    )
