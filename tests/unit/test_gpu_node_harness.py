"""The GPU-node harness's logic without a node: the rendered DaemonSet's plugin container as the node runs it
(environment, mounts, what config-manager writes), time-slicing read from its config, the pod-resources API's wire
format (HPACK integers, protobuf fields), and the OCI image layout written for ctr."""

from __future__ import annotations

import hashlib
import json
import struct
import tarfile

import pytest
import yaml

from lab import versions
from lab.gpu import harness, oci, podresources

CONFIG = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 3\n"


def _rendered(config_map: dict | None = None, default: str = "") -> list[dict]:
    pod = {
        "containers": [
            {"name": "sidecar", "command": ["config-manager"]},
            {
                "name": "nvidia-device-plugin-ctr",
                "command": ["nvidia-device-plugin"],
                "env": [
                    {"name": "DEVICE_LIST_STRATEGY", "value": "cdi-cri"},
                    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                ],
                "volumeMounts": [
                    {"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"},
                    {"name": "driver-root", "mountPath": "/driver-root", "readOnly": True},
                ],
            },
        ],
        "volumes": [
            {"name": "device-plugin", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}},
            {"name": "driver-root", "hostPath": {"path": "/run/nvidia/driver"}},
        ],
    }
    objects = [{"kind": "DaemonSet", "metadata": {"name": "nvidia-device-plugin"}, "spec": {"template": {"spec": pod}}}]
    if config_map is not None:
        pod["initContainers"] = [
            {
                "name": "init",
                "command": ["config-manager"],
                "env": [
                    {"name": "CONFIG_FILE_SRCDIR", "value": "/available-configs"},
                    {"name": "CONFIG_FILE_DST", "value": "/config/config.yaml"},
                    {"name": "DEFAULT_CONFIG", "value": default},
                    {"name": "FALLBACK_STRATEGIES", "value": "named,single"},
                ],
                "volumeMounts": [{"name": "available-configs", "mountPath": "/available-configs"}],
            }
        ]
        plugin = pod["containers"][1]
        plugin["env"].append({"name": "CONFIG_FILE", "value": "/config/config.yaml"})
        plugin["volumeMounts"] += [
            {"name": "available-configs", "mountPath": "/available-configs"},
            {"name": "config", "mountPath": "/config"},
        ]
        pod["volumes"] += [
            {"name": "available-configs", "configMap": {"name": "cfgs"}},
            {"name": "config", "emptyDir": {}},
        ]
        objects.append({"kind": "ConfigMap", "metadata": {"name": "cfgs"}, "data": config_map})
    return objects


def test_the_plugin_container_as_the_node_runs_it():
    c = harness.plugin_container(_rendered())
    assert c["image"] == ""
    assert c["env"] == {"DEVICE_LIST_STRATEGY": "cdi-cri"}  # valueFrom has no value on a node without an API
    assert c["mounts"] == [
        {
            "mountPath": "/var/lib/kubelet/device-plugins",
            "readOnly": False,
            "hostPath": "/var/lib/kubelet/device-plugins",
        },
        {"mountPath": "/driver-root", "readOnly": True, "hostPath": "/run/nvidia/driver"},
    ]
    assert c["config"] is None
    assert harness.sharing(c) == ("nvidia.com/gpu", 1)


@pytest.mark.parametrize(
    ("data", "default", "chosen"),
    [
        ({"default": CONFIG, "other": "version: v1\n"}, "", "default"),
        ({"only": CONFIG}, "", "only"),
        ({"a": "version: v1\n", "b": CONFIG}, "b", "b"),
    ],
)
def test_config_manager_picks_the_config_the_plugin_reads(data, default, chosen):
    c = harness.plugin_container(_rendered(data, default))
    assert c["config"] == chosen
    config_mount = next(m for m in c["mounts"] if m["mountPath"] == "/config")
    assert config_mount["files"] == {"config.yaml": data[chosen]}
    assert next(m for m in c["mounts"] if m["mountPath"] == "/available-configs")["files"] == data
    assert harness.sharing(c) == (("nvidia.com/gpu", 3) if data[chosen] == CONFIG else ("nvidia.com/gpu", 1))


def test_config_manager_without_a_config_to_pick_is_refused():
    with pytest.raises(harness.HarnessError, match="no config to use among"):
        harness.plugin_container(_rendered({"a": "x", "b": "y"}))


def test_time_slicing_renamed_by_default():
    c = harness.plugin_container(
        _rendered({"default": CONFIG.replace("timeSlicing:\n", "timeSlicing:\n    renameByDefault: true\n")})
    )
    assert harness.sharing(c) == ("nvidia.com/gpu.shared", 3)


def test_no_plugin_container_is_refused():
    with pytest.raises(harness.HarnessError, match="no DaemonSet container runs nvidia-device-plugin"):
        harness.plugin_container([{"kind": "ConfigMap", "metadata": {"name": "x"}}])


def test_hpack_integers_as_rfc_7541_gives_them():
    assert podresources._hpack_int(10, 5) == bytes([10])
    assert podresources._hpack_int(1337, 5) == bytes([31, 154, 10])
    assert podresources._hpack_int(42, 8) == bytes([42])


def _ld(number: int, payload: bytes) -> bytes:
    return bytes([number << 3 | 2, len(payload)]) + payload


def test_protobuf_fields_of_an_allocatable_response():
    devices = _ld(1, b"nvidia.com/gpu") + _ld(2, b"GPU-a") + _ld(2, b"GPU-b")
    message = _ld(1, devices) + bytes([2 << 3, 7])  # cpu_ids = 7
    assert podresources.fields(message) == [(1, devices), (2, 7)]
    assert podresources._devices(devices) == ("nvidia.com/gpu", ["GPU-a", "GPU-b"])


def test_frames_are_http2_frames():
    frame = podresources._frame(0, 1, 1, b"abc")
    assert frame[:3] == b"\x00\x00\x03" and frame[3:5] == b"\x00\x01" and struct.unpack(">I", frame[5:9])[0] == 1


def test_an_oci_image_ctr_can_import(tmp_path):
    (tmp_path / "pause").write_bytes(b"\x7fELF...")
    (tmp_path / "pause").chmod(0o755)
    out = tmp_path / "pause.tar"
    digest = oci.write_image(out, "gangsched.lab/pause:v1", {"/pause": tmp_path / "pause"}, ["/pause"])
    with tarfile.open(out) as tar:
        index = json.load(tar.extractfile("index.json"))
        manifest = json.load(tar.extractfile("blobs/sha256/" + digest.split(":")[1]))
        config = json.load(tar.extractfile("blobs/sha256/" + manifest["config"]["digest"].split(":")[1]))
        layer = tar.extractfile("blobs/sha256/" + manifest["layers"][0]["digest"].split(":")[1]).read()
    assert index["manifests"][0]["annotations"]["io.containerd.image.name"] == "gangsched.lab/pause:v1"
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(layer).hexdigest()]
    assert config["config"]["Entrypoint"] == ["/pause"]
    # the same files give the same image
    assert (
        oci.write_image(tmp_path / "again.tar", "gangsched.lab/pause:v1", {"/pause": tmp_path / "pause"}, ["/pause"])
        == digest
    )


def test_the_lab_builds_the_plugin_the_role_pins():
    defaults = yaml.safe_load((harness.REPO / "roles/gpu_device_plugin/defaults/main.yml").read_text())
    assert f"v{defaults['gpu_device_plugin_version']}" == versions.NVIDIA_DEVICE_PLUGIN
