"""The GPU node to take along: what ``python -m lab gpu-node`` runs, in one directory, for a GPU machine that
cannot build it (no Go toolchain, no network).

``python -m lab gpu-bundle DIR`` writes, from the build cache:

- ``binaries.tar.xz``: containerd (with its shim and ``ctr``), runc, the kubelet, the device plugin and helm in
  one xz stream: they share most of their Go code, so together they compress to about two thirds of what they
  take one by one;
- ``native/``: the two images (pause, the probe) and the stand-in driver;
- ``chart/``: the device plugin's chart, which the ``gpu_device_plugin`` role renders there;
- ``collections/``: the collections this one depends on (``galaxy.yml``), as the Python writing the bundle has
  them, for the role's render there;
- ``bundle.json``: the versions and each binary's sha256.

``python -m lab gpu-node --bundle DIR`` then unpacks the binaries next to it once (checking each sha256), refuses
a bundle of other versions than this checkout pins, and runs the node from it, building nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import lzma
import platform
import shutil
import sys
import tarfile
import time
from pathlib import Path

import yaml

from .. import versions as V
from ..paths import REPO

BINARIES = ("containerd", "containerd-shim-runc-v2", "ctr", "runc", "kubelet", "nvidia-device-plugin", "helm")
ARCHIVE = "binaries.tar.xz"
MANIFEST = "bundle.json"


class BundleError(RuntimeError):
    pass


@dataclasses.dataclass
class Pieces:
    """What the node runs: the binaries by name, the native pieces' directory, the device plugin's chart, and a
    directory of collections the role needs (None: the running Python's own)."""

    binaries: dict[str, str]
    native: Path
    chart: Path
    collections: Path | None = None


def dependency_collections() -> dict[str, Path]:
    """This collection's dependencies (``galaxy.yml``), each where the running Python finds it."""
    deps = (yaml.safe_load((REPO / "galaxy.yml").read_text()) or {}).get("dependencies") or {}
    out = {}
    for name in deps:
        spec = importlib.util.find_spec(f"ansible_collections.{name}")
        if spec is None or not spec.submodule_search_locations:
            raise BundleError(f"the collection {name} (galaxy.yml) is not installed for {sys.executable}")
        out[name] = Path(list(spec.submodule_search_locations)[0])
    return out


def versions() -> dict[str, str]:
    return {
        "kubelet": V.KUBERNETES,
        "containerd": V.CONTAINERD,
        "runc": V.RUNC,
        "nvidia-device-plugin": V.NVIDIA_DEVICE_PLUGIN,
        "helm": V.HELM,
    }


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write(dest: Path, pieces: Pieces, preset: int = 9, log=print) -> dict:
    """Write the bundle of ``pieces`` and this collection's dependencies into ``dest``; its manifest.

    ``preset`` is xz's level (0-9; 9 with a dictionary the size of the largest binary, so that their shared code
    is found across them)."""
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()) and not (dest / MANIFEST).exists():
        raise BundleError(f"{dest} is a directory with other files in it; name a new or an earlier bundle's directory")
    deps = dependency_collections()  # before the compression: a missing collection fails first
    dest.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    paths = {n: Path(pieces.binaries[n]) for n in BINARIES}
    largest = max(p.stat().st_size for p in paths.values())
    if preset >= 9:
        filters = [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME, "dict_size": min(largest, 1 << 30)}]
    else:
        filters = [{"id": lzma.FILTER_LZMA2, "preset": preset}]
    partial = dest / (ARCHIVE + ".partial")
    with (
        lzma.open(partial, "wb", format=lzma.FORMAT_XZ, filters=filters) as xz,
        tarfile.open(fileobj=xz, mode="w") as tar,
    ):
        for name, path in paths.items():
            log(f"  {name} ({path.stat().st_size // (1 << 20)} MiB)")
            tar.add(path, arcname=name)
    partial.replace(dest / ARCHIVE)
    for sub, src in (("native", pieces.native), ("chart", pieces.chart)):
        shutil.rmtree(dest / sub, ignore_errors=True)
        shutil.copytree(src, dest / sub, ignore=shutil.ignore_patterns(".done"))
    shutil.rmtree(dest / "collections", ignore_errors=True)
    for name, src in deps.items():
        shutil.copytree(src, dest / "collections" / "ansible_collections" / name.replace(".", "/"),
                        ignore=shutil.ignore_patterns("tests", "docs", "__pycache__"))  # fmt: skip
    manifest = {
        "versions": versions(),
        "binaries": {n: _sha256(p) for n, p in paths.items()},
        "collections": sorted(deps),
        "machine": platform.machine(),
        "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "bytes": (dest / ARCHIVE).stat().st_size,
        "unpacked_bytes": sum(p.stat().st_size for p in paths.values()),
        "seconds": round(time.monotonic() - t0, 1),
    }
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return manifest


def load(src: Path, log=print) -> Pieces:
    """The pieces of the bundle at ``src`` (its binaries unpacked into ``<src>/bin`` once); refuses a bundle this
    checkout cannot run."""
    src = Path(src).resolve()
    try:
        manifest = json.loads((src / MANIFEST).read_text())
    except (OSError, ValueError) as e:
        raise BundleError(
            f"{src} is not a GPU-node bundle ({MANIFEST}: {e}); write one: python -m lab gpu-bundle DIR"
        ) from None
    if manifest.get("versions") != versions():
        theirs, ours = manifest.get("versions") or {}, versions()
        diff = ", ".join(f"{k} {theirs.get(k)} (this checkout: {v})" for k, v in ours.items() if theirs.get(k) != v)
        raise BundleError(f"the bundle at {src} holds {diff}: write it again from this checkout")
    if manifest.get("machine") != platform.machine():
        raise BundleError(f"the bundle at {src} was built for {manifest.get('machine')}, this is {platform.machine()}")
    out = src / "bin"
    want = manifest["binaries"]
    have = {n: out / n for n in want}
    if not all(p.exists() and _sha256(p) == want[n] for n, p in have.items()):
        t0 = time.monotonic()
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        with tarfile.open(src / ARCHIVE, mode="r:xz") as tar:
            tar.extractall(out, filter="data")
        bad = [n for n, p in have.items() if not p.exists() or _sha256(p) != want[n]]
        if bad:
            what = (
                f"{bad[0]} does not match its sha256"
                if len(bad) == 1
                else f"{', '.join(bad)} do not match their sha256"
            )
            raise BundleError(f"the bundle at {src} is damaged: {what}; write it again: python -m lab gpu-bundle DIR")
        for p in have.values():
            p.chmod(0o755)
        log(f"  bundle unpacked in {time.monotonic() - t0:.1f}s -> {out}")
    for sub in ("native", "chart", "collections"):
        if not (src / sub).is_dir():
            raise BundleError(f"the bundle at {src} has no {sub}/; write it again: python -m lab gpu-bundle DIR")
    return Pieces({n: str(p) for n, p in have.items()}, src / "native", src / "chart", src / "collections")
