# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: rendered manifests, one file per object, named after it, and the YAML texts they
come from. Pure: no I/O.
Not a public API."""

from __future__ import annotations

import re

try:
    import yaml
except ImportError:  # pragma: no cover - the modules report the missing library first
    yaml = None


def load_all(text: str) -> list:
    """The documents of a YAML text, empty ones skipped; ValueError ``is not YAML (line L, column C): <problem>``
    when it is not YAML."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return [d for d in yaml.load_all(text, Loader=loader) if d is not None]
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(e, "problem", None) or "not valid YAML"
        raise ValueError(f"is not YAML{where}: {problem}") from None


def filename(obj) -> str:
    """``<kind>-<namespace>-<name>.yaml`` (cluster-scoped: ``<kind>-<name>.yaml``), lower case, safe.
    Raises ValueError for anything that is not an object with a kind and a name."""
    if not isinstance(obj, dict) or not obj.get("kind") or not (obj.get("metadata") or {}).get("name"):
        raise ValueError(f"needs a Kubernetes object with kind and metadata.name, got {obj!r}"[:300])
    md = obj["metadata"]
    parts = [obj["kind"], md.get("namespace"), md["name"]]
    text = "-".join(str(p) for p in parts if p).lower()
    return re.sub(r"[^a-z0-9._-]+", "_", text) + ".yaml"


def files(objects, dump) -> dict[str, str]:
    """File name -> text (``dump(obj)``) for every object; raises ValueError naming the first object that is
    not one, or two different objects that would share a file (the same object twice is written once)."""
    if not isinstance(objects, list):
        raise ValueError(f"objects must be a list of Kubernetes objects, got {type(objects).__name__}")
    out: dict[str, str] = {}
    for i, obj in enumerate(objects):
        try:
            name = filename(obj)
        except ValueError as e:
            raise ValueError(f"objects[{i}]: {e}") from e
        text = dump(obj)
        if out.get(name, text) != text:
            raise ValueError(
                f"objects[{i}] ({obj['kind']} {obj['metadata']['name']}) is listed twice, differently (file {name})"
            )
        out[name] = text
    return out
