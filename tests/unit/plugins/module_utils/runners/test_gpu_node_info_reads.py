"""gpu_node_info's reads: NVML through a pynvml-shaped binding over the stand-in libnvidia-ml (GPUs that are
character devices in a directory of the test's own), nvidia-smi's CSV through a runner, containerd's configuration,
CDI specs and the kubelet's device plugin directory, from files the test writes."""

from __future__ import annotations

import json
import os

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _gpu_node_info as R
from standin_pynvml import StandinPynvml, compile_standin

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="stand-in GPUs are character devices (mknod needs root)")


@pytest.fixture
def devdir(tmp_path, monkeypatch):
    d = tmp_path / "dev"
    d.mkdir()
    monkeypatch.setenv("GANGSCHED_NVML_DEV_DIR", str(d))
    return d


def _gpus(d, n: int) -> None:
    os.mknod(d / "nvidiactl", 0o666 | 0o020000, os.makedev(195, 255))
    for i in range(n):
        os.mknod(d / f"nvidia{i}", 0o666 | 0o020000, os.makedev(195, i))


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    return StandinPynvml(compile_standin(tmp_path_factory.mktemp("nvml")))


@needs_root
def test_nvml_reads_every_gpu_of_the_stand_in(standin, devdir):
    _gpus(devdir, 3)
    facts = R.read_nvml(standin)
    assert facts["driver"] == {"source": "nvml", "version": "580.95.05"}
    assert [g["uuid"] for g in facts["gpus"]] == [f"GPU-5e1f0000-0000-4000-8000-{i:012d}" for i in range(3)]
    g = facts["gpus"][0]
    assert g["name"] == "Stand-in GPU 80GB" and g["memory_total_mib"] == 80 * 1024
    assert (g["mig_mode"], g["mig_mode_pending"], g["persistence_mode"], g["ecc_errors_uncorrected"]) == (
        False,
        False,
        True,
        0,
    )


def test_nvml_without_the_driver_says_so(standin, devdir):
    facts = R.read_nvml(standin)
    assert facts == {"driver": {"source": None, "error": "NVML: Driver Not Loaded"}, "gpus": []}


def test_nvidia_smi_is_read_when_there_is_no_binding():
    calls = []

    def run(argv):
        calls.append(argv)
        if argv[1] == "--query-gpu=driver_version":
            return 0, "580.95.05\n580.95.05\n", ""
        return 0, "0, NVIDIA H100 80GB HBM3, GPU-aaa, 81559, Disabled, Disabled, Enabled, 0\n", ""

    facts = R.read_smi(run, ["/usr/bin/nvidia-smi"])
    assert facts["driver"] == {"source": "nvidia-smi", "version": "580.95.05"}
    assert facts["gpus"] == [
        {
            "index": 0,
            "name": "NVIDIA H100 80GB HBM3",
            "uuid": "GPU-aaa",
            "memory_total_mib": 81559,
            "mig_mode": False,
            "mig_mode_pending": False,
            "persistence_mode": True,
            "ecc_errors_uncorrected": 0,
        }
    ]


def test_nvidia_smi_failing_is_the_driver_error():
    facts = R.read_smi(
        lambda argv: (9, "NVIDIA-SMI has failed because it couldn't communicate with the driver", ""), ["smi"]
    )
    assert facts["driver"]["source"] is None
    assert "couldn't communicate with the driver" in facts["driver"]["error"]


def test_cdi_specs_and_device_plugin_registration(tmp_path):
    cdi = tmp_path / "cdi"
    cdi.mkdir()
    spec = {"kind": "k8s.device-plugin.nvidia.com/gpu", "devices": [{"name": "GPU-aaa"}]}
    (cdi / "k8s.device-plugin.nvidia.com-gpu.json").write_text(json.dumps(spec))
    (cdi / "other.json").write_text(json.dumps({"kind": "vendor.com/fpga", "devices": []}))
    assert R.cdi_specs([str(cdi), str(tmp_path / "missing")]) == [
        {"path": str(cdi / "k8s.device-plugin.nvidia.com-gpu.json"), "devices": ["GPU-aaa"]}
    ]
    dp = tmp_path / "kubelet" / "device-plugins"
    dp.mkdir(parents=True)
    assert R.device_plugin(str(tmp_path / "kubelet"))["registered"] is False
    (dp / "kubelet.sock").touch()
    (dp / "nvidia-gpu.sock").touch()
    checkpoint = {"Data": {"PodDeviceEntries": None, "RegisteredDevices": {"nvidia.com/gpu": ["GPU-aaa", "GPU-bbb"]}}}
    (dp / "kubelet_internal_checkpoint").write_text(json.dumps(checkpoint))
    assert R.device_plugin(str(tmp_path / "kubelet")) == {
        "sockets": ["nvidia-gpu.sock"],
        "kubelet_socket": True,
        "resources": {"nvidia.com/gpu": 2},
        "registered": True,
    }


@needs_root
def test_gather_with_the_stand_in_and_a_containerd_without_cdi(standin, devdir, tmp_path):
    _gpus(devdir, 1)
    cfg = tmp_path / "config.toml"
    cfg.write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = false\n')
    params = {
        "driver_root": "/",
        "containerd_config": str(cfg),
        "cdi_spec_dirs": [str(tmp_path / "cdi")],
        "kubelet_root": str(tmp_path / "kubelet"),
        "device_list_strategy": "cdi-cri",
    }
    facts = R.gather(params, lambda argv: (1, "", "not run"), standin, lambda name, dirs: None)
    assert facts["driver"]["source"] == "nvml" and len(facts["gpus"]) == 1
    assert facts["containerd"]["cdi_enabled"] is False
    problems = " / ".join(p["problem"] for p in facts["problems"])
    assert "containerd has CDI off" in problems
    assert "no device plugin has registered nvidia.com/gpu" in problems


def test_a_driver_containers_nvidia_smi_runs_in_its_root(tmp_path):
    smi = tmp_path / "usr" / "bin" / "nvidia-smi"
    smi.parent.mkdir(parents=True)
    smi.write_text("#!/bin/sh\n")
    smi.chmod(0o755)
    calls = []

    def run(argv):
        calls.append(argv)
        return 1, "", "not run"

    params = {
        "driver_root": str(tmp_path),
        "containerd_config": str(tmp_path / "none.toml"),
        "cdi_spec_dirs": [],
        "kubelet_root": str(tmp_path / "kubelet"),
    }
    facts = R.gather(params, run, None, lambda name, dirs: None)
    assert calls[0][:3] == ["chroot", str(tmp_path), "/usr/bin/nvidia-smi"]
    assert facts["driver"]["source"] is None and "nvidia-smi: not run" in facts["driver"]["error"]


@needs_root
def test_a_driver_roots_nvml_library_is_loaded_before_the_binding_reads(standin, devdir, tmp_path):
    _gpus(devdir, 1)
    lib = tmp_path / "root" / "usr" / "lib" / "x86_64-linux-gnu" / "libnvidia-ml.so.1"
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"")
    loaded = []
    params = {
        "driver_root": str(tmp_path / "root"),
        "containerd_config": str(tmp_path / "none.toml"),
        "cdi_spec_dirs": [],
        "kubelet_root": str(tmp_path / "kubelet"),
    }
    facts = R.gather(
        params, lambda argv: (1, "", "not run"), standin, lambda name, dirs: None, lambda p: loaded.append(p) or True
    )
    assert loaded == [str(lib)]
    assert facts["driver"]["library"] == str(lib) and len(facts["gpus"]) == 1


def test_the_hosts_own_nvml_is_left_to_the_binding_under_root_slash(tmp_path):
    assert R.nvml_library("/") is None and R.nvml_library(str(tmp_path)) is None
