# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The module_utils that a render-only run loads in ansible-playbook's process import no ``kubernetes`` client: that
import alone costs about 0.4 s, and the render's figure is measured against a plain apply (docs/development.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

COLLECTIONS = Path(__file__).resolve().parents[4] / ".collections"
PREFIX = "ansible_collections.gangsched.kubeflow.plugins.module_utils."


@pytest.mark.parametrize(
    "name",
    ["k8s._service", "k8s._together", "domain._api", "runners._render_manifests", "domain._component_discovery"],
)
def test_imports_no_kubernetes_client(name):
    code = f"import sys, {PREFIX}{name}; print(*sorted(m for m in sys.modules if m.split('.')[0] == 'kubernetes'))"
    env = {**os.environ, "PYTHONPATH": f"{COLLECTIONS}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    imported = out.stdout.split()
    assert not imported, f"{name} imports {len(imported)} modules of the kubernetes client: {imported[:3]} ..."
