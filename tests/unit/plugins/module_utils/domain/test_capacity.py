"""_capacity.device_plugin_ready (and its filter): gang_info's facts say a device plugin release is ready."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gangsched.kubeflow.plugins.filter.gang import device_plugin_ready as as_filter
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._capacity import device_plugin_ready


def _info(*daemonsets, gpus=4):
    return {
        "device_plugins": [{"daemonset": n, "desired": d, "ready": r} for n, d, r in daemonsets],
        "gpus": {"allocatable": gpus},
    }


PLUGIN = ("gpu/nvdp-nvidia-device-plugin", 4, 4)
MPS = ("gpu/nvdp-nvidia-device-plugin-mps-control-daemon", 0, 0)


@pytest.mark.parametrize(
    "info,expected,ready",
    [
        (_info(PLUGIN, MPS), 4, True),  # the MPS daemon's none desired is normal
        (_info(PLUGIN, MPS), 0, True),
        (_info(("gpu/nvdp-nvidia-device-plugin", 4, 3)), 4, False),  # a pod not ready
        (_info(("gpu/nvdp-nvidia-device-plugin", 0, 0)), 0, False),  # no node selected
        (_info(PLUGIN, gpus=2), 4, False),  # GPUs not all allocatable yet
        (_info(PLUGIN, gpus=0), 0, False),  # at least one GPU
        (_info(MPS), 0, False),  # no plugin DaemonSet of the release
        (_info(("other/nvdp-nvidia-device-plugin", 4, 4)), 4, False),  # another namespace's
        (_info(PLUGIN, ("gpu/nvdp-gfd", 4, 2)), 4, False),  # every DaemonSet of the release
        ({}, 0, False),
    ],
)
def test_ready_only_with_every_daemonset_ready_and_the_gpus_allocatable(info, expected, ready):
    assert device_plugin_ready(info, "gpu", "nvdp", expected) is ready
    assert as_filter(info, "gpu", "nvdp", str(expected)) is ready


def test_the_filter_names_what_is_wrong_with_its_input():
    with pytest.raises(AnsibleFilterError, match="needs gang_info's result"):
        as_filter([], "gpu", "nvdp")
    with pytest.raises(AnsibleFilterError, match="expected_gpus must be a whole number, got 'many'"):
        as_filter(_info(PLUGIN), "gpu", "nvdp", "many")
