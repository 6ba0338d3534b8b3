"""Runs the collection through Ansible against a lab, the one way every test does it: a module ad hoc
(``ansible localhost -m``) or a playbook on the lab inventory, both with the JSON callback, the
checkout's ansible.cfg and the lab's directory in the environment; and reads their results. Each run is the
CLI's own script in a process of its own, forked from a warm interpreter that has the ``kubernetes`` client
imported already, and Ansible's own modules in a child of it per Ansible environment (``ansible_cli``,
tests/ansible_zygote.py); ``GANGSCHED_TEST_WARM=0`` starts each one cold."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from lab import build

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


_ZYGOTE: dict = {}
_ZYGOTE_LOCK = threading.Lock()


def _zygote() -> str | None:
    """The socket of this process's warm interpreter (started on first use), or None where it cannot start."""
    if _ZYGOTE.get("pid") == os.getpid():
        return _ZYGOTE["socket"]
    tmp = tempfile.mkdtemp(prefix="ansible-zygote-")
    path = os.path.join(tmp, "socket")
    # the interpreter of the CLI scripts' own first line: the one a run's sys.executable (ansible_playbook_python) is
    shebang = (BIN / "ansible").read_text().splitlines()[0].removeprefix("#!").strip().split()
    proc = subprocess.Popen(
        [*shebang, str(Path(__file__).with_name("ansible_zygote.py")), path],
        stdout=subprocess.PIPE,
        text=True,
    )
    if proc.stdout.readline().strip() != "ready":
        proc.kill()
        return None
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    atexit.register(_stop, proc)
    _ZYGOTE.update(pid=os.getpid(), socket=path, proc=proc)
    return path


def _stop(proc: subprocess.Popen) -> None:
    """Stops the warm interpreter and waits for it (it stops and waits for its own warm children first): its runs'
    CPU then counts in this process's children (make test prints each stage's)."""
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _log_run(cmd: list, env: dict, answer: dict) -> None:
    """A line for this run in ``GANGSCHED_TEST_RUN_LOG`` where it is set (make test: .labs/logs/ansible_runs.jsonl):
    the test, the command, its wall and CPU seconds (the run's processes and those they waited for: workers,
    module processes, helm), so where the tests' Ansible time goes can be read after a run."""
    path = os.environ.get("GANGSCHED_TEST_RUN_LOG")
    if not path:
        return
    line = {
        "test": env.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0],
        "cmd": [Path(cmd[0]).name, *(c if len(c) <= 300 else c[:300] + "..." for c in cmd[1:])],
        "rc": answer["rc"],
        "seconds": answer.get("seconds"),
        "cpu": answer.get("cpu"),
    }
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


def ansible_cli(cmd: list, env: dict, cwd=REPO, timeout: float = 900) -> subprocess.CompletedProcess:
    """``cmd`` (an Ansible CLI of this venv: ansible, ansible-playbook) run as ``subprocess.run`` would, with its
    output as text; forked from the warm interpreter unless ``GANGSCHED_TEST_WARM=0``, the command is another
    program, or the run's ``KUBECONFIG`` differs from this process's (the preloaded client read that one)."""
    cmd = [str(c) for c in cmd]
    cold = (
        os.environ.get("GANGSCHED_TEST_WARM") == "0"
        or Path(cmd[0]).parent != BIN
        or env.get("KUBECONFIG") != os.environ.get("KUBECONFIG")
    )
    with _ZYGOTE_LOCK:
        path = None if cold else _zygote()
        if path is None:
            return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        return warm_run(path, cmd, env, cwd, timeout)


def warm_run(path: str, cmd: list, env: dict, cwd, timeout: float) -> subprocess.CompletedProcess:
    """``cmd`` (a Python script and its arguments) run by the warm interpreter at ``path``, as ``ansible_cli`` does."""
    with tempfile.TemporaryDirectory(prefix="ansible-run-") as out:
        req = {
            "argv": cmd,
            "env": dict(env),
            "cwd": str(cwd),
            "stdout": os.path.join(out, "stdout"),
            "stderr": os.path.join(out, "stderr"),
            "timeout": timeout,
        }
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(path)
            conn.sendall((json.dumps(req) + "\n").encode())
            answer = json.loads(conn.makefile("r").readline())
        rc = answer["rc"]
        _log_run(cmd, env, answer)
        stdout = Path(req["stdout"]).read_text(errors="replace")
        stderr = Path(req["stderr"]).read_text(errors="replace")
    if rc is None:
        raise subprocess.TimeoutExpired(cmd, timeout, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(cmd, rc, stdout=stdout, stderr=stderr)


def ansible_env(lab, extra: dict | None = None, kubeconfig: bool = True) -> dict:
    """The environment of an Ansible run on ``lab`` (None: no cluster, e.g. a module that writes files);
    ``kubeconfig``: the lab's kubeconfig as the modules' K8S_AUTH_KUBECONFIG default (playbooks take theirs
    from the lab inventory instead)."""
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_LOCALHOST_WARNING": "0",
    }
    if lab is not None:
        env["GANGSCHED_LAB_DIR"] = str(lab.root)
    if lab is not None and kubeconfig:
        env["K8S_AUTH_KUBECONFIG"] = str(lab.kubeconfig)
    env.update(extra or {})
    return env


def run_module(
    lab, module: str, args: dict, check: bool = False, diff: bool = True, env: dict | None = None, extra_vars=None
) -> dict:
    """The task result of ``gangsched.kubeflow.<module>`` with ``args`` on localhost (``extra_vars``: -e)."""
    cmd = [str(BIN / "ansible"), "localhost", "-m", f"gangsched.kubeflow.{module}"]
    if args:
        cmd += ["-a", json.dumps(args)]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    if check:
        cmd.append("--check")
    if diff:
        cmd.append("--diff")
    p = ansible_cli(cmd, ansible_env(lab, env), timeout=900)
    try:
        out = json.loads(p.stdout)
    except ValueError as e:
        raise AssertionError(f"ansible printed no JSON (rc {p.returncode}):\n{p.stdout}\n{p.stderr}") from e
    res = out["plays"][0]["tasks"][0]["hosts"]["localhost"]
    res["_stderr"] = p.stderr
    return res


def module(lab, name: str, **args) -> dict:
    """``run_module`` without diff, the module's options as keywords."""
    return run_module(lab, name, args, diff=False)


def comparable(res: dict) -> dict:
    """A result without the keys that differ between a check-mode run and a real one by nature."""
    drop = {"invocation", "_stderr", "_ansible_no_log", "warnings", "deprecations"}
    return {k: v for k, v in res.items() if k not in drop}


class Run:
    """An ``ansible-playbook`` run's exit status and its JSON callback output."""

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

    def writers_run(self) -> list[str]:
        """Names of the kubernetes.core.k8s and kubernetes.core.helm tasks that ran (not skipped): each a module
        process of its own, which a converged re-run does not start (gangsched.kubeflow.drift found nothing)."""
        return [
            task["task"]["name"]
            for play in self.data["plays"]
            for task in play["tasks"]
            for h in task["hosts"].values()
            if h.get("action") in ("kubernetes.core.k8s", "kubernetes.core.helm") and not h.get("skipped")
        ]

    def results(self, name: str) -> list[dict]:
        return [
            h
            for play in self.data["plays"]
            for task in play["tasks"]
            if task["task"]["name"] == name
            for h in task["hosts"].values()
        ]

    def messages(self, part: str) -> list[str]:
        """The ``msg`` of every task that ran (not skipped) whose name holds ``part``."""
        return [
            h.get("msg", "")
            for play in self.data["plays"]
            for task in play["tasks"]
            if part in task["task"]["name"]
            for h in task["hosts"].values()
            if not h.get("skipped")
        ]

    def verdicts(self) -> list[str]:
        """The smoke test role's verdicts in this run, the fitting gang's first (then the oversized one, then through
        Kueue the one over the quota)."""
        return [
            r["verdict"]
            for name in (
                "Fitting gang runs as a whole",
                "Oversized gang stays entirely Pending",
                "Through Kueue, a gang over the ClusterQueue's quota is held by Kueue, suspended, not one pod made",
            )
            for r in self.results(f"gangsched.kubeflow.gang_smoke_test : {name}")
            if not r.get("skipped")
        ]

    def facts(self, name: str) -> list:
        """Every value of the fact ``name`` that a task of the run set."""
        return [
            h["ansible_facts"][name]
            for play in self.data["plays"]
            for task in play["tasks"]
            for h in task["hosts"].values()
            if name in (h.get("ansible_facts") or {})
        ]

    def failures(self) -> str:
        msgs = []
        for play in self.data["plays"]:
            for task in play["tasks"]:
                for host, h in task["hosts"].items():
                    if h.get("failed") and not h.get("ignore_errors"):
                        msgs.append(f"{task['task']['name']} [{host}]: {h.get('msg')}")
                        # a loop fails as "One or more items failed": each failed item's own message
                        msgs += [
                            f"  item {r.get('_ansible_item_label', r.get('item'))}: {r.get('msg')}"
                            for r in h.get("results", [])
                            # ansible-core 2.21 leaves failed out of a loop item's result; an assert's says evaluated_to
                            if r.get("failed") or r.get("evaluated_to") is False
                        ]
        return "\n".join(msgs) or self.stderr[-3000:]


def playbook_cmd(name: str, *extra: str, check: bool = False, **extra_vars) -> list[str]:
    """The command line of ``ansible-playbook gangsched.kubeflow.<name>`` on the lab inventory."""
    cmd = [str(BIN / "ansible-playbook"), "-i", str(REPO / "inventories/lab"), f"gangsched.kubeflow.{name}"]
    if check:
        cmd += ["--check"]
    cmd += ["--diff", *extra]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]  # JSON keeps the types (lists, negative numbers)
    return cmd


def playbook(
    lab, name: str, *extra: str, check: bool = False, collections_path: str = "", timeout: int = 1200, **extra_vars
) -> Run:
    """``ansible-playbook gangsched.kubeflow.<name>`` on the lab inventory; the collection is the checkout,
    or the one under ``collections_path`` (e.g. installed from the built tarball) when given."""
    env = ansible_env(lab, kubeconfig=False)
    if collections_path:
        env["ANSIBLE_COLLECTIONS_PATH"] = collections_path  # overrides ansible.cfg's .collections
    cmd = playbook_cmd(name, *extra, check=check, **extra_vars)
    return Run(ansible_cli(cmd, env, timeout=timeout))


def kubectl(lab, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(build.binary_path("kubectl")), "--kubeconfig", str(lab.kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def fails_within_api_timeout(lab, module: str, host: str, refused: dict, runs: list[dict]) -> None:
    """Each of ``runs`` (``module``'s arguments) against ``host``, a listener that never answers a byte, with an
    ``api_timeout`` of 3 s: the task fails within it (not once per request), next to the same module's start-up cost
    measured now (``refused``: arguments it refuses before any request, once ``api_timeout`` is 0), with a message
    naming the server and the option and no traceback."""
    conn = {"host": host, "api_key": "x", "validate_certs": False, "api_timeout": 3}
    t0 = time.monotonic()
    quick = run_module(lab, module, {**refused, "api_timeout": 0})
    start_up = time.monotonic() - t0
    assert quick.get("failed") is True and "api_timeout must be >= 1" in quick["msg"], quick
    for args in runs:
        t1 = time.monotonic()
        res = run_module(lab, module, {**args, **conn})
        took = time.monotonic() - t1
        assert res.get("failed") is True, (args, res)
        assert "did not answer within 3s (api_timeout)" in res["msg"], (args, res["msg"])
        assert host in res["msg"] and "Traceback" not in res["msg"], (args, res["msg"])
        # api_timeout bounds the run, not the default 30 s: discovery, then at most one more call before it fails
        assert took < 1.5 * start_up + 2 * 3 + 5, (args, took, start_up)
