"""ansible-test sanity on a copy of the collection laid out as ansible_collections/gangsched/kubeflow
(ansible-test needs that physical layout). Runs the tests that need no containers or network."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Every sanity test of ansible-test (24 in ansible-core 2.19), all run here without containers:
# `python tests/sanity.py` runs them all, `python tests/sanity.py pylint pep8` only those. pslint and
# shellcheck find no PowerShell or shell files and pass. The tests' own pinned requirements (pylint,
# yamllint, antsibull-changelog, voluptuous ...) go into virtual environments under
# ~/.ansible/test/venv, made from PyPI on the first run and reused afterwards.
DEFAULT: list[str] = []  # none named: ansible-test runs all of them
# what the built collection holds (galaxy.yml build_ignore leaves the rest out), and the tests' settings
KEEP = [
    "plugins",
    "meta",
    "roles",
    "playbooks",
    "docs",
    "inventories/example",
    "changelogs",
    "galaxy.yml",
    "README.md",
    "CHANGELOG.rst",
    "COPYING",
    "tests/config.yml",
    "tests/sanity",
]


PIP_SHIM = """# written by gangsched.kubeflow tests/sanity.py: installs pip from ensurepip, then the packages from PyPI
import subprocess, sys
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"], stdout=subprocess.DEVNULL)
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + args))
"""


def offline_pip_bootstrap() -> None:
    """ansible-test downloads a get-pip script from a host that may be unreachable; where no cached one
    exists, cache a shim that bootstraps pip with ensurepip (packages still come from PyPI)."""
    from ansible_test._internal.python_requirements import get_venv_packages  # noqa: F401 - version check only

    cache = Path.home() / ".ansible" / "test" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    for version in ("24_2", "24_0", "23_1_2", "25_0"):
        f = cache / f"get_pip_{version}.py"
        if not f.exists():
            f.write_text(PIP_SHIM)


def main() -> int:
    offline_pip_bootstrap()
    tests = sys.argv[1:] or DEFAULT
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "ansible_collections" / "gangsched" / "kubeflow"
        dest.mkdir(parents=True)
        for item in KEEP:
            src = REPO / item
            if src.is_dir():
                shutil.copytree(src, dest / item, ignore=shutil.ignore_patterns("__pycache__", ".plugin-cache.yaml"))
            elif src.exists():
                (dest / item).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / item)
        # kubernetes.core next to it, from the environment's bundle
        import ansible_collections.kubernetes.core as kc

        core = Path(kc.__file__).parent if kc.__file__ else Path(list(kc.__path__)[0])
        (Path(tmp) / "ansible_collections" / "kubernetes").mkdir()
        os.symlink(core, Path(tmp) / "ansible_collections" / "kubernetes" / "core")
        subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
        subprocess.run(["git", "add", "-A"], cwd=dest, check=True)
        cmd = [
            str(Path(sys.executable).parent / "ansible-test"),
            "sanity",
            "--python",
            f"{sys.version_info.major}.{sys.version_info.minor}",
            "--color",
            "no",
        ]
        for t in tests:
            cmd += ["--test", t]
        return subprocess.run(cmd, cwd=dest).returncode


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "tests"))
    sys.exit(main())
