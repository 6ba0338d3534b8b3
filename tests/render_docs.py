"""Every module's documentation renders with ansible-doc (exit 1 naming the ones that do not)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
import conftest  # noqa: E402,F401 - links .collections/ansible_collections/gangsched/kubeflow

env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")}
bad = []
modules = sorted(p.stem for p in (REPO / "plugins" / "modules").glob("*.py") if not p.stem.startswith("_"))
for m in modules:
    p = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-doc"), f"gangsched.kubeflow.{m}"],
        env=env,
        capture_output=True,
        text=True,
    )
    if p.returncode != 0 or "ERROR" in p.stderr or "Missing documentation" in p.stderr:
        bad.append(f"{m}: {p.stderr.strip()[:300]}")
print(f"ansible-doc renders {len(modules) - len(bad)}/{len(modules)} modules")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
