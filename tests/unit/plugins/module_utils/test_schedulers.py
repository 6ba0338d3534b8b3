"""The gang scheduler table (images, served names, mode), KubeSchedulerConfiguration parsing and the
scheduler name an operator's gang flag must carry."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils import _images, _operators, _schedulers
from ansible_collections.gangsched.kubeflow.plugins.module_utils._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils._schedulers import derive_scheduler_name

SP_SECOND = {"kind": "scheduler_plugins", "ready": True, "gang_profiles": ["scheduler-plugins-scheduler"]}
SP_DEFAULT = {"kind": "scheduler_plugins", "ready": True, "gang_profiles": ["default-scheduler"]}
LABEL = _operators.OPERATORS["training_operator"]["label"]


@pytest.mark.parametrize(
    "gang,given,schedulers,want",
    [
        ("volcano", None, [], "volcano"),
        ("volcano", "volcano", [], "volcano"),
        ("scheduler_plugins", None, [SP_SECOND], "scheduler-plugins-scheduler"),
        ("scheduler_plugins", None, [SP_DEFAULT], "default-scheduler"),
        ("scheduler_plugins", "default-scheduler", [SP_DEFAULT, SP_SECOND], "default-scheduler"),
    ],
)
def test_derive_scheduler_name(gang, given, schedulers, want):
    assert derive_scheduler_name(gang, given, schedulers, LABEL) == want
    assert derive_scheduler_name(gang, given, schedulers) == want


@pytest.mark.parametrize(
    "gang,given,schedulers,match",
    [
        ("volcano", "my-sched", [], "Leave scheduler_name unset"),
        ("scheduler_plugins", None, [], "Cannot determine"),
        ("scheduler_plugins", None, [SP_SECOND, SP_DEFAULT], "several Coscheduling profiles"),
        ("scheduler_plugins", "scheduler-plugins", [SP_SECOND], "Pods would stay Pending forever"),
        ("scheduler_plugins", "x", [], "none is deployed"),
        ("scheduler_plugins", "volcano", [SP_SECOND], "set gang_scheduler=volcano"),
    ],
)
def test_derive_scheduler_name_refuses(gang, given, schedulers, match):
    with pytest.raises(GangError, match=match):
        derive_scheduler_name(gang, given, schedulers, LABEL)


def test_derive_scheduler_name_names_the_operator_only_when_there_is_one():
    with pytest.raises(GangError, match="training-operator treats any value other than 'volcano'"):
        derive_scheduler_name("volcano", "my-sched", [], LABEL)
    with pytest.raises(GangError, match="the Kubeflow operators treat any value other than 'volcano'"):
        derive_scheduler_name("volcano", "my-sched", [])


def test_coscheduling_profiles():
    text = """
profiles:
- schedulerName: default-scheduler
- schedulerName: gang
  plugins:
    multiPoint: {enabled: [{name: Coscheduling}]}
"""
    assert _schedulers.coscheduling_profiles(text) == (["default-scheduler", "gang"], ["gang"])
    assert _schedulers.coscheduling_profiles(": not yaml [") == ([], [])
    assert _schedulers.coscheduling_profiles("kind: KubeSchedulerConfiguration") == (["default-scheduler"], [])


@pytest.mark.parametrize(
    "image,kind",
    [
        ("registry.k8s.io/scheduler-plugins/kube-scheduler:v0.33.5", "scheduler_plugins"),
        ("docker.io/volcanosh/vc-scheduler:v1.10.0", "volcano"),
        ("kubesigs/kube-batch:v0.5", "kube_batch"),
        ("koordinatorsh/koord-scheduler:v1.5", "koordinator"),
        ("registry.k8s.io/kube-scheduler:v1.33.0", None),
        ("volcanosh/vc-controller-manager:v1.10.0", None),
    ],
)
def test_scheduler_images(image, kind):
    assert _images.image_kind(image, _schedulers.SCHEDULER_IMAGES) == kind


def test_every_scheduler_says_how_its_names_are_found():
    for kind, spec in _schedulers.SCHEDULERS.items():
        assert spec["names_from"] in ("flag", "config", "fixed"), kind
        if spec["names_from"] == "flag":
            assert spec["name_flag"] and spec["default_names"], kind
        if spec["names_from"] == "fixed":
            assert spec["default_names"], kind


CONFIG = """
profiles:
- schedulerName: default-scheduler
  plugins:
    queueSort: {enabled: [{name: Coscheduling}]}
"""


@pytest.mark.parametrize(
    "kind,container,text,names,gang,mode",
    [
        ("volcano", {}, None, ["volcano"], ["volcano"], "second"),
        ("volcano", {"args": ["--scheduler-name=a", "--scheduler-name", "b"]}, None, ["a", "b"], ["a", "b"], "second"),
        ("scheduler_plugins", {}, None, [], [], "second"),
        ("scheduler_plugins", {}, CONFIG, ["default-scheduler"], ["default-scheduler"], "default"),
        ("koordinator", {}, CONFIG, ["default-scheduler"], ["default-scheduler"], "default"),
        ("kube_batch", {"args": ["--scheduler-name=x"]}, None, ["kube-batch"], ["kube-batch"], "second"),
    ],
)
def test_served_names_and_mode(kind, container, text, names, gang, mode):
    assert _schedulers.served_names(kind, container, text) == (names, gang)
    assert _schedulers.mode(kind, names) == mode
