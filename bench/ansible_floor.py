"""Ansible's own share of a playbook run: how many tasks ran on the host (skipped ones included: each is a worker
forked and a result sent back all the same), how many module runs they made and how many of those were module
processes (a Python process each on the managed host; the collection's own modules run in Ansible's worker when
that is the controller's Python, see plugin_utils/_inprocess), which actions took the longest, and what as many
tasks that do nothing cost on this machine, measured now.

Used by gang_figures.py next to the converge and render figures: a run cannot be faster than ``ansible-playbook``'s
start plus its tasks' own cost, whatever each of them does; the rest is the work itself (templating, API calls,
Helm, files written). Also runnable alone on a lab: python bench/ansible_floor.py
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent

# actions that run in ansible-playbook itself: no module process
CONTROLLER_ACTIONS = {
    f"ansible.builtin.{a}"
    for a in (
        "assert",
        "debug",
        "fail",
        "import_playbook",
        "import_role",
        "import_tasks",
        "include_role",
        "include_tasks",
        "include_vars",
        "meta",
        "set_fact",
        "set_stats",
        "validate_argument_spec",
    )
} | {"assert", "debug", "fail", "include_role", "include_tasks", "meta", "set_fact", "validate_argument_spec"}


def module_runs(report: dict) -> tuple[int, dict]:
    """Module runs in an ``ansible.posix.json`` report (a loop's items counted one by one, skipped ones not):
    the total and the count per action."""
    per: dict[str, int] = {}
    for play in report.get("plays", []):
        for task in play.get("tasks", []):
            for res in task.get("hosts", {}).values():
                action = res.get("action", "")
                if action in CONTROLLER_ACTIONS:
                    continue
                items = res.get("results") if isinstance(res.get("results"), list) else [res]
                n = sum(1 for r in items if isinstance(r, dict) and not r.get("skipped"))
                if n:
                    per[action] = per.get(action, 0) + n
    return sum(per.values()), per


def _seconds(task: dict) -> float:
    d = task["task"]["duration"]
    return (_when(d["end"]) - _when(d["start"])).total_seconds()


def _when(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def tasks_run(report: dict) -> tuple[int, int, dict]:
    """The tasks that ran on the host in an ``ansible.posix.json`` report: how many, how many of them skipped, and
    the seconds per action (a task's start to its end, as the report gives them)."""
    n = skipped = 0
    seconds: dict[str, float] = {}
    for play in report.get("plays", []):
        for task in play.get("tasks", []):
            for res in task.get("hosts", {}).values():
                n += 1
                skipped += bool(res.get("skipped"))
                action = res.get("action", "?")
                seconds[action] = seconds.get(action, 0.0) + _seconds(task)
    return n, skipped, seconds


def counted_run(cmd: list[str], env: dict, cwd: Path) -> tuple[dict, int, dict, dict]:
    """Runs ``cmd`` (an ansible-playbook command line) with the JSON callback; its report, its module runs (total and
    per action) and of those the module processes per action: the runs of each action whose module Ansible shipped
    (its AnsiballZ file, kept by ANSIBLE_KEEP_REMOTE_FILES in a temporary remote directory; a loop's items share
    one file, so the file tells which actions were shipped, the report how often they ran). An action that left
    no file ran in Ansible's worker."""
    with tempfile.TemporaryDirectory() as remote:
        p = subprocess.run(
            cmd,
            env={
                **env,
                "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
                "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
                "ANSIBLE_KEEP_REMOTE_FILES": "1",
                "ANSIBLE_REMOTE_TMP": remote,
            },
            cwd=cwd,
            capture_output=True,
            text=True,
        )
        shipped: dict[str, int] = {}
        for f in Path(remote).rglob("AnsiballZ_*.py"):
            name = f.name.removeprefix("AnsiballZ_").removesuffix(".py")
            shipped[name] = shipped.get(name, 0) + 1
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])} failed (rc {p.returncode}):\n{p.stdout[-3000:]}")
    report = json.loads(p.stdout)
    n, per = module_runs(report)
    return report, n, per, {a: c for a, c in per.items() if a.rsplit(".", 1)[-1] in shipped}


def task_floor(n: int, env: dict) -> tuple[float, float]:
    """Wall s of ``ansible-playbook`` with one play of ``n`` tasks that do nothing (``ansible.builtin.debug`` of a
    constant, in the worker as the collection's actions are) on localhost (local connection, this Python), and of
    the same play with none: Ansible's cost of n tasks, and its start."""
    with tempfile.TemporaryDirectory() as d:
        out = []
        for tasks in (n, 0):
            play = [
                {
                    "hosts": "localhost",
                    "gather_facts": False,
                    "tasks": [{"name": f"nothing {i}", "ansible.builtin.debug": {"msg": "-"}} for i in range(tasks)]
                    or [{"name": "nothing", "ansible.builtin.meta": "noop"}],
                }
            ]
            path = Path(d) / f"nothing-{tasks}.yml"
            path.write_text(json.dumps(play))
            t0 = time.monotonic()
            subprocess.run(
                [
                    str(BIN / "ansible-playbook"),
                    "-i",
                    "localhost,",
                    "-c",
                    "local",
                    "-e",
                    f"ansible_python_interpreter={sys.executable}",
                    str(path),
                ],
                env=env,
                capture_output=True,
                check=True,
            )
            out.append(time.monotonic() - t0)
    return out[0], out[1]


def share(label: str, cmd: list[str], env: dict, cwd: Path, took: float, floor: float | None) -> list[str]:
    """Lines for the run of ``cmd`` (which took ``took`` s in the figures) next to the apply ``floor`` (s, where one
    was measured): its tasks and module runs, where its tasks' time went by action, and as many tasks that do
    nothing, measured now."""
    report, runs, per, shipped = counted_run(cmd, env, cwd)
    n, skipped, seconds = tasks_run(report)
    nothing, start = task_floor(n, env)
    top = sorted(seconds.items(), key=lambda kv: -kv[1])[:6]
    return [
        f"  {label}: {n} tasks ({skipped} skipped), {runs} module runs"
        f" ({', '.join(f'{a} {c}' for a, c in sorted(per.items()))}),"
        f" {sum(shipped.values())} of them module processes",
        f"    its tasks' time by action: {', '.join(f'{a} {t:.2f} s' for a, t in top)}",
        f"    {n} tasks that do nothing: {nothing:.1f} s (ansible-playbook's start alone {start:.1f} s)"
        + (f" = {nothing / floor:.2f}x the floor" if floor else "")
        + f"; the {label}'s {took:.1f} s is that and {took - nothing:.1f} s of its tasks' own work (templating,"
        " API calls, Helm, files)",
    ]


def main() -> int:
    repo = Path(__file__).resolve().parent.parent
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(repo / "ansible.cfg"),
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "PYTHONPATH": str(repo / ".collections"),
    }
    cmd = [str(BIN / "ansible-playbook"), "-i", str(repo / "inventories/lab"), "gangsched.kubeflow.site"]
    t0 = time.monotonic()
    subprocess.run([*cmd, "--skip-tags", "smoke"], env=env, cwd=repo, capture_output=True, check=True)
    took = time.monotonic() - t0
    print("\n".join(share("converge re-run", [*cmd, "--skip-tags", "smoke"], env, repo, took, None)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
