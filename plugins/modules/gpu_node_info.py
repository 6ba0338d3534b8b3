#!/usr/bin/python
# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_node_info
short_description: What a GPU node has for Kubernetes pods - driver, GPUs, containerd's CDI or NVIDIA runtime, device plugin
version_added: 0.1.0
description:
  - Runs on a GPU node (the node as an Ansible host) and reads, changing nothing, what stands between its GPUs and a
    pod's C(nvidia.com/gpu) limit.
  - The driver through NVML, with the C(pynvml) binding of nvidia-ml-py when it is installed, else through
    C(nvidia-smi) - the driver's version and each GPU's model, UUID, memory, MIG mode (current and pending),
    persistence mode and uncorrected ECC errors since the driver loaded.
  - containerd's configuration - whether CDI is on (containerd 2.x has it on by default, 1.7 off), its CDI spec
    directories, and whether an C(nvidia) runtime (the NVIDIA Container Toolkit's) is configured; the CDI spec files
    that define C(nvidia.com/gpu) devices.
  - The kubelet's device plugin directory - the plugin sockets, and the resources its checkpoint lists as registered.
  - RV(problems) lists what keeps a pod from getting a GPU, each with its fix (no driver, a GPU with ECC errors or a
    MIG change pending, a device list strategy the container runtime cannot serve, no device plugin registered).
author:
  - gangsched.kubeflow maintainers (@gangsched)
extends_documentation_fragment:
  - gangsched.kubeflow._attributes
attributes:
  platform:
    description: Runs on the GPU node itself (Linux), as root to read the kubelet's directory.
    support: full
    platforms: posix
  check_mode:
    support: full
    details: Reads only; the same result in check mode.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: Changes nothing, RV(ignore:changed=false).
options:
  device_list_strategy:
    description:
      - The device plugin's device list strategy (the gpu_device_plugin role's C(gpu_device_plugin_device_list_strategy)),
        to check the container runtime against it - V(cdi-cri) and V(cdi-annotations) need CDI on in containerd,
        V(envvar) the NVIDIA container runtime.
      - Unset, the node is only checked to have one of them.
    type: str
    choices: [envvar, cdi-cri, cdi-annotations, volume-mounts]
  driver_root:
    description:
      - Where the driver's files are (V(/), or V(/run/nvidia/driver) for the GPU Operator's driver container).
      - Under another root than V(/), NVML is the driver's C(libnvidia-ml.so.1) under it (loaded before C(pynvml) looks
        for it, so the driver container's library is read, not one the host may hold).
      - C(nvidia-smi) is looked for under it first; a driver container's (under another root than V(/)) runs in that
        root (C(chroot)), with its own libraries.
    type: path
    default: /
  containerd_config:
    description: containerd's configuration file; a missing file means containerd's defaults.
    type: path
    default: /etc/containerd/config.toml
  cdi_spec_dirs:
    description: Directories of CDI specs; empty takes containerd's (C(cdi_spec_dirs)), else C(/etc/cdi) and C(/var/run/cdi).
    type: list
    elements: path
    default: []
  kubelet_root:
    description: The kubelet's root directory (its C(device-plugins) directory is read).
    type: path
    default: /var/lib/kubelet
requirements:
  - nvidia-ml-py (the C(pynvml) module) on the node for NVML; without it C(nvidia-smi) is used
seealso:
  - module: gangsched.kubeflow.gang_info
    description: The cluster's view - the nodes' allocatable GPUs and the device plugin DaemonSets.
"""

EXAMPLES = r"""
# in a play on the GPU nodes (hosts: gpu_nodes, become: true)
- name: Driver, GPUs, container runtime and device plugin of this node
  gangsched.kubeflow.gpu_node_info:
    device_list_strategy: cdi-cri
  register: gpu_node

- name: Nothing keeps a pod from its GPU
  ansible.builtin.assert:
    that: gpu_node.problems | length == 0
    fail_msg: "{{ gpu_node.problems | map(attribute='problem') | join('; ') }}"

- name: A node with the GPU Operator's driver container
  gangsched.kubeflow.gpu_node_info:
    driver_root: /run/nvidia/driver
"""

RETURN = r"""
driver:
  description: The driver - where it was read from (V(nvml), V(nvidia-smi), or null when neither answered), its version,
    the error when it could not be read, and C(library), the driver root's NVML library when one was loaded from there.
  returned: always
  type: dict
  sample: {source: nvml, version: 580.95.05}
gpus:
  description:
    - Each GPU - C(index), C(name), C(uuid), C(memory_total_mib), C(mig_mode) and C(mig_mode_pending),
      C(persistence_mode) (null where the GPU does not support it), C(ecc_errors_uncorrected) since the driver loaded
      (null without ECC).
  returned: always
  type: list
  elements: dict
  sample: [{index: 0, name: NVIDIA H100 80GB HBM3, uuid: GPU-5e1f0000-0000-4000-8000-000000000000, memory_total_mib: 81559,
           mig_mode: false, mig_mode_pending: false, persistence_mode: true, ecc_errors_uncorrected: 0}]
containerd:
  description:
    - containerd's settings for GPUs - C(config_found), C(version) (null when the binary is not on the C(PATH)),
      C(config_version), C(cdi_enabled) (null when it depends on a version not known), C(cdi_spec_dirs),
      C(runtimes), C(default_runtime), C(nvidia_runtime).
  returned: always
  type: dict
  sample: {config_found: true, version: v2.1.4, config_version: 3, cdi_enabled: true, cdi_spec_dirs: [/etc/cdi, /var/run/cdi],
           runtimes: [runc], default_runtime: runc, nvidia_runtime: false}
cdi_specs:
  description: The CDI spec files that define C(nvidia.com/gpu) devices - C(path), and C(devices) (the device names, read
    from JSON specs).
  returned: always
  type: list
  elements: dict
  sample: [{path: /var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json, devices: [GPU-5e1f0000-0000-4000-8000-000000000000]}]
device_plugin:
  description: The kubelet's device plugins - C(sockets) (the plugins' own), C(kubelet_socket) (the kubelet's
    registration socket exists), C(resources) (resource name to the number of devices its checkpoint lists) and
    C(registered) (a plugin registered C(nvidia.com/gpu)).
  returned: always
  type: dict
  sample: {sockets: [nvidia-gpu.sock], kubelet_socket: true, resources: {nvidia.com/gpu: 8}, registered: true}
problems:
  description: What keeps a pod on this node from its GPU, each with C(problem) and C(fix); empty when nothing does.
  returned: always
  type: list
  elements: dict
  sample: [{problem: "no device plugin has registered nvidia.com/gpu with the kubelet on this node (no plugin socket)",
            fix: "install the device plugin (the gpu_device_plugin role) and check that its DaemonSet targets this node"}]
"""

import ctypes
import os
import shutil
import subprocess

from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._module_main import execute
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners._gpu_node_info import gather

try:
    import pynvml
except ImportError:
    pynvml = None


def _run(argv: list[str]) -> tuple[int, str, str]:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 1, "", f"{argv[0]} did not run: {e.__class__.__name__}"
    return p.returncode, p.stdout, p.stderr


def _which(name: str, dirs: list[str]) -> str | None:
    for d in dirs:
        path = os.path.join(d, name)
        if os.access(path, os.X_OK):
            return path
    return shutil.which(name)


def _load_nvml(path: str) -> bool:
    # loaded by its path first, the driver root's library is the one pynvml's dlopen of its soname then finds
    try:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return False
    return True


def run(params: dict, check_mode: bool, diff: bool, name: str, warn) -> dict:
    return dict(changed=False, **gather(params, _run, pynvml, _which, _load_nvml))


def entry() -> dict:
    """The module's options and what it does, for main()."""
    return dict(
        argument_spec=dict(
            device_list_strategy=dict(type="str", choices=["envvar", "cdi-cri", "cdi-annotations", "volume-mounts"]),
            driver_root=dict(type="path", default="/"),
            containerd_config=dict(type="path", default="/etc/containerd/config.toml"),
            cdi_spec_dirs=dict(type="list", elements="path", default=[]),
            kubelet_root=dict(type="path", default="/var/lib/kubelet"),
        ),
        module_kwargs={},
        missing=lambda: None,
        run=run,
    )


def main() -> None:
    execute(entry())


if __name__ == "__main__":
    main()
