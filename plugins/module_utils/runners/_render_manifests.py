# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: render_manifests' runner — objects, YAML texts and a chart's `helm template` output
written one file each into a directory made to match (_files), pruned, with the diff. Not a public API."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import traceback

from ansible.module_utils.basic import missing_required_lib
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _files, _manifests

try:
    import yaml

    YAML_ERROR = None
except ImportError:
    yaml = None
    YAML_ERROR = traceback.format_exc()


def _parse(documents: list) -> list:
    """The documents of each YAML text (empty ones skipped), as they came where they can be; ValueError naming the
    text that is not YAML."""
    out = []
    for i, text in enumerate(documents):
        try:
            out += _manifests.documents(text)
        except ValueError as e:
            raise ValueError(f"documents[{i}] {e}") from None
    return out


def _helm_template(chart: dict, timeout: int) -> str:
    """The output of ``helm template`` for ``chart`` (the option's dict); ValueError naming the chart, the option
    and the fix when Helm is missing, fails or takes more than ``timeout`` seconds."""
    binary = chart.get("binary_path") or "helm"
    ref = chart["chart_ref"]
    args = [binary, "template", chart["release_name"], ref, "--namespace", chart["release_namespace"]]
    if chart.get("chart_repo_url"):
        args += ["--repo", chart["chart_repo_url"]]
    if chart.get("chart_version"):
        args += ["--version", chart["chart_version"]]
    # the values as JSON, which is YAML: every string stays a string, whatever YAML 1.1 would read in it
    with tempfile.NamedTemporaryFile("w", prefix="gangsched-values.", suffix=".yaml", encoding="utf-8") as values:
        json.dump(chart.get("release_values") or {}, values)
        values.flush()
        try:
            p = subprocess.run(
                [*args, "--values", values.name], capture_output=True, text=True, timeout=timeout, check=False
            )
        except FileNotFoundError:
            raise ValueError(
                f"chart {ref}: the helm binary {binary} was not found; set chart.binary_path to helm's path, "
                "or put helm on the PATH"
            ) from None
        except PermissionError:
            raise ValueError(f"chart {ref}: {binary} cannot be run; set chart.binary_path to helm's path") from None
        except subprocess.TimeoutExpired:
            raise ValueError(
                f"chart {ref}: helm template took more than {timeout} s; raise timeout, or check that "
                f"{chart.get('chart_repo_url') or ref} can be reached"
            ) from None
    if p.returncode != 0:
        said = [line.strip() for line in p.stderr.splitlines() if line.strip()]
        # Helm's own "Error: ..." line, not its closing hint (Use --debug flag ...)
        errors = [line for line in said if line.startswith("Error:")]
        why = (errors or said)[-1] if said else f"exit status {p.returncode}"
        raise ValueError(f"chart {ref}: helm template failed ({why}); check chart.chart_ref, chart_version and values")
    return p.stdout


def missing() -> dict | None:
    return None if yaml is not None else dict(msg=missing_required_lib("PyYAML"), exception=YAML_ERROR)


def _stale(path: str, names: list) -> list[str]:
    """The ``*.yaml`` files in each directory ``names`` of ``path`` (relative to ``path``): what an earlier render
    wrote there. A name that is no directory, or a link, holds none: only what a render writes goes, and the
    directory with its last file."""
    out = []
    for name in names:
        where = os.path.join(path, name)
        if os.path.isdir(where) and not os.path.islink(where):
            out += [os.path.join(name, rel) for rel in _files.present(where, recursive=True)]
    return out


def render(params: dict, check_mode: bool, diff: bool, name: str, warn) -> dict:
    """The task's result: the files of ``params`` written (not in check mode); ``failed`` and ``msg`` when
    they cannot be."""
    path = params["path"]
    if params["timeout"] <= 0:
        return dict(
            failed=True,
            msg=f"render_manifests: timeout must be seconds > 0 (got {params['timeout']}); set timeout: 120; nothing "
            f"was written to {path}",
        )
    bad = [d for d in params["remove_dirs"] if not d or "/" in d or d in (".", "..")]
    if bad:
        return dict(
            failed=True,
            msg=f"render_manifests: remove_dirs takes names of directories in path {path}, not paths (got "
            f"{', '.join(repr(d) for d in bad)}); give each as a name such as 20-volcano; nothing was written",
        )
    try:
        objects = params["objects"] + _parse(params["documents"])
        if params.get("chart"):
            chart = params["chart"]
            try:
                objects += _manifests.documents(_helm_template(chart, params["timeout"]))
            except ValueError as e:
                said = str(e) if str(e).startswith("chart ") else f"chart {chart['chart_ref']}'s output {e}"
                raise ValueError(said) from None
        wanted = _manifests.files(objects, _manifests.dump)
    except ValueError as e:
        return dict(failed=True, msg=f"render_manifests: {e}; nothing was written to {path}")
    if os.path.exists(path) and not os.path.isdir(path):
        return dict(
            failed=True, msg=f"render_manifests: path {path} exists and is not a directory; point path at a directory"
        )
    found = (_files.present(path) if params["prune"] else []) + _stale(path, params["remove_dirs"])
    plan = _files.Plan(path, wanted, found, prune=True)
    failed = plan.carry_out(check_mode)
    if failed:
        return dict(failed=True, msg=f"render_manifests: {failed}", written=[], removed=[])
    written, removed, changes = plan.written, plan.removed, plan.diff
    return dict(
        changed=bool(written or removed),
        path=path,
        files=list(wanted),
        written=written,
        removed=removed,
        diff=changes if diff else None,
    )
