"""The GPU node itself, run by :mod:`lab.gpu.harness` as PID 1 of a private PID and mount namespace.

``python -m lab.gpu.node SPEC.json``: makes a private root (a tmpfs holding the host's system directories
read-only, its own /dev, /run, /var and /tmp, the kernel settings the kubelet would set shown at the values it
wants), starts containerd, the device plugin (as the rendered DaemonSet's container: its environment, its
volume mounts in a mount namespace of its own) and a standalone kubelet, runs a pod with an ``nvidia.com/gpu``
limit and one without, and writes what it saw to ``<out>/result.json``. Every wait is bounded; the processes
are stopped at the end, and the kernel ends any left when this process exits.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import podresources

STATE = Path("/run/gangsched-gpu-node")
CONTAINERD_SOCK = "/run/containerd/containerd.sock"
CONTAINERD_CONFIG = str(STATE / "containerd.toml")
KUBELET_ROOT = Path("/var/lib/kubelet")
PODRES_SOCK = str(KUBELET_ROOT / "pod-resources" / "kubelet.sock")
DEVICE_PLUGINS = KUBELET_ROOT / "device-plugins"
CDI_DIR = Path("/var/run/cdi")
RESOURCE = "nvidia.com/gpu"
# what the kubelet sets unless it finds it (protectKernelDefaults: false): shown to it in this namespace only
KUBELET_SYSCTLS = {
    "vm/overcommit_memory": "1",
    "vm/panic_on_oom": "0",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
    "kernel/keys/root_maxkeys": "1000000",
    "kernel/keys/root_maxbytes": "25000000",
}
SYSTEM_DIRS = ("usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "opt")
NVIDIA_MAJOR, UVM_MAJOR = 195, 510


class NodeError(RuntimeError):
    pass


def _sh(*cmd: str, timeout: float = 60) -> None:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise NodeError(f"{' '.join(cmd)}: not done within {timeout:.0f}s") from None
    if p.returncode != 0:
        raise NodeError(f"{' '.join(cmd)}: {p.stderr.strip() or p.returncode}")


def _bind(src: str, dst: Path, readonly: bool = True) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    _sh("mount", "--rbind", src, str(dst))
    if readonly:
        _sh("mount", "-o", "remount,bind,ro", str(dst))


def _wait(what: str, probe, timeout: float, every: float = 0.5):
    """probe() until it returns something true; its last value, or NodeError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last_err = None
    while time.monotonic() < deadline:
        try:
            value = probe()
            last_err = None
            if value:
                return value
        except (OSError, podresources.PodResourcesError, ValueError) as e:
            last_err = e
        time.sleep(every)
    raise NodeError(f"{what}: not within {timeout:.0f}s" + (f" (last error: {last_err})" if last_err else ""))


def private_root(spec: dict) -> None:
    """Pivot into a tmpfs root: the host's system directories and the paths in spec['bind'] read-only, spec['out']
    writable, a fresh /proc, /run, /var, /tmp, and a /dev of its own (the host's GPU device nodes, or stand-ins)."""
    _sh("mount", "--make-rprivate", "/")
    new = Path(spec["state"]) / "root"
    new.mkdir(parents=True, exist_ok=True)
    _sh("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", str(new))
    for d in ("run", "var", "tmp"):
        (new / d).mkdir(exist_ok=True)
        _sh("mount", "-t", "tmpfs", "-o", "mode=755" if d != "tmp" else "mode=1777", "tmpfs", str(new / d))
    (new / "var" / "run").symlink_to("../run")
    (new / "var" / "tmp").mkdir()
    for name in sorted(os.listdir("/")):
        src = Path("/") / name
        if src.is_symlink() and not (new / name).exists():
            os.symlink(os.readlink(src), new / name)
        elif name in SYSTEM_DIRS and src.is_dir():
            _bind(str(src), new / name)
    # the checkout, the build cache and Python, at their own paths (after the tmpfs mounts, which would hide them)
    for path in spec["bind"]:
        _bind(path, new / path.lstrip("/"))
    _bind(spec["out"], new / spec["out"].lstrip("/"), readonly=False)
    _bind("/sys", new / "sys", readonly=False)
    (new / "proc").mkdir(exist_ok=True)
    _sh("mount", "-t", "proc", "proc", str(new / "proc"))
    dev = new / "dev"
    if spec["mode"] == "driver":
        _bind("/dev", dev, readonly=False)
    else:
        dev.mkdir()
        _sh("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", str(dev))
        for node in ("null", "zero", "full", "random", "urandom", "tty", "kmsg"):
            st = os.stat(f"/dev/{node}")
            os.mknod(dev / node, st.st_mode, st.st_rdev)
        for d in ("pts", "shm"):
            (dev / d).mkdir()
        _sh("mount", "-t", "devpts", "-o", "newinstance,ptmxmode=0666", "devpts", str(dev / "pts"))
        (dev / "ptmx").symlink_to("pts/ptmx")
        _sh("mount", "-t", "tmpfs", "-o", "mode=1777", "tmpfs", str(dev / "shm"))
        for i, name in enumerate(("stdin", "stdout", "stderr")):
            (dev / name).symlink_to(f"/proc/self/fd/{i}")
        (dev / "fd").symlink_to("/proc/self/fd")
    os.chdir(new)
    (new / ".old").mkdir()
    _sh("pivot_root", ".", ".old")
    os.chdir("/")
    _sh("umount", "-l", "/.old")
    os.rmdir("/.old")
    STATE.mkdir(parents=True)
    sysctl = STATE / "sysctl"
    sysctl.mkdir()
    for key, value in KUBELET_SYSCTLS.items():
        f = sysctl / key.replace("/", ".")
        f.write_text(value + "\n")
        _sh("mount", "--bind", str(f), f"/proc/sys/{key}")


def _mknod_char(path: Path, major: int, minor: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mknod(path, 0o666 | 0o020000, os.makedev(major, minor))


def standin_driver(spec: dict) -> None:
    """The stand-in driver at the driver root: its libraries, named after its version as the driver's are, and
    the device nodes (in /dev, and under the driver root, which the plugin takes as the device root too)."""
    root = Path(spec["driver_root"])
    lib = root / "usr" / "lib" / "x86_64-linux-gnu"
    lib.mkdir(parents=True, exist_ok=True)
    version = spec["standin_driver_version"]
    native = Path(spec["native"])
    for name in ("libnvidia-ml.so", "libcuda.so"):
        target = lib / f"{name}.{version}"
        target.write_bytes((native / name).read_bytes())
        target.chmod(0o755)
        (lib / f"{name}.1").symlink_to(target.name)
    for dev in (Path("/dev"), root / "dev"):
        for i in range(spec["gpus"]):
            _mknod_char(dev / f"nvidia{i}", NVIDIA_MAJOR, i)
        _mknod_char(dev / "nvidiactl", NVIDIA_MAJOR, 255)
        _mknod_char(dev / "nvidia-uvm", UVM_MAJOR, 0)
        _mknod_char(dev / "nvidia-uvm-tools", UVM_MAJOR, 1)


def devices_found() -> list[str]:
    return sorted(n for n in os.listdir("/dev") if n.startswith("nvidia") and n[6:].isdigit())


def containerd_config(spec: dict) -> str:
    runtime = "plugins.'io.containerd.cri.v1.runtime'"
    return f"""version = 3
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = "{CONTAINERD_SOCK}"

[{runtime}]
  enable_cdi = true
  cdi_spec_dirs = ["{CDI_DIR}"]
  disable_apparmor = true
  # the sandbox asks for oom_score_adj -998; where root lacks CAP_SYS_RESOURCE (a container, a VM sandbox) runc
  # cannot lower it, so it is kept at the runtime's own
  restrict_oom_score_adj = true

[{runtime}.cni]
  conf_dir = "{STATE}/cni/net.d"
  bin_dirs = ["{STATE}/cni/bin"]

[{runtime}.containerd]
  default_runtime_name = "runc"

[{runtime}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  snapshotter = "native"

[{runtime}.containerd.runtimes.runc.options]
  BinaryName = "{spec["runtime_binary"]}"
  SystemdCgroup = false

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "native"

[plugins.'io.containerd.internal.v1.opt']
  path = "/var/lib/containerd-opt"

[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = "{spec["pause_image"]}"
"""


def runtime_binary(spec: dict) -> str:
    """runc, or where it was built without seccomp (no libseccomp headers where it was built) a wrapper that drops
    the seccomp profile from what it creates: the kubelet gives every pod sandbox the RuntimeDefault profile,
    which such a runc refuses."""
    runc = spec["binaries"]["runc"]
    p = subprocess.run([runc, "features"], capture_output=True, text=True, check=False, timeout=30)
    try:
        seccomp = json.loads(p.stdout).get("linux", {}).get("seccomp", {}).get("enabled", False)
    except ValueError:
        seccomp = False
    if seccomp:
        return runc
    wrapper = STATE / "bin" / "runc"
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    drop = (
        "import json, sys; p = sys.argv[1]; s = json.load(open(p)); "
        "s.get('linux', {}).pop('seccomp', None); json.dump(s, open(p, 'w'))"
    )
    wrapper.write_text(
        "#!/bin/sh\n"
        "# runc without seccomp: the seccomp profile of what it creates is dropped\n"
        'bundle=""; prev=""; create=0\n'
        'for a in "$@"; do\n'
        '  if [ "$prev" = "--bundle" ] || [ "$prev" = "-b" ]; then bundle="$a"; fi\n'
        '  if [ "$a" = "create" ] || [ "$a" = "run" ]; then create=1; fi\n'
        '  prev="$a"\n'
        "done\n"
        'if [ "$create" = 1 ] && [ -n "$bundle" ]; then\n'
        f'  "{sys.executable}" -c "{drop}" "$bundle/config.json" || exit 1\n'
        "fi\n"
        f'exec "{runc}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return str(wrapper)


def kubelet_config(spec: dict) -> dict:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "staticPodPath": str(STATE / "manifests"),
        "fileCheckFrequency": "1s",
        "syncFrequency": "5s",
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": spec["cgroup_root"],
        "failSwapOn": False,
        "failCgroupV1": False,
        "protectKernelDefaults": False,
        "seccompDefault": False,
        "enableServer": False,
        "healthzPort": 0,
        "readOnlyPort": 0,
        "resolvConf": "",
        "containerRuntimeEndpoint": f"unix://{CONTAINERD_SOCK}",
        "evictionHard": {"memory.available": "1Mi"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "localStorageCapacityIsolation": False,
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
    }


def cgroup_roots(name: str) -> list[tuple[Path, str]]:
    """The kubelet's cgroup root in every cgroup hierarchy mounted here, with the hierarchy's type (``cgroup`` for
    v1, ``cgroup2``)."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fstype = right.split()[0] if right else ""
        if fstype in ("cgroup", "cgroup2"):
            out.append((Path(left.split()[4]) / name.strip("/"), fstype))
    return out


def make_cgroup_root(name: str) -> None:
    for path, fstype in cgroup_roots(name):
        path.mkdir(exist_ok=True)
        if fstype != "cgroup":
            continue  # v2: an empty cpuset is the parent's (whose root has no cpuset.cpus at all)
        for f in ("cpuset.cpus", "cpuset.mems"):  # a cgroup v1 cpuset starts empty: take the parent's
            if (path / f).exists() and not (path / f).read_text().strip():
                (path / f).write_text((path.parent / f).read_text())


class Procs:
    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.running: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, cmd: list[str], env: dict | None = None) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "w")  # noqa: SIM115 (closed with the process)
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        log.close()
        self.running.append((name, p))
        return p

    def check(self) -> None:
        for name, p in self.running:
            if p.poll() is not None:
                tail = (self.logs / f"{name}.log").read_text(errors="replace").splitlines()[-15:]
                raise NodeError(f"{name} exited with {p.returncode}:\n  " + "\n  ".join(tail))

    def stop(self, timeout: float = 10) -> None:
        for _name, p in reversed(self.running):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)


def plugin_command(spec: dict) -> tuple[list[str], dict]:
    """The rendered DaemonSet's plugin container as a process: a mount namespace of its own with the container's
    hostPath volumes at their mount paths, the container's environment, and the driver's NVML on the library path
    as the NVIDIA runtime would put it into the plugin's own container."""
    c = spec["plugin"]
    script = ["set -e"]
    for m in c["mounts"]:
        for name, body in (m.get("files") or {}).items():  # a ConfigMap's, or what config-manager writes
            Path(m["hostPath"]).mkdir(parents=True, exist_ok=True)
            (Path(m["hostPath"]) / name).write_text(body)
    for m in c["mounts"]:
        host, target = m["hostPath"], m["mountPath"]
        script.append(f"mkdir -p '{host}' '{target}'")
        script.append(f"mount --rbind '{host}' '{target}'")
        if m.get("readOnly"):
            script.append(f"mount -o remount,bind,ro '{target}'")
    env = {k: v for k, v in c["env"].items()}
    env["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin"
    env["LD_LIBRARY_PATH"] = spec["nvml_dir"]
    argv = [spec["binaries"]["nvidia-device-plugin"], *c["args"]]
    script.append("exec " + " ".join(f"'{a}'" for a in argv))
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(script)], env


def probe_pod(name: str, gpus: int, resource: str = RESOURCE) -> dict:
    container = {
        "name": "probe",
        "image": "gangsched.lab/gpu-probe:v1",
        "imagePullPolicy": "Never",
        "command": ["/gpu-probe", f"/out/{name}.json"],
        "volumeMounts": [{"name": "out", "mountPath": "/out"}],
    }
    if gpus:
        container["resources"] = {"limits": {resource: gpus}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "hostNetwork": True,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [container],
            "volumes": [{"name": "out", "hostPath": {"path": str(STATE / "pods"), "type": "Directory"}}],
        },
    }


def node_info(spec: dict, containerd: str, logs: Path) -> dict:
    """``gpu_node_info`` run on this node while its plugin is registered: the module's result, or ``error``."""
    cmd = spec["node_info"]
    env = {**os.environ, **cmd["env"], "PATH": f"{Path(containerd).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    try:
        p = subprocess.run(cmd["argv"], capture_output=True, text=True, env=env, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        return {"error": "gpu_node_info: no answer within 120s"}
    (logs / "gpu_node_info.log").write_text(p.stdout + p.stderr)
    # ad hoc's minimal callback: "localhost | SUCCESS => {the module's result}"
    _, sep, body = p.stdout.partition(" => ")
    try:
        return json.loads(body) if sep else {"error": f"gpu_node_info (rc {p.returncode}): {p.stderr.strip()[-500:]}"}
    except ValueError:
        return {"error": f"gpu_node_info (rc {p.returncode}): {(p.stderr or p.stdout).strip()[-500:]}"}


def check_node_info(check, info: dict, spec: dict, allocatable: list[str]) -> None:
    """What ``gpu_node_info`` reported agrees with the node: the GPUs the kubelet advertises (their UUIDs), the
    driver (the stand-in's version; a real driver's is reported), the plugin registered, and for the CDI
    strategies containerd with CDI on and the plugin's spec found."""
    if info.get("error") or info.get("failed"):
        check("gpu_node_info agrees", False, info.get("error") or info.get("msg", "failed"))
        return
    uuids = sorted(g.get("uuid") for g in info.get("gpus", []))
    advertised = sorted({a.split("::")[0] for a in allocatable})
    driver = info.get("driver") or {}
    want_driver = spec["standin_driver_version"] if spec["mode"] == "standin" else driver.get("version")
    dp = info.get("device_plugin") or {}
    ctd = info.get("containerd") or {}
    cdi = spec["strategy"].startswith("cdi")
    ok = (
        uuids == advertised
        and bool(driver.get("version"))
        and driver.get("version") == want_driver
        and dp.get("registered") is True
        and (not cdi or (ctd.get("cdi_enabled") is True and bool(info.get("cdi_specs"))))
    )
    problems = "; ".join(p["problem"] for p in info.get("problems", [])) or "none"
    check(
        "gpu_node_info agrees",
        ok,
        f"driver {driver.get('version')} via {driver.get('source')}; GPUs {uuids} (kubelet: {advertised}); "
        f"plugin registered {dp.get('registered')}; containerd CDI {ctd.get('cdi_enabled')}, "
        f"CDI specs {len(info.get('cdi_specs') or [])}; problems: {problems}",
    )


def run(spec: dict) -> dict:
    t0 = time.monotonic()
    timings: dict[str, float] = {}
    result: dict = {"mode": spec["mode"], "strategy": spec["strategy"], "checks": [], "timings": timings}

    def mark(name: str) -> None:
        timings[name] = round(time.monotonic() - t0, 1)

    def check(name: str, ok: bool, detail: str) -> None:
        result["checks"].append({"name": name, "ok": bool(ok), "detail": detail})

    resource, replicas = spec.get("resource", RESOURCE), spec.get("replicas", 1)
    logs = Path(spec["out"]) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    private_root(spec)
    if spec["mode"] == "standin":
        standin_driver(spec)
    if spec.get("hook_script"):
        hook = Path(spec["hook_script"])
        hook.parent.mkdir(parents=True, exist_ok=True)
        hook.write_text("#!/bin/sh\n# stand-in nvidia-cdi-hook: the probe finds its library by its mount\nexit 0\n")
        hook.chmod(0o755)
    for d in ("manifests", "pods"):
        (STATE / d).mkdir()
    CDI_DIR.mkdir(parents=True, exist_ok=True)
    DEVICE_PLUGINS.mkdir(parents=True, exist_ok=True)
    found = devices_found()
    result["devices_found"] = found
    mark("root")

    procs = Procs(logs)
    bins = spec["binaries"]
    try:
        spec["runtime_binary"] = runtime_binary(spec)
        result["seccomp"] = spec["runtime_binary"] == spec["binaries"]["runc"]
        Path(CONTAINERD_CONFIG).write_text(containerd_config(spec))
        env = dict(os.environ, PATH=f"{Path(bins['containerd']).parent}:/usr/sbin:/usr/bin:/sbin:/bin")
        procs.start("containerd", [bins["containerd"], "--config", CONTAINERD_CONFIG], env)
        _wait("containerd's socket", lambda: Path(CONTAINERD_SOCK).exists() or procs.check(), spec["timeout"])
        for image in ("pause.tar", "gpu-probe.tar"):
            ctr = [bins["ctr"], "--address", CONTAINERD_SOCK, "--namespace", "k8s.io", "images", "import"]
            _sh(*ctr, "--local", "--snapshotter", "native", str(Path(spec["native"]) / image))
        mark("containerd")

        make_cgroup_root(spec["cgroup_root"])
        (STATE / "kubelet.yaml").write_text(json.dumps(kubelet_config(spec), indent=1))
        procs.start(
            "kubelet",
            [bins["kubelet"], "--config", str(STATE / "kubelet.yaml"), "--hostname-override", "gpu-node", "--v=2"],
        )
        # the plugin once the kubelet listens, as a DaemonSet's pod starts: a kubelet starting clears its device
        # plugin directory, the socket of a plugin that came first included, and that plugin registers again only
        # after its own dial times out
        kubelet_sock = DEVICE_PLUGINS / "kubelet.sock"
        _wait("the kubelet's device plugin socket", lambda: kubelet_sock.exists() or procs.check(), spec["timeout"])
        mark("kubelet")
        cmd, penv = plugin_command(spec)
        procs.start("nvidia-device-plugin", cmd, penv)

        def registered():
            procs.check()
            return podresources.allocatable(PODRES_SOCK).get(resource)

        try:
            ids = _wait("the device plugin's registration with the kubelet", registered, spec["timeout"])
        except NodeError as e:
            raise NodeError(f"{e}; {KUBELET_ROOT}: {sorted(str(p) for p in KUBELET_ROOT.rglob('*'))}") from None
        mark("registered")
        sockets = sorted(p.name for p in DEVICE_PLUGINS.glob("*.sock") if p.name != "kubelet.sock")
        result["allocatable"] = ids
        result["plugin_sockets"] = sockets
        check("plugin registered", bool(ids) and bool(sockets), f"socket {', '.join(sockets)}; {len(ids)} {resource}")
        check(
            "allocatable equals the devices found",
            len(ids) == len(found) * replicas,
            f"kubelet allocatable {resource} {len(ids)} ({', '.join(ids)}); "
            f"device nodes {len(found)} ({', '.join(found)})" + (f" x {replicas} replicas" if replicas > 1 else ""),
        )
        specs = sorted(p.name for p in CDI_DIR.iterdir())
        result["cdi_specs"] = specs
        if spec["strategy"].startswith("cdi"):
            check("CDI spec written", bool(specs), f"{CDI_DIR}: {', '.join(specs) or 'empty'}")

        for name, gpus in (("gpu-probe", 1), ("control-probe", 0)):
            (STATE / "manifests" / f"{name}.json").write_text(json.dumps(probe_pod(name, gpus, resource)))

        def reports():
            procs.check()
            out = {}
            for name in ("gpu-probe", "control-probe"):
                f = STATE / "pods" / f"{name}.json"
                if not f.exists():
                    return None
                out[name] = json.loads(f.read_text())
            return out

        probes = _wait("the two pods' reports", reports, spec["timeout"])
        mark("pods")
        allocated = podresources.pods(PODRES_SOCK)
        result["pods"] = {"probes": probes, "allocated": allocated}
        gpu_alloc, ctl_alloc = (
            next((c.get("probe", {}).get(resource, []) for k, c in allocated.items() if name in k), [])
            for name in ("gpu-probe", "control-probe")
        )
        check("GPU pod allocated one device", len(gpu_alloc) == 1, f"kubelet gave it {gpu_alloc}")
        gpu, ctl = probes["gpu-probe"], probes["control-probe"]
        gpu_nodes = [d for d in gpu["devices"] if d[6:].isdigit()]
        nvml = gpu.get("nvml") or {}
        nvml_uuids = [g["uuid"] for g in nvml.get("gpus", [])]
        if spec["strategy"] == "envvar":
            # the NVIDIA container runtime would act on it; this node runs plain runc
            check(
                "GPU pod told its device",
                gpu["visible_devices"] == ",".join(a.split("::")[0] for a in gpu_alloc),
                f"NVIDIA_VISIBLE_DEVICES={gpu['visible_devices']!r} (allocated {gpu_alloc})",
            )
        else:
            check(
                "GPU pod got the device",
                len(gpu_nodes) == 1
                and "nvidiactl" in gpu["devices"]
                and nvml.get("init") == 0
                and nvml_uuids == [a.split("::")[0] for a in gpu_alloc],
                f"device nodes {gpu['devices']}; NVML {nvml.get('library')} init {nvml.get('init')} GPUs {nvml_uuids}",
            )
        ctl_nvml = ctl.get("nvml") or {}
        check(
            "control pod got no GPU",
            not ctl_alloc and not ctl["devices"] and not ctl_nvml.get("library") and not ctl["visible_devices"],
            f"allocated {ctl_alloc}; device nodes {ctl['devices']}; NVML library {ctl_nvml.get('library')}",
        )

        if spec.get("node_info"):
            info = node_info(spec, bins["containerd"], logs)
            result["node_info"] = info
            check_node_info(check, info, spec, ids)
            mark("gpu_node_info")

        # the pods stopped through the kubelet, so that the runtime removes what it made for them
        for f in (STATE / "manifests").iterdir():
            f.unlink()
        try:
            _wait("the pods' removal", lambda: not podresources.pods(PODRES_SOCK), 30)
        except NodeError as e:
            result["cleanup"] = str(e)
        mark("pods removed")
    except NodeError as e:
        result["error"] = str(e)
    finally:
        procs.stop()
        mark("stopped")
    result["ok"] = "error" not in result and all(c["ok"] for c in result["checks"])
    return result


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text())
    try:
        result = run(spec)
    except Exception as e:  # noqa: BLE001 (reported as the run's error, with its type)
        result = {"ok": False, "error": f"{type(e).__name__}: {e}", "mode": spec.get("mode"), "checks": []}
    (Path(spec["out"]) / "result.json").write_text(json.dumps(result, indent=1))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
