"""Each gang path in one place: outside plugins/module_utils/paths/, no Python file compares a gang_scheduler value
with a path's name or tests its membership in a literal list of paths; the modules, smoke/, the runners and the
filters ask the path (paths/_registry) instead."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry

PLUGINS = Path(__file__).resolve().parents[5] / "plugins"
PATHS_DIR = PLUGINS / "module_utils" / "paths"
NAMES = set(_registry.GANG_PATHS)
FILES = sorted(p for p in PLUGINS.rglob("*.py") if PATHS_DIR not in p.parents)


def _literals(node) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def branches_on_a_path(path: Path) -> list[str]:
    """'line: source' of each comparison (==, !=, in, not in) whose operands name a gang path literally."""
    return branches_in(path.read_text())


def branches_in(text: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Compare) and any(
            isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops
        ):
            named = [v for side in (node.left, *node.comparators) for v in _literals(side) if v in NAMES]
            if named:
                out.append(f"{node.lineno}: {ast.get_source_segment(text, node)}")
    return out


def test_the_check_finds_a_branch_on_a_path():
    sample = 'if gang == "volcano":\n    pass\nok = g in ("koordinator", "native")\nfine = g == "other"\n'
    assert branches_in(sample) == ['1: gang == "volcano"', '3: g in ("koordinator", "native")']


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PLUGINS)))
def test_no_branch_on_a_gang_path_outside_paths(path):
    assert branches_on_a_path(path) == []
