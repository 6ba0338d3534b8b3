"""Python virtual environments kept in the build cache, outside the checkout, like the Go builds: one per set of
pins and Python, made once under a lock (checkouts and parallel make targets share them), reused by every checkout
after. The checkout's ``.venv`` is a link to the one for its requirements.txt, so a fresh clone with a warm cache
has its environment at once instead of a venv and a pip install (about a minute).

Standard library only: ``make`` runs it with the system's Python, before any venv exists.

Usage: python -m lab.venvs LINK REQUIREMENTS   (make venv: .venv for requirements.txt)
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .paths import cache_dir

# bump when what goes into an environment changes other than by its pins, so cached ones are made again
LAYOUT = "1"


def key(pins: str) -> str:
    """The environment's name: its pins, this Python's version and base interpreter."""
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    return hashlib.sha256(f"{LAYOUT}\n{sys.version}\n{base}\n{pins}".encode()).hexdigest()[:16]


def cached(kind: str, pins: str, pip_args: list[str], probe: str) -> Path:
    """The environment of ``kind`` for ``pins`` (its stamp: what ``pip install pip_args`` installs), made on first
    use from the base interpreter, so that nothing of the caller's venv is on its path. ``probe``: a script its bin
    folder must hold. Raises RuntimeError, with pip's own words, when it cannot be made."""
    root = cache_dir() / kind
    root.mkdir(parents=True, exist_ok=True)
    venv = root / key(pins)
    with open(root / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = venv / ".pins"
        if stamp.exists() and stamp.read_text() == pins and (venv / "bin" / probe).exists():
            return venv
        print(f"making {venv}", flush=True)
        shutil.rmtree(venv, ignore_errors=True)
        base = getattr(sys, "_base_executable", sys.executable)
        p = subprocess.run([base, "-m", "venv", str(venv)], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"python -m venv {venv} failed:\n{p.stdout}{p.stderr}")
        p = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", *pip_args],
            capture_output=True,
            text=True,
        )
        if p.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            raise RuntimeError(f"pip install {' '.join(pip_args)} failed:\n{p.stdout}{p.stderr[-3000:]}")
        stamp.write_text(pins)  # last: an environment cut short is made again
    return venv


def link(at: Path, target: Path) -> None:
    """``at`` a link to ``target``, replaced in one step, so that a process started meanwhile finds one environment
    whole or the other. A directory there (a venv made in the checkout before) is moved aside first and removed
    after: a process running from it keeps its files, and its later imports find the same pins through the link."""
    if at.is_symlink() and os.readlink(at) == str(target):
        return
    tmp = at.with_name(f"{at.name}.{os.getpid()}.link")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target)
    old = None
    if at.is_dir() and not at.is_symlink():
        old = at.with_name(f"{at.name}.{os.getpid()}.old")
        os.replace(at, old)
    os.replace(tmp, at)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.rsplit("\n\n", 1)[-1], file=sys.stderr)
        return 2
    at, requirements = Path(argv[0]), Path(argv[1])
    pins = requirements.read_text()
    try:
        venv = cached("venv", pins, ["-r", str(requirements.resolve())], "pip")
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    link(at, venv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
