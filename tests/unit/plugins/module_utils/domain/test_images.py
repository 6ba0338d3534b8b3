"""Image references: the repository without its registry and the tag, the kind a table gives an image,
and matching an image against names on its last path components."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _images


@pytest.mark.parametrize(
    "image,repo,tag",
    [
        ("registry.k8s.io/scheduler-plugins/kube-scheduler:v0.33.5", "scheduler-plugins/kube-scheduler", "v0.33.5"),
        ("volcanosh/vc-scheduler:v1.10.0", "volcanosh/vc-scheduler", "v1.10.0"),
        ("localhost:5000/kubeflow/training-operator", "kubeflow/training-operator", ""),
        ("nvcr.io/nvidia/k8s-device-plugin@sha256:abc", "nvidia/k8s-device-plugin", "sha256:abc"),
    ],
)
def test_image_repo(image, repo, tag):
    assert _images.image_repo(image) == (repo, tag)


TABLE = {"scheduler-plugins/kube-scheduler": "sp", "vc-scheduler": "volcano"}


@pytest.mark.parametrize(
    "image,kind",
    [
        ("registry.k8s.io/scheduler-plugins/kube-scheduler:v0.33.5", "sp"),
        ("mirror.example.com/team/scheduler-plugins/kube-scheduler:v1", "sp"),
        ("registry.k8s.io/kube-scheduler:v1.33.0", None),
        ("volcanosh/vc-scheduler:v1.10.0", "volcano"),
        ("volcanosh/my-vc-scheduler:v1", None),
        ("", None),
    ],
)
def test_image_kind(image, kind):
    assert _images.image_kind(image, TABLE) == kind


@pytest.mark.parametrize(
    "image,names,ok",
    [
        ("kubeflow/training-operator:v1", ("training-operator",), True),
        ("quay.io/mirror/kubeflow/training-operator@sha256:" + "a" * 64, ("kubeflow/training-operator",), True),
        ("mycorp/training-operator:v1", ("kubeflow/training-operator",), False),
        (None, ("training-operator",), False),
        ("kubeflow/training-operator:v1", ("",), False),
    ],
)
def test_image_matches(image, names, ok):
    assert _images.image_matches(image, names) is ok


@pytest.mark.parametrize(
    "ref,ok",
    [("mycorp/trainer", True), ("registry.example.com:5000/a/b:v1", True), ("my corp/x", False), ("", False)],
)
def test_image_reference(ref, ok):
    assert bool(_images.IMAGE_REFERENCE.match(ref)) is ok
