# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: container image references — the repository without its registry and
the tag, the kind a table gives an image, and whether an image is one of some names. Pure: no I/O.
Not a public API."""

from __future__ import annotations

import re

# an image reference, or a part of one: [registry[:port]/]path[:tag][@digest]
IMAGE_REFERENCE = re.compile(
    r"^([A-Za-z0-9.-]+(:[0-9]+)?/)?[a-z0-9]+(([._/]|__|-+)[a-z0-9]+)*(:\w[\w.-]{0,127})?(@[a-z0-9]+:[a-f0-9]{32,})?$"
)


def image_repo(image: str) -> tuple[str, str]:
    """Repository without registry, and tag: registry.k8s.io/a/b:v1 -> ('a/b', 'v1')."""
    name, _at, digest = image.partition("@")
    tag = ""
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name, tag = name.rsplit(":", 1)
    parts = name.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]
    return "/".join(parts), tag or digest


def image_kind(image: str, table: dict) -> str | None:
    """The kind ``table`` (repository, or its last path components -> kind) gives ``image``."""
    repo = image_repo(image)[0]
    for suffix, kind in table.items():
        if repo == suffix or repo.endswith("/" + suffix):
            return kind
    return None


def image_path(image: str) -> list[str]:
    """The path components of an image's repository (registry, tag and digest dropped)."""
    return [p for p in image_repo(image)[0].split("/") if p]


def image_matches(image: str | None, names) -> bool:
    """Whether ``image`` is one of ``names``, compared on the last path components: the registry host,
    any path in front (a mirror), the tag and the digest are ignored. ``names`` are repository names
    (``training-operator``, ``kubeflow/training-operator``) or whole image references."""
    have = image_path(image or "")
    if not have:
        return False
    for name in names:
        want = image_path(name)
        if want and have[-len(want) :] == want:
            return True
    return False
