"""The GitOps layout: stages per component in the order site.yml applies them, hooks and admitted objects held
apart, one Flux Kustomization per stage depending on the one before."""

from __future__ import annotations

import pytest
import yaml
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _gitops

OPTS = {
    "prefix": "gangsched",
    "namespace": "flux-system",
    "source_kind": "GitRepository",
    "source_name": "flux-system",
    "source_namespace": None,
    "interval": "10m",
    "retry_interval": "30s",
    "stage_timeout": "5m",
    "repo_path": "./gangsched",
}


def obj(kind, name, api="v1", ns=None, hook=None, **extra):
    md = {"name": name, **({"namespace": ns} if ns else {})}
    if hook:
        md["annotations"] = {"helm.sh/hook": hook}
    return {"apiVersion": api, "kind": kind, "metadata": md, **extra}


QUEUE_CRD = obj(
    "CustomResourceDefinition",
    "queues.scheduling.volcano.sh",
    api="apiextensions.k8s.io/v1",
    spec={"group": "scheduling.volcano.sh", "names": {"kind": "Queue", "plural": "queues"}},
)
WEBHOOK = obj(
    "ValidatingWebhookConfiguration",
    "queues-validate",
    api="admissionregistration.k8s.io/v1",
    webhooks=[{"rules": [{"apiGroups": ["scheduling.volcano.sh"], "resources": ["queues"]}]}],
)
VOLCANO = {
    "namespace-volcano-system.yaml": obj("Namespace", "volcano-system"),
    "job-init.yaml": obj("Job", "init", api="batch/v1", ns="volcano-system", hook="pre-install,pre-upgrade"),
    "deployment-scheduler.yaml": obj("Deployment", "scheduler", api="apps/v1", ns="volcano-system"),
    "crd-queues.yaml": QUEUE_CRD,
    "webhook.yaml": WEBHOOK,
    "queue-default.yaml": obj("Queue", "default", api="scheduling.volcano.sh/v1beta1"),
    "pod-test.yaml": obj("Pod", "test", ns="volcano-system", hook="test"),
}
DEVICE_PLUGIN = {"daemonset.yaml": obj("DaemonSet", "nvidia-device-plugin", api="apps/v1", ns="nvidia-device-plugin")}


def test_stages_follow_the_chain_hooks_first_admitted_last():
    got = _gitops.plan({"20-volcano": VOLCANO, "10-gpu-device-plugin": DEVICE_PLUGIN}, OPTS)
    assert [(s["name"], s["depends_on"]) for s in got["stages"]] == [
        ("gangsched-10-gpu-device-plugin-main", None),
        ("gangsched-20-volcano-hooks", "gangsched-10-gpu-device-plugin-main"),
        ("gangsched-20-volcano-main", "gangsched-20-volcano-hooks"),
        ("gangsched-20-volcano-admitted", "gangsched-20-volcano-main"),
    ]
    files = {s["stage"]: s["files"] for s in got["stages"] if s["component"] == "20-volcano"}
    # the namespace goes with the hooks, which run in it
    assert files["hooks"] == ["namespace-volcano-system.yaml", "job-init.yaml"]
    assert files["main"] == ["crd-queues.yaml", "deployment-scheduler.yaml", "webhook.yaml"]
    assert files["admitted"] == ["queue-default.yaml"]
    assert got["skipped"] == [{"file": "20-volcano/pod-test.yaml", "why": _gitops.SKIPPED_HOOKS["test"]}]


def test_each_stage_is_a_flux_kustomization_that_waits_and_prunes():
    got = _gitops.plan({"20-volcano": VOLCANO}, OPTS)
    k = got["kustomizations"]["gangsched-20-volcano-main"]
    assert k["apiVersion"] == "kustomize.toolkit.fluxcd.io/v1" and k["metadata"]["namespace"] == "flux-system"
    assert k["metadata"]["labels"][_gitops.LAYOUT_LABEL] == "gangsched"
    spec = k["spec"]
    assert spec["path"] == "./gangsched/20-volcano/main"
    assert spec["wait"] is True and spec["prune"] is True
    assert spec["dependsOn"] == [{"name": "gangsched-20-volcano-hooks"}]
    assert spec["sourceRef"] == {"kind": "GitRepository", "name": "flux-system"}
    assert "dependsOn" not in got["kustomizations"]["gangsched-20-volcano-hooks"]["spec"]


def test_the_tree_keeps_files_as_rendered_and_forces_hooks_only():
    texts = {"20-volcano": {f: f"# {f}\n" for f in VOLCANO}}
    got = _gitops.plan({"20-volcano": VOLCANO}, OPTS)
    tree = _gitops.tree(got, texts, lambda o: yaml.safe_dump(o))
    assert tree["20-volcano/main/deployment-scheduler.yaml"] == "# deployment-scheduler.yaml\n"
    hooks = yaml.safe_load(tree["20-volcano/hooks/kustomization.yaml"])
    assert hooks["resources"] == ["namespace-volcano-system.yaml", "job-init.yaml"]
    assert hooks["patches"][0]["target"] == {"annotationSelector": "helm.sh/hook"}
    assert "kustomize.toolkit.fluxcd.io~1force" in hooks["patches"][0]["patch"]
    assert "patches" not in yaml.safe_load(tree["20-volcano/main/kustomization.yaml"])
    assert yaml.safe_load(tree["kustomization.yaml"])["resources"] == ["flux"]
    assert yaml.safe_load(tree["flux/kustomization.yaml"])["resources"] == [
        "gangsched-20-volcano-hooks.yaml",
        "gangsched-20-volcano-main.yaml",
        "gangsched-20-volcano-admitted.yaml",
    ]
    assert "20-volcano/pod-test.yaml" not in tree and not any(p.endswith("pod-test.yaml") for p in tree)


def test_a_wildcard_webhook_holds_nothing_back():
    wide = obj(
        "MutatingWebhookConfiguration",
        "all",
        api="admissionregistration.k8s.io/v1",
        webhooks=[{"rules": [{"apiGroups": ["*"], "resources": ["*"]}]}],
    )
    got = _gitops.plan({"20-x": {"w.yaml": wide, "d.yaml": obj("Deployment", "d", api="apps/v1", ns="x")}}, OPTS)
    assert [s["stage"] for s in got["stages"]] == ["main"]


@pytest.mark.parametrize(
    ("components", "says"),
    [
        ({"host-files": {}}, "no GitOps engine applies; run site.yml for them"),
        ({"volcano": {}}, "is not a component directory of render.yml"),
    ],
)
def test_what_cannot_be_laid_out_is_named(components, says):
    with pytest.raises(ValueError, match=says):
        _gitops.plan(components, OPTS)


def test_a_name_over_63_characters_is_refused():
    with pytest.raises(ValueError, match="over 63 characters; set a shorter prefix"):
        _gitops.plan({"20-volcano": VOLCANO}, {**OPTS, "prefix": "p" * 50})


@pytest.mark.parametrize(("kind", "plural"), [("Queue", "queues"), ("Policy", "policies"), ("Ingress", "ingresses")])
def test_plural_of_a_builtin_kind(kind, plural):
    assert _gitops._plural(kind) == plural


@pytest.mark.parametrize(
    ("repo_path", "want"), [("./gangsched", "./gangsched/a/main"), (".", "./a/main"), ("x/y/", "./x/y/a/main")]
)
def test_paths_in_the_repository(repo_path, want):
    assert _gitops._repo_join(repo_path, "a", "main") == want
