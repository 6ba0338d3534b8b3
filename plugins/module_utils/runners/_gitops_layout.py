# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: gitops_layout's runner — render.yml's output read from its directory and laid out
in stages for Flux (_gitops) in a directory of the GitOps checkout made to match (_files). Not a public API."""

from __future__ import annotations

import os
import re
import traceback

from ansible.module_utils.basic import missing_required_lib
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _files, _gitops, _manifests
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._operators import DNS1123_LABEL

try:
    import yaml

    YAML_ERROR = None
except ImportError:
    yaml = None
    YAML_ERROR = traceback.format_exc()

# Flux's duration (Go's time.ParseDuration as its CRDs' pattern allows it)
DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$")


def missing() -> dict | None:
    return None if yaml is not None else dict(msg=missing_required_lib("PyYAML"), exception=YAML_ERROR)


def _bad_option(params: dict) -> str | None:
    for option in ("interval", "retry_interval", "stage_timeout"):
        if not DURATION.match(params[option]):
            return f"{option}={params[option]!r} is not a Flux duration; set it like 30s, 5m or 1h"
    for option in ("prefix", "namespace", "source_name", "source_namespace"):
        value = params.get(option)
        if value is not None and (len(value) > 63 or not DNS1123_LABEL.match(value)):
            return (
                f"{option}={value!r} is not a valid name: lower-case letters, digits and '-', at most 63 characters, "
                "starting and ending with a letter or digit"
            )
    return None


def _git_top(path: str) -> str | None:
    here = os.path.abspath(path)
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        up = os.path.dirname(here)
        if up == here:
            return None
        here = up


def repo_path(params: dict) -> str:
    """The path of dest in the repository: the option, or dest below its checkout's top; ValueError without both."""
    if params.get("repo_path"):
        return params["repo_path"]
    top = _git_top(params["dest"])
    if top is None:
        raise ValueError(
            f"dest {params['dest']} is not in a Git checkout; set repo_path to its path in the repository the engine "
            "reads (./gangsched)"
        )
    rel = os.path.relpath(os.path.abspath(params["dest"]), top)
    return "./" if rel == "." else f"./{rel}"


def read_src(src: str) -> tuple[dict, dict]:
    """(component -> file -> object, component -> file -> text) of render.yml's output; ValueError naming what is
    not that."""
    if not os.path.isdir(src):
        raise ValueError(f"src {src} is not a directory; point it at render.yml's gangsched_render_dir")
    objects: dict[str, dict] = {}
    texts: dict[str, dict] = {}
    for comp in sorted(os.listdir(src)):
        where = os.path.join(src, comp)
        if not os.path.isdir(where):
            continue
        objects[comp], texts[comp] = {}, {}
        for name in _files.present(where):
            text = _files.read(os.path.join(where, name)) or ""
            try:
                docs = _manifests.load_all(text)
            except ValueError as e:
                raise ValueError(f"{comp}/{name} {e}") from None
            if len(docs) != 1 or not isinstance(docs[0], dict) or not docs[0].get("kind"):
                raise ValueError(f"{comp}/{name} is not one Kubernetes object; render it again with render.yml")
            objects[comp][name], texts[comp][name] = docs[0], text
    if not objects:
        raise ValueError(
            f"src {src} holds no component directory; run render.yml with gangsched_render_dir={src} first"
        )
    return objects, texts


def layout(params: dict, check_mode: bool, diff: bool, name: str, warn) -> dict:
    dest = params["dest"]
    bad = _bad_option(params)
    if bad:
        return dict(failed=True, msg=f"gitops_layout: {bad}; nothing was written to {dest}")
    if os.path.exists(dest) and not os.path.isdir(dest):
        return dict(
            failed=True, msg=f"gitops_layout: dest {dest} exists and is not a directory; point it at a directory"
        )
    try:
        opts = {**params, "repo_path": repo_path(params)}
        objects, texts = read_src(params["src"])
        planned = _gitops.plan(objects, opts)
        wanted = _gitops.tree(planned, texts, _manifests.dump)
    except ValueError as e:
        return dict(failed=True, msg=f"gitops_layout: {e}; nothing was written to {dest}")
    plan = _files.Plan(dest, wanted, _files.present(dest, recursive=True), prune=params["prune"])
    failed = plan.carry_out(check_mode)
    if failed:
        return dict(failed=True, msg=f"gitops_layout: {failed}")
    return dict(
        changed=plan.changed,
        repo_path=opts["repo_path"],
        stages=planned["stages"],
        kustomizations=[st["name"] for st in planned["stages"]],
        left_out=planned["skipped"],
        written=plan.written,
        removed=plan.removed,
        diff=plan.diff if diff else None,
    )
