"""The gang scheduler table (images, served names, mode), KubeSchedulerConfiguration parsing and the
scheduler name an operator's gang flag must carry."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _images, _operators, _schedulers
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _koordinator, _scheduler_plugins
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths._registry import derive_scheduler_name

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


KOORD = {
    "kind": "koordinator",
    "ready": True,
    "scheduler_names": ["koord-scheduler"],
    "gang_profiles": ["koord-scheduler"],
}


@pytest.mark.parametrize(
    "gang,given",
    [("koordinator", None), ("scheduler_plugins", "koord-scheduler"), ("koordinator", "koord-scheduler")],
)
def test_an_operator_gang_flag_is_never_pointed_at_koord_scheduler(gang, given):
    """koord-scheduler ignores the operators' PodGroups: a partial start. The refusal names the label route."""
    with pytest.raises(GangError) as e:
        derive_scheduler_name(gang, given, [KOORD, SP_SECOND], LABEL)
    assert "koord-scheduler ignores" in e.value.msg and "pod-group.scheduling.sigs.k8s.io/min-available" in e.value.msg
    assert "gangsched.kubeflow.label_gang" in e.value.msg and LABEL in e.value.msg


def test_koordinator_profile_is_derived_for_gangs_that_use_labels():
    assert derive_scheduler_name("koordinator", None, [KOORD, SP_SECOND]) == "koord-scheduler"
    assert derive_scheduler_name("koordinator", "koord-scheduler", [KOORD]) == "koord-scheduler"
    with pytest.raises(GangError, match="No koord-scheduler profile 'other'"):
        derive_scheduler_name("koordinator", "other", [KOORD])
    with pytest.raises(GangError, match="none with a Coscheduling profile"):
        derive_scheduler_name("koordinator", None, [SP_SECOND])


@pytest.mark.parametrize(
    "tag,prebind,kube,words",
    [
        ("v1.6.1", True, "v1.33.5", None),
        ("v1.7.0", True, "v1.33.5", "binds no gang member"),
        ("v1.7.0", None, "v1.33.5", "binds no gang member"),
        ("v1.7.0", False, "v1.33.5", None),
        ("v1.8.0", False, "v1.33.5", "needs resource.k8s.io/v1"),
        ("v1.8.0", True, "v1.34.1", None),
        ("latest", True, "v1.33.5", None),
    ],
)
def test_koordinator_versions_that_cannot_gang_schedule_here(tag, prebind, kube, words):
    why = _koordinator.koordinator_version_problem(tag, prebind, kube)
    assert (why is None) if words is None else (words in why), why


def test_coscheduling_prebind_read_from_the_gang_profiles():
    on = "profiles: [{schedulerName: koord-scheduler, plugins: {multiPoint: {enabled: [{name: Coscheduling}]}}}]"
    off = (
        "profiles: [{schedulerName: koord-scheduler, plugins: {multiPoint: {enabled: [{name: Coscheduling}]},"
        " preBind: {disabled: [{name: Coscheduling}]}}}]"
    )
    assert _schedulers.coscheduling_prebind(on) is True
    assert _schedulers.coscheduling_prebind(off) is False
    assert _schedulers.coscheduling_prebind(None) is None


@pytest.mark.parametrize(
    ("tag", "kube", "skewed"),
    [
        ("v0.33.5", "v1.33.5", None),
        ("v0.33.5", "v1.34.1", None),  # one minor older: within the policy
        ("v0.34.7", "v1.35.4", None),
        ("v0.33.5", "v1.35.4", "2 minors older than"),
        ("v0.33.5", "v1.37.2", "4 minors older than"),
        ("v0.34.7", "v1.33.5", "newer than"),
        ("latest", "v1.37.2", None),  # unknown: not reported
        ("v0.33.5", None, None),
    ],
)
def test_scheduler_plugins_skew(tag, kube, skewed):
    why = _scheduler_plugins.scheduler_plugins_skew(tag, kube)
    assert (why is None) is (skewed is None), why
    if skewed:
        assert skewed in why and tag in why and kube in why and "version-skew policy" in why


def test_scheduler_plugins_skew_fix_names_a_fitting_release_or_volcano():
    assert "v0.35.x or v0.34.x" in _scheduler_plugins.scheduler_plugins_skew_fix("v1.35.4")
    late = _scheduler_plugins.scheduler_plugins_skew_fix("v1.37.2")
    assert "no scheduler-plugins release is built on Kubernetes 1.35 or later" in late and "volcano" in late


def test_gang_info_reports_a_skewed_scheduler_plugins_and_only_it():
    schedulers = [
        {"kind": "scheduler_plugins", "version": "v0.33.5", "source": "Deployment", "namespace": "sp", "name": "s"},
        {"kind": "volcano", "version": "v1.10.0", "source": "Deployment", "namespace": "vc", "name": "v"},
    ]
    (p,) = _scheduler_plugins.PATH.cluster_problems(schedulers, [], {"kube_version": "v1.37.2"})
    assert p["object"] == "Deployment sp/s" and "outside Kubernetes' version-skew policy" in p["message"]
    assert _scheduler_plugins.PATH.cluster_problems(schedulers, [], {"kube_version": "v1.34.0"}) == []
