"""The render's clean-up (playbooks/tasks/rendered.yml) removes the component directories of roles a run did not render,
by the names the roles' defaults give them: every role that renders is in its table, under the directory name of its
``<role>_render_dir`` default, so a renamed directory or a new role cannot be left out of the clean-up unnoticed."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
DEFAULT = re.compile(r"^\{\{ gangsched_render_dir \| default\('rendered'\) \}\}/([0-9]{2}-[a-z-]+)$")


def _table() -> dict[str, str]:
    tasks = yaml.safe_load((REPO / "playbooks" / "tasks" / "rendered.yml").read_text())
    (cleanup,) = [t for t in tasks if "gangsched.kubeflow.render_manifests" in t]
    return cleanup["vars"]["__render_components"]


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


def test_the_table_is_every_rendering_roles_default_directory():
    defaults = _role_defaults()
    assert len(defaults) >= 8, defaults
    assert _table() == defaults


def test_no_two_roles_share_a_directory():
    names = list(_table().values())
    assert len(names) == len(set(names)), names
