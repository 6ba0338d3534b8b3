# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what gpu_node_info reads on a GPU node (read-only) — the driver through NVML
(``pynvml``, from nvidia-ml-py) or ``nvidia-smi`` when the binding is absent, containerd's configuration and
version, the CDI specs, and the device plugin sockets and registrations of the kubelet — and the problems
``_gpu_node_facts`` finds in them. Not a public API."""

from __future__ import annotations

import json
import os

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _gpu_node_facts

# NVML's error code for a query the GPU does not support (MIG mode, ECC counters on consumer boards)
NVML_ERROR_NOT_SUPPORTED = 3


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def read_nvml(nvml) -> dict:
    """The driver and its GPUs through ``nvml`` (the pynvml module): ``{"driver": {...}, "gpus": [...]}``."""
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as e:
        return {"driver": {"source": None, "error": f"NVML: {_text(e)}"}, "gpus": []}
    try:
        driver = {"source": "nvml", "version": _text(nvml.nvmlSystemGetDriverVersion())}
        gpus = []
        for i in range(nvml.nvmlDeviceGetCount()):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            gpu = {
                "index": i,
                "name": _text(nvml.nvmlDeviceGetName(h)),
                "uuid": _text(nvml.nvmlDeviceGetUUID(h)),
                "memory_total_mib": nvml.nvmlDeviceGetMemoryInfo(h).total // (1024 * 1024),
            }

            def optional(call, *args):
                try:
                    return call(*args)
                except nvml.NVMLError:
                    return None

            mig = optional(nvml.nvmlDeviceGetMigMode, h)
            gpu["mig_mode"] = bool(mig[0]) if mig is not None else None
            gpu["mig_mode_pending"] = bool(mig[1]) if mig is not None else None
            pm = optional(nvml.nvmlDeviceGetPersistenceMode, h)
            gpu["persistence_mode"] = bool(pm) if pm is not None else None
            # uncorrected (1) volatile (0) errors: since the driver loaded
            gpu["ecc_errors_uncorrected"] = optional(nvml.nvmlDeviceGetTotalEccErrors, h, 1, 0)
            gpus.append(gpu)
        return {"driver": driver, "gpus": gpus}
    except nvml.NVMLError as e:
        return {"driver": {"source": None, "error": f"NVML: {_text(e)}"}, "gpus": []}
    finally:
        try:
            nvml.nvmlShutdown()
        except nvml.NVMLError:
            pass


def read_smi(run, smi: list[str]) -> dict:
    """The driver and its GPUs through ``nvidia-smi`` (``smi``: its command; ``run(argv) -> (rc, stdout, stderr)``)."""
    rc, out, err = run([*smi, "--query-gpu=driver_version", "--format=csv,noheader"])
    if rc != 0:
        return {"driver": {"source": None, "error": f"nvidia-smi: {(err or out).strip() or f'exit {rc}'}"}, "gpus": []}
    version = out.strip().splitlines()[0].strip() if out.strip() else None
    query = f"--query-gpu={','.join(_gpu_node_facts.SMI_FIELDS)}"
    rc, out, err = run([*smi, query, "--format=csv,noheader,nounits"])
    if rc != 0:
        return {"driver": {"source": None, "error": f"nvidia-smi: {(err or out).strip() or f'exit {rc}'}"}, "gpus": []}
    return {"driver": {"source": "nvidia-smi", "version": version}, "gpus": _gpu_node_facts.parse_smi(out)}


def read_file(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def cdi_specs(dirs: list[str]) -> list[dict]:
    """The CDI spec files of ``dirs`` that define ``nvidia.com/gpu`` devices: path and device names."""
    out = []
    for d in dirs:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for name in names:
            if not name.endswith((".json", ".yaml", ".yml")):
                continue
            path = os.path.join(d, name)
            text = read_file(path) or ""
            if _gpu_node_facts.RESOURCE not in text:
                continue
            devices = []
            if name.endswith(".json"):
                try:
                    devices = [dev.get("name") for dev in json.loads(text).get("devices", [])]
                except ValueError:
                    pass
            out.append({"path": path, "devices": devices})
    return out


def device_plugin(kubelet_root: str) -> dict:
    """The device plugin sockets in the kubelet's directory, and the resources the kubelet's checkpoint lists."""
    d = os.path.join(kubelet_root, "device-plugins")
    try:
        sockets = sorted(n for n in os.listdir(d) if n.endswith(".sock") and n != "kubelet.sock")
    except OSError:
        sockets = []
    registered: dict[str, int] = {}
    text = read_file(os.path.join(d, "kubelet_internal_checkpoint"))
    if text:
        try:
            devices = (json.loads(text).get("Data") or {}).get("RegisteredDevices") or {}
            registered = {k: len(v or []) for k, v in devices.items()}
        except (ValueError, AttributeError):
            pass
    return {
        "sockets": sockets,
        "kubelet_socket": os.path.exists(os.path.join(d, "kubelet.sock")),
        "resources": registered,
        "registered": bool(registered.get(_gpu_node_facts.RESOURCE)) and bool(sockets),
    }


def nvml_library(root: str) -> str | None:
    """The driver's ``libnvidia-ml.so.1`` under a driver root other than ``/``, or None."""
    if os.path.normpath(root) == "/":
        return None
    for d in _gpu_node_facts.LIB_DIRS:
        path = os.path.join(root, d, "libnvidia-ml.so.1")
        if os.path.exists(path):
            return path
    return None


def gather(params: dict, run, nvml, which, load=None) -> dict:
    """Everything the module returns. ``nvml``: the pynvml module, or None when nvidia-ml-py is not installed;
    ``which(name, dirs) -> path or None`` finds nvidia-smi and containerd; ``load(path) -> bool`` loads the driver
    root's NVML library before pynvml looks for its own."""
    root = params["driver_root"]
    library = nvml_library(root) if nvml is not None and load is not None else None
    if library and not load(library):
        library = None
    if os.path.normpath(root) != "/" and os.access(os.path.join(root, "usr/bin/nvidia-smi"), os.X_OK):
        # a driver container's nvidia-smi with its own libraries: run in its root, as the GPU Operator does
        smi = ["chroot", root, "/usr/bin/nvidia-smi"]
    else:
        found = which("nvidia-smi", [os.path.join(root, "usr/bin"), os.path.join(root, "bin")])
        smi = [found] if found else None
    facts: dict
    if nvml is not None:
        facts = read_nvml(nvml)
        if library:
            facts["driver"]["library"] = library
        if not facts["driver"]["source"] and smi:
            facts = read_smi(run, smi)
    elif smi:
        facts = read_smi(run, smi)
    else:
        facts = {"driver": {"source": None, "error": "no nvidia-ml-py (pynvml) and no nvidia-smi"}, "gpus": []}
    version = None
    ctd = which("containerd", [])
    if ctd:
        rc, out, _err = run([ctd, "--version"])
        version = _gpu_node_facts.containerd_version(out) if rc == 0 else None
    facts["containerd"] = _gpu_node_facts.containerd_facts(read_file(params["containerd_config"]), version)
    dirs = params["cdi_spec_dirs"] or facts["containerd"].get("cdi_spec_dirs") or ["/etc/cdi", "/var/run/cdi"]
    facts["cdi_specs"] = cdi_specs(dirs)
    facts["device_plugin"] = device_plugin(params["kubelet_root"])
    facts["problems"] = _gpu_node_facts.problems(facts, params.get("device_list_strategy"))
    return facts
