"""The release_webhooks filter: a release's webhook configurations as its kustomization renders them."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gangsched.kubeflow.plugins.filter.gang import release_webhooks


def _conf(kind, name, *hooks):
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": h,
                "clientConfig": {"service": {"name": "webhook-service", "namespace": "system", "path": f"/{h}"}},
            }
            for h in hooks
        ],
    }


def test_patches_prefixes_and_namespace_as_the_kustomization():
    docs = [
        _conf("MutatingWebhookConfiguration", "mutating-webhook-configuration", "mjobset", "mpod"),
        _conf("ValidatingWebhookConfiguration", "validating-webhook-configuration", "vjobset"),
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "webhook-service"}},
    ]
    selector = {"matchExpressions": [{"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]}
    patches = {"MutatingWebhookConfiguration": [{"op": "add", "path": "/webhooks/1/objectSelector", "value": selector}]}
    out = release_webhooks(docs, patches, namespace="jobset-system", name_prefix="jobset-", service_prefix="jobset-")
    assert [d["metadata"]["name"] for d in out] == [
        "jobset-mutating-webhook-configuration",
        "jobset-validating-webhook-configuration",
    ]
    assert out[0]["webhooks"][1]["objectSelector"] == selector and "objectSelector" not in out[0]["webhooks"][0]
    assert {
        (w["clientConfig"]["service"]["name"], w["clientConfig"]["service"]["namespace"])
        for d in out
        for w in d["webhooks"]
    } == {("jobset-webhook-service", "jobset-system")}
    assert docs[0]["metadata"]["name"] == "mutating-webhook-configuration", "the input is not changed"


def test_a_renaming_patch_and_the_ca_left_to_the_rotator():
    doc = _conf("ValidatingWebhookConfiguration", "validating-webhook-configuration", "v1")
    doc["webhooks"][0]["clientConfig"]["caBundle"] = "Y2E="
    ops = [
        {"op": "replace", "path": "/metadata/name", "value": "validator.trainer.kubeflow.org"},
        {
            "op": "replace",
            "path": "/webhooks/0/clientConfig/service/name",
            "value": "kubeflow-trainer-controller-manager",
        },
    ]
    (out,) = release_webhooks([doc], {"ValidatingWebhookConfiguration": ops}, namespace="kubeflow-system")
    assert out["metadata"]["name"] == "validator.trainer.kubeflow.org"
    assert out["webhooks"][0]["clientConfig"] == {
        "service": {"name": "kubeflow-trainer-controller-manager", "namespace": "kubeflow-system", "path": "/v1"}
    }


@pytest.mark.parametrize(
    "docs, patches, message",
    [
        ({"kind": "x"}, None, "needs a list of manifests"),
        ([{"kind": "Service", "metadata": {"name": "s"}}], None, "no MutatingWebhookConfiguration"),
        ([_conf("MutatingWebhookConfiguration", "m")], None, "has no metadata.name or no webhooks"),
        (
            [_conf("MutatingWebhookConfiguration", "m", "a")],
            {"MutatingWebhookConfiguration": [{"op": "replace", "path": "/webhooks/3/name", "value": "x"}]},
            "the MutatingWebhookConfiguration patch does not apply to m",
        ),
    ],
)
def test_what_cannot_be_rendered_is_named(docs, patches, message):
    with pytest.raises(AnsibleFilterError, match=message):
        release_webhooks(docs, patches)
