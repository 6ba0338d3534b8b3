"""Which lab binary runs a container image (keyed by upstream repository path, any tag or registry)."""

from __future__ import annotations

from . import versions as V


def repository(image: str) -> str:
    """``docker.io/volcanosh/vc-scheduler:v1.10.0`` -> ``volcanosh/vc-scheduler``."""
    image = image.split("@", 1)[0]
    head, sep, tail = image.rpartition(":")
    if sep and "/" not in tail:
        image = head
    parts = image.split("/")
    if len(parts) > 1 and (("." in parts[0] or ":" in parts[0]) or parts[0] == "localhost"):
        parts = parts[1:]
    return "/".join(parts)


def binary_for(image: str) -> str | None:
    return V.IMAGES.get(repository(image))


def tag(image: str) -> str | None:
    """``docker.io/volcanosh/vc-scheduler:v1.10.0`` -> ``v1.10.0``; None without a tag (a digest, or none)."""
    name = image.split("@", 1)[0]
    head, sep, tail = name.rpartition(":")
    return tail if sep and "/" not in tail else None
