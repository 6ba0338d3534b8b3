"""Makes the checkout importable as the collection gangsched.kubeflow (ansible_collections/gangsched/
kubeflow -> the repo root, under .collections/), next to kubernetes.core from the environment; under
pytest-xdist (``-n``), gives each worker a lab directory of its own."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COLLECTIONS = REPO / ".collections"


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
