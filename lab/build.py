"""Build the lab's binaries from Go modules into a cache outside the checkout.

Each build unit is a generated wrapper module (never committed) whose go.mod is the upstream
module's own requirement and replace blocks, minus its relative-path replaces, plus a requirement on
the upstream module at the pinned version. That keeps upstream's dependency pins (the k8s staging
replaces, grpc/otel pins) without copying any upstream file into the repository.

Upstream CRDs and Helm charts of the same versions are copied from the downloaded modules into
``<cache>/artifacts/<unit>-<version>/``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from . import versions as V
from .paths import cache_dir


class BuildError(RuntimeError):
    pass


@dataclasses.dataclass(frozen=True)
class Binary:
    name: str
    package: str
    ldflags: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Unit:
    name: str
    module: str
    version: str
    binaries: tuple[Binary, ...] = ()
    # module whose go.mod seeds the wrapper (defaults to ``module``)
    gomod_from: tuple[str, str] | None = None
    # extra modules required at a version (besides ``module``)
    extra: tuple[tuple[str, str], ...] = ()
    # (path inside the module, name under the artifacts dir)
    artifacts: tuple[tuple[str, str], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    # module -> version overrides, for versions the module proxy does not serve
    overrides: tuple[tuple[str, str], ...] = ()
    # turn upstream's relative-path replaces (k8s staging) into replaces at this version
    staging_version: str | None = None
    # a module the proxy refuses at the version required, stood in for by a copy of another version of it with files
    # added (versions.VOLCANO_APIS_STAND_IN): (module, version copied, ((path in it, text), ...)); replaced by that
    # copy, made in the wrapper's directory
    stand_in: tuple | None = None

    @property
    def key(self) -> str:
        fields = dataclasses.asdict(self)
        if fields["stand_in"] is None:
            fields.pop("stand_in")  # the recipes before the field keep their key, and so their cache
        recipe = json.dumps(fields, sort_keys=True) + RECIPE_REVISION
        return f"{self.name}-{self.version}-{hashlib.sha256(recipe.encode()).hexdigest()[:8]}"


# Bump when the way binaries are built changes, so caches rebuild.
RECIPE_REVISION = "1"


def _k8s_ldflags(version: str) -> tuple[str, ...]:
    major, minor = version.lstrip("v").split(".")[:2]
    pkg = "k8s.io/component-base/version"
    return (
        f"-X {pkg}.gitVersion={version}",
        f"-X {pkg}.gitMajor={major}",
        f"-X {pkg}.gitMinor={minor}",
        f"-X {pkg}.gitTreeState=clean",
    )


def _scheduler_plugins(version: str) -> Unit:
    """scheduler-plugins ``version``'s unit. It reports the Kubernetes release it is built on: component-base derives
    the emulation version from it, and a v0.x value makes the scheduler refuse to start."""
    built_on = V.SCHEDULER_PLUGINS_BUILT_ON[version]
    return Unit(
        name="scheduler-plugins",
        module="sigs.k8s.io/scheduler-plugins",
        version=version,
        overrides=V.KUBERNETES_OVERRIDES.get(built_on, ()),
        binaries=(
            Binary("sp-scheduler", "sigs.k8s.io/scheduler-plugins/cmd/scheduler", _k8s_ldflags(built_on)),
            Binary("sp-controller", "sigs.k8s.io/scheduler-plugins/cmd/controller", _k8s_ldflags(built_on)),
        ),
        artifacts=(
            ("sigs.k8s.io/scheduler-plugins:manifests/coscheduling", "coscheduling"),
            ("sigs.k8s.io/scheduler-plugins:manifests/install/charts/as-a-second-scheduler", "chart"),
            ("sigs.k8s.io/scheduler-plugins:manifests/crds", "crds"),
        ),
    )


def _stand_in(version: str) -> tuple | None:
    """Volcano ``version``'s stand-in of volcano.sh/apis (versions.VOLCANO_APIS_STAND_IN), as a Unit takes it."""
    found = V.VOLCANO_APIS_STAND_IN.get(version)
    if not found:
        return None
    module, at, files = found
    return (module, at, tuple(sorted(files.items())))


def _volcano(version: str) -> Unit:
    """Volcano ``version``'s scheduler and controllers, with its CRDs and chart."""
    return Unit(
        name="volcano",
        module="volcano.sh/volcano",
        version=version,
        binaries=(
            Binary("vc-scheduler", "volcano.sh/volcano/cmd/scheduler"),
            Binary("vc-controller-manager", "volcano.sh/volcano/cmd/controller-manager"),
        ),
        artifacts=(
            ("volcano.sh/volcano:config/crd/volcano/bases", "crds"),
            ("volcano.sh/volcano:installer/helm/chart/volcano", "chart"),
        ),
        stand_in=_stand_in(version),
    )


def _volcano_webhook(version: str) -> Unit:
    return Unit(
        name="volcano-webhook",
        module="volcano.sh/volcano",
        version=version,
        binaries=(Binary("vc-webhook-manager", "volcano.sh/volcano/cmd/webhook-manager"),),
        stand_in=_stand_in(version),
    )


def _kubernetes(name: str, *binaries: str) -> Unit:
    """A unit of the lab's Kubernetes release (``k8s.io/kubernetes`` at ``versions.KUBERNETES``) building
    ``binaries`` (their ``cmd/`` names)."""
    return Unit(
        name=name,
        module="k8s.io/kubernetes",
        version=V.KUBERNETES,
        staging_version="v0." + V.KUBERNETES.split(".", 1)[1],
        overrides=V.KUBERNETES_OVERRIDES.get(V.KUBERNETES, ()),
        binaries=tuple(Binary(b, f"k8s.io/kubernetes/cmd/{b}", _k8s_ldflags(V.KUBERNETES)) for b in binaries),
    )


# The checksum database behind this module proxy lacks entries for some of these module versions;
# their hashes are still pinned by upstream go.sum files where those list them.
_NOSUM = (("GONOSUMDB", "k8s.io,github.com/NVIDIA"),)

UNITS: tuple[Unit, ...] = (
    Unit(
        name="etcd",
        module="go.etcd.io/etcd/server/v3",
        version=V.ETCD,
        binaries=(Binary("etcd", "go.etcd.io/etcd/server/v3"),),
    ),
    _kubernetes("kubernetes", "kube-apiserver", "kube-controller-manager", "kube-scheduler"),
    # kubectl apart: neither the lab nor the collection runs it (only the tests, the bench and Flux's install do),
    # so a first `make demo` does not wait for its 194 packages (kustomize's among them) of its own
    _kubernetes("kubectl", "kubectl"),
    _scheduler_plugins(V.SCHEDULER_PLUGINS),
    Unit(
        name="kwok",
        module="sigs.k8s.io/kwok",
        version=V.KWOK,
        binaries=(Binary("kwok", "sigs.k8s.io/kwok/cmd/kwok"),),
        artifacts=(("sigs.k8s.io/kwok:kustomize/stage", "stage"),),
    ),
    _volcano(V.VOLCANO),
    # vc-webhook-manager (the chart's admission) in a unit of its own, so adding it did not change the
    # recipe, and so the cache, of the scheduler and controllers
    _volcano_webhook(V.VOLCANO),
    Unit(
        name="training-operator",
        module="github.com/kubeflow/training-operator",
        version=V.TRAINING_OPERATOR,
        binaries=(Binary("training-operator", "github.com/kubeflow/training-operator/cmd/training-operator.v1"),),
        artifacts=(("github.com/kubeflow/training-operator:manifests/base/crds", "crds"),),
    ),
    Unit(
        name="mpi-operator",
        module="github.com/kubeflow/mpi-operator",
        version=V.MPI_OPERATOR,
        binaries=(Binary("mpi-operator", "github.com/kubeflow/mpi-operator/cmd/mpi-operator"),),
        artifacts=(("github.com/kubeflow/mpi-operator:manifests/base", "manifests"),),
    ),
    # koord-scheduler alone (the lab runs no other Koordinator component); the CRDs it needs even with
    # a gang-only profile (podgroups.scheduling.sigs.k8s.io, reservations and devices of
    # scheduling.koordinator.sh) are among config/crd/bases
    Unit(
        name="koordinator",
        module="github.com/koordinator-sh/koordinator",
        version=V.KOORDINATOR,
        binaries=(Binary("koord-scheduler", "github.com/koordinator-sh/koordinator/cmd/koord-scheduler"),),
        artifacts=(("github.com/koordinator-sh/koordinator:config/crd/bases", "crds"),),
    ),
    # Kubeflow Trainer v2's controller manager; its CRDs and upstream webhook configurations (the
    # installer fills in the Service and CA as upstream's kustomize and cert rotator do)
    Unit(
        name="trainer",
        module="github.com/kubeflow/trainer/v2",
        version=V.TRAINER,
        binaries=(
            Binary("trainer-controller-manager", "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager"),
        ),
        artifacts=(
            ("github.com/kubeflow/trainer/v2:manifests/base/crds", "crds"),
            ("github.com/kubeflow/trainer/v2:manifests/base/webhook", "webhook"),
        ),
    ),
    # the JobSet controller (its main package is the module root)
    Unit(
        name="jobset",
        module="sigs.k8s.io/jobset",
        version=V.JOBSET,
        binaries=(Binary("jobset-controller", "sigs.k8s.io/jobset"),),
        artifacts=(
            ("sigs.k8s.io/jobset:config/components/crd/bases", "crds"),
            ("sigs.k8s.io/jobset:config/components/webhook", "webhook"),
        ),
    ),
    # Kueue's controller manager (its main package cmd/kueue); its CRDs and upstream webhook configurations (the
    # installer names the Service; Kueue's own cert rotator fills the CA)
    Unit(
        name="kueue",
        module="sigs.k8s.io/kueue",
        version=V.KUEUE,
        binaries=(Binary("kueue", "sigs.k8s.io/kueue/cmd/kueue"),),
        artifacts=(
            ("sigs.k8s.io/kueue:config/components/crd/bases", "crds"),
            ("sigs.k8s.io/kueue:config/components/webhook", "webhook"),
        ),
    ),
    # Flux's two controllers a GitOps stage needs (python -m lab flux): each main package is its module root; the
    # CRDs from config/crd/bases (source-controller's sources, kustomize-controller's Kustomization)
    Unit(
        name="flux-source-controller",
        module="github.com/fluxcd/source-controller",
        version=V.FLUX_SOURCE_CONTROLLER,
        overrides=V.FLUX_OVERRIDES,
        binaries=(Binary("source-controller", "github.com/fluxcd/source-controller"),),
        artifacts=(("github.com/fluxcd/source-controller:config/crd/bases", "crds"),),
    ),
    Unit(
        name="flux-kustomize-controller",
        module="github.com/fluxcd/kustomize-controller",
        version=V.FLUX_KUSTOMIZE_CONTROLLER,
        binaries=(Binary("kustomize-controller", "github.com/fluxcd/kustomize-controller"),),
        artifacts=(("github.com/fluxcd/kustomize-controller:config/crd/bases", "crds"),),
    ),
    Unit(
        name="helm",
        module="helm.sh/helm/v3",
        version=V.HELM,
        binaries=(
            Binary("helm", "helm.sh/helm/v3/cmd/helm", (f"-X helm.sh/helm/v3/internal/version.version={V.HELM}",)),
        ),
    ),
    Unit(
        name="helm4",
        module="helm.sh/helm/v4",
        version=V.HELM4,
        binaries=(
            Binary("helm", "helm.sh/helm/v4/cmd/helm", (f"-X helm.sh/helm/v4/internal/version.version={V.HELM4}",)),
        ),
    ),
    Unit(
        name="nvidia-device-plugin",
        module="github.com/NVIDIA/k8s-device-plugin",
        version=V.NVIDIA_DEVICE_PLUGIN,
        artifacts=(("github.com/NVIDIA/k8s-device-plugin:deployments/helm/nvidia-device-plugin", "chart"),),
    ),
    # The GPU-node harness (lab/gpu): a real kubelet of the lab's release on containerd and runc, and the device
    # plugin's binary. containerd without the storage drivers and tracing the harness does not use; runc with cgo
    # (its nsenter) and without the seccomp tag (libseccomp's headers are not needed: the harness gives no
    # container a seccomp profile); the plugin with cgo, dynamic, as its Makefile links it (go-nvml dlopens
    # libnvidia-ml.so.1 at run time).
    Unit(
        name="containerd",
        module="github.com/containerd/containerd/v2",
        version=V.CONTAINERD,
        binaries=(
            Binary("containerd", "github.com/containerd/containerd/v2/cmd/containerd"),
            Binary("containerd-shim-runc-v2", "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"),
            Binary("ctr", "github.com/containerd/containerd/v2/cmd/ctr"),
        ),
        env=(("GOFLAGS", "-mod=mod -buildvcs=false -tags=no_btrfs,no_devmapper,no_zfs,no_tracing"),),
    ),
    Unit(
        name="runc",
        module="github.com/opencontainers/runc",
        version=V.RUNC,
        binaries=(Binary("runc", "github.com/opencontainers/runc", (f"-X main.version={V.RUNC.lstrip('v')}",)),),
        env=(("CGO_ENABLED", "1"),),
    ),
    _kubernetes("kubelet", "kubelet"),
    Unit(
        name="nvidia-device-plugin-binary",
        module="github.com/NVIDIA/k8s-device-plugin",
        version=V.NVIDIA_DEVICE_PLUGIN,
        binaries=(
            Binary(
                "nvidia-device-plugin",
                "github.com/NVIDIA/k8s-device-plugin/cmd/nvidia-device-plugin",
                (
                    "'-extldflags=-Wl,--export-dynamic -Wl,--unresolved-symbols=ignore-in-object-files'",
                    f"-X github.com/NVIDIA/k8s-device-plugin/internal/info.version={V.NVIDIA_DEVICE_PLUGIN}",
                ),
            ),
        ),
        env=(("CGO_ENABLED", "1"),),
    ),
)


def _at(name: str, version: str) -> Unit:
    """Unit ``name`` at another release (a previous pin)."""
    if name == "scheduler-plugins":
        return _scheduler_plugins(version)
    if name == "volcano":
        return _volcano(version)
    if name == "volcano-webhook":
        return _volcano_webhook(version)
    return dataclasses.replace(next(u for u in UNITS if u.name == name), version=version)


# The previous pins' units (versions.PREVIOUS), named ``<unit>@<version>``: the upgrade tests install them first.
PREVIOUS_UNITS: tuple[Unit, ...] = tuple(
    _at(n, v) for n, v in V.PREVIOUS.items() if next(u for u in UNITS if u.name == n).version != v
)


def label(unit: Unit) -> str:
    """How the build names a unit: its name, or ``<name>@<version>`` for a previous pin's."""
    return unit.name if unit in UNITS else f"{unit.name}@{unit.version}"


def all_units() -> tuple[Unit, ...]:
    return UNITS + PREVIOUS_UNITS


# What each path of the lab needs: the base (the control plane, KWOK, helm, the device plugin's chart and the
# Kubeflow operators site.yml installs) and, per gang path, its own units. ``python -m lab build --for volcano``
# builds the base and Volcano's units only, so a first `make demo` waits for no other path; `make build` (and so
# `make test`) builds every unit.
# the GPU-node harness's units (python -m lab gpu-node)
GPU_NODE_UNITS = ("containerd", "runc", "kubelet", "nvidia-device-plugin-binary")
BASE_UNITS = ("etcd", "kubernetes", "kwok", "helm", "nvidia-device-plugin", "training-operator", "mpi-operator")
PATH_UNITS = {
    "volcano": ("volcano", "volcano-webhook"),
    "scheduler_plugins": ("scheduler-plugins",),
    "koordinator": ("koordinator",),
    # kube-scheduler's own gang: the base's Kubernetes alone
    "native": (),
    "trainer": ("trainer", "jobset"),
    # not a gang path: Kueue in front of the gang (gangsched_kueue)
    "kueue": ("kueue",),
    # not a gang path: Flux for a GitOps stage (python -m lab flux; it applies Flux's objects with kubectl)
    "flux": ("flux-source-controller", "flux-kustomize-controller", "kubectl"),
    # not a gang path: kubectl, for the tests and the bench (`make build` and `make minor` build it)
    "kubectl": ("kubectl",),
    # not a gang path: the GPU-node harness (python -m lab gpu-node builds them on demand; `make build` too)
    "gpu_node": GPU_NODE_UNITS,
    # not a gang path: Helm 4, which the newest compat cell's roles run (and the tests of the preflight's refusal)
    "helm4": ("helm4",),
    # not a gang path: the previous pins the upgrade tests start from
    "upgrade": tuple(label(u) for u in PREVIOUS_UNITS),
}


def units_for(paths: list[str]) -> list[str]:
    """The units the base and ``paths`` need, in build order; unknown paths are refused with the known ones.

    >>> units_for(["volcano"])[-2:]
    ['volcano', 'volcano-webhook']
    """
    unknown = [p for p in paths if p not in PATH_UNITS]
    if unknown:
        raise BuildError(f"unknown lab path(s) {', '.join(unknown)}: choose among {', '.join(PATH_UNITS)}")
    wanted = set(BASE_UNITS).union(*(PATH_UNITS[p] for p in paths))
    return [label(u) for u in all_units() if label(u) in wanted]


def built(unit: Unit) -> bool:
    """Whether the cache holds this unit's binaries and artifacts."""
    return (bin_dir(unit) / ".done").exists() and (artifacts_dir(unit) / ".done").exists()


def go_env(unit: Unit | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"GOTOOLCHAIN": "local", "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod -buildvcs=false"})
    for k, v in _NOSUM + (unit.env if unit else ()):
        env[k] = v
    return env


def _run(cmd: list[str], cwd: Path, env: dict[str, str], log) -> str:
    log(f"    $ {' '.join(cmd)}")
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"command failed in {cwd}: {' '.join(cmd)}\n{proc.stderr[-4000:]}")
    return proc.stdout


def _download(module: str, version: str, cwd: Path, env: dict[str, str], log) -> dict:
    out = _run(["go", "mod", "download", "-json", f"{module}@{version}"], cwd, env, log)
    info = json.loads(out)
    if info.get("Error"):
        raise BuildError(f"cannot download {module}@{version}: {info['Error']}")
    return info


def _replace_parts(line: str) -> tuple[str, str]:
    lhs, _, rhs = line.strip().removeprefix("replace").partition("=>")
    return lhs.split()[0], rhs.strip()


def wrapper_gomod(
    upstream: str,
    wrapper_module: str,
    requires: list[tuple[str, str]],
    overrides: tuple[tuple[str, str], ...] = (),
    staging_version: str | None = None,
) -> str:
    """Turn an upstream go.mod into a wrapper's.

    New module line; retracts and the toolchain line dropped; relative-path replaces dropped, or with
    ``staging_version`` turned into ``m => m <staging_version>``; ``overrides`` win over upstream's
    own replace of the same module.
    """
    pinned = dict(overrides)
    out = [f"module {wrapper_module}", ""]
    block = None

    def replace_line(line: str, single: bool) -> str | None:
        mod, rhs = _replace_parts(line)
        if mod in pinned:
            return None
        if rhs.startswith((".", "/")):
            if not staging_version:
                return None
            return f"{'replace ' if single else chr(9)}{mod} => {mod} {staging_version}"
        return line

    for raw in upstream.splitlines():
        line = raw.split("//")[0].strip() if not raw.strip().startswith("//") else ""
        if block:
            if line == ")":
                block = None
                out.append(raw)
                continue
            if block == "retract":
                continue
            if block == "replace" and "=>" in line:
                new = replace_line(raw, single=False)
                if new is not None:
                    out.append(new)
                continue
            out.append(raw)
            continue
        word = line.split(" ")[0] if line else ""
        if word in ("module", "toolchain", "retract"):
            if line.endswith("("):
                block = word
            continue
        if word == "replace" and not line.endswith("("):
            new = replace_line(line, single=True)
            if new is not None:
                out.append(new)
            continue
        if line.endswith("(") and word:
            block = word
        out.append(raw)
    out.append("")
    out.append("require (")
    out.extend(f"\t{m} {v}" for m, v in requires)
    out.append(")")
    if overrides:
        out.append("")
        out.append("replace (")
        # a version, or a directory of the wrapper's (a stand-in's copy)
        out.extend(f"\t{m} => {v}" if v.startswith("./") else f"\t{m} => {m} {v}" for m, v in overrides)
        out.append(")")
    return "\n".join(out) + "\n"


def bin_dir(unit: Unit) -> Path:
    return cache_dir() / "bin" / unit.key


def artifacts_dir(unit: Unit) -> Path:
    return cache_dir() / "artifacts" / f"{unit.name}-{unit.version}"


def unit_by_name(name: str) -> Unit:
    """A unit by its build name: ``kwok``, or a previous pin's ``scheduler-plugins@v0.33.5``."""
    for u in all_units():
        if label(u) == name:
            return u
    raise KeyError(name)


def _unit_of(name: str, version: str | None) -> Unit:
    """The unit that builds binary ``name``: the one at ``version`` (an image's tag) where one is, else the pinned."""
    having = [u for u in all_units() if any(b.name == name for b in u.binaries)]
    if not having:
        raise KeyError(name)
    return next((u for u in having if version and u.version.lstrip("v") == version.lstrip("v")), having[0])


def binary_where(name: str, version: str | None = None) -> Path:
    """Where a binary is, or will be once its unit is built (the lab's inventory names it before that)."""
    return bin_dir(_unit_of(name, version)) / name


def binary_path(name: str, version: str | None = None) -> Path:
    """Path of a built binary by its lab name (e.g. ``kube-apiserver``), of the unit at ``version`` where the lab
    builds that release (a previous pin's image tag) and the pinned one otherwise; raises if not built."""
    u = _unit_of(name, version)
    p = bin_dir(u) / name
    if not (bin_dir(u) / ".done").exists() or not p.exists():
        raise BuildError(f"{name} {u.version} is not built (expected {p}); run: python -m lab build {label(u)}")
    return p


def artifact_path(unit_name: str, sub: str) -> Path:
    p = artifacts_dir(unit_by_name(unit_name)) / sub
    if not p.exists():
        raise BuildError(f"{unit_name} artifact {sub} missing at {p}; run: python -m lab build")
    return p


def _wrapper(unit: Unit, env: dict[str, str], log) -> tuple[Path, dict]:
    """The unit's wrapper module under the cache (go.mod from upstream's, go.sum), and the directories of the
    modules it was made from and requires: (its directory, {module: directory})."""
    src = cache_dir() / "src" / unit.key
    src.mkdir(parents=True, exist_ok=True)
    gm_mod, gm_ver = unit.gomod_from or (unit.module, unit.version)
    # a scratch module is needed for `go mod download` to run at all
    (src / "go.mod").write_text("module gangsched.lab/scratch\n\ngo 1.24\n")
    info = _download(gm_mod, gm_ver, src, env, log)
    upstream_dir = Path(info["Dir"])
    requires = [(unit.module, unit.version), *unit.extra]
    if (gm_mod, gm_ver) not in requires:
        requires.append((gm_mod, gm_ver))
    overrides = unit.overrides
    if unit.stand_in:
        overrides = (*overrides, (unit.stand_in[0], f"./{_stand_in_copy(unit, src, env, log)}"))
    text = wrapper_gomod(
        (upstream_dir / "go.mod").read_text(),
        f"gangsched.lab/build/{unit.name}",
        requires,
        overrides,
        unit.staging_version,
    )
    (src / "go.mod").write_text(text)
    if (upstream_dir / "go.sum").exists():
        shutil.copyfile(upstream_dir / "go.sum", src / "go.sum")
        os.chmod(src / "go.sum", 0o644)
    # a main package keeps `go mod` commands happy in a module with no code of its own
    (src / "wrapper.go").write_text("package wrapper\n")
    dirs = {unit.module: None, gm_mod: upstream_dir}
    for m, v in requires:
        if dirs.get(m) is None:
            dirs[m] = Path(_download(m, v, src, env, log)["Dir"])
    return src, dirs


def _stand_in_copy(unit: Unit, src: Path, env: dict[str, str], log) -> str:
    """The unit's stand-in module (``Unit.stand_in``) copied into ``src`` from the module cache with its files added:
    the copy's directory, relative to ``src``."""
    module, at, files = unit.stand_in
    where = "stand-in"
    dest = src / where
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(Path(_download(module, at, src, env, log)["Dir"]), dest)
    for root, ds, fs in os.walk(dest):
        for n in ds + fs:
            os.chmod(os.path.join(root, n), 0o755 if n in ds else 0o644)
    for path, text in files:
        (dest / path).write_text(text)
    return where


def prefetch(unit: Unit) -> None:
    """Download what the unit's build will need (its wrapper's modules), so that it can happen while another
    unit compiles: downloading waits on the network, compiling on the CPU. Best effort: the build itself
    downloads anything missing and reports what fails."""
    if built(unit):
        return
    env = go_env(unit)
    try:
        src, _dirs = _wrapper(unit, env, lambda *_: None)
        subprocess.run(["go", "mod", "download"], cwd=src, env=env, capture_output=True, timeout=1800)
    except (BuildError, OSError, subprocess.SubprocessError):
        pass


# Every `go build`: no module paths of this machine in the binaries (-trimpath), no symbol table or DWARF in them
# (-s -w, below) and so no DWARF made by the compiler either (-dwarf=false, every package: the standard library's
# too): a tenth less compile on a cold cache (KWOK: 89 s against 99 s, 166 CPU-s against 182) for the same binary
# but its build settings line. RECIPE_REVISION is not bumped for it: a cache built without it holds binaries that
# run the same.
GO_BUILD = ("go", "build", "-trimpath", "-gcflags=all=-dwarf=false")


def _compile(unit: Unit, src: Path, env: dict[str, str], log) -> None:
    """Each binary of the unit into its bin dir: one `go build` for all of them when they share their link
    flags (the compiler then works on one binary's packages while another links), else one each."""
    out = bin_dir(unit)
    out.mkdir(parents=True, exist_ok=True)
    bases = [b.package.rstrip("/").rsplit("/", 1)[-1] for b in unit.binaries]
    together = len(unit.binaries) > 1 and len({b.ldflags for b in unit.binaries}) == 1 and len(set(bases)) == len(bases)
    if together:
        log(f"  building {', '.join(b.name for b in unit.binaries)}")
        ldflags = " ".join(("-s", "-w", *unit.binaries[0].ldflags))
        tmp = out / ".build"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        pkgs = [b.package for b in unit.binaries]
        _run([*GO_BUILD, "-ldflags", ldflags, "-o", f"{tmp}/", *pkgs], src, env, log)
        for b, base in zip(unit.binaries, bases, strict=True):
            os.replace(tmp / base, out / b.name)
        tmp.rmdir()
        return
    for b in unit.binaries:
        log(f"  building {b.name} ({b.package})")
        ldflags = " ".join(("-s", "-w", *b.ldflags))
        _run([*GO_BUILD, "-ldflags", ldflags, "-o", str(out / b.name), b.package], src, env, log)


def build_unit(unit: Unit, log=print) -> bool:
    """Build one unit; return True when something was built, False when the cache already had it."""
    done = bin_dir(unit) / ".done"
    adone = artifacts_dir(unit) / ".done"
    if built(unit):
        return False
    env = go_env(unit)
    t0 = time.monotonic()
    src, dirs = _wrapper(unit, env, log)
    _compile(unit, src, env, log)
    out = bin_dir(unit)
    adir = artifacts_dir(unit)
    if adir.exists():
        shutil.rmtree(adir)
    adir.mkdir(parents=True)
    for spec, name in unit.artifacts:
        mod, sub = spec.split(":", 1)
        source = dirs[mod] / sub
        if not source.exists():
            raise BuildError(f"{unit.name}: {sub} not found in {mod} ({source})")
        shutil.copytree(source, adir / name, symlinks=False, ignore_dangling_symlinks=True)
        for root, ds, fs in os.walk(adir / name):
            for n in ds + fs:
                os.chmod(os.path.join(root, n), 0o755 if n in ds else 0o644)
    adone.write_text(json.dumps({m: str(d) for m, d in dirs.items()}))
    done.write_text(time.strftime("%Y-%m-%dT%H:%M:%S"))
    # older recipes of this unit's version (other versions are kept: the lab runs two Kubernetes releases)
    for stale in (cache_dir() / "bin").glob(f"{unit.name}-{unit.version}-*"):
        if stale.name != unit.key and stale.name.count("-") == unit.key.count("-"):
            shutil.rmtree(stale, ignore_errors=True)
    log(f"  {unit.name} {unit.version}: built in {time.monotonic() - t0:.0f}s -> {out}")
    return True


def build(names: list[str] | None = None, log=print, detail=None) -> dict[str, float]:
    """Build ``names`` (default: every unit), skipping what the cache has.

    ``log`` gets one line per unit, with its time and what is left; ``detail`` (default: nothing) each command
    run and each binary built."""
    if shutil.which("go") is None:
        raise BuildError("go is not on PATH; install Go >= 1.24 (the lab builds Kubernetes from Go modules)")
    known = [label(u) for u in all_units()]
    unknown = sorted(set(names or ()) - set(known))
    if unknown:
        raise BuildError(f"unknown unit(s) {', '.join(unknown)}: choose among {', '.join(known)}")
    todo = [u for u in all_units() if not names or label(u) in names]
    cached = [label(u) for u in todo if built(u)]
    if cached:
        log(f"[build] cached: {', '.join(cached)}")
    todo = [u for u in todo if label(u) not in cached]
    timings = dict.fromkeys(cached, 0.0)
    t_all = time.monotonic()
    fetching = None
    for i, unit in enumerate(todo, 1):
        t0 = time.monotonic()
        if fetching is not None:
            fetching.join()  # the next unit's downloads, started while this one compiled
        fetching = threading.Thread(target=prefetch, args=(todo[i],), daemon=True) if i < len(todo) else None
        if fetching is not None:
            fetching.start()
        try:
            build_unit(unit, detail or (lambda *_: None))
        except BuildError as e:
            raise BuildError(f"{unit.name} {unit.version} did not build: {e}") from e
        timings[label(unit)] = time.monotonic() - t0
        left = [label(u) for u in todo[i:]]
        log(
            f"[build {i}/{len(todo)}] {unit.name} {unit.version}: {timings[label(unit)]:.0f}s "
            f"(total {time.monotonic() - t_all:.0f}s; " + (f"left: {', '.join(left)})" if left else "done)")
        )
    return timings


if __name__ == "__main__":  # pragma: no cover
    build(sys.argv[1:] or None)
