"""Bad input and faults of the lab itself, each on a lab of its own (own state dir, own ports):
a busy port, a component that dies at start, and `down` after the runner crashed. Each must end in a
clear message and leave no process behind."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab import build, procs
from lab.cluster import COMPONENTS, Lab
from lab.paths import REPO


def _lab_cli(state: Path, *args: str, cache: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    env = {**os.environ, "GANGSCHED_LAB_DIR": str(state), "PYTHONPATH": str(REPO)}
    if cache:
        env["GANGSCHED_LAB_CACHE"] = str(cache)
    return subprocess.run(
        [sys.executable, "-m", "lab", *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def _processes_using(state: Path) -> list[str]:
    """Command lines of live processes that mention the state dir (every lab process does)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(d / "cwd")
        except OSError:
            continue
        if procs.alive(int(d.name)) and (str(state) in cmd or cwd.startswith(str(state))):
            out.append(f"{d.name}: {cmd[:200]}")
    return out


@pytest.fixture
def state(tmp_path):
    path = tmp_path / "lab"
    yield path
    _lab_cli(path, "down")


def test_busy_api_port_is_refused_before_anything_starts(state):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = _lab_cli(state, "up", "--gpu-nodes", "0", "--cpu-nodes", "0", "--api-port", str(port))
    assert r.returncode != 0
    assert f"port {port} on 127.0.0.1 is busy" in r.stderr and "--api-port" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert _processes_using(state) == []


def test_component_dying_at_start_is_named_and_nothing_is_left_running(state, tmp_path):
    # a cache whose kube-controller-manager exits at once, every other binary the real one
    real = build.binary_path("kube-controller-manager").parent
    cache = tmp_path / "cache"
    for unit_dir in real.parent.iterdir():
        fake = cache / "bin" / unit_dir.name
        fake.mkdir(parents=True)
        for f in unit_dir.iterdir():
            (fake / f.name).symlink_to(f)
    (cache / "artifacts").symlink_to(real.parent.parent / "artifacts")
    kcm = cache / "bin" / real.name / "kube-controller-manager"
    kcm.unlink()
    kcm.write_text("#!/bin/sh\necho 'Error: unknown flag: --lab-broken' >&2\nexit 1\n")
    kcm.chmod(0o755)
    r = _lab_cli(state, "up", "--gpu-nodes", "0", "--cpu-nodes", "0", cache=cache)
    assert r.returncode != 0
    assert "kube-controller-manager exited at start" in r.stderr, r.stderr
    assert "python -m lab logs kube-controller-manager" in r.stderr, r.stderr
    assert "unknown flag: --lab-broken" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert _processes_using(state) == [], "processes left after a failed up"


def test_down_after_a_runner_crash_stops_the_pods_it_ran(state):
    r = _lab_cli(state, "up", "--gpu-nodes", "0", "--cpu-nodes", "0")
    assert r.returncode == 0, r.stdout + r.stderr
    lab = Lab(state)
    pod_pids = [procs.read_pid(p) for p in state.glob("pods/*/*.pid")]
    assert pod_pids and all(procs.alive(p) for p in pod_pids), "the static kube-scheduler is not running"
    os.kill(lab.pid("runner"), signal.SIGKILL)
    time.sleep(0.5)
    assert all(procs.alive(p) for p in pod_pids), "pod processes should outlive a crashed runner"
    r = _lab_cli(state, "down")
    assert r.returncode == 0, r.stderr
    assert "pod process" in r.stdout, r.stdout
    assert not any(procs.alive(p) for p in pod_pids)
    assert not any(procs.alive(lab.pid(c)) for c in COMPONENTS)
    assert _processes_using(state) == []
    r = _lab_cli(state, "down")  # idempotent
    assert r.returncode == 0 and "nothing was running" in r.stdout, r.stdout
