"""Prints how soon the smoke test's verdict follows the scheduler's decision, per gang path. Not a test: it asserts
nothing, it measures.

For each gang path (Volcano, scheduler-plugins, Koordinator's label gangs, kube-scheduler's own gang): a fresh lab,
site.yml with that path (its smoke test proves both verdicts: a gang that fits, held running, and one a member too
big, held pending), then each verdict's figures from the run's report: when the scheduler decided (its last bind of a
member, or its rejection of the whole gang; the floor, the scheduler's own time) and when the verdict was reached,
both in seconds from the gang's creation, and the difference (target: at most 2 s).

Usage: python bench/verdict_figures.py [PATH ...]   (about 3 minutes a path on 2 cores; every path by default)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gang_figures import playbook  # noqa: E402  (bench/, the script's directory)

from lab import build  # noqa: E402
from lab.cluster import Lab  # noqa: E402

PATHS = ("volcano", "scheduler_plugins", "koordinator", "native")
TARGET = 2.0


def reports(lab: Lab) -> list[dict]:
    """The smoke test reports the lab's runs wrote, oldest first."""
    found = sorted((lab.root / "reports").glob("gang-smoke-*.json"), key=lambda p: p.stat().st_mtime)
    return [json.loads(p.read_text()) for p in found]


def figures(path: str) -> None:
    lab = Lab()
    lab.up(gpu_nodes=4, gpus_per_node=1, cpu_nodes=1, log=lambda *_: None)
    try:
        took = playbook(lab, "site", "-e", f"gangsched_gang_scheduler={path}")
        print(f"  {path}: site.yml {took:.0f} s")
        for r in reports(lab):
            g = r.get("gang") or {}
            decided, verdict = g.get("decided_seconds"), g.get("seconds")
            if decided is None or verdict is None:
                print(f"    {r.get('verdict')}: the scheduler's decision was not seen (verdict at {verdict} s)")
                continue
            after = verdict - decided
            print(
                f"    {r.get('verdict')}: scheduler decided at {decided:.2f} s, verdict at {verdict:.2f} s -> "
                f"{after:.2f} s after the decision (target {TARGET:.0f} s{'' if after <= TARGET else ': OVER'})"
            )
    finally:
        lab.down(log=lambda *_: None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", default=list(PATHS), metavar="PATH", help=f"among {', '.join(PATHS)}")
    opts = ap.parse_args()
    unknown = [p for p in opts.paths if p not in PATHS]
    if unknown:
        ap.error(f"unknown gang path(s) {', '.join(unknown)}: choose among {', '.join(PATHS)}")
    build.binary_path("helm")  # the lab is built (make build)
    if any(Lab().running().values()):
        print("a lab is already running; stop it first (python -m lab down)")
        return 2
    print("the smoke test's verdict after the scheduler's decision, per gang path (site.yml on a fresh lab):")
    for path in opts.paths:
        figures(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
