"""Prints drift's figures on a cluster a round trip away: the lab behind lab.latency's forwarder (each chunk a client
sends held for --delay seconds), drift asked about --objects ConfigMaps (a quarter of them missing or changed), next to
its floor measured in the same run: `kubectl diff --server-side` of the same objects, which asks the same two things
of each (a read and a server-side dry run), one object after another. Each figure without the forwarder too, and the
start of each process alone (drift refused on its options before any request; `kubectl version --client`). Medians
of --runs runs, in turn. With --baseline DIR, also the drift of the checkout in DIR (e.g. `git worktree add DIR <rev>`,
then `make collection` there). Not a test: it asserts nothing.

Then the converge on that cluster: site.yml (Volcano) installed without the forwarder, then its converged re-run
(`--skip-tags smoke`, `gangsched_kubeconfig` the forwarder's) and render.yml (the same) next to their floor in the
same run: `kubectl apply
--server-side` through the forwarder of what render.yml writes, one call per component directory (as
bench/gang_figures.py's floor, there without the forwarder). With --baseline, the baseline's re-run too, in turn.

    python bench/far_figures.py [--delay 0.05] [--objects 40] [--runs 3] [--baseline DIR] [--no-converge]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

from lab import build, kube  # noqa: E402
from lab.cluster import Lab  # noqa: E402
from lab.latency import LatencyProxy  # noqa: E402

BIN = Path(sys.executable).parent
NS = "far-bench"


def _cm(i: int, value: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"c{i:03d}", "namespace": NS},
        "data": {"k": value},
    }


def _timed(cmd: list[str], env: dict, ok=(0,)) -> float:
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True)
    took = time.monotonic() - t0
    if p.returncode not in ok:
        sys.exit(f"{cmd[0]} failed (rc {p.returncode}): {p.stdout[-1500:]} {p.stderr[-1500:]}")
    return took


def _playbook(name: str, env: dict, *extra: str) -> tuple[float, str]:
    """(wall s, the recap's changed= counts) of ``gangsched.kubeflow.<name>`` on the lab inventory."""
    cmd = [str(BIN / "ansible-playbook"), "-i", str(REPO / "inventories/lab"), f"gangsched.kubeflow.{name}", *extra]
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True)
    took = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"{name}.yml failed (rc {p.returncode}):\n{p.stdout[-3000:]}")
    return took, ",".join(re.findall(r"changed=(\d+)", p.stdout))


def converge_figures(lab: Lab, env: dict, far_config: Path, tmp: Path, runs: int, baseline: Path | None) -> None:
    """The converged re-run through the forwarder next to the apply floor through it (see the module's text)."""
    env = {**env, "GANGSCHED_LAB_DIR": str(lab.root)}
    took, changed = _playbook("site", env, "--skip-tags", "smoke")
    print(
        f"site.yml --skip-tags smoke on the lab, without the forwarder (the install): {took:.1f} s, changed={changed}"
    )
    rendered = tmp / "rendered"
    _playbook("render", env, "-e", f"gangsched_render_dir={rendered}")
    dirs = sorted(d for d in rendered.iterdir() if d.is_dir() and d.name != "host-files")
    # Helm hooks (the Volcano chart's admission-init Job, removed by Helm once done) are left out, as in the tests
    files = [[f for f in sorted(d.glob("*.yaml")) if "helm.sh/hook" not in f.read_text()] for d in dirs]
    kubectl = str(build.binary_path("kubectl"))
    far = ["-e", f"gangsched_kubeconfig={far_config}", "--skip-tags", "smoke"]
    collections = {"site.yml re-run": env}
    if baseline:
        collections[f"site.yml re-run ({baseline})"] = {
            **env,
            "ANSIBLE_COLLECTIONS_PATH": str(baseline / ".collections"),
        }
    times: dict[str, list[float]] = {}
    recaps: dict[str, set] = {}
    for i in range(runs):
        for name, e in collections.items():
            took, changed = _playbook("site", e, *far)
            times.setdefault(name, []).append(took)
            recaps.setdefault(name, set()).add(changed)
        again = ["-e", f"gangsched_kubeconfig={far_config}", "-e", f"gangsched_render_dir={tmp / f'rendered-{i}'}"]
        times.setdefault("render.yml", []).append(_playbook("render", env, *again)[0])
        t0 = time.monotonic()
        for group in files:
            cmd = [kubectl, f"--kubeconfig={far_config}", "apply", "--server-side", "--force-conflicts"]
            _timed([*cmd, *[a for f in group for a in ("-f", str(f))]], env)
        times.setdefault("kubectl apply --server-side (the floor)", []).append(time.monotonic() - t0)
    floor = statistics.median(times["kubectl apply --server-side (the floor)"])
    print(
        f"the converged re-run through the forwarder, next to `kubectl apply --server-side` through it of the "
        f"{sum(map(len, files))} objects render.yml writes; medians of {runs} runs in turn:"
    )
    for name, values in times.items():
        med = statistics.median(values)
        changed = f", changed={'/'.join(sorted(recaps[name]))}" if name in recaps else ""
        print(
            f"  {name}: {med:.2f} s = {med / floor:.2f}x the floor ({', '.join(f'{v:.2f}' for v in values)}{changed})"
        )


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--objects", type=int, default=40)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", type=Path, help="another checkout, its collection built (make collection)")
    ap.add_argument("--no-converge", action="store_true", help="drift's figures only, not the converge's")
    args = ap.parse_args(argv)
    lab = Lab(Path(tempfile.mkdtemp(prefix="far-bench-")))
    lab.up(log=lambda *_: None)  # the GPU nodes the lab inventory expects (4), for the converge
    tmp = Path(tempfile.mkdtemp(prefix="far-bench-files-"))
    try:
        kube.kubectl(lab, "create", "namespace", NS)
        wanted = [_cm(i, "v") for i in range(args.objects)]
        held = [_cm(i, "v" if i % 4 else "changed") for i in range(args.objects - args.objects // 8)]
        kube.apply(lab, held)
        (tmp / "objects.yaml").write_text(yaml.safe_dump_all(wanted))
        env = {
            **os.environ,
            "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
            "ANSIBLE_LOCALHOST_WARNING": "0",
            "PYTHONPATH": str(REPO / ".collections"),
        }
        kubectl = str(build.binary_path("kubectl"))
        times: dict[str, list[float]] = {}
        with LatencyProxy(lab.state()["ports"]["apiserver"], args.delay) as far:
            configs = {"near": lab.kubeconfig, "far": far.kubeconfig(lab, tmp / "far")}
            for _ in range(args.runs):
                for where, config in configs.items():
                    drift = {"definition": wanted, "kubeconfig": str(config)}
                    cmd = [str(BIN / "ansible"), "localhost", "-m", "gangsched.kubeflow.drift", "-a", json.dumps(drift)]
                    times.setdefault(f"drift {where}", []).append(_timed(cmd, env))
                    if args.baseline:
                        base = {**env, "ANSIBLE_COLLECTIONS_PATH": str(args.baseline / ".collections")}
                        times.setdefault(f"drift {where} ({args.baseline})", []).append(_timed(cmd, base))
                    # kubectl diff exits 1 when it finds a difference
                    cmd = [kubectl, f"--kubeconfig={config}", "diff", "--server-side", "-f", str(tmp / "objects.yaml")]
                    times.setdefault(f"kubectl diff {where}", []).append(_timed(cmd, env, ok=(0, 1)))
                bad = [str(BIN / "ansible"), "localhost", "-m", "gangsched.kubeflow.drift", "-a", '{"api_timeout": 0}']
                times.setdefault("drift refused on its options (start-up)", []).append(_timed(bad, env, ok=(0, 2)))
                times.setdefault("kubectl version --client (start-up)", []).append(
                    _timed([kubectl, "version", "--client"], env)
                )
            connections = far.most
        med = {k: statistics.median(v) for k, v in times.items()}
        print(
            f"drift of {args.objects} ConfigMaps ({args.objects // 8} missing, a quarter of the rest changed), "
            f"medians of {args.runs} runs in turn; the forwarder holds each chunk sent {args.delay * 1000:.0f} ms"
        )
        for name, values in times.items():
            print(f"  {name}: {med[name]:.2f} s ({', '.join(f'{v:.2f}' for v in values)})")
        for where in ("near", "far"):
            drift, floor = med[f"drift {where}"], med[f"kubectl diff {where}"]
            print(
                f"  {where}: drift {drift:.2f} s = {drift / floor:.2f}x kubectl diff --server-side"
                f" (the floor, {floor:.2f} s)"
            )
        print(f"  connections open at once through the forwarder, at most: {connections}")
        if not args.no_converge:
            with LatencyProxy(lab.state()["ports"]["apiserver"], args.delay) as far:
                converge_figures(lab, env, far.kubeconfig(lab, tmp / "far"), tmp, args.runs, args.baseline)
    finally:
        lab.down(log=lambda *_: None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
