"""A fresh lab for a fixture: 4 GPU nodes x 1 GPU and a CPU node, started (about 8 s) and, after the tests
that share it, torn down (``GANGSCHED_LAB_REUSE=1``: an already running lab is used and kept)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from lab import build
from lab.cluster import Lab


def fresh_lab() -> Iterator[Lab]:
    missing = []
    for b in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kubectl"):
        try:
            build.binary_path(b)
        except build.BuildError:
            missing.append(b)
    if missing:
        pytest.fail(f"lab binaries not built: {', '.join(missing)}; run: python -m lab build", pytrace=False)
    the_lab = Lab()
    reuse = os.environ.get("GANGSCHED_LAB_REUSE") == "1"
    the_lab.up(gpu_nodes=4, gpus_per_node=1, cpu_nodes=1, reuse=reuse, log=lambda *_: None)
    yield the_lab
    if not reuse:
        the_lab.down(log=lambda *_: None)
