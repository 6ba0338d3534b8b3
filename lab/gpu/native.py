"""The GPU-node harness's C pieces, compiled into the build cache (keyed by their sources, the compiler and
the Kubernetes release whose ``pause.c`` is used), and the two images the node runs, written from them:

- ``libnvidia-ml.so`` and ``libcuda.so``: the stand-in driver (``c/nvml_standin.c``, ``c/cuda_standin.c``);
- ``gpu-probe``: the pod that reports what it was given (``c/gpu_probe.c``), dynamic, with the C library it
  links copied into its image;
- ``pause``: Kubernetes' ``build/pause/linux/pause.c`` from the ``k8s.io/kubernetes`` module of the lab's
  release (downloaded by the Go toolchain, never copied into the repository), linked static: the sandbox image.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

from .. import build as B
from .. import versions as V
from ..paths import cache_dir
from . import oci

SRC = Path(__file__).resolve().parent / "c"
PAUSE_IMAGE = "gangsched.lab/pause:v1"
PROBE_IMAGE = "gangsched.lab/gpu-probe:v1"
# the version the stand-in driver reports (its libraries are named after it, as the driver's are)
STANDIN_DRIVER_VERSION = "580.95.05"
RECIPE = "1"


def _pause_source(log) -> Path:
    env = B.go_env()
    scratch = cache_dir() / "src" / "gpu-native"
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "go.mod").write_text("module gangsched.lab/scratch\n\ngo 1.24\n")
    info = B._download("k8s.io/kubernetes", V.KUBERNETES, scratch, env, log)
    path = Path(info["Dir"]) / "build" / "pause" / "linux" / "pause.c"
    if not path.exists():
        raise B.BuildError(f"pause.c not found in k8s.io/kubernetes@{V.KUBERNETES} ({path})")
    return path


def _key() -> str:
    h = hashlib.sha256(RECIPE.encode() + V.KUBERNETES.encode() + STANDIN_DRIVER_VERSION.encode())
    for f in sorted(SRC.glob("*.c")):
        h.update(f.name.encode() + f.read_bytes())
    h.update(Path(__file__).read_bytes())
    h.update((Path(__file__).parent / "oci.py").read_bytes())
    cc = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True, check=False).stdout.strip()
    return f"gpu-native-{h.hexdigest()[:10]}-gcc{cc}"


def native_dir() -> Path:
    return cache_dir() / "native" / _key()


def built() -> bool:
    return (native_dir() / ".done").exists()


def _cc(args: list[str], log) -> None:
    log(f"    $ gcc {' '.join(args)}")
    p = subprocess.run(["gcc", *args], capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise B.BuildError(f"gcc {' '.join(args)} failed:\n{p.stderr[-3000:]}")


def _linked_libraries(binary: Path) -> dict[str, Path]:
    """The shared libraries a dynamic binary loads (``ldd``), by the path it loads them from."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    libs = {}
    for line in out.splitlines():
        parts = line.split()
        path = parts[2] if "=>" in parts and len(parts) > 2 else parts[0]
        if path.startswith("/"):
            libs[path] = Path(path).resolve()
    return libs


def build(log=print) -> Path:
    """Compile what is missing; return the directory of the built pieces."""
    out = native_dir()
    if built():
        return out
    if shutil.which("gcc") is None:
        raise B.BuildError("gcc is not on PATH; the GPU-node harness compiles its stand-in driver and images with it")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    warn = ["-O2", "-Wall", "-Wextra", "-Werror"]
    _cc([*warn, "-shared", "-fPIC", "-Wl,-soname,libnvidia-ml.so.1", "-o", str(out / "libnvidia-ml.so"),
         str(SRC / "nvml_standin.c")], log)  # fmt: skip
    _cc([*warn, "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(out / "libcuda.so"),
         str(SRC / "cuda_standin.c")], log)  # fmt: skip
    _cc([*warn, "-o", str(out / "gpu-probe"), str(SRC / "gpu_probe.c"), "-ldl"], log)
    _cc(["-Os", "-static", f"-DVERSION={V.KUBERNETES}", "-o", str(out / "pause"), str(_pause_source(log))], log)
    oci.write_image(out / "pause.tar", PAUSE_IMAGE, {"/pause": out / "pause"}, ["/pause"])
    probe_files = {"/gpu-probe": out / "gpu-probe", **_linked_libraries(out / "gpu-probe")}
    # what the driver's libnvidia-ml links besides libc (a real driver's, injected by CDI, dlopened by the probe)
    libc = next(Path(p) for p in probe_files if Path(p).name.startswith("libc.so"))
    for name in ("libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1"):
        if (libc.parent / name).exists():
            probe_files[str(libc.parent / name)] = (libc.parent / name).resolve()
    oci.write_image(out / "gpu-probe.tar", PROBE_IMAGE, probe_files, ["/gpu-probe"])
    (out / ".done").write_text(json.dumps({"kubernetes": V.KUBERNETES, "driver": STANDIN_DRIVER_VERSION}))
    for stale in out.parent.glob("gpu-native-*"):
        if stale != out:
            shutil.rmtree(stale, ignore_errors=True)
    log(f"  gpu-node native pieces built -> {out}")
    return out
