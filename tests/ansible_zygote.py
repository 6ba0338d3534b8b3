"""A warm interpreter for the tests' Ansible runs (``ansible_run.ansible_cli``): it imports the ``kubernetes`` client
once (about 1 s of CPU in each ``ansible`` or ``ansible-playbook`` process, whose action plugins import it), then
forks a child per run that executes the very CLI script (``<venv>/bin/ansible``, ``ansible-playbook``) as
``__main__``, with the run's argv, environment and working directory, its stdout and stderr in files, in a session
of its own (killed whole on timeout). Nothing of Ansible is imported before the fork: its configuration is read by
the child from the run's environment, as a new process reads it. Only modules that read no Ansible setting are
preloaded; ``kubernetes`` reads ``KUBECONFIG`` when imported, so a run with another ``KUBECONFIG`` than this
process's is not sent here (``ansible_run`` runs it as a process of its own).

    python tests/ansible_zygote.py SOCKET      # serves until its parent exits

Requests are one JSON line: ``{"argv", "env", "cwd", "stdout", "stderr", "timeout"}``; the answer one JSON line:
``{"rc": int, "seconds": float, "cpu": float}`` (``rc`` null when the run outlived its timeout and was killed; ``cpu``:
the run's CPU seconds, its workers' and module processes' included)."""

from __future__ import annotations

import json
import os
import runpy
import select
import signal
import socket
import sys
import time
import traceback

PRELOAD = ("kubernetes", "kubernetes.dynamic", "yaml", "jinja2")


def _child(req: dict) -> None:
    """In the forked child: become the CLI run; never returns."""
    code = 1
    try:
        os.setsid()
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        for fd, path, flags in (
            (0, os.devnull, os.O_RDONLY),
            (1, req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
            (2, req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        ):
            opened = os.open(path, flags, 0o600)
            os.dup2(opened, fd)
            os.close(opened)
        script = req["argv"][0]
        sys.argv = list(req["argv"])
        sys.path[0] = os.path.dirname(script)  # as when the script is run: its directory first
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                code = e.code or 0
            else:
                print(e.code, file=sys.stderr)
                code = 1
    except BaseException:  # noqa: BLE001 - whatever the run raised goes to its stderr, as an interpreter prints it
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001, S110 - a closed stream: nothing left to write
                pass
        os._exit(code)


def _wait(pid: int, timeout: float) -> tuple[int | None, float]:
    """The child's exit code, or None after killing its process group at ``timeout``, and the CPU seconds it and
    the processes it waited for used (its workers, their module processes); sleeps on the child's pidfd (woken by
    its exit) where the kernel has them, else polls every 20 ms."""
    deadline = time.monotonic() + timeout
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime
            left = deadline - time.monotonic()
            if left <= 0:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                _, _, usage = os.wait4(pid, 0)
                return None, usage.ru_utime + usage.ru_stime
            if pidfd is None:
                time.sleep(0.02)
            else:
                select.select([pidfd], [], [], left)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def serve(path: str) -> None:
    for name in PRELOAD:
        __import__(name)
    parent = os.getppid()
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(8)
    srv.settimeout(1.0)
    print("ready", flush=True)
    while os.getppid() == parent:  # the test process that started it is gone: so is this one
        try:
            conn, _ = srv.accept()
        except TimeoutError:
            continue
        with conn:
            conn.settimeout(None)
            req = json.loads(conn.makefile("r").readline())
            pid = os.fork()
            if pid == 0:
                srv.close()
                conn.close()
                _child(req)
            t0 = time.monotonic()
            rc, cpu = _wait(pid, float(req["timeout"]))
            answer = {"rc": rc, "seconds": round(time.monotonic() - t0, 2), "cpu": round(cpu, 2)}
            conn.sendall((json.dumps(answer) + "\n").encode())


if __name__ == "__main__":
    serve(sys.argv[1])
