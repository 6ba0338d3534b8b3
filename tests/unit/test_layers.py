"""The layers of plugins/module_utils as docs/architecture.md draws them: domain/ imports only itself, paths/ (one
file per gang path) the domain, k8s/ only the domain, smoke/ and runners/ the domain, paths/ and k8s/ and never each
other; every package holds an empty __init__.py
(ansible-test's empty-init)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

UTILS = Path(__file__).resolve().parents[2] / "plugins" / "module_utils"
BASE = "ansible_collections.gangsched.kubeflow.plugins.module_utils"
MAY_IMPORT = {
    "domain": {"domain"},
    "paths": {"domain", "paths"},
    "k8s": {"domain", "k8s"},
    "smoke": {"domain", "paths", "k8s", "smoke"},
    "runners": {"domain", "paths", "k8s", "runners"},
}


def _layer_of(module: str) -> str:
    """The package of a module: ...module_utils.k8s._client -> k8s."""
    return module[len(BASE) + 1 :].split(".")[0]


def _imported(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(BASE):
            if node.module[len(BASE) + 1 :] in MAY_IMPORT:  # from <package> import <its modules>
                out += [f"{node.module}.{a.name}" for a in node.names]
            else:
                out.append(node.module)
    return out


FILES = sorted(p for p in UTILS.rglob("*.py") if p.name != "__init__.py")


def test_the_layers_are_the_packages_the_documentation_names():
    assert {p.relative_to(UTILS).parts[0] for p in FILES} == set(MAY_IMPORT)
    for pkg in MAY_IMPORT:
        init = UTILS / pkg / "__init__.py"
        assert init.exists() and init.read_text() == "", init


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(UTILS)))
def test_a_file_imports_only_its_layer_and_those_below(path):
    layer = path.relative_to(UTILS).parts[0]
    wrong = [m for m in _imported(path) if _layer_of(m) not in MAY_IMPORT[layer]]
    assert wrong == [], f"{path.relative_to(UTILS)} ({layer}) imports {wrong}"


RUNNERS = sorted(p for p in FILES if p.parent.name == "runners")


@pytest.mark.parametrize("path", RUNNERS, ids=lambda p: p.name)
def test_a_runner_imports_no_other_runner_only_its_own_parts(path):
    """A runner's parts are files named after it (_info_native for _info) and imported by it only."""
    others = [m.rsplit(".", 1)[1] for m in _imported(path) if _layer_of(m) == "runners"]
    wrong = [m for m in others if not m.startswith(path.stem + "_")]
    assert wrong == [], f"runners/{path.name} imports {wrong}"
