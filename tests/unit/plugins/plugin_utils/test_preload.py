# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles' Jinja plugins loaded once in ansible-playbook's process (plugin_utils/_preload): every filter, test and
lookup of the collection named, loaded through Ansible's own plugin loaders in a fresh Python whose collection loader
is set up as ansible-playbook sets it up, once, and never in a worker forked from it. What it saves is measured on the
lab (docs/development.md, the converge's worker profile)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ansible_collections.gangsched.kubeflow.plugins.plugin_utils import _preload

REPO = Path(__file__).resolve().parents[4]
OWN = "gangsched.kubeflow."


def _own(kind: str) -> set[str]:
    return {n.removeprefix(OWN) for n in _preload.names(kind) if n.startswith(OWN)}


def test_every_filter_test_and_lookup_of_the_collection_is_named():
    assert _own("filter") == {p.stem for p in (REPO / "plugins/filter").glob("*.yml")}
    assert _own("test") == {p.stem for p in (REPO / "plugins/test").glob("*.yml")}
    assert _own("lookup") == {p.stem for p in (REPO / "plugins/lookup").glob("*.py")}
    assert {"gang_path", "newer_running", "condition_true"} <= _own("filter") and "dns_label" in _own("test")
    assert "ansible.builtin.template" in _preload.names("lookup")


CHILD = """
import json, multiprocessing, sys
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader([sys.argv[1]])
from ansible_collections.gangsched.kubeflow.plugins.plugin_utils import _preload
PKG = "ansible_collections.gangsched.kubeflow.plugins."
before = sorted(m for m in sys.modules if m.startswith((PKG + "filter.", PKG + "test.", PKG + "lookup.")))
loaded = _preload.preload()
after = sorted(m for m in sys.modules if m.startswith((PKG + "filter.", PKG + "test.", PKG + "lookup.")))
again = _preload.preload()
_preload._done = False  # a worker forked before the first call: it must refuse by itself
ctx = multiprocessing.get_context("fork")
q = ctx.SimpleQueue()
p = ctx.Process(target=lambda: q.put(_preload.preload()))
p.start()
child = q.get()
p.join()
print(json.dumps({"before": before, "loaded": loaded, "after": after, "again": again, "child": child}))
"""


def test_preload_loads_them_once_in_the_main_process_and_never_in_a_fork():
    cmd = [sys.executable, "-c", CHILD, str(REPO / ".collections")]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["before"] == [], res
    names = sum(len(_preload.names(k)) for k in ("filter", "test", "lookup"))
    assert res["loaded"] == names, res
    pkg = "ansible_collections.gangsched.kubeflow.plugins."
    modules = {f"{pkg}lookup.{n}" for n in _own("lookup")}
    modules |= {f"{pkg}filter.{p.stem}" for p in (REPO / "plugins/filter").glob("*.py")}
    assert modules <= set(res["after"]), res
    assert res["again"] == 0 and res["child"] == 0, res
