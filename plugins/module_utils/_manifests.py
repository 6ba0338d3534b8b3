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


def _loader():
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _not_yaml(e) -> ValueError:
    mark = getattr(e, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
    problem = getattr(e, "problem", None) or "not valid YAML"
    return ValueError(f"is not YAML{where}: {problem}")


def load_all(text: str) -> list:
    """The documents of a YAML text, empty ones skipped; ValueError ``is not YAML (line L, column C): <problem>``
    when it is not YAML."""
    try:
        return [d for d in yaml.load_all(text, Loader=_loader()) if d is not None]
    except yaml.YAMLError as e:
        raise _not_yaml(e) from None


class Verbatim:
    """A document of a YAML text, kept as it came: ``text``, its own lines (comments between them included), and
    ``head``, the kind, name and namespace its file is named after. ``value()`` parses the whole object, which only
    a clash of two documents over one file needs."""

    __slots__ = ("_node", "head", "text")

    def __init__(self, node, head: dict, text: str):
        self._node, self.head, self.text = node, head, text

    def value(self):
        return _loader()("").construct_document(self._node)


_MAP = "tag:yaml.org,2002:map"


def _head(node, construct) -> dict | None:
    """{kind, metadata: {name, namespace}} of a mapping node, each value parsed as the whole document would parse
    it; None when one of them is not a plain value (the document is then parsed whole and checked as an object)."""
    keys = {k.value: v for k, v in node.value if k.tag == "tag:yaml.org,2002:str"}
    meta = keys.get("metadata")
    if meta is None or meta.tag != _MAP:
        return None
    meta_keys = {k.value: v for k, v in meta.value if k.tag == "tag:yaml.org,2002:str"}
    picked = {"kind": keys.get("kind"), "name": meta_keys.get("name"), "namespace": meta_keys.get("namespace")}
    if picked["kind"] is None or picked["name"] is None:
        return None
    if any(n is not None and not isinstance(n, yaml.ScalarNode) for n in picked.values()):
        return None
    kind, name, namespace = (None if n is None else construct(n) for n in picked.values())
    return {"kind": kind, "metadata": {"name": name, "namespace": namespace}}


def documents(text: str) -> list:
    """The documents of a YAML text, empty ones skipped, each a ``Verbatim`` when it is a block mapping that starts a
    line (the Kubernetes objects of upstream's files and of ``helm template``), else its parsed value. A text with
    directives (``%YAML``, ``%TAG``) is parsed whole, as its documents do not stand alone. ValueError as
    ``load_all``."""
    text = text[1:] if text.startswith("\ufeff") else text
    if re.search(r"^%", text, re.MULTILINE):
        return load_all(text)
    loader = _loader()
    constructor = loader("")
    out = []
    try:
        for node in yaml.compose_all(text, Loader=loader):
            head = None
            if isinstance(node, yaml.MappingNode) and not node.flow_style and node.start_mark.column == 0:
                head = _head(node, constructor.construct_object)
            if head is None:
                value = constructor.construct_document(node)
                if value is not None:
                    out.append(value)
                continue
            own = text[node.start_mark.index : node.end_mark.index]
            out.append(Verbatim(node, head, own if own.endswith("\n") else own + "\n"))
    except yaml.YAMLError as e:
        raise _not_yaml(e) from None
    return out


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
    """File name -> text for every object: ``dump(obj)``, or a ``Verbatim`` document's own text. Raises ValueError
    naming the first object that is not one, or two different objects that would share a file (the same object
    twice is written once, the first one's text)."""
    if not isinstance(objects, list):
        raise ValueError(f"objects must be a list of Kubernetes objects, got {type(objects).__name__}")
    out: dict[str, str] = {}
    first: dict[str, object] = {}
    for i, obj in enumerate(objects):
        head = obj.head if isinstance(obj, Verbatim) else obj
        try:
            name = filename(head)
        except ValueError as e:
            raise ValueError(f"objects[{i}]: {e}") from e
        text = obj.text if isinstance(obj, Verbatim) else dump(obj)
        if name not in out:
            out[name], first[name] = text, obj
        elif out[name] != text and _value(first[name]) != _value(obj):
            raise ValueError(
                f"objects[{i}] ({head['kind']} {head['metadata']['name']}) is listed twice, differently (file {name})"
            )
    return out


def _value(obj):
    return obj.value() if isinstance(obj, Verbatim) else obj
