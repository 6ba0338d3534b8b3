"""Makes the checkout importable as the collection gangsched.kubeflow (ansible_collections/gangsched/
kubeflow -> the repo root, under .collections/), next to kubernetes.core from the environment; under
pytest-xdist (``-n``), gives each worker a lab directory of its own.

Test files run longest first, by the seconds each took in a measured ``make test`` (``tests/file_seconds.json``;
files not in it after them, in their own order): with ``--dist loadfile --no-loadscope-reorder`` a lane's workers
then end together instead of one worker running the longest file alone at the end (by default pytest-xdist
starts the files with the most tests first). ``--file-seconds-out=PATH`` merges each file's measured seconds
(setup, call and teardown of its tests) into PATH at the end of the run, to refresh that table from.

A package of test files (a directory with ``__init__.py``, such as ``tests/lab/trainer_stack/``) is one unit: its
files run together, in their order, on one worker (``--dist loadfile`` is told so), ranked by their seconds summed,
so a lab its conftest starts for the whole package is started once."""

from __future__ import annotations

import fcntl
import functools
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
COLLECTIONS = REPO / ".collections"
FILE_SECONDS = Path(__file__).resolve().parent / "file_seconds.json"


def _link_collection() -> None:
    link = COLLECTIONS / "ansible_collections" / "gangsched" / "kubeflow"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.symlink("../../..", link)
        except FileExistsError:  # another xdist worker made it meanwhile
            pass
    if str(COLLECTIONS) not in sys.path:
        sys.path.insert(0, str(COLLECTIONS))


def _worker_lab_dir() -> None:
    """Each xdist worker runs its own lab (the lab fixtures start one per session or per module):
    ``<the lab directory>-<worker id>``, so workers never share a cluster's GPUs or components."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        base = os.environ.get("GANGSCHED_LAB_DIR") or str(REPO / ".lab")
        os.environ["GANGSCHED_LAB_DIR"] = f"{base}-{worker}"


_link_collection()
_worker_lab_dir()


def pytest_addoption(parser):
    parser.addoption(
        "--file-seconds-out",
        default=None,
        help="merge each test file's measured seconds into this JSON file at the end of the run",
    )


@functools.cache
def _unit(path: str) -> str:
    """The unit a test file runs in: the file, or the package of test files it is in."""
    parent = os.path.dirname(path)
    return parent if parent and (REPO / parent / "__init__.py").exists() else path


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    """Longest units first (a stable sort: each unit's tests stay together and in their order)."""
    seconds = json.loads(FILE_SECONDS.read_text()) if FILE_SECONDS.exists() else {}
    unit_seconds: dict[str, float] = defaultdict(float)
    rank: dict[str, int] = {}  # units in their collection order, for ties
    for path in dict.fromkeys(_file(item.nodeid) for item in items):
        unit_seconds[_unit(path)] += seconds.get(path, 0)
        rank.setdefault(_unit(path), len(rank))
    items.sort(key=lambda item: (-unit_seconds[_unit(_file(item.nodeid))], rank[_unit(_file(item.nodeid))]))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` with a package of test files as one unit (see the module's docstring)."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class UnitScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(_file(nodeid))

    return UnitScheduling(config, log)


_measured: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    _measured[_file(report.nodeid)] += report.duration


def pytest_sessionfinish(session):
    out = session.config.getoption("--file-seconds-out")
    if not out or hasattr(session.config, "workerinput") or not _measured:  # the controller writes, not each worker
        return
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as f:  # two stages of make test may write at once
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        known = json.loads(f.read() or "{}")
        known.update({name: round(took) for name, took in _measured.items()})
        f.seek(0)
        f.truncate()
        f.write(json.dumps(dict(sorted(known.items(), key=lambda kv: -kv[1])), indent=1) + "\n")
