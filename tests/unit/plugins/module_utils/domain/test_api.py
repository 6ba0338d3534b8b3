# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The API's vocabulary: every path the collection sends is built from one table of kinds."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import (
    _api,
    _podgroups,
    _trainer_runtimes,
    _workloads,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _smoke_objects


@pytest.mark.parametrize(
    "args,path",
    [
        (("Namespace",), "/api/v1/namespaces"),
        (("Namespace", None, "ns"), "/api/v1/namespaces/ns"),
        (("Namespace", "ignored", "ns"), "/api/v1/namespaces/ns"),  # a cluster-scoped kind takes no namespace
        (("Pod",), "/api/v1/pods"),
        (("Pod", "ns"), "/api/v1/namespaces/ns/pods"),
        (("Deployment", "ns", "d"), "/apis/apps/v1/namespaces/ns/deployments/d"),
        (("CustomResourceDefinition", None, "a.b"), "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/a.b"),
        (("ClusterRole", None, "r"), "/apis/rbac.authorization.k8s.io/v1/clusterroles/r"),
        (("MPIJob", "ns"), "/apis/kubeflow.org/v2beta1/namespaces/ns/mpijobs"),
        (("ClusterTrainingRuntime", "ns", "t"), "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/t"),
        (("TrainJob", None, None, "trainer.kubeflow.org/v1"), "/apis/trainer.kubeflow.org/v1/trainjobs"),
        (
            ("PodGroup", "ns", "g", "scheduling.volcano.sh/v1beta1"),
            "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/g",
        ),
    ],
)
def test_a_path_from_the_kind_its_scope_and_the_version_given(args, path):
    assert _api.path(*args) == path


def test_group_paths_and_api_versions():
    assert _api.group_path("v1") == "/api/v1"
    assert _api.group_path("scheduling.k8s.io/v1beta1") == "/apis/scheduling.k8s.io/v1beta1"
    assert _api.api_version("Pod") == "v1" and _api.api_version("Job") == "batch/v1"


def test_the_tables_that_name_kinds_agree_with_it():
    for kind, api_version in _workloads.JOB_API.items():
        assert _api.api_version(kind) == api_version
    for kind, crd in _trainer_runtimes.CRDS.items():
        assert crd == f"{_api.KINDS[kind][2]}.{_trainer_runtimes.GROUP}"
    for kind, _version in _smoke_objects.RUN_KINDS:
        assert kind in _api.KINDS
    for gang in _podgroups.OPERATOR_KINDS:
        assert _api.path("PodGroup", "ns", api_version_=_podgroups.api_version(gang)).endswith(
            "/namespaces/ns/podgroups"
        )
