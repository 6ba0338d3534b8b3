"""The one PodGroup table: scheduler -> group, version, CRD, kind, member key, and back."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import (
    _podgroups,
    _rbac,
    _schedulers,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry, _smoke_objects

TABLE = [
    # scheduler, CRD, apiVersion, where a pod names its group
    (
        "volcano",
        "podgroups.scheduling.volcano.sh",
        "scheduling.volcano.sh/v1beta1",
        ("annotation", "scheduling.k8s.io/group-name"),
    ),
    (
        "scheduler_plugins",
        "podgroups.scheduling.x-k8s.io",
        "scheduling.x-k8s.io/v1alpha1",
        ("label", "scheduling.x-k8s.io/pod-group"),
    ),
    (
        "kube_batch",
        "podgroups.scheduling.incubator.k8s.io",
        "scheduling.incubator.k8s.io/v1alpha1",
        ("annotation", "scheduling.k8s.io/group-name"),
    ),
    (
        "koordinator",
        "podgroups.scheduling.sigs.k8s.io",
        "scheduling.sigs.k8s.io/v1alpha1",
        ("label", "pod-group.scheduling.sigs.k8s.io/name"),
    ),
]


@pytest.mark.parametrize("scheduler,crd,api_version,member", TABLE, ids=[t[0] for t in TABLE])
def test_scheduler_to_podgroup(scheduler, crd, api_version, member):
    assert _podgroups.crd_name(scheduler) == crd
    assert _podgroups.api_version(scheduler) == api_version
    assert _podgroups.api(scheduler) == tuple(api_version.split("/"))
    assert _podgroups.group(scheduler) == api_version.split("/")[0]
    assert _podgroups.member_key(scheduler) == member
    assert _podgroups.PODGROUPS[scheduler]["kind"] == "PodGroup"


@pytest.mark.parametrize("scheduler,crd,api_version,member", TABLE, ids=[t[0] for t in TABLE])
def test_podgroup_to_scheduler(scheduler, crd, api_version, member):
    assert _podgroups.scheduler_of_crd(crd) == scheduler
    assert _podgroups.CRDS[crd] == scheduler
    assert _podgroups.scheduler_of_api_version(api_version) == scheduler


def test_unknown_podgroups_have_no_scheduler():
    assert _podgroups.scheduler_of_crd("mpijobs.kubeflow.org") is None
    assert _podgroups.scheduler_of_api_version("kubeflow.org/v1") is None


def test_the_table_is_the_one_the_others_use():
    assert list(_podgroups.CRDS) == [t[1] for t in TABLE]  # gang_info reads them in this order
    # the member keys, each once, in table order (gang_info's gang keys start with them)
    assert _podgroups.member_keys() == [TABLE[0][3], TABLE[1][3], TABLE[3][3]]
    # every kind a smoke run creates and sweeps: the gang schedulers' PodGroups, and the native gang's
    assert [v for k, v in _smoke_objects.RUN_KINDS if k == "PodGroup"] == [
        "scheduling.volcano.sh/v1beta1",
        "scheduling.x-k8s.io/v1alpha1",
        "scheduling.k8s.io/v1beta1",
    ]
    assert ("Workload", "scheduling.k8s.io/v1beta1") in _smoke_objects.RUN_KINDS
    assert (_rbac.VC, _rbac.SP) == ("scheduling.volcano.sh", "scheduling.x-k8s.io")
    # the PodGroup of every gang scheduler the modules take is known, and every scheduler found has one
    assert {p.podgroup_kind for p in _registry.PATHS.values()} - {None} <= set(_podgroups.PODGROUPS)
    assert set(_schedulers.SCHEDULERS) == set(_podgroups.PODGROUPS)


@pytest.mark.parametrize("gang", _registry.names(operator_flag=True))
def test_smoke_pods_name_their_podgroup_the_schedulers_way(gang):
    docs, _ = _smoke_objects.pods("ns", "g", "r", 2, {"cpu": "1"}, gang, "s")
    pg, pods = docs[0], docs[1:]
    assert (pg["apiVersion"], pg["kind"]) == (_podgroups.api_version(gang), "PodGroup")
    where, key = _podgroups.member_key(gang)
    for p in pods:
        assert p["metadata"]["annotations" if where == "annotation" else "labels"][key] == "g"


def test_the_path_lists_are_read_from_the_paths():
    assert _registry.GANG_PATHS == ("volcano", "scheduler_plugins", "koordinator", "native")
    assert _registry.names(operator_flag=True) == ["volcano", "scheduler_plugins"]
    assert [n for n, p in _registry.PATHS.items() if p.podgroup_kind is None] == ["koordinator", "native"]
    assert _registry.names(decision=True) == ["native"]
    assert _podgroups.OPERATOR_KINDS == tuple(
        _registry.get(n).podgroup_kind for n in _registry.names(operator_flag=True)
    )
