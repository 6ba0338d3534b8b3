# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what gpu_node_info decides from what it read on a GPU node (pure: no file, process
or library is touched here) — containerd's CDI and NVIDIA runtime settings from its configuration text, GPUs from
``nvidia-smi``'s CSV, and the node's problems, each with its fix. Not a public API."""

from __future__ import annotations

import json
import re

RESOURCE = "nvidia.com/gpu"
CDI_STRATEGIES = ("cdi-cri", "cdi-annotations")
# where a driver root holds the driver's libraries (distributions' multiarch directories, then the driver's own)
LIB_DIRS = ("usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "usr/lib64", "lib64", "usr/local/nvidia/lib64")
# nvidia-smi --query-gpu fields, in the order the module asks for them
SMI_FIELDS = (
    "index",
    "name",
    "uuid",
    "memory.total",
    "mig.mode.current",
    "mig.mode.pending",
    "persistence_mode",
    "ecc.errors.uncorrected.volatile.total",
)


def _value(raw: str):
    raw = raw.strip()
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    if raw.startswith("["):
        try:
            return json.loads(raw.replace("'", '"'))
        except ValueError:
            return raw
    if raw[:1] in ('"', "'"):
        return raw[1 : raw.rfind(raw[0])] if raw.rfind(raw[0]) > 0 else raw[1:]
    try:
        return int(raw)
    except ValueError:
        return raw


def _section(header: str) -> list[str]:
    """A TOML table header as its keys: [plugins."io.containerd.grpc.v1.cri".containerd] -> [plugins, io..., ...]."""
    return [p.strip().strip("\"'") for p in re.findall(r"\"[^\"]*\"|'[^']*'|[^.]+", header.strip("[] "))]


def containerd_version(text: str) -> str | None:
    """The version ``containerd --version`` prints, as ``v2.1.4``: upstream's release prints ``v2.1.4``, distributions'
    and Docker's ``containerd.io`` packages ``1.7.27``, a build without release flags ``2.1.4+unknown``."""
    for word in text.split()[1:]:
        m = re.fullmatch(r"v?(\d+\.\d+\.\d+)(?:[-+~][0-9A-Za-z.+~-]*)?", word)
        if m:
            return f"v{m.group(1)}"
    return None


def containerd_facts(text: str | None, version: str | None) -> dict:
    """containerd's CDI and NVIDIA runtime settings from its configuration's text (None: no file, the defaults) and
    its version (``v2.1.4``; None when unknown). ``cdi_enabled`` is None when it depends on a version not known.

    Reads the keys one per line (what containerd's own ``config default`` writes); a value spread over several lines
    is not read."""
    major = None
    if version:
        m = re.match(r"v?(\d+)\.", version)
        major = int(m.group(1)) if m else None
    facts: dict = {
        "config_found": text is not None,
        "version": version,
        "config_version": None,
        "cdi_enabled": None,
        "cdi_spec_dirs": None,
        "runtimes": [],
        "default_runtime": None,
        "nvidia_runtime": False,
    }
    section: list[str] = []
    for raw in (text or "").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("["):
            section = _section(line)
            if "runtimes" in section and section.index("runtimes") + 1 < len(section):
                name = section[section.index("runtimes") + 1]
                if name not in facts["runtimes"]:
                    facts["runtimes"].append(name)
            continue
        key, sep, value = line.partition("=")
        if not sep:
            continue
        key, value = key.strip(), _value(value)
        if key == "version" and not section:
            facts["config_version"] = value
        elif key == "enable_cdi":
            facts["cdi_enabled"] = bool(value)
        elif key == "cdi_spec_dirs" and isinstance(value, list):
            facts["cdi_spec_dirs"] = value
        elif key == "default_runtime_name":
            facts["default_runtime"] = value
        elif key in ("BinaryName", "runtime_path", "runtime_engine") and "nvidia" in str(value):
            facts["nvidia_runtime"] = True
    if any("nvidia" in r for r in facts["runtimes"]):
        facts["nvidia_runtime"] = True
    if facts["cdi_enabled"] is None:
        # containerd 2.0 turned CDI on by default (a version 3 configuration is 2.x's); 1.7 had it off
        if major is not None:
            facts["cdi_enabled"] = major >= 2
        elif facts["config_version"] == 3:
            facts["cdi_enabled"] = True
    if facts["cdi_spec_dirs"] is None and facts["cdi_enabled"]:
        facts["cdi_spec_dirs"] = ["/etc/cdi", "/var/run/cdi"]
    return facts


def parse_smi(csv: str) -> list[dict]:
    """GPUs from ``nvidia-smi --query-gpu=<SMI_FIELDS> --format=csv,noheader,nounits``."""
    gpus = []
    for line in csv.splitlines():
        cols = [c.strip() for c in line.split(",")]
        if len(cols) != len(SMI_FIELDS):
            continue
        row = dict(zip(SMI_FIELDS, cols, strict=True))

        def num(v: str):
            return int(v) if v.isdigit() else None

        gpus.append(
            {
                "index": num(row["index"]),
                "name": row["name"],
                "uuid": row["uuid"],
                "memory_total_mib": num(row["memory.total"]),
                "mig_mode": _mode(row["mig.mode.current"]),
                "mig_mode_pending": _mode(row["mig.mode.pending"]),
                "persistence_mode": _mode(row["persistence_mode"]),
                "ecc_errors_uncorrected": num(row["ecc.errors.uncorrected.volatile.total"]),
            }
        )
    return gpus


def _mode(v: str) -> bool | None:
    v = v.strip().lower()
    if v in ("enabled", "1", "on"):
        return True
    if v in ("disabled", "0", "off"):
        return False
    return None


def problems(facts: dict, device_list_strategy: str | None) -> list[dict]:
    """What stands between this node and a GPU in a pod, each as ``{problem, fix}``; ``device_list_strategy`` is the
    device plugin's (the gpu_device_plugin role's), None when not known."""
    out: list[dict] = []

    def add(problem: str, fix: str) -> None:
        out.append({"problem": problem, "fix": fix})

    driver = facts.get("driver") or {}
    gpus = facts.get("gpus") or []
    if not driver.get("source"):
        add(
            f"no NVIDIA driver answers on this node ({driver.get('error') or 'neither NVML nor nvidia-smi found'})",
            "install the NVIDIA driver on the node (or run the GPU Operator's driver container), then check with "
            "nvidia-smi; on a node without GPUs, leave it out of the GPU node group",
        )
    elif not gpus:
        add(
            f"the NVIDIA driver ({driver.get('version')}) sees no GPU",
            "check that the GPUs are attached (lspci | grep -i nvidia) and the kernel module loaded "
            "(dmesg | grep -i nvrm)",
        )
    for g in gpus:
        label = f"GPU {g.get('index')} ({g.get('uuid')})"
        if g.get("ecc_errors_uncorrected"):
            add(
                f"{label} has {g['ecc_errors_uncorrected']} uncorrected ECC errors since the driver loaded",
                "drain the node and reset the GPU (nvidia-smi -r -i <index>) or have it replaced: the device plugin "
                "still advertises it until its health check marks it",
            )
        if g.get("mig_mode_pending") is not None and g.get("mig_mode") != g.get("mig_mode_pending"):
            add(
                f"{label} has a MIG mode change pending "
                f"(current {g.get('mig_mode')}, pending {g.get('mig_mode_pending')})",
                "reset the GPU or reboot the node so that the change takes effect before the device plugin counts it",
            )
        if g.get("persistence_mode") is False:
            add(
                f"{label} runs without persistence mode: the driver tears the GPU down when no process holds it",
                "start nvidia-persistenced on the node (or nvidia-smi -pm 1)",
            )
    migs = {g.get("mig_mode") for g in gpus if g.get("mig_mode") is not None}
    if len(migs) > 1:
        add(
            "the GPUs mix MIG enabled and disabled: the device plugin's single MIG strategy refuses such a node",
            "enable or disable MIG on every GPU of the node, or run the device plugin with the mixed MIG strategy",
        )

    ctd = facts.get("containerd") or {}
    cdi, nvrt = ctd.get("cdi_enabled"), ctd.get("nvidia_runtime")
    if device_list_strategy in CDI_STRATEGIES and cdi is False:
        add(
            f"the device plugin's strategy {device_list_strategy} names CDI devices, but containerd has CDI off",
            'set enable_cdi = true (and cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]) in containerd\'s CRI plugin '
            "section (containerd 1.7; 2.x has it on by default) and restart containerd",
        )
    if device_list_strategy == "envvar" and not nvrt:
        add(
            "the device plugin's strategy envvar sets NVIDIA_VISIBLE_DEVICES, which only the NVIDIA container runtime "
            "acts on, and containerd has no nvidia runtime",
            "install the NVIDIA Container Toolkit and run nvidia-ctk runtime configure --runtime=containerd (with a "
            "RuntimeClass for the pods, or --set-as-default), or use the strategy cdi-cri",
        )
    if device_list_strategy is None and not cdi and not nvrt and ctd.get("config_found") is not None:
        add(
            "containerd has neither CDI on nor an nvidia runtime: no container started here gets a GPU",
            "enable CDI in containerd (enable_cdi = true; containerd 2.x has it on) and use the device plugin's "
            "strategy cdi-cri, or install the NVIDIA Container Toolkit's runtime",
        )
    if cdi and (facts.get("device_plugin") or {}).get("registered") and not facts.get("cdi_specs"):
        add(
            "containerd has CDI on and a device plugin is registered, but no CDI spec names nvidia.com/gpu devices",
            "run the device plugin with a CDI strategy (gpu_device_plugin_device_list_strategy: cdi-cri), which writes "
            "its spec to /var/run/cdi, or generate one (nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml)",
        )

    dp = facts.get("device_plugin") or {}
    if driver.get("source") and gpus and not dp.get("registered"):
        add(
            f"no device plugin has registered {RESOURCE} with the kubelet on this node "
            f"({'sockets: ' + ', '.join(dp.get('sockets') or []) if dp.get('sockets') else 'no plugin socket'})",
            "install the device plugin (the gpu_device_plugin role) and check that its DaemonSet targets this node "
            "(its labels, nvidia.com/gpu.present=true) and that the plugin's pod can load NVML",
        )
    return out


# the label GPU Feature Discovery sets on a node whose GPUs the device plugin shares (time-slicing, MPS): each GPU is
# advertised this many times
REPLICAS_LABEL = "nvidia.com/gpu.replicas"


def _label_replicas(node: dict) -> int | None:
    value = str((node.get("labels") or {}).get(REPLICAS_LABEL) or "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def replicas(nodes: list[dict], facts: dict) -> dict[str, int]:
    """How many ways each node shares each of its physical GPUs (1: not shared), from the evidence there is: GPU
    Feature Discovery's ``nvidia.com/gpu.replicas`` label where set; else, on a node gpu_node_info saw (``facts``
    keyed by node name), the kubelet's advertised ``nvidia.com/gpu`` over the GPUs NVML sees, when that is a whole
    multiple above 1 (what a time-slicing or MPS config advertises)."""
    out = {}
    for node in nodes:
        seen = len(((facts or {}).get(node["name"]) or {}).get("gpus") or [])
        advertised = node.get("allocatable") or 0
        by_label = _label_replicas(node)
        if by_label:
            out[node["name"]] = by_label
        elif seen and advertised > seen and advertised % seen == 0:
            out[node["name"]] = advertised // seen
        else:
            out[node["name"]] = 1
    return out


def advertised_problems(nodes: list[dict], facts: dict) -> list[dict]:
    """gang_info's comparison of each GPU node's own view with the cluster's: ``facts`` maps a node's name to
    gpu_node_info's result on that node, ``nodes`` are gang_info's node entries (``name``, ``allocatable``,
    ``labels``). A node whose kubelet advertises another number of ``nvidia.com/gpu`` than NVML sees (times the
    replicas of a shared GPU) is a problem naming both numbers, the likely cause and the fix; a name the cluster has
    no node of, too. A node whose NVML saw no GPU is left to gpu_node_info's own problems."""
    by_name = {n["name"]: n for n in nodes}
    out = []
    for name, f in sorted((facts or {}).items()):
        node = by_name.get(name)
        if node is None:
            out.append(
                {
                    "object": f"Node {name}",
                    "message": f"gpu_node_info's facts name node {name}, which the cluster does not have",
                    "fix": "key gang_info's gpu_nodes by the nodes' names as the cluster knows them "
                    "(kubectl get nodes), for example each host's gangsched_node_name",
                }
            )
            continue
        seen = len((f or {}).get("gpus") or [])
        if not seen:
            continue
        replicas = _label_replicas(node) or 1
        expected, advertised = seen * replicas, node.get("allocatable") or 0
        if advertised == expected:
            continue
        sees = f"NVML sees {seen} GPU(s)" + (f" (x{replicas} replicas: {expected})" if replicas > 1 else "")
        if advertised == 0 and not ((f.get("device_plugins") or {}).get("registered")):
            why = "the device plugin is not registered with this node's kubelet"
            fix = (
                "run the device plugin on this node (gpu_device_plugin: its DaemonSet's node selector, affinity and "
                "tolerations must match the node) and see gpu_node_info's problems for it (driver root, CDI, runtime)"
            )
        elif advertised < expected:
            why = "the device plugin advertises fewer than the driver has: GPUs it found unhealthy, or MIG devices"
            fix = (
                "read the device plugin's log on this node (a GPU with XID or ECC errors, or whose driver reports no "
                "health events, is marked unhealthy), and gpu_node_info's ECC and MIG facts"
            )
        else:
            why = (
                "more than the driver has: shared GPUs (time-slicing or MPS) without GPU Feature Discovery's "
                f"{REPLICAS_LABEL} label, or a capacity not set by the device plugin"
            )
            fix = (
                f"label the node {REPLICAS_LABEL}=<replicas> (GPU Feature Discovery does) or rename the shared "
                f"resource (nvidia.com/gpu.shared): a gang that counts {RESOURCE} cannot tell shared GPUs from whole "
                "ones"
            )
        out.append(
            {
                "object": f"Node {name}",
                "message": f"{sees}, the kubelet advertises {advertised} {RESOURCE}: {why}",
                "fix": fix,
            }
        )
    return out
