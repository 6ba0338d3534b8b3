"""Prints the lab's figures: build time (warm; cold when the cache is empty), `lab up` time,
resident memory of a running lab, disk used by .lab/. Not a test: it asserts nothing."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lab import build, procs  # noqa: E402
from lab.cluster import Lab  # noqa: E402


def rss_kib(pid: int) -> int:
    """Resident memory of a process and all its descendants, in KiB."""
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            todo += [int(c) for c in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except OSError:
            continue
    return total


def main() -> int:
    cold = not any((build.cache_dir() / "bin").glob("*/.done")) if (build.cache_dir() / "bin").exists() else True
    t0 = time.monotonic()
    build.build(log=lambda *_: None)
    print(f"build ({'cold' if cold else 'warm'}): {time.monotonic() - t0:.1f} s")
    lab = Lab()
    if any(lab.running().values()):
        print("a lab is already running; stop it first (python -m lab down)")
        return 2
    t0 = time.monotonic()
    lab.up(log=lambda *_: None)
    print(f"lab up (4 GPU nodes + 1 CPU node): {time.monotonic() - t0:.1f} s")
    try:
        time.sleep(5)
        total = 0
        for c in ("etcd", "kube-apiserver", "kube-controller-manager", "kwok", "runner"):
            kib = rss_kib(lab.pid(c))
            total += kib
            print(f"  rss {c:24s} {kib / 1024:7.1f} MiB")
        print(f"resident memory of the lab: {total / 1024:.0f} MiB")
        du = subprocess.run(["du", "-sk", str(lab.root)], capture_output=True, text=True).stdout.split()[0]
        print(f"disk used by {lab.root}: {int(du) / 1024:.1f} MiB")
    finally:
        lab.down(log=lambda *_: None)
    print(f"processes left after down: {sum(procs.alive(lab.pid(c)) for c in ('etcd', 'kube-apiserver'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
