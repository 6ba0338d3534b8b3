"""The render's clean-up (playbooks/tasks/rendered.yml) removes the component directories of roles a run did not render,
by the names the roles' defaults give them: each gang path's role (the path's row) renders to ``20-<role>``, the other
roles to the names in its table, so that a renamed directory or a new role cannot be left out of the clean-up
unnoticed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry

REPO = Path(__file__).resolve().parents[2]
DEFAULT = re.compile(r"^\{\{ gangsched_render_dir \| default\('rendered'\) \}\}/([0-9]{2}-[a-z-]+)$")


def _others() -> dict[str, str]:
    """The clean-up's table of the roles that are no gang path's."""
    tasks = yaml.safe_load((REPO / "playbooks" / "tasks" / "rendered.yml").read_text())
    (cleanup,) = [t for t in tasks if "gangsched.kubeflow.render_manifests" in t]
    (table,) = re.findall(r"combine\((\{.*?\})\)", cleanup["vars"]["__render_components"], re.S)
    return ast.literal_eval(table)


def _role_defaults() -> dict[str, str]:
    found = {}
    for defaults in sorted(REPO.glob("roles/*/defaults/main.yml")):
        role = defaults.parent.parent.name
        value = (yaml.safe_load(defaults.read_text()) or {}).get(f"{role}_render_dir")
        if value is not None:
            match = DEFAULT.match(value)
            assert match, f"{defaults}: {role}_render_dir is {value!r}, not a directory under gangsched_render_dir"
            found[role] = match.group(1)
    return found


def test_each_rendering_role_is_known_by_its_default_directory():
    scheduler_roles = {_registry.get(name).role for name in _registry.names()}
    expected = {role: "20-" + role.replace("_", "-") for role in scheduler_roles} | _others()
    defaults = _role_defaults()
    assert len(defaults) >= 8 and scheduler_roles <= set(defaults), defaults
    assert expected == defaults


def test_no_two_roles_share_a_directory():
    names = list(_role_defaults().values())
    assert len(names) == len(set(names)), names
