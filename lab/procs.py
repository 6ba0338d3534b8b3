"""Process bookkeeping for the lab: start detached processes, record pids, stop process groups."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def start(
    name: str, argv: list[str], log: Path, pidfile: Path, env: dict | None = None, cwd: Path | None = None
) -> int:
    """Start ``argv`` in its own session with output appended to ``log``; write its pid to ``pidfile``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    pidfile.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        out.write(f"\n=== {time.strftime('%H:%M:%S')} starting {name}: {' '.join(argv)}\n".encode())
        out.flush()
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    write_pid(pidfile, proc.pid)
    return proc.pid


def _start_time(pid: int) -> str | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/<pid>/stat``, field 22); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def write_pid(pidfile: Path, pid: int) -> None:
    """Record ``pid`` with its start time: ``read_pid`` then knows the process from a later one given the same pid."""
    pidfile.write_text(f"{pid} {_start_time(pid) or ''}".strip())


def read_pid(pidfile: Path) -> int | None:
    """The pid recorded in ``pidfile``, or None when there is none or it now names another process: the kernel hands
    a pid out again once its process is gone (every 32,768 processes by default, or after a reboot), and a stale
    pid must never be stopped, a whole process group with it. A file holding a pid alone is taken as it is."""
    try:
        pid, *started = pidfile.read_text().split()
        pid = int(pid)
    except (OSError, ValueError):
        return None
    if started and _start_time(pid) != started[0]:
        return None
    return pid


def stop(pid: int | None, grace: float = 10.0) -> bool:
    """SIGTERM the process group of ``pid``, then SIGKILL after ``grace`` seconds. True if it was alive."""
    if not alive(pid):
        return False
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return True
        except PermissionError:
            os.kill(pid, sig)
        deadline = time.monotonic() + (grace if sig == signal.SIGTERM else 5)
        while time.monotonic() < deadline:
            try:  # reap if it is our child
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            if not alive(pid):
                return True
            time.sleep(0.1)
    return True


def tail(path: Path, lines: int = 5) -> list[str]:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 16384))
            data = f.read().decode(errors="replace")
    except OSError:
        return []
    return [line for line in data.splitlines() if line.strip()][-lines:]
