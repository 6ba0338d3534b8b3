"""Run the collection's playbooks against the lab (JSON callback) and read their results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lab import build
from lab.cluster import Lab

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


class Run:
    def __init__(self, proc: subprocess.CompletedProcess):
        self.rc = proc.returncode
        self.stderr = proc.stderr
        try:
            self.data = json.loads(proc.stdout)
        except ValueError as e:
            raise AssertionError(
                f"ansible-playbook printed no JSON (rc {self.rc}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
            ) from e

    @property
    def stats(self) -> dict:
        return self.data["stats"]

    def changed(self) -> list[str]:
        """Names of the tasks that reported a change (on any host)."""
        out = []
        for play in self.data["plays"]:
            for task in play["tasks"]:
                if any(h.get("changed") for h in task["hosts"].values()):
                    out.append(task["task"]["name"])
        return out

    def results(self, name: str) -> list[dict]:
        return [
            h
            for play in self.data["plays"]
            for task in play["tasks"]
            if task["task"]["name"] == name
            for h in task["hosts"].values()
        ]

    def failures(self) -> str:
        msgs = []
        for play in self.data["plays"]:
            for task in play["tasks"]:
                for host, h in task["hosts"].items():
                    if h.get("failed") and not h.get("ignore_errors"):
                        msgs.append(f"{task['task']['name']} [{host}]: {h.get('msg')}")
        return "\n".join(msgs) or self.stderr[-3000:]


def playbook(lab: Lab, name: str, *extra: str, check: bool = False, collections_path: str = "", **extra_vars) -> Run:
    """``ansible-playbook gangsched.kubeflow.<name>`` on the lab inventory; the collection is the checkout,
    or the one under ``collections_path`` (e.g. installed from the built tarball) when given."""
    cmd = [str(BIN / "ansible-playbook"), "-i", str(REPO / "inventories/lab"), f"gangsched.kubeflow.{name}"]
    if check:
        cmd += ["--check"]
    cmd += ["--diff", *extra]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]  # JSON keeps the types (lists, negative numbers)
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "GANGSCHED_LAB_DIR": str(lab.root),
    }
    if collections_path:
        env["ANSIBLE_COLLECTIONS_PATH"] = collections_path  # overrides ansible.cfg's .collections
    p = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=1200)
    return Run(p)


def kubectl(lab: Lab, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(build.binary_path("kubectl")), "--kubeconfig", str(lab.kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def module(lab: Lab, name: str, **args) -> dict:
    """One module of the collection through `ansible localhost -m` (JSON callback)."""
    from tests.lab.lab_ansible import run_module

    return run_module(lab, name, args, diff=False)
