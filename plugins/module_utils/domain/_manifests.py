# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: rendered manifests, one file per object, named after it, and the YAML texts they
come from. Pure: no I/O.
Not a public API."""

from __future__ import annotations

import re
from collections.abc import Mapping

try:
    import yaml
except ImportError:  # pragma: no cover - the modules report the missing library first
    yaml = None


# no folding of long strings: the C and the pure-Python emitters fold them differently, and write alike without
_WIDTH = 1 << 30


def copy_plain(obj):
    """A deep copy of JSON-like data as plain dicts and lists (a mapping a dict, a list or tuple a list, a scalar as it
    is). What a Jinja filter gets are Ansible's lazy containers, whose ``copy.deepcopy`` copies the templar and every
    variable it holds, again for each nested container (seconds for a small manifest); this walks the data alone."""
    if isinstance(obj, Mapping):
        return {k: copy_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [copy_plain(v) for v in obj]
    return obj


def dump(obj: dict) -> str:
    """An object as the collection writes it: YAML with sorted keys, an indent of 2, no folding (the C emitter when
    present)."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(
        obj, Dumper=dumper, indent=2, sort_keys=True, default_flow_style=False, allow_unicode=True, width=_WIDTH
    )


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

    __slots__ = ("head", "text")

    def __init__(self, head: dict, text: str):
        self.head, self.text = head, text

    def value(self):
        return yaml.load(self.text, Loader=_loader())


# a document's head: the keys its file is named after (None: a plain value; a dict: the keys of a mapping under it)
_HEAD = {"kind": None, "metadata": {"name": None, "namespace": None}}
_UNUSABLE = object()  # a head key whose value is not a plain value, or a mapping with a merge key (<<)
_STR, _MERGE = "tag:yaml.org,2002:str", "tag:yaml.org,2002:merge"


class _Walk:
    """The parse events of one YAML text, walked document by document: a document's head read, the rest of it
    skipped, its anchors, aliases and tags checked as PyYAML's composer and constructor check them (the events alone
    do not)."""

    def __init__(self, text: str, loader):
        self.events = yaml.parse(text, Loader=loader)
        self.tools = loader("")  # its resolver and constructor, for the head's plain values
        self.anchors: dict = {}
        self.last_scalar = None  # the document's last scalar event so far

    def next(self):
        e = next(self.events)
        if e.__class__ is yaml.ScalarEvent:
            self.last_scalar = e
        elif e.__class__ is yaml.AliasEvent:
            if e.anchor not in self.anchors:
                raise yaml.composer.ComposerError(None, None, f"found undefined alias {e.anchor!r}", e.start_mark)
            return e
        tag = getattr(e, "tag", None)
        if tag is not None and tag != "!" and tag not in self.tools.yaml_constructors:
            raise yaml.constructor.ConstructorError(
                None, None, f"could not determine a constructor for the tag {tag!r}", e.start_mark
            )
        if getattr(e, "anchor", None) is not None:
            if e.anchor in self.anchors:
                raise yaml.composer.ComposerError(
                    f"found duplicate anchor {e.anchor!r}; first occurrence",
                    self.anchors[e.anchor],
                    "second occurrence",
                    e.start_mark,
                )
            self.anchors[e.anchor] = e.start_mark
        return e

    def skip(self, first) -> None:
        """Consume the rest of the node whose first event is ``first``."""
        if first.__class__ not in (yaml.MappingStartEvent, yaml.SequenceStartEvent):
            return
        depth = 1
        while depth:
            c = self.next().__class__
            if c is yaml.MappingStartEvent or c is yaml.SequenceStartEvent:
                depth += 1
            elif c is yaml.MappingEndEvent or c is yaml.SequenceEndEvent:
                depth -= 1

    def scalar(self, e, keys_only: bool = False):
        """The value of a scalar event, as the constructor would make it; with ``keys_only``, None for any but a
        string, and _UNUSABLE for a merge key."""
        tag = e.tag if e.tag not in (None, "!") else self.tools.resolve(yaml.ScalarNode, e.value, e.implicit)
        if keys_only and tag != _STR:
            return _UNUSABLE if tag == _MERGE else None
        return self.tools.construct_object(yaml.ScalarNode(tag, e.value, e.start_mark, e.end_mark, e.style))

    def mapping(self, wanted: dict):
        """The values of the ``wanted`` keys of the mapping whose start was read, and its end event."""
        found = {}
        while True:
            key = self.next()
            if key.__class__ is yaml.MappingEndEvent:
                return found, key
            name = self.scalar(key, keys_only=True) if key.__class__ is yaml.ScalarEvent else None
            self.skip(key)
            value = self.next()
            if name is _UNUSABLE:
                found[_UNUSABLE] = True
            elif name in wanted:
                sub = wanted[name]
                if sub is None and value.__class__ is yaml.ScalarEvent:
                    found[name] = self.scalar(value)
                    continue
                if sub is not None and value.__class__ is yaml.MappingStartEvent:
                    found[name] = self.mapping(sub)[0]
                    continue
                found[name] = _UNUSABLE
            self.skip(value)


def _head(found: dict) -> dict | None:
    """{kind, metadata: {name, namespace}} of a document, or None when they are not all plain values."""
    meta = found.get("metadata")
    if _UNUSABLE in found or not isinstance(meta, dict) or _UNUSABLE in meta:
        return None
    picked = (found.get("kind", _UNUSABLE), meta.get("name", _UNUSABLE), meta.get("namespace"))
    if any(v is _UNUSABLE for v in picked):
        return None
    return {"kind": picked[0], "metadata": {"name": picked[1], "namespace": picked[2]}}


def _trimmed(own: str, text: str, last) -> str:
    """A document's own text ending in one line break: the blank lines after its last line left out (Helm 4's
    ``helm template`` keeps those of its templates, Helm 3 trimmed them), unless its last scalar keeps its final line
    breaks (a ``|+`` or ``>+`` block scalar), whose value they are."""
    if last is not None and last.style in ("|", ">"):
        end = text.find("\n", last.start_mark.index)
        indicator = text[last.start_mark.index : end if end >= 0 else len(text)]
        if "+" in indicator.split("#")[0]:
            return own if own.endswith("\n") else own + "\n"
    return own.rstrip(" \t\r\n") + "\n"


def documents(text: str) -> list:
    """The documents of a YAML text, empty ones skipped, each a ``Verbatim`` when it is a block mapping that starts a
    line and names itself in plain values (the Kubernetes objects of upstream's files and of ``helm template``), else
    its parsed value. Read from the parser's events, so that no object is built for a document kept as it came. A text
    with directives (``%YAML``, ``%TAG``) is parsed whole, as its documents do not stand alone. ValueError as
    ``load_all``."""
    text = text[1:] if text.startswith("\ufeff") else text
    if re.search(r"^%", text, re.MULTILINE):
        return load_all(text)
    loader = _loader()
    out: list = []
    parsed = None  # every document, parsed, once one of them is not kept as it came
    try:
        walk, doc = _Walk(text, loader), -1
        for e in walk.events:
            if e.__class__ is not yaml.DocumentStartEvent:
                continue
            walk.anchors, walk.last_scalar, doc = {}, None, doc + 1
            root = walk.next()
            if root.__class__ is yaml.MappingStartEvent and not root.flow_style and root.start_mark.column == 0:
                found, end = walk.mapping(_HEAD)
                head = _head(found)
                if head is not None:
                    own = text[root.start_mark.index : end.end_mark.index]
                    out.append(Verbatim(head, _trimmed(own, text, walk.last_scalar)))
                    continue
            else:
                walk.skip(root)
            if parsed is None:
                parsed = list(yaml.load_all(text, Loader=loader))
            if parsed[doc] is not None:
                out.append(parsed[doc])
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
