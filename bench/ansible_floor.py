"""Ansible's own share of a playbook run: how many module runs a run made, how many of them were module
processes (a Python process each on the managed host; the collection's own modules run in Ansible's worker
when that is the controller's Python, see plugin_utils/_inprocess), and what that many processes of a module
that does nothing cost on this machine, measured now.

Used by gang_figures.py next to the converge and render figures: a converged re-run cannot be faster than
``ansible-playbook``'s start plus its module runs, whatever each of them does; the rest is the work itself
(API calls, Helm, templating). Also runnable alone on a lab: python bench/ansible_floor.py
"""

from __future__ import annotations

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


def counted_run(cmd: list[str], env: dict, cwd: Path) -> tuple[int, dict, dict]:
    """Runs ``cmd`` (an ansible-playbook command line) with the JSON callback; its module runs (total and per
    action) and of those the module processes per action: the runs of each action whose module Ansible shipped
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
    n, per = module_runs(json.loads(p.stdout))
    return n, per, {a: c for a, c in per.items() if a.rsplit(".", 1)[-1] in shipped}


def noop_floor(n: int, env: dict) -> tuple[float, float]:
    """Wall s of ``ansible-playbook`` with one play of ``n`` ``ansible.builtin.ping`` tasks on localhost (local
    connection, this Python), and of the same play with none: Ansible's cost of n module runs, and its start."""
    with tempfile.TemporaryDirectory() as d:
        out = []
        for tasks in (n, 0):
            play = [
                {
                    "hosts": "localhost",
                    "gather_facts": False,
                    "tasks": [{"name": f"noop {i}", "ansible.builtin.ping": {}} for i in range(tasks)]
                    or [{"name": "nothing", "ansible.builtin.meta": "noop"}],
                }
            ]
            path = Path(d) / f"noop-{tasks}.yml"
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


def main() -> int:
    repo = Path(__file__).resolve().parent.parent
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(repo / "ansible.cfg"),
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "PYTHONPATH": str(repo / ".collections"),
    }
    cmd = [str(BIN / "ansible-playbook"), "-i", str(repo / "inventories/lab"), "gangsched.kubeflow.site"]
    n, per, shipped = counted_run([*cmd, "--skip-tags", "smoke"], env, repo)
    processes = sum(shipped.values())
    runs, start = noop_floor(processes, env)
    print(f"site.yml --skip-tags smoke: {n} module runs ({', '.join(f'{a} {c}' for a, c in sorted(per.items()))})")
    print(f"  of them module processes: {processes} ({', '.join(f'{a} {c}' for a, c in sorted(shipped.items()))})")
    print(f"  {processes} no-op module runs: {runs:.1f} s (ansible-playbook start alone: {start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
