"""Gang vs no gang on the lab, with the real schedulers: a readable before/after table."""

from __future__ import annotations

import sys
import time

from kubernetes import client as k

from . import kube, nodes, scenarios
from .cluster import Lab


def _row(label: str, seen: dict) -> str:
    after = (
        f"{len(seen['running_final'])}/{seen['size']} Running {seen['all_running_after_s']}s after the node"
        if seen.get("added_node")
        else "-"
    )
    before = (
        f"{len(seen['running_after_hold'])} Running, {len(seen['pending_after_hold'])} Pending"
        f" (ever bound: {len(seen['bound_during_hold'])})"
    )
    return f"| {label:36s} | {before:34s} | {after:40s} |"


def main() -> int:
    lab = Lab()
    t0 = time.monotonic()
    print("== starting the lab (4 GPU nodes x 1 GPU)", flush=True)
    lab.up(gpu_nodes=4, gpus_per_node=1, cpu_nodes=1, reuse=True)
    api = kube.api(lab)
    core = k.CoreV1Api(api)
    print(
        "== installing scheduler-plugins (second scheduler, Coscheduling) and Volcano, run as real processes",
        flush=True,
    )
    scenarios.install_scheduler_plugins(lab)
    scenarios.install_volcano(lab)
    rows = []
    for label, sched, add in (
        ("default-scheduler (no gang)", "default", 0),
        ("scheduler-plugins coscheduling", "scheduler-plugins", 1),
        ("Volcano gang", "volcano", 1),
    ):
        ns = f"demo-{sched}"
        kube.delete_namespace(core, ns, timeout=120)
        kube.ensure_namespace(core, ns)
        print(
            f"== {label}: 5 pods x 1 GPU on 4 free GPUs, watching 20s" + (", then adding a GPU node" if add else ""),
            flush=True,
        )
        seen = scenarios.observe_gang(lab, ns, "job", 5, sched, hold=20, add_gpus=add)
        rows.append(_row(label, seen))
        kube.delete_namespace(core, ns, timeout=120)
        if seen.get("added_node"):
            nodes.remove(api, seen["added_node"])
    print()
    print(f"| {'scheduler':36s} | {'before (4 GPUs free, 20 s)':34s} | {'after adding 1 GPU node':40s} |")
    print(f"|{'-' * 38}|{'-' * 36}|{'-' * 42}|")
    print("\n".join(rows))
    print(
        f"\ndone in {time.monotonic() - t0:.0f}s. The lab is still up: KUBECONFIG={lab.kubeconfig}; "
        "stop it with: make down"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
