"""gpu_node_info's decisions: containerd's CDI and NVIDIA runtime settings from its configuration text (1.7 and 2.x
forms, defaults by version), GPUs from nvidia-smi's CSV, and each problem with its fix."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _gpu_node_facts as G

CONTAINERD_17_NVIDIA = """
version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "nvidia"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
      BinaryName = "/usr/bin/nvidia-container-runtime"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
"""

CONTAINERD_2_CDI = """
version = 3
[plugins.'io.containerd.cri.v1.runtime']
  enable_cdi = true   # the default, said again
  cdi_spec_dirs = ['/etc/cdi', '/var/run/cdi']
"""


def test_containerd_17_with_the_nvidia_runtime_and_cdi_off_by_default():
    f = G.containerd_facts(CONTAINERD_17_NVIDIA, "v1.7.27")
    assert f["nvidia_runtime"] is True and f["default_runtime"] == "nvidia"
    assert f["runtimes"] == ["nvidia", "runc"]
    assert f["cdi_enabled"] is False and f["cdi_spec_dirs"] is None
    assert f["config_version"] == 2


def test_containerd_2_has_cdi_on():
    f = G.containerd_facts(CONTAINERD_2_CDI, None)
    assert f["cdi_enabled"] is True and f["cdi_spec_dirs"] == ["/etc/cdi", "/var/run/cdi"]
    assert f["nvidia_runtime"] is False
    # no file at all: containerd's defaults, which depend on its version
    assert G.containerd_facts(None, "v2.1.4")["cdi_enabled"] is True
    assert G.containerd_facts(None, "v1.7.27")["cdi_enabled"] is False
    assert G.containerd_facts(None, None)["cdi_enabled"] is None


@pytest.mark.parametrize(
    "out, version",
    [
        ("containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7193e4e490e9fbdc236c0e811ccaba3376\n", "v2.1.4"),
        ("containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da\n", "v1.7.27"),
        ("containerd github.com/containerd/containerd 1.7.12\n", "v1.7.12"),
        ("containerd github.com/containerd/containerd/v2 2.1.4+unknown \n", "v2.1.4"),
        ("containerd github.com/containerd/containerd/v2 v2.2.0-rc.1 abc\n", "v2.2.0"),
        ("something else\n", None),
    ],
)
def test_containerd_version_as_each_package_prints_it(out, version):
    assert G.containerd_version(out) == version


def test_nvidia_smi_csv():
    csv = (
        "0, NVIDIA A100-SXM4-80GB, GPU-a, 81920, Enabled, Disabled, Disabled, 2\n"
        "1, NVIDIA T4, GPU-b, 15360, [N/A], [N/A], Enabled, [N/A]\n"
    )
    a, b = G.parse_smi(csv)
    assert (a["mig_mode"], a["mig_mode_pending"], a["persistence_mode"], a["ecc_errors_uncorrected"]) == (
        True,
        False,
        False,
        2,
    )
    assert (b["mig_mode"], b["ecc_errors_uncorrected"], b["memory_total_mib"]) == (None, None, 15360)


def _healthy(**over) -> dict:
    facts = {
        "driver": {"source": "nvml", "version": "580.95.05"},
        "gpus": [
            {
                "index": 0,
                "uuid": "GPU-a",
                "mig_mode": False,
                "mig_mode_pending": False,
                "persistence_mode": True,
                "ecc_errors_uncorrected": 0,
            }
        ],
        "containerd": G.containerd_facts(CONTAINERD_2_CDI, "v2.1.4"),
        "cdi_specs": [{"path": "/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json", "devices": ["GPU-a"]}],
        "device_plugin": {"sockets": ["nvidia-gpu.sock"], "registered": True},
    }
    facts.update(over)
    return facts


def test_a_healthy_cdi_node_has_no_problem():
    assert G.problems(_healthy(), "cdi-cri") == []
    assert G.problems(_healthy(), None) == []


@pytest.mark.parametrize(
    ("over", "strategy", "fragment"),
    [
        ({"driver": {"source": None, "error": "NVML: Driver Not Loaded"}, "gpus": []}, None, "no NVIDIA driver"),
        ({"gpus": []}, None, "sees no GPU"),
        (
            {"gpus": [{"index": 0, "uuid": "GPU-a", "ecc_errors_uncorrected": 3, "persistence_mode": True}]},
            None,
            "3 uncorrected ECC errors",
        ),
        (
            {"gpus": [{"index": 0, "uuid": "GPU-a", "mig_mode": False, "mig_mode_pending": True}]},
            None,
            "MIG mode change pending",
        ),
        ({"gpus": [{"index": 0, "uuid": "GPU-a", "persistence_mode": False}]}, None, "without persistence mode"),
        ({"containerd": G.containerd_facts(None, "v1.7.27")}, "cdi-cri", "containerd has CDI off"),
        ({}, "envvar", "only the NVIDIA container runtime acts on"),
        ({"containerd": G.containerd_facts("version = 2\n", "v1.7.27")}, None, "neither CDI on nor an nvidia runtime"),
        ({"cdi_specs": []}, "cdi-cri", "no CDI spec names nvidia.com/gpu"),
        ({"device_plugin": {"sockets": [], "registered": False}}, None, "no device plugin has registered"),
    ],
)
def test_each_problem_has_its_fix(over, strategy, fragment):
    found = G.problems(_healthy(**over), strategy)
    assert any(fragment in p["problem"] for p in found), found
    assert all(p["fix"] for p in found)


def test_mixed_mig_is_refused():
    gpus = [
        {"index": 0, "uuid": "GPU-a", "mig_mode": True, "mig_mode_pending": True},
        {"index": 1, "uuid": "GPU-b", "mig_mode": False, "mig_mode_pending": False},
    ]
    assert any("mix MIG" in p["problem"] for p in G.problems(_healthy(gpus=gpus), None))


# ---- gang_info's comparison of each node's NVML with what its kubelet advertises -----------------------------------
def _node(name="gpu-0", allocatable=8, labels=None):
    return {"name": name, "allocatable": allocatable, "labels": labels or {}}


def _facts(gpus=8, registered=True):
    return {"gpus": [{"index": i} for i in range(gpus)], "device_plugins": {"registered": registered}}


@pytest.mark.parametrize(
    ("node", "facts", "fragment"),
    [
        (_node(allocatable=8), _facts(8), None),
        (_node(allocatable=32, labels={"nvidia.com/gpu.replicas": "4"}), _facts(8), None),
        (_node(allocatable=0), _facts(0), None),  # no GPU seen: gpu_node_info's own problem
        (
            _node(allocatable=0),
            _facts(8, registered=False),
            "NVML sees 8 GPU(s), the kubelet advertises 0 nvidia.com/gpu: the device plugin is not registered",
        ),
        (_node(allocatable=0), _facts(8, registered=True), "GPUs it found unhealthy"),
        (_node(allocatable=6), _facts(8), "advertises 6 nvidia.com/gpu: the device plugin advertises fewer"),
        (_node(allocatable=32), _facts(8), "more than the driver has: shared GPUs"),
        (_node(allocatable=8, labels={"nvidia.com/gpu.replicas": "4"}), _facts(8), "(x4 replicas: 32)"),
    ],
)
def test_nvml_against_the_kubelet(node, facts, fragment):
    probs = G.advertised_problems([node], {"gpu-0": facts})
    if fragment is None:
        assert probs == []
    else:
        assert len(probs) == 1 and probs[0]["object"] == "Node gpu-0", probs
        assert fragment in probs[0]["message"], probs[0]["message"]
        assert probs[0]["fix"]


def test_facts_of_a_node_the_cluster_does_not_have():
    (prob,) = G.advertised_problems([_node("gpu-0")], {"host-a": _facts(8)})
    assert prob["object"] == "Node host-a" and "does not have" in prob["message"]
    assert G.advertised_problems([_node("gpu-0")], {}) == []
