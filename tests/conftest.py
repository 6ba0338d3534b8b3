"""Makes the checkout importable as the collection gangsched.kubeflow (ansible_collections/gangsched/
kubeflow -> the repo root, under .collections/), next to kubernetes.core from the environment."""

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
        os.symlink("../../..", link)
    if str(COLLECTIONS) not in sys.path:
        sys.path.insert(0, str(COLLECTIONS))


_link_collection()
