# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: Kueue as the collection installs it — the integrations (Kueue's framework names)
it runs and the kinds each one manages, its webhook configurations cut to those kinds, its Configuration. Pure:
no I/O. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._manifests import copy_plain

GROUP = "kueue.x-k8s.io"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# the job kinds of the integrations the collection proves: kind -> (Kueue's framework name, apiVersion, plural)
JOBS = {
    "Job": ("batch/job", "batch/v1", "jobs"),
    "PyTorchJob": ("kubeflow.org/pytorchjob", "kubeflow.org/v1", "pytorchjobs"),
    "TFJob": ("kubeflow.org/tfjob", "kubeflow.org/v1", "tfjobs"),
    "XGBoostJob": ("kubeflow.org/xgboostjob", "kubeflow.org/v1", "xgboostjobs"),
    "PaddleJob": ("kubeflow.org/paddlejob", "kubeflow.org/v1", "paddlejobs"),
    "JAXJob": ("kubeflow.org/jaxjob", "kubeflow.org/v1", "jaxjobs"),
    "MPIJob": ("kubeflow.org/mpijob", "kubeflow.org/v2beta1", "mpijobs"),
    "JobSet": ("jobset.x-k8s.io/jobset", "jobset.x-k8s.io/v1alpha2", "jobsets"),
    "TrainJob": ("trainer.kubeflow.org/trainjob", "trainer.kubeflow.org/v1alpha1", "trainjobs"),
}
# Kueue's framework name -> (API group, resources of its webhooks)
FRAMEWORKS = {fw: (api.split("/", maxsplit=1)[0], (plural,)) for fw, api, plural in JOBS.values()}
# Kueue's own release files name the configurations and Service without its kustomization's namePrefix
NAME_PREFIX = "kueue-"
SERVICE = "kueue-webhook-service"
# the CRDs whose conversion webhook (v1beta1 <-> v1beta2) Kueue's certificate rotator writes the CA of
CONVERSION_CRDS = (
    "localqueues.kueue.x-k8s.io",
    "clusterqueues.kueue.x-k8s.io",
    "workloads.kueue.x-k8s.io",
    "cohorts.kueue.x-k8s.io",
    "multikueueclusters.kueue.x-k8s.io",
)


def unknown_frameworks(frameworks: list[str]) -> list[str]:
    """The names among ``frameworks`` the collection does not run Kueue with."""
    return [f for f in frameworks if f not in FRAMEWORKS]


def _kinds(frameworks: list[str]) -> set[tuple[str, str]]:
    out = set()
    for f in frameworks:
        group, resources = FRAMEWORKS[f]
        out.update((group, r) for r in resources)
    return out


def _kept(webhook: dict, kinds: set[tuple[str, str]]) -> bool:
    """A webhook of Kueue's own objects, or of a kind an enabled integration manages."""
    for rule in webhook.get("rules") or []:
        for group in rule.get("apiGroups") or []:
            if group == GROUP:
                return True
            if any((group, r.split("/", 1)[0]) in kinds for r in rule.get("resources") or []):
                return True
    return False


def webhooks(docs: list[dict], frameworks: list[str], namespace: str) -> list[dict]:
    """Kueue's Mutating and ValidatingWebhookConfigurations from its release's ``manifests.yaml``, named as its
    kustomization names them (the names its rotator writes the CA of), at the Service in ``namespace``, each with the
    webhooks of Kueue's own kinds and of the ``frameworks`` only. The release registers a webhook for every kind it
    knows, failurePolicy Fail, served by a no-op when its integration is off: kept, every Pod, Deployment and
    StatefulSet create in the cluster would wait on Kueue, and fail while it is down.

    ValueError when a framework is unknown or the file holds no configuration."""
    unknown = unknown_frameworks(frameworks)
    if unknown:
        raise ValueError(f"unknown Kueue integration(s) {', '.join(unknown)}: choose among {', '.join(FRAMEWORKS)}")
    kinds = _kinds(frameworks)
    out = []
    for doc in docs:
        if not isinstance(doc, dict) or doc.get("kind") not in (
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        ):
            continue
        conf = copy_plain(doc)
        conf["metadata"] = {"name": NAME_PREFIX + doc["metadata"]["name"]}
        conf["webhooks"] = [w for w in conf.get("webhooks") or [] if _kept(w, kinds)]
        for w in conf["webhooks"]:
            service = w.setdefault("clientConfig", {}).setdefault("service", {})
            service.update({"name": SERVICE, "namespace": namespace})
            w["clientConfig"].pop("caBundle", None)
        out.append(conf)
    if not out:
        raise ValueError("the Kueue webhook file holds no webhook configuration: point it at config/components/webhook")
    return out


def conversion(namespace: str) -> dict:
    """The ``spec.conversion`` of each CRD Kueue converts (its kustomize patch, at the Service in ``namespace``)."""
    hook = {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {"service": {"namespace": namespace, "name": SERVICE, "path": "/convert"}},
            "conversionReviewVersions": ["v1"],
        },
    }
    return {name: copy_plain(hook) for name in CONVERSION_CRDS}
