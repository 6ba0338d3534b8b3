"""Kueue as the collection installs it (domain/_kueue): its release's webhook configurations named as its kustomization
names them, at its Service, cut to Kueue's own kinds and the integrations it runs (no webhook left on every Pod,
Deployment or StatefulSet), the caBundle left to its rotator; the conversion webhook of the five CRDs it converts;
the kueue_webhooks filter's refusals; Kueue's rights in the gang_rbac table, the same on every gang path, native
included."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible_collections.gangsched.kubeflow.plugins.filter.gang import gang_rbac_objects, kueue_webhooks
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _kueue, _rbac
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry

MUTATING, VALIDATING = "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"


def _hook(name: str, group: str, version: str, resources: list[str], ops: list[str], path_kind: str) -> dict:
    """One webhook as controller-gen writes it into config/components/webhook/manifests.yaml."""
    verb = "mutate" if name.startswith("m") else "validate"
    return {
        "admissionReviewVersions": ["v1"],
        "clientConfig": {
            "service": {
                "name": "webhook-service",
                "namespace": "system",
                "path": f"/{verb}-{group.replace('.', '-')}-{version}-{path_kind}",
            }
        },
        "failurePolicy": "Fail",
        "name": f"{name}.kb.io",
        "rules": [{"apiGroups": [group], "apiVersions": [version], "operations": ops, "resources": resources}],
        "sideEffects": "None",
    }


C, CU = ["CREATE"], ["CREATE", "UPDATE"]
# a small copy of Kueue 0.17's manifests.yaml: its own kinds, batch Jobs, PyTorchJobs, JobSets, and the kinds the
# collection never runs it with (plain pods, Deployments, StatefulSets, Ray)
MANIFESTS = [
    {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": MUTATING,
        "metadata": {"name": "mutating-webhook-configuration"},
        "webhooks": [
            _hook("mclusterqueue", "kueue.x-k8s.io", "v1beta2", ["clusterqueues"], C, "clusterqueue"),
            _hook("mdeployment", "apps", "v1", ["deployments"], CU, "deployment"),
            _hook("mjob", "batch", "v1", ["jobs"], C, "job"),
            _hook("mjobset", "jobset.x-k8s.io", "v1alpha2", ["jobsets"], C, "jobset"),
            _hook("mpod", "", "v1", ["pods"], C, "pod"),
            _hook("mpytorchjob", "kubeflow.org", "v1", ["pytorchjobs"], C, "pytorchjob"),
            _hook("mrayjob", "ray.io", "v1", ["rayjobs"], C, "rayjob"),
            _hook("mresourceflavor", "kueue.x-k8s.io", "v1beta2", ["resourceflavors"], C, "resourceflavor"),
            _hook("mstatefulset", "apps", "v1", ["statefulsets"], CU, "statefulset"),
            _hook("mworkload", "kueue.x-k8s.io", "v1beta2", ["workloads"], C, "workload"),
        ],
    },
    {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": VALIDATING,
        "metadata": {"name": "validating-webhook-configuration"},
        "webhooks": [
            _hook("vclusterqueue", "kueue.x-k8s.io", "v1beta2", ["clusterqueues"], CU, "clusterqueue"),
            _hook("vcohort", "kueue.x-k8s.io", "v1beta2", ["cohorts"], CU, "cohort"),
            _hook("vdeployment", "apps", "v1", ["deployments"], CU, "deployment"),
            _hook("vjob", "batch", "v1", ["jobs"], CU, "job"),
            _hook("vjobset", "jobset.x-k8s.io", "v1alpha2", ["jobsets"], CU, "jobset"),
            _hook("vpod", "", "v1", ["pods"], CU, "pod"),
            _hook("vpytorchjob", "kubeflow.org", "v1", ["pytorchjobs"], CU, "pytorchjob"),
            _hook("vrayjob", "ray.io", "v1", ["rayjobs"], CU, "rayjob"),
            _hook("vresourceflavor", "kueue.x-k8s.io", "v1beta2", ["resourceflavors"], CU, "resourceflavor"),
            _hook("vstatefulset", "apps", "v1", ["statefulsets"], CU, "statefulset"),
            _hook("vworkload", "kueue.x-k8s.io", "v1beta2", ["workloads", "workloads/status"], CU, "workload"),
        ],
    },
    # another document of the directory (the kustomize Service), not a configuration: skipped
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "webhook-service", "namespace": "system"}},
]
KUEUE_OWN = {
    "mclusterqueue",
    "mresourceflavor",
    "mworkload",
    "vclusterqueue",
    "vcohort",
    "vresourceflavor",
    "vworkload",
}
NEVER = ("pod", "deployment", "statefulset", "rayjob")


def _names(confs: list[dict]) -> set[str]:
    return {w["name"].split(".", 1)[0] for c in confs for w in c["webhooks"]}


def test_named_as_kueues_kustomization_at_its_service_in_the_namespace():
    out = _kueue.webhooks(copy.deepcopy(MANIFESTS), ["batch/job"], "queues")
    assert [(c["kind"], c["metadata"]["name"]) for c in out] == [
        (MUTATING, "kueue-mutating-webhook-configuration"),
        (VALIDATING, "kueue-validating-webhook-configuration"),
    ]
    services = [w["clientConfig"]["service"] for c in out for w in c["webhooks"]]
    assert {(s["name"], s["namespace"]) for s in services} == {("kueue-webhook-service", "queues")}
    # each keeps its own path and everything else controller-gen wrote
    vworkload = next(w for w in out[1]["webhooks"] if w["name"] == "vworkload.kb.io")
    assert vworkload["clientConfig"]["service"]["path"] == "/validate-kueue-x-k8s-io-v1beta2-workload"
    assert vworkload["failurePolicy"] == "Fail" and vworkload["rules"][0]["resources"] == [
        "workloads",
        "workloads/status",
    ]


def test_batch_job_alone_keeps_kueues_kinds_and_jobs_only():
    out = _kueue.webhooks(copy.deepcopy(MANIFESTS), ["batch/job"], "kueue-system")
    assert _names(out) == KUEUE_OWN | {"mjob", "vjob"}
    for kind in (*NEVER, "pytorchjob", "jobset"):
        assert not {"m" + kind, "v" + kind} & _names(out), kind


def test_each_integration_adds_the_webhooks_of_its_kinds():
    out = _kueue.webhooks(
        copy.deepcopy(MANIFESTS),
        ["batch/job", "kubeflow.org/pytorchjob", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob"],
        "kueue-system",
    )
    assert _names(out) == KUEUE_OWN | {"mjob", "vjob", "mpytorchjob", "vpytorchjob", "mjobset", "vjobset"}
    assert not any(n.endswith(NEVER) for n in _names(out))


def test_the_ca_is_left_to_kueues_rotator_and_the_input_kept():
    docs = copy.deepcopy(MANIFESTS)
    for c in docs[:2]:
        for w in c["webhooks"]:
            w["clientConfig"]["caBundle"] = "Y2E="
    before = copy.deepcopy(docs)
    out = _kueue.webhooks(docs, ["batch/job"], "kueue-system")
    assert not any("caBundle" in w["clientConfig"] for c in out for w in c["webhooks"])
    assert docs == before, "the release's manifests are not changed"


def test_a_webhook_without_client_config_gets_the_service():
    docs = copy.deepcopy(MANIFESTS[:1])
    for w in docs[0]["webhooks"]:
        del w["clientConfig"]
    (out,) = _kueue.webhooks(docs, ["batch/job"], "kueue-system")
    assert {w["clientConfig"]["service"]["name"] for w in out["webhooks"]} == {"kueue-webhook-service"}


@pytest.mark.parametrize(
    "frameworks, named",
    [
        (["batch/job", "pod"], "pod"),
        (["deployment"], "deployment"),
        (["ray.io/rayjob", "statefulset"], "ray.io/rayjob, statefulset"),
    ],
)
def test_an_unknown_integration_is_named(frameworks, named):
    assert _kueue.unknown_frameworks(frameworks) == named.split(", ")
    with pytest.raises(ValueError, match=f"unknown Kueue integration\\(s\\) {named}: choose among batch/job"):
        _kueue.webhooks(copy.deepcopy(MANIFESTS), frameworks, "kueue-system")


@pytest.mark.parametrize("docs", [[], [MANIFESTS[2]], [None, "text", MANIFESTS[2]]])
def test_a_file_without_configuration_is_refused(docs):
    with pytest.raises(ValueError, match="holds no webhook configuration"):
        _kueue.webhooks(docs, ["batch/job"], "kueue-system")


def test_conversion_of_the_five_crds_at_the_service_path():
    conv = _kueue.conversion("queues")
    assert sorted(conv) == sorted(
        f"{p}.kueue.x-k8s.io" for p in ("localqueues", "clusterqueues", "workloads", "cohorts", "multikueueclusters")
    )
    for spec in conv.values():
        assert spec == {
            "strategy": "Webhook",
            "webhook": {
                "clientConfig": {
                    "service": {"namespace": "queues", "name": "kueue-webhook-service", "path": "/convert"}
                },
                "conversionReviewVersions": ["v1"],
            },
        }
    conv["workloads.kueue.x-k8s.io"]["webhook"]["clientConfig"]["service"]["name"] = "x"
    assert conv["cohorts.kueue.x-k8s.io"]["webhook"]["clientConfig"]["service"]["name"] == "kueue-webhook-service"


def test_the_roles_conversion_crds_and_integrations_are_the_domains():
    """roles/kueue/vars/main.yml writes them out for Jinja: they must not drift from _kueue's."""
    role_vars = yaml.safe_load((Path(__file__).resolve().parents[5] / "roles/kueue/vars/main.yml").read_text())
    assert role_vars["_kueue_conversion_crds"] == list(_kueue.CONVERSION_CRDS)
    assert role_vars["_kueue_frameworks"] == list(_kueue.FRAMEWORKS)
    assert role_vars["_kueue_service"] == _kueue.SERVICE


def _release_manifests() -> Path | None:
    root = os.environ.get("GOMODCACHE")
    if not root and shutil.which("go"):
        root = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True).stdout.strip()
    path = (
        Path(root or Path.home() / "go/pkg/mod") / "sigs.k8s.io/kueue@v0.17.0/config/components/webhook/manifests.yaml"
    )
    return path if path.is_file() else None


def test_kueue_0_17_release_file():
    path = _release_manifests()
    if path is None:
        pytest.skip("Kueue v0.17.0 is not in the Go module cache")
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    every = _kueue.webhooks(docs, list(_kueue.FRAMEWORKS), "kueue-system")
    names = _names(every)
    assert {"mclusterqueue", "mresourceflavor", "mworkload", "vclusterqueue", "vcohort", "vworkload"} <= names
    assert {"mjob", "vjob", "mtrainjob", "vtrainjob", "mjobset", "vjobset", "mmpijob", "vmpijob"} <= names
    for gone in ("pod", "deployment", "statefulset", "leaderworkerset", "rayjob", "appwrapper", "sparkapplication"):
        assert not {"m" + gone, "v" + gone} & names, gone
    jobs = _names(_kueue.webhooks(docs, ["batch/job"], "kueue-system"))
    assert {n for n in jobs if not n.endswith(("clusterqueue", "resourceflavor", "workload", "cohort"))} == {
        "mjob",
        "vjob",
    }


# ---- the kueue_webhooks filter -------------------------------------------------------------------------------------


def test_filter_defaults_to_kueue_system():
    out = kueue_webhooks(copy.deepcopy(MANIFESTS), ["batch/job"])
    assert {w["clientConfig"]["service"]["namespace"] for c in out for w in c["webhooks"]} == {"kueue-system"}


@pytest.mark.parametrize(
    "docs, frameworks, message",
    [
        ({"kind": MUTATING}, ["batch/job"], "needs the release's manifests \\(a list\\) and the frameworks"),
        (MANIFESTS, "batch/job", "needs the release's manifests \\(a list\\) and the frameworks"),
        (MANIFESTS, ["batch/job", "pod"], "unknown Kueue integration\\(s\\) pod"),
        ([MANIFESTS[2]], ["batch/job"], "holds no webhook configuration"),
    ],
)
def test_filter_refusals_are_filter_errors(docs, frameworks, message):
    with pytest.raises(AnsibleFilterError, match=message):
        kueue_webhooks(copy.deepcopy(docs), frameworks, namespace="kueue-system")


# ---- Kueue's rights in the gang_rbac table -------------------------------------------------------------------------


@pytest.mark.parametrize("gang", [*_registry.GANG_PATHS, None])
def test_kueue_rights_on_every_gang_path_without_wildcard(gang):
    rules = _rbac.required_rules("kueue", gang)
    assert rules and not any(_rbac.has_wildcard(r) for r in rules)
    granted = set(_rbac.checks(rules))
    for need in [
        ("update", "kueue.x-k8s.io", "workloads/status"),
        ("create", "kueue.x-k8s.io", "workloads"),
        ("update", "kueue.x-k8s.io", "clusterqueues/finalizers"),
        ("patch", "batch", "jobs"),
        ("patch", "kubeflow.org", "pytorchjobs"),
        ("patch", "jobset.x-k8s.io", "jobsets"),
        ("patch", "trainer.kubeflow.org", "trainjobs"),
        ("list", "", "limitranges"),
    ]:
        assert need in granted, need
    assert not any(g.startswith("scheduling.") and g != "scheduling.k8s.io" for _v, g, _r in granted), (
        "Kueue never touches PodGroups"
    )
    assert not any(r in ("secrets", "customresourcedefinitions") for _v, _g, r in granted), (
        "name-limited rights of its install, not the table's"
    )
    assert rules == _rbac.required_rules("kueue", "volcano"), "the same in front of every gang path"
    role, binding = gang_rbac_objects("kueue", gang, {"namespace": "kueue-system", "name": "kueue-controller-manager"})
    assert role["rules"] == rules
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "kueue-controller-manager", "namespace": "kueue-system"}
    ]


def test_native_path_refuses_trainer_but_not_kueue_whose_rights_are_path_free():
    assert "kueue" in _rbac.PATH_FREE and _registry.get("native").rbac_refusal("trainer")
    assert gang_rbac_objects("kueue", "native")[0]["rules"] == _rbac.required_rules("kueue", None)
    with pytest.raises(AnsibleFilterError, match="gang_scheduler=native grants nothing to component=trainer"):
        gang_rbac_objects("trainer", "native")
