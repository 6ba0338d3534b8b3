"""Every module's and lookup plugin's documentation renders with ansible-doc (exit 1 naming the ones that
do not); the filters and tests are documented in YAML files that ansible-lint and sanity check."""

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
plugins = [
    (kind, p.stem)
    for kind, folder in (("module", "modules"), ("lookup", "lookup"))
    for p in sorted((REPO / "plugins" / folder).glob("*.py"))
    if not p.stem.startswith("_")
]
for kind, name in plugins:
    p = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-doc"), "-t", kind, f"gangsched.kubeflow.{name}"],
        env=env,
        capture_output=True,
        text=True,
    )
    if p.returncode != 0 or "ERROR" in p.stderr or "Missing documentation" in p.stderr:
        bad.append(f"{kind} {name}: {p.stderr.strip()[:300]}")
print(f"ansible-doc renders {len(plugins) - len(bad)}/{len(plugins)} modules and lookup plugins")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
