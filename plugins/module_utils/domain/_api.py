# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the API's vocabulary — each kind the collection reads or writes with its group,
version, plural and scope (``KINDS``), and the one builder of the paths to them (``path``). Pure: no I/O. Not a
public API."""

from __future__ import annotations

TRAINER = "trainer.kubeflow.org"
RBAC = "rbac.authorization.k8s.io"
ADMISSION = "admissionregistration.k8s.io"

# kind: (group, version, plural, namespaced); the core group is "". A kind served in several groups or versions
# (PodGroup: one per gang scheduler; Workload, Trainer's kinds: the version the cluster serves) takes the caller's
# apiVersion over the one here; PodGroup has none of its own (_podgroups and _native name it).
KINDS = {
    "Namespace": ("", "v1", "namespaces", False),
    "Node": ("", "v1", "nodes", False),
    "Pod": ("", "v1", "pods", True),
    "ConfigMap": ("", "v1", "configmaps", True),
    "Secret": ("", "v1", "secrets", True),
    "ServiceAccount": ("", "v1", "serviceaccounts", True),
    "Deployment": ("apps", "v1", "deployments", True),
    "DaemonSet": ("apps", "v1", "daemonsets", True),
    "Job": ("batch", "v1", "jobs", True),
    "EndpointSlice": ("discovery.k8s.io", "v1", "endpointslices", True),
    "CustomResourceDefinition": ("apiextensions.k8s.io", "v1", "customresourcedefinitions", False),
    "MutatingWebhookConfiguration": (ADMISSION, "v1", "mutatingwebhookconfigurations", False),
    "ValidatingWebhookConfiguration": (ADMISSION, "v1", "validatingwebhookconfigurations", False),
    "SubjectAccessReview": ("authorization.k8s.io", "v1", "subjectaccessreviews", False),
    "ClusterRole": (RBAC, "v1", "clusterroles", False),
    "ClusterRoleBinding": (RBAC, "v1", "clusterrolebindings", False),
    "PyTorchJob": ("kubeflow.org", "v1", "pytorchjobs", True),
    "TFJob": ("kubeflow.org", "v1", "tfjobs", True),
    "XGBoostJob": ("kubeflow.org", "v1", "xgboostjobs", True),
    "PaddleJob": ("kubeflow.org", "v1", "paddlejobs", True),
    "JAXJob": ("kubeflow.org", "v1", "jaxjobs", True),
    "MPIJob": ("kubeflow.org", "v2beta1", "mpijobs", True),
    "TrainJob": (TRAINER, "v1alpha1", "trainjobs", True),
    "JobSet": ("jobset.x-k8s.io", "v1alpha2", "jobsets", True),
    "TrainingRuntime": (TRAINER, "v1alpha1", "trainingruntimes", True),
    "ClusterTrainingRuntime": (TRAINER, "v1alpha1", "clustertrainingruntimes", False),
    "Workload": ("scheduling.k8s.io", "v1beta1", "workloads", True),
    "PodGroup": (None, None, "podgroups", True),
    "Queue": ("scheduling.volcano.sh", "v1beta1", "queues", False),
    # Kueue (its Workload is the kind above in kueue.x-k8s.io/v1beta2: the caller names that apiVersion)
    "LocalQueue": ("kueue.x-k8s.io", "v1beta2", "localqueues", True),
    "ClusterQueue": ("kueue.x-k8s.io", "v1beta2", "clusterqueues", False),
    "ResourceFlavor": ("kueue.x-k8s.io", "v1beta2", "resourceflavors", False),
    "Event": ("", "v1", "events", True),
    "ResourceQuota": ("", "v1", "resourcequotas", True),
    # Flux, the GitOps engine flux_synced waits on
    "Kustomization": ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations", True),
    "GitRepository": ("source.toolkit.fluxcd.io", "v1", "gitrepositories", True),
    "OCIRepository": ("source.toolkit.fluxcd.io", "v1", "ocirepositories", True),
    "Bucket": ("source.toolkit.fluxcd.io", "v1", "buckets", True),
}


def api_version(kind: str) -> str:
    """'apps/v1', 'v1': the apiVersion ``kind`` is written in when the caller names none."""
    group, version, _plural, _namespaced = KINDS[kind]
    return f"{group}/{version}" if group else version


def list_query(**query) -> dict:
    """The query of a list call's first page: the options given (None left out), 500 items a page unless given."""
    q = {k: v for k, v in query.items() if v is not None}
    q.setdefault("limit", 500)
    return q


def group_path(api_version_: str) -> str:
    """The path of a group version: '/api/v1' for the core group, else '/apis/<group>/<version>'."""
    return f"/apis/{api_version_}" if "/" in api_version_ else f"/api/{api_version_}"


def path(kind: str, namespace: str | None = None, name: str | None = None, api_version_: str | None = None) -> str:
    """The path of ``kind``'s collection (no ``name``) or of one object, in ``namespace`` where the kind is
    namespaced (None: all namespaces), in ``api_version_`` where given (else the kind's own)."""
    _group, _version, plural, namespaced = KINDS[kind]
    where = f"/namespaces/{namespace}" if namespace and namespaced else ""
    tail = f"/{name}" if name else ""
    return f"{group_path(api_version_ or api_version(kind))}{where}/{plural}{tail}"
