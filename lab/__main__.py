"""python -m lab {build,up,down,status,logs,nodes,runner,gang-demo,gpu-node,gpu-bundle,flux}: the local lab cluster;
a real GPU node (and a bundle of it for a GPU machine that cannot build); Flux on the lab."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from . import build as B
from .paths import state_dir


def _cmd_build(a) -> int:
    t0 = time.monotonic()
    names = list(a.only) + (B.units_for(a.paths) if a.paths else [])
    timings = B.build(names or None, detail=print if a.verbose else None)
    if not names or set(names) & set(B.GPU_NODE_UNITS):
        from .gpu import native

        t1 = time.monotonic()
        if not native.built():
            native.build(log=print if a.verbose else (lambda *_: None))
            timings["gpu-node native"] = time.monotonic() - t1
    built = {k: v for k, v in timings.items() if v}
    print(
        f"build done in {time.monotonic() - t0:.0f}s"
        + (": " + ", ".join(f"{k} {v:.0f}s" for k, v in built.items()) if built else ", everything was cached")
    )
    print(f"binaries and artifacts under {B.cache_dir()}")
    return 0


def _cmd_up(a) -> int:
    lab = Lab()
    st = lab.up(
        gpu_nodes=a.gpu_nodes, gpus_per_node=a.gpus_per_node, cpu_nodes=a.cpu_nodes, api_port=a.api_port, reuse=a.reuse
    )
    print(
        f"\nlab is up in {st.get('up_seconds', 0)}s: {a.gpu_nodes} GPU node(s) x {a.gpus_per_node} GPU, "
        f"{a.cpu_nodes} CPU node(s); apiserver https://127.0.0.1:{st['ports']['apiserver']}"
    )
    print(f"  export KUBECONFIG={lab.kubeconfig}")
    if _built("kubectl"):
        print(f"  kubectl:   {B.binary_path('kubectl')} get nodes")
    else:
        print("  kubectl:   kubectl get nodes   (the lab's own release: python -m lab build kubectl)")
    print("  status:    python -m lab status      stop: python -m lab down")
    return 0


def _built(name: str) -> bool:
    try:
        B.binary_path(name)
        return True
    except B.BuildError:
        return False


def _cmd_down(a) -> int:
    Lab().down(remove_state=a.purge)
    return 0


def _cmd_status(a) -> int:
    st = Lab().status()
    if a.json:
        print(json.dumps(st, indent=2))
        return 0
    for name, s in st.items():
        addr = f"  ip {s['ip']}" if s.get("ip") else ""
        print(f"{name:40s} {'up' if s['up'] else 'down':5s} pid {s['pid'] or '-'}{addr}")
        for line in s["log"]:
            print(f"    | {line[:160]}")
    return 0 if all(s["up"] for n, s in st.items() if not n.startswith("pod/")) else 3


def _cmd_logs(a) -> int:
    path = Lab().log_path(a.what)
    lines = path.read_text(errors="replace").splitlines()
    print("\n".join(lines[-a.tail :] if a.tail else lines))
    return 0


def _cmd_nodes(a) -> int:
    from . import nodes

    lab = Lab()
    if not lab.running().get("kube-apiserver"):
        from .cluster import LabError

        raise LabError("the lab is not running; start it with: python -m lab up")
    api = nodes.client(lab.kubeconfig)
    if a.nodes_cmd == "add":
        names = [nodes.add(api, a.gpus, a.name if a.count == 1 else None) for _ in range(a.count)]
        nodes.wait_ready(api, names=names)
        print("added: " + ", ".join(names))
    elif a.nodes_cmd == "remove":
        nodes.remove(api, a.name)
        print(f"removed: {a.name}")
    else:
        from kubernetes import client as k

        for n in k.CoreV1Api(api).list_node().items:
            gpus = (n.status.allocatable or {}).get("nvidia.com/gpu", "0")
            ready = next((c.status for c in n.status.conditions or [] if c.type == "Ready"), "Unknown")
            print(f"{n.metadata.name:24s} ready={ready:6s} gpus={gpus}")
    return 0


def _cmd_runner(a) -> int:
    from .runner import main

    main()
    return 0


def _cmd_restart(a) -> int:
    Lab().restart(a.component, a.down_for)
    return 0


def _cmd_gang_demo(a) -> int:
    from .demo import main

    return main()


def _cmd_gpu_node(a) -> int:
    from .gpu import harness

    try:
        role_vars = json.loads(a.role_vars) if a.role_vars else {}
    except ValueError as e:
        print(f"error: --role-vars is not JSON: {e}", file=sys.stderr)
        return 2
    results = []
    try:
        for strategy in a.strategy or ["cdi-cri"]:
            out = state_dir() / "gpu-node" / strategy if len(a.strategy or []) > 1 else None
            results.append(
                harness.run(
                    strategy=strategy,
                    mode=a.mode,
                    gpus=a.gpus,
                    role_vars=role_vars,
                    total_timeout=a.timeout,
                    out_dir=out,
                    from_bundle=a.bundle,
                    log=lambda line: print(line, file=sys.stderr),
                )
            )
    except harness.HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(results if len(results) > 1 else results[0], indent=1))
    else:
        for r in results:
            print(r["summary"])
            print(f"  result: {r['logs'].rsplit('/', 1)[0]}/result.json, logs: {r['logs']}")
    return 0 if all(r["ok"] for r in results) else 1


def _cmd_gpu_bundle(a) -> int:
    from .gpu import bundle, harness

    log = lambda line: print(line, file=sys.stderr)  # noqa: E731
    try:
        m = bundle.write(a.dir, harness.ensure_built(log), preset=a.preset, log=log)
    except (harness.HarnessError, bundle.BundleError, B.BuildError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    mib = 1 << 20
    print(
        f"GPU-node bundle in {a.dir}: {m['bytes'] / mib:.1f} MiB of binaries ({m['unpacked_bytes'] / mib:.0f} MiB "
        f"unpacked) in {m['seconds']:.0f}s; on the GPU machine: python -m lab gpu-node --bundle {a.dir}"
    )
    return 0


def _cmd_flux(a) -> int:
    if a.flux_cmd == "git-server":
        from .fluxgit import serve_git

        serve_git(a.root, a.port)
        return 0
    from . import flux

    f = flux.Flux()
    if a.flux_cmd == "up":
        st = f.up(interval=a.interval, kustomization_interval=a.kustomization_interval, path=a.path)
        print(f"\nFlux is up in {st['up_seconds']}s; repository {f.url} (branch {flux.BRANCH}), applied from {a.path}")
        print(f"  clone:     git clone {f.url}")
        print(f"  logs:      python -m lab logs {flux.SOURCE}  (or {flux.KUSTOMIZE}, {flux.GIT_SERVER})")
        print("  stop:      python -m lab flux down")
    elif a.flux_cmd == "down":
        f.down()
    else:
        running = f.running()
        for name, up in running.items():
            print(f"{name:40s} {'up' if up else 'down'}")
        if not all(running.values()):
            return 3
        print(f"repository {f.url} at {f.head()}")
        for what, obj in (("GitRepository", f.git_repository()), ("Kustomization", f.kustomization())):
            st = obj.get("status") or {}
            ready = next((c for c in st.get("conditions") or [] if c["type"] == "Ready"), {})
            rev = st.get("lastAppliedRevision") or (st.get("artifact") or {}).get("revision")
            print(f"{what} {flux.NS}/{flux.NAME}: Ready={ready.get('status', '?')} {rev or ''}")
            if ready.get("status") != "True":
                print(f"    | {ready.get('message', '')[:300]}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lab", description="Local Kubernetes lab with fake GPU nodes.")
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build the binaries into the cache (skips what is built)")
    units = ", ".join(B.label(u) for u in B.all_units())
    b.add_argument("only", nargs="*", help=f"units to build (default all): {units}")
    b.add_argument(
        "--for",
        dest="paths",
        action="append",
        default=[],
        metavar="PATH",
        help=f"only the lab's base and the units of this path (repeatable): {', '.join(B.PATH_UNITS)}",
    )
    b.add_argument("--verbose", action="store_true", help="print each command and binary as it is built")
    b.set_defaults(fn=_cmd_build)
    u = sub.add_parser("up", help="start the lab")
    u.add_argument("--gpu-nodes", type=int, default=4)
    u.add_argument("--gpus-per-node", type=int, default=1)
    u.add_argument("--cpu-nodes", type=int, default=1)
    u.add_argument("--api-port", type=int, default=None, help="apiserver port (default: a free one)")
    u.add_argument("--reuse", action="store_true", help="succeed if the lab is already fully up")
    u.set_defaults(fn=_cmd_up)
    d = sub.add_parser("down", help="stop everything (idempotent)")
    d.add_argument("--purge", action="store_true", help="also delete .lab/")
    d.set_defaults(fn=_cmd_down)
    s = sub.add_parser("status", help="each component and runner pod: pid, up/down, the pod's address, last log lines")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=_cmd_status)
    lg = sub.add_parser("logs", help="a component's log, or pod/NS/NAME[/CONTAINER]")
    lg.add_argument("what")
    lg.add_argument("--tail", type=int, default=0)
    lg.set_defaults(fn=_cmd_logs)
    n = sub.add_parser("nodes", help="list, add or remove fake nodes")
    nsub = n.add_subparsers(dest="nodes_cmd")
    na = nsub.add_parser("add")
    na.add_argument("--gpus", type=int, default=1)
    na.add_argument("--count", type=int, default=1)
    na.add_argument("--name")
    nr = nsub.add_parser("remove")
    nr.add_argument("name")
    nsub.add_parser("list")
    n.set_defaults(fn=_cmd_nodes)
    rs = sub.add_parser("restart", help="stop a component and start it again (fault injection)")
    rs.add_argument("component")
    rs.add_argument("--down-for", type=float, default=5.0, help="seconds it stays down (default 5)")
    rs.set_defaults(fn=_cmd_restart)
    r = sub.add_parser("runner", help="(internal) the pod-process runner")
    r.set_defaults(fn=_cmd_runner)
    g = sub.add_parser("gang-demo", help="gang vs no gang on the lab, with the real schedulers")
    g.set_defaults(fn=_cmd_gang_demo)
    gn = sub.add_parser(
        "gpu-node",
        help="a real kubelet, containerd and the device plugin as the gpu_device_plugin role renders it: "
        "registration, allocatable GPUs, a GPU pod injected, a control pod not (stand-in NVML without a GPU)",
    )
    gn.add_argument(
        "--strategy",
        action="append",
        choices=["cdi-cri", "cdi-annotations", "envvar"],
        help="device list strategy to render and prove (repeatable; default cdi-cri)",
    )
    gn.add_argument(
        "--mode",
        choices=["auto", "standin", "driver"],
        default="auto",
        help="the real driver when a GPU is present (auto), or the stand-in NVML",
    )
    gn.add_argument("--gpus", type=int, default=2, help="stand-in GPUs (default 2)")
    gn.add_argument("--role-vars", help="more gpu_device_plugin variables, as JSON")
    gn.add_argument("--timeout", type=float, default=240, help="seconds for the whole run (default 240)")
    gn.add_argument("--json", action="store_true", help="print the result as JSON")
    gn.add_argument("--bundle", type=Path, help="run from a bundle (python -m lab gpu-bundle) and build nothing")
    gn.set_defaults(fn=_cmd_gpu_node)
    gb = sub.add_parser(
        "gpu-bundle",
        help="what gpu-node runs (binaries, images, the device plugin's chart) in one directory, for a GPU machine "
        "without Go or network: there, python -m lab gpu-node --bundle DIR",
    )
    gb.add_argument("dir", type=Path)
    gb.add_argument("--preset", type=int, default=9, choices=range(10), help="xz level (default 9, the smallest)")
    gb.set_defaults(fn=_cmd_gpu_bundle)
    fx = sub.add_parser(
        "flux",
        help="Flux's source-controller and kustomize-controller on the lab, each under its own ServiceAccount, and "
        "a Git server (smart HTTP, pushes too) whose repository they apply (python -m lab build --for flux first)",
    )
    fsub = fx.add_subparsers(dest="flux_cmd", required=True)
    fu = fsub.add_parser("up", help="start Flux and bootstrap it on the lab's repository (again: restarts it)")
    fu.add_argument("--interval", default="10s", help="how often the repository is fetched (default 10s)")
    fu.add_argument(
        "--kustomization-interval", default="30s", help="how often it is applied again, drift put back (default 30s)"
    )
    fu.add_argument("--path", default="./clusters/lab", help="the directory Flux applies (default ./clusters/lab)")
    fsub.add_parser("down", help="delete Flux's objects (nothing applied is pruned) and stop its processes")
    fsub.add_parser("status", help="its processes, the repository's tip, the GitRepository and Kustomization")
    fg = fsub.add_parser("git-server", help="(internal) the smart HTTP Git server")
    fg.add_argument("--root", required=True, type=Path)
    fg.add_argument("--port", required=True, type=int)
    fx.set_defaults(fn=_cmd_flux)
    return p


def Lab():  # noqa: N802 (the cluster's class, imported on use)
    from .cluster import Lab as _Lab

    return _Lab()


def _lab_errors() -> tuple[type[Exception], ...]:
    from .cluster import LabError

    return (LabError, B.BuildError)


def main(argv: list[str] | None = None) -> int:
    # the cluster (and its client and crypto libraries) is imported only by the commands that run it: gpu-node and
    # gpu-bundle run on a GPU machine that may have none of them
    a = parser().parse_args(argv)
    try:
        return a.fn(a)
    except _lab_errors() as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
