"""Run one of the collection's modules through Ansible (ad-hoc, JSON callback) against the lab."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def ansible_env(lab, extra: dict | None = None) -> dict:
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "K8S_AUTH_KUBECONFIG": str(lab.kubeconfig),
    }
    env.update(extra or {})
    return env


def run_module(lab, module: str, args: dict, check: bool = False, diff: bool = True, env: dict | None = None) -> dict:
    """The task result of ``gangsched.kubeflow.<module>`` with ``args`` on localhost."""
    cmd = [str(BIN / "ansible"), "localhost", "-m", f"gangsched.kubeflow.{module}"]
    if args:
        cmd += ["-a", json.dumps(args)]
    if check:
        cmd.append("--check")
    if diff:
        cmd.append("--diff")
    p = subprocess.run(cmd, env=ansible_env(lab, env), cwd=REPO, capture_output=True, text=True, timeout=900)
    try:
        out = json.loads(p.stdout)
    except ValueError as e:
        raise AssertionError(f"ansible printed no JSON (rc {p.returncode}):\n{p.stdout}\n{p.stderr}") from e
    res = out["plays"][0]["tasks"][0]["hosts"]["localhost"]
    res["_stderr"] = p.stderr
    return res


def comparable(res: dict) -> dict:
    """A result without the keys that differ between a check-mode run and a real one by nature."""
    drop = {"invocation", "_stderr", "_ansible_no_log", "warnings", "deprecations"}
    return {k: v for k, v in res.items() if k not in drop}
