"""The GPU-node harness (``python -m lab gpu-node``): containerd, runc, a standalone kubelet and NVIDIA's device
plugin run as the gpu_device_plugin role renders it, with the stand-in NVML on every machine (and the real driver
where a GPU is present): the plugin registers, the kubelet's allocatable nvidia.com/gpu equals the devices found, a
pod with the limit gets its device and a pod without it does not; and the host is left as it was."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ansible_run import run_module
from kubernetes import client as k

from lab import build, kube, nodes, scenarios, versions
from lab.gpu import bundle, harness

# the name the node's kubelet registers as (its --hostname-override)
NODE = "gpu-node"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the GPU node needs root (namespaces, device nodes)")


def _ours(pid: str) -> bool:
    """Whether a process descends from this test process (a run of another test process is not this one's)."""
    me = os.getpid()
    while pid not in ("0", "1"):
        try:
            ppid = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("PPid:"))
        except (OSError, StopIteration):
            return False
        pid = ppid.split()[1]
        if pid == str(me):
            return True
    return False


def _host_state() -> dict:
    """What the node must not leave behind: the processes, mounts and cgroups of this test process's runs, and the
    paths the node uses inside."""
    binaries = {str(build.binary_where(n)) for n in ("containerd", "kubelet", "nvidia-device-plugin", "runc")}
    procs = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if os.readlink(f"/proc/{pid}/exe") in binaries and _ours(pid):
                    procs.add(pid)
            except OSError:
                pass
    mounts = [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if "gpu-node" in line]
    cgroups = sorted(str(p) for p in Path("/sys/fs/cgroup").glob(f"*/gangsched-gpu-node-{os.getpid()}"))
    paths = [
        p for p in ("/run/nvidia/driver", "/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json") if Path(p).exists()
    ]
    return {"processes": procs, "mounts": mounts, "cgroups": cgroups, "paths": paths}


def _explain(result: dict) -> str:
    return f"{result['summary']}\n(logs: {result['logs']})"


@pytest.fixture(scope="module")
def before():
    return _host_state()


@pytest.fixture(scope="module")
def cdi(before):
    return harness.run(strategy="cdi-cri", mode="standin", log=lambda *_: None)


def test_the_plugin_runs_as_the_role_renders_it(cdi):
    env = cdi["plugin"]["env"]
    assert env.get("DEVICE_LIST_STRATEGY") == "cdi-cri", cdi["plugin"]
    assert env.get("NVIDIA_DRIVER_ROOT") == harness.STANDIN_DRIVER_ROOT, cdi["plugin"]
    assert {m["mountPath"]: m["hostPath"] for m in cdi["plugin"]["mounts"]}[
        "/driver-root"
    ] == harness.STANDIN_DRIVER_ROOT


@pytest.mark.parametrize(
    "check",
    [
        "plugin registered",
        "allocatable equals the devices found",
        "CDI spec written",
        "GPU pod allocated one device",
        "GPU pod got the device",
        "control pod got no GPU",
        "gpu_node_info agrees",
    ],
)
def test_cdi_cri_with_the_stand_in_nvml(cdi, check):
    assert "error" not in cdi, _explain(cdi)
    checks = {c["name"]: c for c in cdi["checks"]}
    assert check in checks, _explain(cdi)
    assert checks[check]["ok"], _explain(cdi)


def test_gpu_node_info_on_the_node_reads_the_driver_root_and_finds_nothing_wrong(cdi):
    """gpu_node_info, run on the node as a play runs it on a GPU host: NVML loaded from the driver root (no library
    path set), containerd's version and CDI setting, the plugin's CDI spec and registration, and no problem."""
    info = cdi["node_info"]
    assert info["driver"] == {
        "source": "nvml",
        "version": "580.95.05",
        "library": f"{harness.STANDIN_DRIVER_ROOT}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
    }, info
    assert info["containerd"]["version"] == "v2.1.4" and info["containerd"]["cdi_enabled"] is True, info["containerd"]
    assert [s["devices"] for s in info["cdi_specs"]] == [sorted(cdi["allocatable"])], info["cdi_specs"]
    assert info["device_plugin"]["resources"] == {"nvidia.com/gpu": 2}, info["device_plugin"]
    assert info["problems"] == [], info["problems"]


def test_two_stand_in_gpus_are_two_allocatable(cdi):
    assert sorted(cdi["allocatable"]) == [f"GPU-5e1f0000-0000-4000-8000-{i:012d}" for i in range(2)], _explain(cdi)


def test_it_is_quick(cdi):
    assert cdi["ok"], _explain(cdi)
    assert cdi["seconds"] < 60, _explain(cdi)


def test_envvar_tells_the_pod_its_device(before):
    r = harness.run(strategy="envvar", mode="standin", gpus=1, log=lambda *_: None)
    assert r["ok"], _explain(r)
    assert "DEVICE_LIST_STRATEGY" not in r["plugin"]["env"]  # envvar is the chart's default: the role leaves it
    assert r["pods"]["probes"]["gpu-probe"]["visible_devices"] == r["allocatable"][0]
    # the node runs plain runc: gpu_node_info names what envvar lacks on it
    problems = " / ".join(p["problem"] for p in r["node_info"]["problems"])
    assert "NVIDIA container runtime" in problems, problems


def test_cdi_annotations_inject_the_device(before):
    r = harness.run(strategy="cdi-annotations", mode="standin", gpus=1, log=lambda *_: None)
    assert r["ok"], _explain(r)
    assert r["plugin"]["env"]["DEVICE_LIST_STRATEGY"] == "cdi-annotations"
    assert r["pods"]["probes"]["gpu-probe"]["nvml"]["gpus"][0]["uuid"] == r["allocatable"][0]


TIME_SLICING = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"


@pytest.fixture(scope="module")
def sliced(before):
    """The node with one stand-in GPU, time-sliced four ways through the chart's config map (the role's
    gpu_device_plugin_values)."""
    values = {"config": {"map": {"default": TIME_SLICING}}}
    return harness.run(mode="standin", gpus=1, role_vars={"gpu_device_plugin_values": values}, log=lambda *_: None)


def test_a_config_file_of_the_role_values_reaches_the_plugin(sliced):
    """Time-slicing through the chart's config map: config-manager's default config is the plugin's config file, and
    one GPU is four allocatable nvidia.com/gpu, a pod getting all of it."""
    r = sliced
    assert r["ok"], _explain(r)
    assert r["plugin"]["config"] == "default" and r["plugin"]["env"]["CONFIG_FILE"] == "/config/config.yaml"
    assert sorted(r["allocatable"]) == [f"GPU-5e1f0000-0000-4000-8000-000000000000::{i}" for i in range(4)]
    assert r["pods"]["probes"]["gpu-probe"]["nvml"]["gpus"][0]["uuid"] == "GPU-5e1f0000-0000-4000-8000-000000000000"


def test_a_gang_on_time_sliced_gpus_is_named_as_sharing_them(sliced, volcano, api, namespace, added_nodes):
    """The time-sliced node as the cluster sees it: a Node advertising what the node's kubelet advertised (its
    allocatable nvidia.com/gpu from the kubelet's pod-resources API: 4), and gpu_node_info's facts from the node
    (NVML: 1 GPU). Four one-GPU members of a Volcano gang are bound there by vc-scheduler. gang_info names the node
    (4 advertised, 1 seen, no GPU Feature Discovery label) and the gang (its members share one GPU), and gives the
    sharing as the reason on the job; without the node's facts or the label it cannot know, and says nothing of it;
    with GPU Feature Discovery's label it knows from the label alone, and the node is no longer named."""
    assert sliced["ok"], _explain(sliced)
    advertised, seen = len(sliced["allocatable"]), len(sliced["node_info"]["gpus"])
    assert (advertised, seen) == (4, 1), _explain(sliced)
    added_nodes.append(nodes.add(api, advertised, NODE))
    docs = scenarios.gang(namespace, "sliced", advertised, "volcano")
    for pod in docs[1:]:
        pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": NODE}
    kube.apply(volcano, docs)
    core = k.CoreV1Api(api)

    def bound():
        return [p.spec.node_name for p in core.list_namespaced_pod(namespace).items if p.spec.node_name]

    kube.wait_for(lambda: len(bound()) == advertised, 60, "the gang bound")
    assert set(bound()) == {NODE}
    job = {"kind": "PodGroup", "namespace": namespace, "name": "sliced"}
    gang = f"Gang {namespace}/sliced"

    info = run_module(volcano, "gang_info", {"gpu_nodes": {NODE: sliced["node_info"]}, "job": job})
    about = {p["object"]: p for p in info["problems"]}
    assert "NVML sees 1 GPU(s), the kubelet advertises 4 nvidia.com/gpu" in about[f"Node {NODE}"]["message"], about
    assert "nvidia.com/gpu.replicas" in about[f"Node {NODE}"]["fix"], about
    assert (
        f"{advertised} bound member(s) share physical GPUs on {NODE} (each GPU shared 4 ways)"
        in (about[gang]["message"])
    ), about
    assert info["job"]["why"].startswith(about[gang]["message"]), info["job"]

    plain = run_module(volcano, "gang_info", {"job": job})
    assert not any(p["object"] in (gang, f"Node {NODE}") for p in plain["problems"]), plain["problems"]
    assert plain["job"]["why"] == f"running: all {advertised} pod(s) bound", plain["job"]

    core.patch_node(NODE, {"metadata": {"labels": {"nvidia.com/gpu.replicas": str(advertised)}}})
    labelled = run_module(volcano, "gang_info", {"gpu_nodes": {NODE: sliced["node_info"]}})
    objects = [p["object"] for p in labelled["problems"]]
    assert gang in objects and f"Node {NODE}" not in objects, labelled["problems"]


def test_the_host_is_left_as_it_was(cdi, before):
    after = _host_state()
    assert after == before
    assert cdi["cgroups_left"] == []


def test_a_run_cut_short_leaves_the_host_as_it_was(cdi, before):
    r = harness.run(mode="standin", total_timeout=1.5, log=lambda *_: None)
    assert not r["ok"] and "no result within" in r["error"], r["summary"]
    assert _host_state() == before


def test_a_bundle_runs_the_node_and_builds_nothing(before, tmp_path):
    """What a GPU machine without Go or network runs: a bundle of the built binaries, images and chart; the node
    runs its binaries, and a bundle of other versions is refused by name."""
    m = bundle.write(tmp_path / "b", harness.ensure_built(log=lambda *_: None), preset=0, log=lambda *_: None)
    assert m["versions"]["kubelet"] == versions.KUBERNETES and set(m["binaries"]) == set(bundle.BINARIES)
    assert m["collections"] == ["kubernetes.core"]
    r = harness.run(mode="standin", gpus=1, from_bundle=tmp_path / "b", log=lambda *_: None)
    assert r["ok"], _explain(r)
    assert all(Path(p).parent == tmp_path / "b" / "bin" for p in r["binaries"].values()), r["binaries"]
    manifest = tmp_path / "b" / bundle.MANIFEST
    other = json.loads(manifest.read_text())
    other["versions"]["kubelet"] = "v1.0.0"
    manifest.write_text(json.dumps(other))
    with pytest.raises(harness.HarnessError, match=f"kubelet v1.0.0 \\(this checkout: {versions.KUBERNETES}\\)"):
        harness.run(mode="standin", from_bundle=tmp_path / "b", log=lambda *_: None)


def test_a_real_gpu(before):
    present, why = harness.gpu_present()
    if not present:
        pytest.skip(f"no GPU on this machine: {why}")
    r = harness.run(strategy="cdi-cri", mode="driver", log=lambda *_: None)
    assert r["ok"], _explain(r)
    gpu = r["pods"]["probes"]["gpu-probe"]["nvml"]
    assert gpu["init"] == 0 and len(gpu["gpus"]) == 1, _explain(r)
    assert [g["uuid"] for g in r["node_info"]["gpus"]] == [a.split("::")[0] for a in r["allocatable"]], _explain(r)
