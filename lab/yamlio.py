"""YAML through libyaml where PyYAML was built with it (its C scanner and emitter), else PyYAML's own: the lab reads
and writes upstream CRDs of megabytes (training-operator's 3.2 MiB, parsed in 3.2 CPU-s by the pure-Python scanner
and 0.4 by libyaml), in the test process, in every lab test that installs an operator."""

from __future__ import annotations

from collections.abc import Iterator

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def load_all(text: str) -> Iterator:
    """Each document of ``text``, as ``yaml.safe_load_all``."""
    return yaml.load_all(text, Loader=_LOADER)  # noqa: S506 - a safe loader (libyaml's or PyYAML's)


def dump_all(docs: list) -> str:
    """``docs`` as YAML documents in their keys' order, as ``yaml.safe_dump_all(docs, sort_keys=False)``."""
    return yaml.dump_all(docs, Dumper=_DUMPER, sort_keys=False)
