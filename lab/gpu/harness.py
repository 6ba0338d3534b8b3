"""``python -m lab gpu-node``: a GPU node for real — containerd, runc, a standalone kubelet and NVIDIA's device
plugin, built from their Go modules — proving the first link of the chain: the plugin registers, the kubelet's
allocatable ``nvidia.com/gpu`` equals the devices found, a pod with the limit gets its device and a pod
without it does not.

The plugin runs as the ``gpu_device_plugin`` role renders it: the role runs in render-only mode with the
harness's variables (the device list strategy, the driver root), and the rendered DaemonSet's plugin container
(its environment, arguments and hostPath mounts) is what the node starts; nothing here repeats its flags.

Without a GPU the driver is a stand-in (``c/nvml_standin.c``: NVML for GPUs that are device nodes in the node's
own /dev); with one (``/dev/nvidiactl`` and the driver's ``libnvidia-ml.so.1``) the real driver is used. Everything
runs in private PID and mount namespaces with its state on tmpfs (:mod:`lab.gpu.node`); the cgroups the kubelet
and runc made are removed afterwards, so the host is left as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from .. import build as B
from .. import versions as V
from .. import yamlio
from ..paths import REPO, cache_dir, state_dir
from . import bundle, native, node

STANDIN_DRIVER_ROOT = "/run/nvidia/driver"
STANDIN_HOOK = "/run/gangsched-gpu-node/bin/nvidia-cdi-hook"
STRATEGIES = ("cdi-cri", "cdi-annotations", "envvar")
PLUGIN_COMMAND = "nvidia-device-plugin"
_LIB_DIRS = ("usr/lib/x86_64-linux-gnu", "usr/lib64", "lib64", "usr/lib/aarch64-linux-gnu", "usr/local/nvidia/lib64")


class HarnessError(RuntimeError):
    pass


def nvml_dir(root: str = "/") -> str | None:
    """The directory of the driver's ``libnvidia-ml.so.1`` under ``root``, or None."""
    for d in _LIB_DIRS:
        if (Path(root) / d / "libnvidia-ml.so.1").exists():
            return str(Path(root) / d)
    return None


def gpu_present() -> tuple[bool, str]:
    """Whether this machine has an NVIDIA GPU with its driver, and why not."""
    if not Path("/dev/nvidiactl").exists():
        return False, "no /dev/nvidiactl (no NVIDIA driver loaded)"
    if nvml_dir() is None:
        return False, f"no libnvidia-ml.so.1 in {', '.join('/' + d for d in _LIB_DIRS)}"
    return True, "NVIDIA driver present"


def bundle_dir(given: Path | None = None) -> Path | None:
    """The bundle to run from: the one given, else ``$GANGSCHED_GPU_BUNDLE`` (so that the tests run from one on a GPU
    machine that cannot build), else None."""
    env = os.environ.get("GANGSCHED_GPU_BUNDLE")
    return Path(given) if given else Path(env) if env else None


def ensure_built(log=print, from_bundle: Path | None = None) -> bundle.Pieces:
    """What the node runs: the binaries by name, the native pieces' directory and the device plugin's chart —
    built into the cache (skipping what it has), or taken from a bundle (:mod:`lab.gpu.bundle`; ``from_bundle``,
    else ``$GANGSCHED_GPU_BUNDLE``), building nothing."""
    from_bundle = bundle_dir(from_bundle)
    if from_bundle is not None:
        try:
            return bundle.load(from_bundle, log=log)
        except bundle.BundleError as e:
            raise HarnessError(str(e)) from None
    B.build([*B.GPU_NODE_UNITS, "helm", "nvidia-device-plugin"], log=log)
    built = native.build(log=lambda *_: None)
    bins = {n: str(B.binary_path(n)) for n in bundle.BINARIES}
    return bundle.Pieces(bins, built, B.artifact_path("nvidia-device-plugin", "chart"))


def ansible_command(name: str) -> str:
    """An Ansible command of the Python running this (its own bin directory first, then the PATH)."""
    own = Path(sys.executable).parent / name
    found = str(own) if own.exists() else shutil.which(name)
    if not found:
        raise HarnessError(f"{name} is not next to {sys.executable} nor on PATH; install ansible-core for that Python")
    return found


def node_info_command(
    base: Path, strategy: str, driver_root: str, containerd_config: str, cdi_dir: str, kubelet_root: str
) -> dict:
    """How the node runs ``gpu_node_info`` on itself, as a play on a GPU host would (ad hoc), with the collection
    where :func:`render_role` put it under ``base``."""
    args = {
        "device_list_strategy": strategy,
        "driver_root": driver_root,
        "containerd_config": containerd_config,
        "cdi_spec_dirs": [cdi_dir],
        "kubelet_root": kubelet_root,
    }
    argv = [ansible_command("ansible"), "localhost", "-c", "local", "-i", "localhost,"]
    argv += ["-m", "gangsched.kubeflow.gpu_node_info", "-a", json.dumps(args)]
    return {
        "argv": argv,
        "env": {
            "ANSIBLE_COLLECTIONS_PATH": str(base / "collections"),
            # ad hoc's own stdout callback (minimal): "localhost | SUCCESS => {result}"; the json one is ansible.posix's
            "ANSIBLE_STDOUT_CALLBACK": "minimal",
            "ANSIBLE_LOCALHOST_WARNING": "0",
            "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
            "ANSIBLE_LOCAL_TEMP": "/tmp/ansible-local",
            "ANSIBLE_REMOTE_TEMP": "/tmp/ansible-remote",
            "HOME": "/tmp",
            "LC_ALL": "C.UTF-8",
        },
    }


def render_role(role_vars: dict, helm: str, out: Path, chart: Path, collections: Path | None = None) -> list[dict]:
    """The ``gpu_device_plugin`` role in render-only mode with ``role_vars``; the objects it wrote."""
    coll = out / "collections" / "ansible_collections" / "gangsched"
    coll.mkdir(parents=True, exist_ok=True)
    link = coll / "kubeflow"
    if not link.is_symlink():
        link.symlink_to(REPO)
    rendered = out / "rendered"
    shutil.rmtree(rendered, ignore_errors=True)
    play = out / "render.yml"
    play.write_text(
        "- name: The GPU device plugin as the role renders it\n  hosts: localhost\n  gather_facts: false\n"
        "  roles:\n    - role: gangsched.kubeflow.gpu_device_plugin\n"
    )
    variables = {
        "gpu_device_plugin_chart_repo_url": "",
        "gpu_device_plugin_chart_ref": str(chart),
        "gpu_device_plugin_helm_binary": helm,
        **role_vars,
        "gpu_device_plugin_render_only": True,
        "gpu_device_plugin_render_dir": str(rendered),
    }
    (out / "render-vars.json").write_text(json.dumps(variables))
    env = {
        **os.environ,
        "ANSIBLE_COLLECTIONS_PATH": ":".join(str(p) for p in (out / "collections", collections) if p),
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
        "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
    }
    cmd = [ansible_command("ansible-playbook"), "-i", "localhost,", "-c", "local", str(play)]
    cmd += ["-e", f"@{out / 'render-vars.json'}"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    if p.returncode != 0:
        tail = "\n".join((p.stdout + p.stderr).splitlines()[-25:])
        raise HarnessError(f"the gpu_device_plugin role did not render (rc {p.returncode}):\n{tail}")
    objects = []
    for f in sorted(rendered.glob("*.y*ml")):
        objects.extend(o for o in yamlio.load_all(f.read_text()) if o)
    return objects


def plugin_container(objects: list[dict]) -> dict:
    """The rendered DaemonSet's device plugin container as the node runs it: its environment (values given in the
    manifest), its arguments, and its mounts with where each comes from on the node (hostPath, or a directory the
    node makes for an emptyDir, or a ConfigMap's files; the chart's config-manager init container copies the
    default config, which the node does too)."""
    for o in objects:
        if o.get("kind") != "DaemonSet":
            continue
        pod = o["spec"]["template"]["spec"]
        for c in pod.get("containers", []):
            if (c.get("command") or [""])[0] != PLUGIN_COMMAND:
                continue
            volumes = {v["name"]: v for v in pod.get("volumes", [])}
            configmaps = {x["metadata"]["name"]: x.get("data", {}) for x in objects if x.get("kind") == "ConfigMap"}
            mounts = []
            for m in c.get("volumeMounts", []):
                v = volumes.get(m["name"], {})
                mount = {"mountPath": m["mountPath"], "readOnly": bool(m.get("readOnly"))}
                if "hostPath" in v:
                    mount["hostPath"] = v["hostPath"]["path"]
                elif "emptyDir" in v:
                    mount["hostPath"] = f"/run/gangsched-gpu-node/volumes/{m['name']}"
                elif "configMap" in v:
                    mount["hostPath"] = f"/run/gangsched-gpu-node/volumes/{m['name']}"
                    mount["files"] = configmaps.get(v["configMap"]["name"], {})
                else:
                    raise HarnessError(f"volume {m['name']} of the plugin container is of a kind the node lacks: {v}")
                mounts.append(mount)
            env = {e["name"]: e["value"] for e in c.get("env", []) if "value" in e}
            config = _config_manager(pod, mounts, configmaps, volumes)
            return {
                "image": c.get("image", ""),
                "env": env,
                "args": list(c.get("args", [])),
                "mounts": mounts,
                "daemonset": o["metadata"]["name"],
                "config": config,
            }
    raise HarnessError(f"no DaemonSet container runs {PLUGIN_COMMAND} in what the role rendered")


def _config_manager(pod: dict, mounts: list[dict], configmaps: dict, volumes: dict) -> str | None:
    """What the chart's config-manager init container does once on a node without its config label: the config of
    the ConfigMap it picks (DEFAULT_CONFIG, else its fallbacks: ``named`` the one called default, ``single`` the only
    one, ``empty`` none) copied to CONFIG_FILE_DST, which is in the emptyDir the plugin reads it from; the config
    chosen (None when the chart runs no config-manager)."""
    init = next((c for c in pod.get("initContainers", []) if (c.get("command") or [""])[0] == "config-manager"), None)
    if init is None:
        return None
    env = {e["name"]: e.get("value") or "" for e in init.get("env", [])}
    src_dir, dst = env.get("CONFIG_FILE_SRCDIR", ""), env.get("CONFIG_FILE_DST", "")
    src_mount = next((m for m in init.get("volumeMounts", []) if m["mountPath"] == src_dir), None)
    data = configmaps.get(volumes.get(src_mount["name"], {}).get("configMap", {}).get("name"), {}) if src_mount else {}
    chosen = env.get("DEFAULT_CONFIG") or None
    for fallback in [] if chosen else env.get("FALLBACK_STRATEGIES", "").split(","):
        if fallback == "named" and "default" in data:
            chosen = "default"
        elif fallback == "single" and len(data) == 1:
            chosen = next(iter(data))
        elif fallback == "empty":
            chosen = ""
        if chosen is not None:
            break
    if chosen is None or (chosen and chosen not in data):
        raise HarnessError(f"the device plugin's config-manager finds no config to use among {sorted(data)}")
    parent, _, name = dst.rpartition("/")
    target = next((m for m in mounts if m["mountPath"] == parent), None)
    if target is None:
        raise HarnessError(f"the plugin container mounts nothing at {parent}, where config-manager writes {dst}")
    target.setdefault("files", {})[name] = data.get(chosen, "") if chosen else ""
    return chosen


def sharing(container: dict) -> tuple[str, int]:
    """The resource name and replicas per GPU of the plugin's config file (time-slicing), ``nvidia.com/gpu`` and 1
    without one."""
    text = ""
    for m in container["mounts"]:
        for name, body in (m.get("files") or {}).items():
            if f"{m['mountPath']}/{name}" == container["env"].get("CONFIG_FILE"):
                text = body
    config = yaml.safe_load(text) if text else None
    for kind in ("timeSlicing", "mps"):
        spec = ((config or {}).get("sharing") or {}).get(kind) or {}
        for r in spec.get("resources") or []:
            if r.get("name") == "nvidia.com/gpu":
                renamed = r.get("rename") or ("nvidia.com/gpu.shared" if spec.get("renameByDefault") else None)
                return renamed or "nvidia.com/gpu", int(r.get("replicas") or 1)
    return "nvidia.com/gpu", 1


def _cgroup_mounts() -> list[Path]:
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split()[:1] and right.split()[0] in ("cgroup", "cgroup2"):
            out.append(Path(left.split()[4]))
    return out


def remove_cgroups(name: str, timeout: float = 15) -> list[str]:
    """Remove the cgroup subtree ``name`` from every hierarchy (deepest first, once its processes are gone); the
    paths that could not be removed."""
    deadline = time.monotonic() + timeout
    while True:
        left = []
        for mount in _cgroup_mounts():
            top = mount / name.strip("/")
            if not top.exists():
                continue
            dirs = sorted((Path(d) for d, _, _ in os.walk(top)), key=lambda p: len(p.parts), reverse=True)
            for d in dirs:
                try:
                    d.rmdir()
                except OSError:
                    left.append(str(d))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def run(
    strategy: str = "cdi-cri",
    mode: str = "auto",
    gpus: int = 2,
    role_vars: dict | None = None,
    timeout: float = 60,
    total_timeout: float = 240,
    out_dir: Path | None = None,
    from_bundle: Path | None = None,
    node_info: bool = True,
    log=print,
) -> dict:
    """Run the node once; the result (also written to ``<out>/result.json``). ``from_bundle``: run from a bundle's
    binaries (:mod:`lab.gpu.bundle`) and build nothing; ``node_info``: run ``gpu_node_info`` on the node too."""
    t0 = time.monotonic()
    from_bundle = bundle_dir(from_bundle)
    if os.geteuid() != 0:
        raise HarnessError("the GPU-node harness needs root (mount and PID namespaces, device nodes, cgroups)")
    for tool in ("unshare", "pivot_root", "mount") + (() if from_bundle else ("gcc",)):
        if shutil.which(tool) is None:
            raise HarnessError(f"{tool} is not on PATH; the GPU-node harness needs it")
    present, why = gpu_present()
    if mode == "auto":
        mode = "driver" if present else "standin"
    if mode == "driver" and not present:
        raise HarnessError(f"no GPU to use: {why}")
    pieces = ensure_built(log, from_bundle)
    bins = pieces.binaries
    base = Path(out_dir) if out_dir else state_dir() / "gpu-node"
    out = base / "out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    # what a user sets for such a node: the driver root, and where nvidia-cdi-hook is (none here: a stand-in)
    driver_root = STANDIN_DRIVER_ROOT if mode == "standin" else "/"
    host_hook = shutil.which("nvidia-cdi-hook")
    hook = host_hook if mode == "driver" and host_hook else STANDIN_HOOK
    render_vars = {
        "gpu_device_plugin_device_list_strategy": strategy,
        "gpu_device_plugin_driver_root": driver_root,
        "gpu_device_plugin_cdi_hook_path": hook,
        **(role_vars or {}),
    }
    container = plugin_container(render_role(render_vars, bins["helm"], base, pieces.chart, pieces.collections))
    resource, replicas = sharing(container)
    tag = container["image"].rpartition(":")[2]
    if tag != V.NVIDIA_DEVICE_PLUGIN:
        raise HarnessError(
            f"the role renders the device plugin {container['image']}, the lab builds {V.NVIDIA_DEVICE_PLUGIN} "
            "(lab/versions.py NVIDIA_DEVICE_PLUGIN): pin the same version in both"
        )
    t_render = time.monotonic() - t0
    cgroup_root = f"gangsched-gpu-node-{os.getpid()}"
    spec = {
        "state": str(base),
        "out": str(out),
        "mode": mode,
        "strategy": strategy,
        "gpus": gpus,
        "binaries": bins,
        "native": str(pieces.native),
        "pause_image": native.PAUSE_IMAGE,
        "standin_driver_version": native.STANDIN_DRIVER_VERSION,
        "driver_root": render_vars["gpu_device_plugin_driver_root"] or "/",
        "nvml_dir": (str(Path(driver_root) / "usr/lib/x86_64-linux-gnu") if mode == "standin" else (nvml_dir() or "")),
        "hook_script": STANDIN_HOOK if hook == STANDIN_HOOK else "",
        "plugin": container,
        "resource": resource,
        "replicas": replicas,
        "cgroup_root": cgroup_root,
        "timeout": timeout,
        # what the node's processes read from the host: this checkout, the binaries, and the Python running it
        "bind": sorted(
            p
            for p in {str(REPO), str(cache_dir()), os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}
            | {str(base / "collections")}
            | ({str(Path(from_bundle).resolve())} if from_bundle else set())
            | {os.path.realpath(p) for p in os.environ.get("PYTHONPATH", "").split(":") if p}
            if Path(p).is_dir()
        ),
    }
    if node_info:
        spec["node_info"] = node_info_command(
            base, strategy, spec["driver_root"], node.CONTAINERD_CONFIG, str(node.CDI_DIR), str(node.KUBELET_ROOT)
        )
    (base / "spec.json").write_text(json.dumps(spec, indent=1))
    cmd = ["unshare", "--mount", "--pid", "--fork", "--kill-child", sys.executable, "-m", "lab.gpu.node"]
    env = {**os.environ, "PYTHONPATH": ":".join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    timed_out = False
    try:
        subprocess.run([*cmd, str(base / "spec.json")], cwd=REPO, env=env, timeout=total_timeout, check=False)
    except subprocess.TimeoutExpired:
        timed_out = True  # subprocess.run killed unshare; --kill-child ended the namespace's first process
    left = remove_cgroups(cgroup_root)
    root_dir = base / "root"
    if root_dir.exists():
        root_dir.rmdir()
    result_file = out / "result.json"
    if result_file.exists():
        result = json.loads(result_file.read_text())
    else:
        result = {"ok": False, "checks": [], "mode": mode, "strategy": strategy}
        result["error"] = f"no result within {total_timeout:.0f}s" if timed_out else "the node wrote no result"
    result["cgroups_left"] = left
    if left:
        result["ok"] = False
    result["versions"] = {
        "kubelet": V.KUBERNETES,
        "containerd": V.CONTAINERD,
        "runc": V.RUNC,
        "nvidia-device-plugin": V.NVIDIA_DEVICE_PLUGIN,
    }
    result["plugin"] = container
    result["from_bundle"] = str(Path(from_bundle).resolve()) if from_bundle else None
    result["binaries"] = bins
    result["render_s"] = round(t_render, 1)
    result["seconds"] = round(time.monotonic() - t0, 1)
    result["logs"] = str(out / "logs")
    result["summary"] = summary(result)
    result_file.write_text(json.dumps(result, indent=1))
    return result


def summary(result: dict) -> str:
    """The result as the line a person reads."""
    head = "PASS" if result.get("ok") else "FAIL"
    driver = "stand-in NVML" if result.get("mode") == "standin" else "real driver"
    what = f"gpu-node {head} ({driver}, {result.get('strategy')})"
    parts = [f"{'ok' if c['ok'] else 'FAILED'} {c['name']}: {c['detail']}" for c in result.get("checks", [])]
    if result.get("error"):
        parts.append(f"error: {result['error'].splitlines()[0]}")
    if result.get("cgroups_left"):
        parts.append(f"cgroups left: {', '.join(result['cgroups_left'])}")
    return f"{what} in {result.get('seconds', 0):.0f}s: " + "; ".join(parts)
