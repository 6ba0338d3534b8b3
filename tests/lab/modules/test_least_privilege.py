"""An automation user with exactly the rules of docs/automation-user-rbac.yml (a ServiceAccount token
in a kubeconfig of its own) runs gang_info and gang_smoke_test; without the binding the same call is
refused, and the refusal names the forbidden call. The shipped rules hold no wildcard."""

from __future__ import annotations

import pytest
import yaml
from ansible_run import REPO, run_module
from kubernetes import client as k

from lab import kube

RBAC_DOC = REPO / "docs" / "automation-user-rbac.yml"
NS, SA = "default", "gang-checker"


@pytest.fixture(scope="module")
def checker(lab, api, tmp_path_factory):
    """A kubeconfig file of the checker ServiceAccount (bound to exactly the documented ClusterRole)."""
    role = yaml.safe_load(RBAC_DOC.read_text())
    core, rbac = k.CoreV1Api(api), k.RbacAuthorizationV1Api(api)
    kubeconfig = tmp_path_factory.mktemp("checker") / "kubeconfig"
    token = kube.service_account_kubeconfig(lab, NS, SA, kubeconfig)
    binding = {
        "metadata": {"name": "gangsched-checker"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role["metadata"]["name"]},
        "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}],
    }
    yield {"kubeconfig": kubeconfig, "role": role, "binding": binding, "token": token}
    for name, fn in (
        (binding["metadata"]["name"], rbac.delete_cluster_role_binding),
        (role["metadata"]["name"], rbac.delete_cluster_role),
    ):
        try:
            fn(name)
        except k.ApiException:
            pass
    core.delete_namespaced_service_account(SA, NS)


def test_documented_rules_have_no_wildcard(checker):
    for rule in checker["role"]["rules"]:
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[field], rule
        assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"]), rule


def test_unbound_checker_is_refused_naming_the_call(lab, checker):
    res = run_module(lab, "gang_info", {"kubeconfig": str(checker["kubeconfig"])})
    assert res.get("failed") is True
    assert "Forbidden to read" in res["msg"] and "system:serviceaccount:default:gang-checker" in res["msg"], res["msg"]


def test_checker_with_exactly_the_documented_rights_runs_both_modules(volcano, api, checker):
    kube.apply(
        volcano,
        [
            checker["role"],
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", **checker["binding"]},
        ],
    )
    auth = {"kubeconfig": str(checker["kubeconfig"])}
    info = kube.wait_for(
        lambda: (lambda r: r if r.get("failed") is not True else None)(run_module(volcano, "gang_info", auth)),
        20,
        "gang_info as the checker once its binding is in the authorizer's cache",
    )
    assert info["gpus"]["allocatable"] == 4 and any(s["kind"] == "volcano" for s in info["schedulers"]), info
    user = f"system:serviceaccount:{NS}:{SA}"
    refused_before = len(volcano.audit_events(user=user, code=403))
    smoke = run_module(
        volcano,
        "gang_smoke_test",
        {**auth, "gang_scheduler": "volcano", "replicas": 5, "settle_seconds": 5, "namespace": "checker-smoke"},
    )
    assert smoke.get("failed") is not True, smoke.get("msg")
    assert smoke["verdict"] == "gang_held_pending" and smoke["left_behind"] == [], smoke
    absent = run_module(volcano, "gang_smoke_test", {**auth, "state": "absent"})
    assert absent.get("failed") is not True and absent["changed"] is False, absent
    # the API server's audit log: not one call of the smoke test or the cleanup was refused
    refused = volcano.audit_events(user=user, code=403)[refused_before:]
    assert refused == [], [(e["verb"], e.get("objectRef")) for e in refused]
