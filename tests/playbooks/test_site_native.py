"""site.yml with kube-scheduler's own gang (gangsched_gang_scheduler=native) on a fresh lab whose control plane runs
upstream's defaults (the Workload API off): the role native_gang turns it on in the control plane's static pod
manifests, the runner restarts each component from its changed manifest as a kubelet does, and the smoke test proves
the gang; refusals change nothing; uninstall.yml puts the manifests back byte for byte and the API is off again."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import yaml
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _native as native_path
from ansible_run import module, playbook
from kubernetes import client as k

from lab import kube

pytestmark = pytest.mark.timeout(1500)
NATIVE = {"gangsched_gang_scheduler": "native", "native_gang_become": False}
COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")


def _manifests(lab) -> dict[str, bytes]:
    return {c: (lab.manifests / f"{c}.yaml").read_bytes() for c in COMPONENTS}


def _gates(lab, component: str) -> list[str]:
    pod = yaml.safe_load((lab.manifests / f"{component}.yaml").read_text())
    return [a for a in pod["spec"]["containers"][0]["command"] if a.startswith(("--feature-gates", "--runtime-config"))]


def _native(lab) -> dict:
    return module(lab, "gang_info")["native_gang"]


def _diff_after(run, component: str) -> str:
    """What diff mode showed the component's manifest becoming."""
    task = "gangsched.kubeflow.native_gang : Component | the manifest with the native gang on lab-control-plane: "
    task += component
    return "".join(d.get("after", "") for h in run.results(task) for d in (h.get("diff") or []))


def test_off_by_default_and_refusals_change_nothing(lab):
    """The lab as users run 1.37 (the API off); a managed control plane (no hosts), a static pod directory with no
    manifests, a kube-scheduler of another minor and the Job integration next to a system-* Job are each refused with
    their reason, before any write."""
    originals = _manifests(lab)
    assert _native(lab)["served_versions"] == []

    run = playbook(lab, "site", **NATIVE, native_gang_control_plane_hosts=[])
    assert run.rc != 0
    assert "ask the provider for: kube-apiserver --feature-gates=GenericWorkload=true" in run.failures(), run.failures()

    nowhere = lab.root / "no-manifests"
    run = playbook(lab, "site", **NATIVE, native_gang_static_pod_dir=str(nowhere))
    assert run.rc != 0
    assert f"{nowhere}/kube-apiserver.yaml: no such file" in run.failures(), run.failures()
    assert "set native_gang_static_pod_dir to the kubelet's staticPodPath there" in run.failures(), run.failures()

    sched = lab.manifests / "kube-scheduler.yaml"
    sched.write_text(originals["kube-scheduler"].decode().replace(":v1.37.", ":v1.36."))
    try:
        run = playbook(lab, "site", **NATIVE)
        assert run.rc != 0
        assert "not Kubernetes 1.37 like the API server" in run.failures(), run.failures()
        assert (lab.manifests / "kube-apiserver.yaml").read_bytes() == originals["kube-apiserver"]
    finally:
        sched.write_bytes(originals["kube-scheduler"])

    batch = k.BatchV1Api(kube.api(lab))
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "node-check", "namespace": "kube-system"},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "priorityClassName": "system-cluster-critical",
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                }
            },
        },
    }
    batch.create_namespaced_job("kube-system", job)
    try:
        run = playbook(lab, "site", **NATIVE, native_gang_job_integration=True)
        assert run.rc != 0
        assert "Job kube-system/node-check (system-cluster-critical)" in run.failures(), run.failures()
    finally:
        batch.delete_namespaced_job("node-check", "kube-system", propagation_policy="Background")
    assert _manifests(lab) == originals
    assert _native(lab)["served_versions"] == []


def test_check_mode_shows_the_flags_and_writes_nothing(lab):
    originals = _manifests(lab)
    run = playbook(lab, "site", check=True, **NATIVE)
    assert run.rc == 0, run.failures()
    assert "- --runtime-config=scheduling.k8s.io/v1beta1=true" in _diff_after(run, "kube-apiserver"), run.changed()
    assert _manifests(lab) == originals
    assert not (lab.root / "backup" / "native-gang").exists()


def test_render_writes_each_hosts_manifests_and_changes_nothing(lab):
    originals = _manifests(lab)
    # the Volcano chain rendered into the same directory before, and a directory of the user's there
    run = playbook(lab, "render")
    assert run.rc == 0, run.failures()
    rendered = lab.root / "rendered"
    assert {"20-volcano", "30-kubeflow-gang"} <= {p.name for p in rendered.iterdir()}
    (rendered / "my-overlays").mkdir()
    run = playbook(lab, "render", **NATIVE)
    assert run.rc == 0, run.failures()
    # what no role of this run wrote is gone (another path's scheduler, the operators' flag), the user's directory stays
    assert sorted(p.name for p in rendered.iterdir()) == ["10-gpu-device-plugin", "20-native-gang", "my-overlays"]
    (removed,) = run.results(
        "Render | component directories of roles this run did not render, removed (another gang path's)"
    )
    assert {Path(f).parts[0] for f in removed["removed"]} == {"20-volcano", "30-kubeflow-gang"}, removed
    assert (rendered / "my-overlays").is_dir()
    host_files = rendered / "20-native-gang" / "host-files" / "lab-control-plane"
    rendered = yaml.safe_load((host_files / "kube-apiserver.yaml").read_text())
    assert "--runtime-config=scheduling.k8s.io/v1beta1=true" in rendered["spec"]["containers"][0]["command"]
    assert sorted(p.name for p in host_files.iterdir()) == [f"{c}.yaml" for c in sorted(COMPONENTS)]
    assert _manifests(lab) == originals


def test_site_turns_the_native_gang_on_and_proves_it(lab):
    lab.native_originals = _manifests(lab)
    run = playbook(lab, "site", **NATIVE)
    assert run.rc == 0, run.failures()
    assert run.verdicts() == ["gang_held_running", "gang_held_pending"]
    assert _gates(lab, "kube-apiserver") == [
        "--feature-gates=GenericWorkload=true",
        "--runtime-config=scheduling.k8s.io/v1beta1=true",
    ]
    assert (
        _gates(lab, "kube-controller-manager")
        == _gates(lab, "kube-scheduler")
        == ["--feature-gates=GenericWorkload=true"]
    )
    native = _native(lab)
    assert native["supported"] and native["kube_scheduler_gate"] is True and native["job_integration"] is False, native
    assert module(lab, "gang_info")["problems"] == []
    (report,) = run.results("Report | gang scheduling on lab")
    assert any(line.startswith("native gang (kube-scheduler): v1beta1 served") for line in report["msg"]), report


def test_second_run_changes_nothing(lab):
    # without the smoke test, proven above (test_site_volcano.py re-runs the smoke test too, changing nothing)
    run = playbook(lab, "site", "--skip-tags", "smoke", **NATIVE)
    assert run.rc == 0, run.failures()
    assert run.changed() == [], run.changed()


def test_job_integration_on_then_off(lab):
    """The Job integration asked for: WorkloadWithJob on the API server and kube-controller-manager, and the smoke
    test's Job workload ganged by the Job controller; asked off again, the manifests are back as before."""
    before = _manifests(lab)
    run = playbook(lab, "site", **NATIVE, native_gang_job_integration=True, gang_smoke_test_workload="job")
    assert run.rc == 0, run.failures()
    assert run.verdicts() == ["gang_held_running", "gang_held_pending"]
    assert _gates(lab, "kube-controller-manager") == ["--feature-gates=GenericWorkload=true,WorkloadWithJob=true"]
    assert _native(lab)["job_integration"] is True
    run = playbook(lab, "site", "--skip-tags", "smoke", **NATIVE)
    assert run.rc == 0, run.failures()
    assert _manifests(lab) == before


def test_a_component_that_does_not_come_up_gets_its_manifest_back(lab):
    """The kubelet frozen (the runner stopped with SIGSTOP): the changed manifest is never run, the wait times out,
    and the role puts the original back and says so."""
    before = _manifests(lab)
    runner = lab.pid("runner")
    os.kill(runner, signal.SIGSTOP)
    try:
        run = playbook(
            lab, "site", "--skip-tags", "smoke", **NATIVE, native_gang_job_integration=True, native_gang_wait_timeout=9
        )
    finally:
        os.kill(runner, signal.SIGCONT)
    assert run.rc != 0
    assert "put back as they were before this run: kube-apiserver" in run.failures(), run.failures()
    assert _manifests(lab) == before


USER_NS, USER_GANG = "team-native", "train"


def _users_native_gang(lab) -> list[str]:
    """A user's native gang, as the issue that asked for the refusal had it: a Workload, its PodGroup and four
    one-GPU pods, all bound by kube-scheduler. Their names as gang_info's in_use gives them."""
    kube.kubectl(lab, "create", "namespace", USER_NS)
    labels = {"app": USER_GANG}
    docs = [
        native_path.workload(USER_NS, USER_GANG, labels, 4),
        native_path.podgroup(USER_NS, USER_GANG, USER_GANG, labels, 4),
    ]
    for i in range(4):
        spec = {
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "w", "image": "busybox:1.36", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        }
        native_path.join(spec, USER_GANG)
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{USER_GANG}-{i}", "namespace": USER_NS, "labels": labels},
                "spec": spec,
            }
        )
    kube.apply(lab, docs)
    core = k.CoreV1Api(kube.api(lab))
    kube.wait_for(
        lambda: sum(1 for p in core.list_namespaced_pod(USER_NS).items if p.spec.node_name) == 4, 60, "the gang bound"
    )
    return [f"Workload {USER_NS}/{USER_GANG}", f"PodGroup {USER_NS}/{USER_GANG}"]


def _named_when_going_on(run) -> list[str]:
    return run.messages("In use | going on as asked")


def test_uninstall_refuses_while_a_users_native_gang_runs(lab):
    """uninstall.yml while a user's native gang runs: refused before any change (check mode too), naming the
    Workload and the PodGroup and the variable that goes on anyway."""
    lab.native_users = _users_native_gang(lab)
    before = _manifests(lab)
    for args in ((), ("--check",)):
        run = playbook(lab, "uninstall", *args, **NATIVE)
        assert run.rc != 0
        assert all(name in run.failures() for name in lab.native_users), run.failures()
        assert "Nothing was changed" in run.failures() and "gangsched_uninstall_in_use=true" in run.failures()
        assert run.changed() == [], run.changed()
    assert _manifests(lab) == before and _native(lab)["supported"]


def test_uninstall_refuses_a_backup_it_cannot_read(lab):
    """A backup that is there but cannot be read (a directory where kube-scheduler's should be): the uninstall stops
    on that host before it writes any manifest, naming the path, why, and what to do."""
    backup = lab.root / "backup" / "native-gang" / "kube-scheduler.yaml"
    kept = backup.with_name("kube-scheduler.yaml.kept")
    before = _manifests(lab)
    backup.rename(kept)
    backup.mkdir()
    try:
        run = playbook(lab, "uninstall", **NATIVE, gangsched_uninstall_in_use=True)
    finally:
        backup.rmdir()
        kept.rename(backup)
    assert run.rc != 0
    assert f"{backup}: a directory, not a file on lab-control-plane" in run.failures(), run.failures()
    assert "run the uninstall again. Nothing was changed" in run.failures(), run.failures()
    assert run.changed() == [], run.changed()
    assert _manifests(lab) == before and _native(lab)["supported"]


def test_uninstall_puts_the_manifests_back_and_the_api_goes(lab):
    """Asked to go on (gangsched_uninstall_in_use), it names the user's objects it leaves unserved, and the API goes;
    the bound pods stay bound."""
    run = playbook(lab, "uninstall", **NATIVE, gangsched_uninstall_in_use=True)
    assert run.rc == 0, run.failures()
    (named,) = _named_when_going_on(run)
    assert all(name in named for name in lab.native_users), named
    core = k.CoreV1Api(kube.api(lab))
    assert sum(1 for p in core.list_namespaced_pod(USER_NS).items if p.spec.node_name) == 4
    kube.kubectl(lab, "delete", "namespace", USER_NS, "--wait=false")
    assert _manifests(lab) == lab.native_originals
    assert _native(lab)["served_versions"] == []
    assert not list((lab.root / "backup" / "native-gang").glob("*.yaml"))
    again = playbook(lab, "uninstall", **NATIVE)
    assert again.rc == 0, again.failures()
    assert again.changed() == [], again.changed()
