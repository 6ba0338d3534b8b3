"""Where the lab keeps things: the build cache (outside the checkout) and the run state (.lab/)."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """Build cache root: $GANGSCHED_LAB_CACHE, else $XDG_CACHE_HOME/gangsched-lab, else ~/.cache/..."""
    env = os.environ.get("GANGSCHED_LAB_CACHE")
    if env:
        return Path(env).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gangsched-lab"


def state_dir() -> Path:
    """Run state of the lab (kubeconfig, certs, logs, pids): $GANGSCHED_LAB_DIR or <repo>/.lab."""
    env = os.environ.get("GANGSCHED_LAB_DIR")
    return Path(env).expanduser().resolve() if env else REPO / ".lab"
