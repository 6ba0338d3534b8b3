"""gang_rbac against the lab: check mode -> real -> idempotent -> idempotent in check mode; a real
403 (training-operator without PodGroup rights) turned into a working operator; state=absent takes
the rights away again; bad inputs fail naming the object and create nothing."""

from __future__ import annotations

import pytest
from ansible_run import comparable, run_module
from kubernetes import client as k

from lab import kube, scenarios

RBAC_NAME = "gangsched.kubeflow:{component}:{ns}:{sa}"


def _sa(core, ns, name):
    core.create_namespaced_service_account(ns, k.V1ServiceAccount(metadata=k.V1ObjectMeta(name=name)))


def _role_exists(api, name) -> bool:
    try:
        k.RbacAuthorizationV1Api(api).read_cluster_role(name)
        return True
    except k.ApiException as e:
        assert e.status == 404
        return False


def test_check_real_idempotent_sequence(lab, api, core, namespace):
    _sa(core, namespace, "pg-controller")
    args = {
        "component": "scheduler_plugins_controller",
        "service_account": {"namespace": namespace, "name": "pg-controller"},
    }
    name = RBAC_NAME.format(component="scheduler_plugins_controller", ns=namespace, sa="pg-controller")
    try:
        check = run_module(lab, "gang_rbac", args, check=True)
        assert check["changed"] is True, check
        assert "update scheduling.x-k8s.io/podgroups/status" in check["missing_before"], check
        assert check["missing_after"] == []
        assert check["diff"]["before"] == {"rules": None, "subjects": None}
        assert not _role_exists(api, name), "check mode created the ClusterRole"

        real = run_module(lab, "gang_rbac", args)
        assert comparable(real) == comparable(check), "check-mode result differs from the real run"
        assert _role_exists(api, name)
        role = k.RbacAuthorizationV1Api(api).read_cluster_role(name)
        assert role.metadata.labels["app.kubernetes.io/managed-by"] == "gangsched.kubeflow"
        assert all("*" not in (r.verbs + r.resources + (r.api_groups or [])) for r in role.rules)

        again = run_module(lab, "gang_rbac", args)
        assert again["changed"] is False and again["missing_before"] == [] and again["missing_after"] == []
        again_check = run_module(lab, "gang_rbac", args, check=True)
        assert comparable(again_check) == comparable(again)

        gone_check = run_module(lab, "gang_rbac", {**args, "state": "absent"}, check=True)
        assert gone_check["changed"] is True and _role_exists(api, name)
        gone = run_module(lab, "gang_rbac", {**args, "state": "absent"})
        assert comparable(gone) == comparable(gone_check)
        assert not _role_exists(api, name)
        assert set(gone["missing_after"]) == set(check["missing_before"]), gone
        assert run_module(lab, "gang_rbac", {**args, "state": "absent"})["changed"] is False
    finally:
        run_module(lab, "gang_rbac", {**args, "state": "absent", "verify": False})


def test_forbidden_operator_starts_working_after_gang_rbac(volcano, api, namespace):
    scenarios.install_training_operator(volcano, gang_flag="--gang-scheduler-name=volcano", podgroup_rights=False)
    user = "system:serviceaccount:kubeflow:training-operator"
    args = {"component": "training_operator", "gang_scheduler": "volcano"}
    try:
        kube.apply(volcano, [scenarios.pytorchjob(namespace, "pj", workers=1)])

        def forbidden():
            return [
                e
                for e in volcano.audit_events(user=user, code=403)
                if e.get("objectRef", {}).get("resource") == "podgroups"
                and e.get("objectRef", {}).get("apiGroup") == "scheduling.volcano.sh"
            ]

        kube.wait_for(forbidden, 60, "a 403 on podgroups for the training-operator")
        co = k.CustomObjectsApi(api)
        assert (
            co.list_namespaced_custom_object("scheduling.volcano.sh", "v1beta1", namespace, "podgroups")["items"] == []
        )

        res = run_module(volcano, "gang_rbac", args)
        assert res["changed"] is True
        assert "create scheduling.volcano.sh/podgroups" in res["missing_before"], res
        assert res["missing_after"] == []
        # training-operator v1.8.1 does not retry a job whose PodGroup read was refused (it logs "PodGroup
        # unschedulable" and returns without requeueing), so the job waits for its next event; what a user
        # does after fixing rights (resubmit, or any change to the job) is that event
        co.patch_namespaced_custom_object(
            "kubeflow.org", "v1", namespace, "pytorchjobs", "pj", {"metadata": {"annotations": {"rights": "granted"}}}
        )
        pg = kube.wait_for(
            lambda: next(
                iter(
                    co.list_namespaced_custom_object("scheduling.volcano.sh", "v1beta1", namespace, "podgroups")[
                        "items"
                    ]
                ),
                None,
            ),
            90,
            "the PodGroup, once the operator may create it",
        )
        assert pg["metadata"]["name"] == "pj"
    finally:
        run_module(volcano, "gang_rbac", {**args, "state": "absent", "verify": False})
        scenarios.install_training_operator(volcano, gang_flag=None)


BAD = [
    ("unknown-component", {"component": "kubeflow_trainer"}, "value of component must be one of"),
    (
        "scheduler-mismatch",
        {"component": "volcano_scheduler", "gang_scheduler": "scheduler_plugins"},
        "component=volcano_scheduler works with gang_scheduler volcano",
    ),
    (
        "operator-without-scheduler",
        {"component": "training_operator", "gang_scheduler": None},
        "gang_scheduler is required for component=training_operator",
    ),
    (
        "sa-missing",
        {"service_account": {"namespace": "{ns}", "name": "nobody"}},
        "ServiceAccount {ns}/nobody not found",
    ),
    ("wildcard-refused", {"extra_rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}, "wildcard rule"),
    (
        "wildcard-verb-refused",
        {"extra_rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]}]},
        "set allow_wildcard=true knowingly",
    ),
    (
        "rule-without-verbs",
        {"extra_rules": [{"apiGroups": [""], "resources": ["pods"]}]},
        "extra_rules[0] is not a valid PolicyRule",
    ),
    (
        "rule-verbs-not-a-list",
        {"extra_rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": "get"}]},
        "extra_rules[0].verbs must be a list of strings",
    ),
    ("state-typo", {"state": "gone"}, "value of state must be one of"),
    (
        "wildcard-nonresource-url",
        {"extra_rules": [{"nonResourceURLs": ["*"], "verbs": ["get"]}]},
        "extra_rules contains a wildcard rule",
    ),
    (
        "wildcard-subresource",
        {"extra_rules": [{"apiGroups": [""], "resources": ["pods/*"], "verbs": ["get"]}]},
        "for ServiceAccount {ns}/op: refused",
    ),
    (
        "rule-field-typo",
        {"extra_rules": [{"apiGroup": "", "resources": ["pods"], "verbs": ["get"]}]},
        "extra_rules[0] has unknown field(s) apiGroup",
    ),
    (
        "resource-rule-without-api-group",
        {"extra_rules": [{"resources": ["pods"], "verbs": ["get"]}]},
        "extra_rules[0].apiGroups is missing or empty",
    ),
    (
        "sa-namespace-not-a-name",
        {"service_account": {"namespace": "Kube_Flow", "name": "op"}},
        "service_account.namespace='Kube_Flow' is not a valid namespace name",
    ),
    ("unknown-option", {"namespace": "x"}, "Unsupported parameters"),
    (
        "unreachable-api",
        {"host": "https://127.0.0.1:1", "api_key": "not-a-token", "validate_certs": False},
        "Failed to reach the Kubernetes API at https://127.0.0.1:1",
    ),
    ("forbidden", {"impersonate_user": "system:serviceaccount:default:default"}, "Forbidden to"),
]


@pytest.mark.parametrize("case,override,message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_fails_naming_the_object_and_creates_nothing(lab, api, core, namespace, case, override, message):
    _sa(core, namespace, "op")
    args = {
        "component": "training_operator",
        "gang_scheduler": "volcano",
        "service_account": {"namespace": namespace, "name": "op"},
    }
    for key, value in override.items():
        if isinstance(value, dict):
            value = {a: b.format(ns=namespace) for a, b in value.items()}
        args[key] = value
    args = {a: v for a, v in args.items() if v is not None}
    res = run_module(lab, "gang_rbac", args)
    assert res.get("failed") is True, res
    assert message.format(ns=namespace) in res["msg"], res["msg"]
    listed = k.RbacAuthorizationV1Api(api).list_cluster_role(
        label_selector="app.kubernetes.io/managed-by=gangsched.kubeflow"
    )
    assert [r.metadata.name for r in listed.items if namespace in r.metadata.name] == []
