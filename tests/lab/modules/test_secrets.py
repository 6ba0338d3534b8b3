"""Credentials given to the modules stay out of the output, even at -vvv: a ServiceAccount token
(api_key), a wrong token, and a whole kubeconfig passed as content with its client key embedded."""

from __future__ import annotations

import base64
import json

import pytest
import yaml
from ansible_run import BIN, REPO, ansible_cli, ansible_env
from kubernetes import client as k

from lab import kube


@pytest.fixture(scope="module")
def token(lab, api):
    """A real token of a ServiceAccount with the documented automation-user rights."""
    core, rbac = k.CoreV1Api(api), k.RbacAuthorizationV1Api(api)
    kube.apply(lab, [yaml.safe_load((REPO / "docs" / "automation-user-rbac.yml").read_text())])
    ns, name = "default", "secrecy-check"
    core.create_namespaced_service_account(ns, {"metadata": {"name": name}})
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": name},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "gangsched-kubeflow-checker",
            },
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
        }
    )
    tr = core.create_namespaced_service_account_token(name, ns, {"spec": {"expirationSeconds": 3600}})
    yield tr.status.token
    rbac.delete_cluster_role_binding(name)
    core.delete_namespaced_service_account(name, ns)


def _vvv(lab, module: str, args: dict) -> tuple[int, str]:
    env = ansible_env(lab, {"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default"}, kubeconfig=False)
    p = ansible_cli(
        [str(BIN / "ansible"), "localhost", "-vvv", "-m", f"gangsched.kubeflow.{module}", "-a", json.dumps(args)],
        env,
        timeout=300,
    )
    return p.returncode, p.stdout + p.stderr


def _server(lab) -> dict:
    return {"host": lab.api_url(), "ca_cert": str(lab.pki / "ca.crt")}


def test_token_is_not_in_verbose_output(lab, token):
    rc, out = _vvv(lab, "gang_info", {**_server(lab), "api_key": token})
    assert rc == 0, out[-3000:]
    assert '"gpus"' in out  # the module really ran with the token
    assert token not in out and token[-40:] not in out
    assert "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" in out  # the invocation shows the option, masked


def test_rejected_token_is_not_in_the_error(lab, token):
    bad = token[:-12] + "AAAAAAAAAAAA"
    rc, out = _vvv(
        lab, "operator_gang", {**_server(lab), "api_key": bad, "operator": "mpi_operator", "gang_scheduler": "none"}
    )
    assert rc != 0 and "Unauthorized" in out, out[-3000:]
    assert bad not in out and bad[-40:] not in out and token[-40:] not in out


def _b64(path: str) -> str:
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def test_kubeconfig_content_and_its_client_key_are_not_in_verbose_output(lab):
    """The lab's admin kubeconfig with every file inlined, passed as the kubeconfig option's value."""
    content = yaml.safe_load(lab.kubeconfig.read_text())
    cluster, user = content["clusters"][0]["cluster"], content["users"][0]["user"]
    cluster["certificate-authority-data"] = _b64(cluster.pop("certificate-authority"))
    user["client-certificate-data"] = _b64(user.pop("client-certificate"))
    user["client-key-data"] = _b64(user.pop("client-key"))
    key_pem = base64.b64decode(user["client-key-data"]).decode()
    key_line = next(line for line in key_pem.splitlines() if line and not line.startswith("-----"))
    rc, out = _vvv(lab, "gang_info", {"kubeconfig": content})
    assert rc == 0, out[-3000:]
    assert '"gpus"' in out
    assert user["client-key-data"][:60] not in out and key_line not in out
