"""gpu_node_info through Ansible on this machine, a GPU node as files the test writes: nvidia-smi (a script printing
what the driver's does), containerd's configuration, the kubelet's device plugin directory; the same result in
check mode; a bad option refused with Ansible's message."""

from __future__ import annotations

import json
import os

from ansible_run import BIN, ansible_cli, ansible_env

SMI = """#!/bin/sh
case "$1" in
  --query-gpu=driver_version) echo 580.95.05; echo 580.95.05 ;;
  *) echo "0, NVIDIA H100 80GB HBM3, GPU-aaa, 81559, Disabled, Disabled, Enabled, 0"
     echo "1, NVIDIA H100 80GB HBM3, GPU-bbb, 81559, Disabled, Disabled, Disabled, 0" ;;
esac
"""


def _node(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(SMI)
    smi.chmod(0o755)
    cfg = tmp_path / "config.toml"
    cfg.write_text("version = 3\n[plugins.'io.containerd.cri.v1.runtime']\n  enable_cdi = true\n")
    dp = tmp_path / "kubelet" / "device-plugins"
    dp.mkdir(parents=True)
    (dp / "kubelet.sock").touch()
    (dp / "nvidia-gpu.sock").touch()
    checkpoint = {"Data": {"RegisteredDevices": {"nvidia.com/gpu": ["GPU-aaa", "GPU-bbb"]}}}
    (dp / "kubelet_internal_checkpoint").write_text(json.dumps(checkpoint))
    return {
        "driver_root": str(tmp_path),
        "containerd_config": str(cfg),
        "cdi_spec_dirs": [str(tmp_path / "cdi")],
        "kubelet_root": str(tmp_path / "kubelet"),
        "device_list_strategy": "cdi-cri",
    }


def _run(args: dict, check: bool = False) -> dict:
    cmd = [str(BIN / "ansible"), "localhost", "-m", "gangsched.kubeflow.gpu_node_info", "-a", json.dumps(args)]
    cmd += ["--check"] if check else []
    env = ansible_env(None, {"PATH": f"{BIN}:/usr/bin:/bin"})
    out = ansible_cli(cmd, env, timeout=120)
    return json.loads(out.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_a_node_read_through_nvidia_smi(tmp_path):
    args = _node(tmp_path)
    r = _run(args)
    assert not r.get("failed"), r
    assert r["changed"] is False
    assert r["driver"] == {"source": "nvidia-smi", "version": "580.95.05"}
    assert [g["uuid"] for g in r["gpus"]] == ["GPU-aaa", "GPU-bbb"]
    assert r["containerd"]["cdi_enabled"] is True
    assert r["device_plugin"]["registered"] is True
    # GPU 1 runs without persistence mode; the plugin is registered but wrote no CDI spec
    problems = [p["problem"] for p in r["problems"]]
    assert len(problems) == 2, problems
    assert any("GPU 1 (GPU-bbb) runs without persistence mode" in p for p in problems)
    assert any("no CDI spec names nvidia.com/gpu" in p for p in problems)
    assert _run(args, check=True)["gpus"] == r["gpus"]


def test_no_driver_is_a_problem_not_a_failure(tmp_path):
    args = {**_node(tmp_path), "driver_root": str(tmp_path / "none")}
    os.remove(tmp_path / "bin" / "nvidia-smi")
    r = _run(args)
    assert not r.get("failed"), r
    assert r["driver"]["source"] is None and r["gpus"] == []
    assert any("no NVIDIA driver answers" in p["problem"] for p in r["problems"])


def test_a_bad_strategy_is_refused_by_name(tmp_path):
    r = _run({"device_list_strategy": "cdi"})
    assert r.get("failed")
    assert "device_list_strategy" in r["msg"] and "cdi-cri" in r["msg"]
    assert "Traceback" not in r["msg"]
