"""The GPU-node bundle (lab/gpu/bundle.py) with small stand-in binaries: what it writes, that the node's pieces
come back from it unpacked once, and each bundle it refuses, by name."""

from __future__ import annotations

import json
import platform

import pytest

from lab import versions
from lab.gpu import bundle


@pytest.fixture
def pieces(tmp_path):
    src = tmp_path / "src"
    (src / "bin").mkdir(parents=True)
    bins = {}
    for i, name in enumerate(bundle.BINARIES):
        p = src / "bin" / name
        p.write_bytes(b"#!/bin/sh\n" + bytes([i]) * 4096)
        bins[name] = str(p)
    (src / "native").mkdir()
    (src / "native" / "pause.tar").write_bytes(b"image")
    (src / "native" / ".done").write_text("{}")
    (src / "chart").mkdir()
    (src / "chart" / "Chart.yaml").write_text("name: nvidia-device-plugin\n")
    return bundle.Pieces(bins, src / "native", src / "chart")


def test_a_bundle_holds_the_pieces_and_gives_them_back(pieces, tmp_path):
    m = bundle.write(tmp_path / "b", pieces, preset=0, log=lambda *_: None)
    assert m["versions"] == bundle.versions() and m["versions"]["kubelet"] == versions.KUBERNETES
    assert sorted(m["binaries"]) == sorted(bundle.BINARIES) and m["collections"] == ["kubernetes.core"]
    assert not (tmp_path / "b" / "native" / ".done").exists()
    got = bundle.load(tmp_path / "b", log=lambda *_: None)
    for name, path in got.binaries.items():
        assert open(path, "rb").read() == open(pieces.binaries[name], "rb").read()
    assert (got.native / "pause.tar").read_bytes() == b"image"
    assert (got.chart / "Chart.yaml").exists()
    assert (got.collections / "ansible_collections" / "kubernetes" / "core" / "MANIFEST.json").exists()


def test_the_binaries_are_unpacked_once(pieces, tmp_path):
    bundle.write(tmp_path / "b", pieces, preset=0, log=lambda *_: None)
    said = []
    bundle.load(tmp_path / "b", log=said.append)
    bundle.load(tmp_path / "b", log=said.append)
    assert len([s for s in said if "unpacked" in s]) == 1


def test_a_damaged_binary_is_unpacked_again(pieces, tmp_path):
    bundle.write(tmp_path / "b", pieces, preset=0, log=lambda *_: None)
    got = bundle.load(tmp_path / "b", log=lambda *_: None)
    with open(got.binaries["kubelet"], "ab") as f:
        f.write(b"x")
    again = bundle.load(tmp_path / "b", log=lambda *_: None)
    assert open(again.binaries["kubelet"], "rb").read() == open(pieces.binaries["kubelet"], "rb").read()


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: m["versions"].update(kubelet="v1.30.0"), f"kubelet v1.30.0 (this checkout: {versions.KUBERNETES})"),
        (lambda m: m.update(machine="riscv64"), f"built for riscv64, this is {platform.machine()}"),
        (lambda m: m["binaries"].update(runc="0" * 64), "is damaged: runc does not match"),
    ],
)
def test_a_bundle_this_checkout_cannot_run_is_refused(pieces, tmp_path, change, message):
    bundle.write(tmp_path / "b", pieces, preset=0, log=lambda *_: None)
    manifest = tmp_path / "b" / bundle.MANIFEST
    m = json.loads(manifest.read_text())
    change(m)
    manifest.write_text(json.dumps(m))
    with pytest.raises(bundle.BundleError) as e:
        bundle.load(tmp_path / "b", log=lambda *_: None)
    assert message in str(e.value)


def test_a_directory_that_is_not_a_bundle_is_named(tmp_path):
    with pytest.raises(bundle.BundleError, match="is not a GPU-node bundle .* python -m lab gpu-bundle DIR"):
        bundle.load(tmp_path, log=lambda *_: None)


def test_a_directory_of_other_files_is_not_written_over(pieces, tmp_path):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(bundle.BundleError, match="other files in it"):
        bundle.write(tmp_path / "other", pieces, preset=0, log=lambda *_: None)
    assert sorted(p.name for p in (tmp_path / "other").iterdir()) == ["notes.txt"]
