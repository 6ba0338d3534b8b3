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
    stat = _stat(pid)  # a zombie is not alive
    return stat is not None and stat[0] != "Z"


def _stat(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat``'s fields after the command name (the state first, field 3); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


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
    stat = _stat(pid)
    return stat[19] if stat and len(stat) > 19 else None


_ADDRS = {"0100007F": "127.0.0.1", "00000000": "0.0.0.0", "0" * 32: "::"}


def listening(pid: int) -> set[tuple[str, int]]:
    """(address, port) of the TCP sockets listening in the network namespace of process ``pid``
    (``/proc/<pid>/net/tcp`` and ``tcp6``); empty when it is gone."""
    out = set()
    for name in ("tcp", "tcp6"):
        try:
            rows = Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 3 and fields[3] == "0A":  # LISTEN
                addr, port = fields[1].rsplit(":", 1)
                out.add((_ADDRS.get(addr, addr), int(port, 16)))
    return out


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
