"""Runs the stages of ``make test`` in lanes side by side: the stages of one lane one after the other,
the lanes at once, each lane with a lab of its own (``GANGSCHED_LAB_DIR`` under ``.labs/<lane>``).

The lab tests spend most of their time waiting on the cluster (a gang held for its watch window, a
rollout, a namespace going away), not on the CPU, so lanes in parallel cut the wall time of
``make test`` without changing any test. Each stage's output goes to ``.labs/logs/<stage>.log`` (every Ansible run
of the tests, with its wall and CPU seconds, to ``.labs/logs/ansible_runs.jsonl``) and is
printed whole, under a header, when the stage ends, so a CI log reads one stage at a time, with its wall and CPU
seconds; at the end, each stage's again and the machine's busy CPU seconds. A lane
stops at its first failing stage; the other lanes run on. Exits non-zero when any stage failed or did
not run, after every lane's lab is stopped.

Stages given after ``--shared`` belong to no lane: a lane whose own stages all passed takes the next of them, in the
order given, until none is left. So the lanes end close together whichever of them the machine's hour made slow, where
fixed lanes end when the longest does; give them longest first, so that the last ones taken are short.

    python tests/lanes.py 'lint-sanity=make lint sanity; compat=python tests/compat.py' 'unit-lab=pytest tests/lab' \
        --shared 'molecule-a=make molecule MOLECULE_ONLY=a; molecule-b=make molecule MOLECULE_ONLY=b'
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LABS = REPO / ".labs"
_print = threading.Lock()
_shared_lock = threading.Lock()  # the shared stages left, taken off by one lane at a time
_running: list[subprocess.Popen] = []


def parse(lane: str) -> list[tuple[str, str]]:
    """``'a=cmd one; b=cmd two'`` (or ``'a=cmd one; b=cmd two;'``) as ``[('a', 'cmd one'), ('b', 'cmd two')]``."""
    stages = []
    for part in filter(str.strip, lane.split(";")):
        name, sep, cmd = part.strip().partition("=")
        if not sep or not name.strip() or not cmd.strip():
            raise SystemExit(f"lanes.py: a stage is 'name=command', got {part.strip()!r}")
        stages.append((name.strip(), cmd.strip()))
    return stages


RUN_LOG = LABS / "logs" / "ansible_runs.jsonl"


def _stages(own: list[tuple[str, str]], shared: list[tuple[str, str]]):
    """The lane's own stages, then the shared ones left, each taken off ``shared`` as the lane comes to it."""
    yield from own
    while True:
        with _shared_lock:
            if not shared:
                return
            stage = shared.pop(0)
        yield stage


def run_lane(index: int, stages: list[tuple[str, str]], results: dict, shared: list[tuple[str, str]]) -> None:
    lab_dir = LABS / f"lane{index}"
    env = {**os.environ, "GANGSCHED_LAB_DIR": str(lab_dir), "GANGSCHED_TEST_RUN_LOG": str(RUN_LOG)}
    for name, cmd in _stages(stages, shared):
        log = LABS / "logs" / f"{name}.log"
        start = time.monotonic()
        with log.open("w") as out:
            proc = subprocess.Popen(
                shlex.split(cmd), cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
            _running.append(proc)
            rc, cpu = wait_cpu(proc)
        took = round(time.monotonic() - start)
        results[name] = (rc, took, cpu, index)
        with _print:
            print(f"===== stage {name} (lane {index}) =====", flush=True)
            sys.stdout.write(log.read_text(errors="replace"))
            print(f"stage {name}: {took} s, {cpu} CPU-s (exit {rc})", flush=True)
        if rc != 0:
            break
    for left in sorted(LABS.glob(f"lane{index}*")):  # the lane's lab and its xdist workers' labs
        stop_lab(left, {**env, "GANGSCHED_LAB_DIR": str(left)})


def wait_cpu(proc: subprocess.Popen) -> tuple[int, int]:
    """The stage's exit code and the CPU seconds of its processes: its own and those of every process it and they
    waited for (pytest's workers, the Ansible runs, module processes, helm, the components of labs a test process
    started). Not counted: processes no one of the stage waited for, such as the components of a lab that
    ``python -m lab up`` started (Molecule's ``create``), which outlive that command."""
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except ChildProcessError:  # reaped by stop_all's poll, on the way out
        return proc.returncode if proc.returncode is not None else 1, 0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, round(usage.ru_utime + usage.ru_stime)


def busy_cpu() -> float:
    """The machine's busy CPU seconds since boot, all CPUs (``/proc/stat``), or 0 where it cannot be read."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    except (OSError, ValueError):
        return 0.0
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def stop_lab(lab_dir: Path, env: dict) -> None:
    if (lab_dir / "state.json").exists():
        subprocess.run([sys.executable, "-m", "lab", "down"], cwd=REPO, env=env, capture_output=True)


def stop_all(signum, _frame) -> None:
    """Stopped from outside (a CI time limit, Ctrl-C): every stage's process group, then every lab."""
    for proc in _running:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for lab_dir in sorted(LABS.glob("lane*")):
        stop_lab(lab_dir, {**os.environ, "GANGSCHED_LAB_DIR": str(lab_dir)})
    sys.exit(128 + signum)


def main(argv: list[str]) -> int:
    shared: list[tuple[str, str]] = []
    if "--shared" in argv:
        at = argv.index("--shared")
        if at + 1 >= len(argv):
            raise SystemExit("lanes.py: --shared takes the shared stages, 'name=command; ...'")
        shared = parse(argv[at + 1])
        argv = argv[:at] + argv[at + 2 :]
    lanes = [parse(a) for a in argv]
    if not lanes:
        raise SystemExit(__doc__)
    every = [stage for lane in [*lanes, shared] for stage in lane]
    names = [name for name, _ in every]
    if len(set(names)) != len(names):
        raise SystemExit(f"lanes.py: a stage name appears twice in {names}")
    pool = list(shared)
    signal.signal(signal.SIGTERM, stop_all)
    signal.signal(signal.SIGINT, stop_all)
    (LABS / "logs").mkdir(parents=True, exist_ok=True)
    RUN_LOG.write_text("")  # each test's Ansible runs, their wall and CPU seconds (tests/ansible_run.py)
    results: dict[str, tuple[int, int, int, int]] = {}
    start, busy = time.monotonic(), busy_cpu()
    threads = [
        threading.Thread(target=run_lane, args=(i, lane, results, pool), daemon=True) for i, lane in enumerate(lanes)
    ]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():  # a timed join, so that SIGTERM and Ctrl-C reach the handler
            t.join(1)
    busy = round(busy_cpu() - busy)
    print(f"\nmake test: {round(time.monotonic() - start)} s in {len(lanes)} lanes, the machine {busy} CPU-s busy")
    failed = False
    for name, cmd in every:
        rc, took, cpu, index = results.get(name, (None, None, None, None))
        what = "not run (an earlier stage of its lane failed)"
        if (name, cmd) in shared:
            what = "not run (a stage of every lane failed before a lane could take it)"
        if rc is not None:
            what = f"{took:>5} s  {cpu:>5} CPU-s  exit {rc}  (lane {index})"
        print(f"  {name:<26} {what}")
        failed |= rc != 0
    for index in range(len(lanes)):
        ran = [r for r in results.values() if r[3] == index]
        print(f"  lane {index}: {sum(r[1] for r in ran)} s in {len(ran)} stage{'' if len(ran) == 1 else 's'}")
    staged = sum(r[2] for r in results.values())
    print(f"  the rest:    {busy - staged} CPU-s (processes no stage waited for, the machine's own)")
    for name, _ in every:
        if results.get(name, (0,))[0] not in (0, None):
            print(f"\n----- why stage {name} failed (the end of .labs/logs/{name}.log) -----")
            print(failure_digest((LABS / "logs" / f"{name}.log").read_text(errors="replace")))
    return 1 if failed else 0


def failure_digest(log: str, tail: int = 25) -> str:
    """A failed stage's log, short enough to read at the end of a long CI log: pytest's FAILED and
    ERROR lines (from -rfE) wherever they are, then the log's last ``tail`` lines."""
    lines = log.splitlines()
    marked = [line for line in lines[:-tail] if line.startswith(("FAILED ", "ERROR "))]
    return "\n".join([*marked, *lines[-tail:]])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
