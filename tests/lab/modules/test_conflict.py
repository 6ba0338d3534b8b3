"""A conflicting edit on the lab's API server: another client changes the operator Deployment (an
env var, an annotation) between operator_gang's read and its write. The write is guarded by the
resourceVersion it read, so the API server answers 409; operator_gang re-reads and patches again.
The other client's change survives and the flag is set exactly once."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import Conflict, GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._client import Client
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _operator_gang
from kubernetes import client as k
from lab_objects import operator_like

from lab import kube

FLAG = "--gang-scheduler-name=volcano"


class InterferingClient(Client):
    """Before each of our first ``times`` writes to the Deployment, another client edits it."""

    def __init__(self, api_client, edit, times: int):
        super().__init__(api_client)
        self.edit, self.times = edit, times
        self.conflicts = self.edits = 0

    def request(self, method, path, *a, **kw):
        if method == "PATCH" and "/deployments/" in path and self.edits < self.times:
            self.edits += 1
            self.edit(self.edits)
        try:
            return super().request(method, path, *a, **kw)
        except Conflict:
            self.conflicts += 1
            raise


def _params(ns: str) -> dict:
    return {
        "operator": "training_operator",
        "gang_scheduler": "volcano",
        "namespace": ns,
        "name": "op",
        "container": None,
        "scheduler_name": None,
        "wait": False,
        "wait_timeout": 60,
    }


@pytest.fixture
def other_client(api, namespace):
    """Another writer: adds env var EDIT_<n> to the container and bumps an annotation."""
    apps = k.AppsV1Api(api)

    def edit(n: int) -> None:
        apps.patch_namespaced_deployment(
            "op",
            namespace,
            {
                "metadata": {"annotations": {"example.com/edited": str(n)}},
                "spec": {
                    "template": {"spec": {"containers": [{"name": "op", "env": [{"name": f"EDIT_{n}", "value": "1"}]}]}}
                },
            },
        )

    return edit


def test_concurrent_edit_is_kept_and_the_flag_set_once(volcano, api, namespace, other_client):
    kube.apply(volcano, [operator_like(namespace, "op", command=["/manager"])])
    client = InterferingClient(api, other_client, times=1)
    res = _operator_gang.run(client, _params(namespace), False, lambda m: None)
    # the first write conflicts with the other edit; a retry may also meet the deployment controller's
    # own status update that the edit set off
    assert client.edits == 1 and client.conflicts >= 1, "the other edit did not make our guarded write conflict"
    assert res["changed"] is True and res["flag"] == FLAG and res["conflicts_retried"] == client.conflicts
    dep = k.AppsV1Api(api).read_namespaced_deployment("op", namespace)
    c = dep.spec.template.spec.containers[0]
    assert c.command.count(FLAG) == 1 and c.command == ["/manager", FLAG]
    assert [e.name for e in c.env] == ["EDIT_1"], "the other client's env var was lost"
    assert dep.metadata.annotations["example.com/edited"] == "1", "the other client's annotation was lost"
    again = _operator_gang.run(Client(api), _params(namespace), False, lambda m: None)
    assert again["changed"] is False


def test_a_deployment_that_keeps_changing_fails_clearly_and_unpatched(volcano, api, namespace, other_client):
    kube.apply(volcano, [operator_like(namespace, "op", command=["/manager"])])
    client = InterferingClient(api, other_client, times=1000)
    with pytest.raises(GangError) as e:
        _operator_gang.run(client, _params(namespace), False, lambda m: None)
    assert f"Deployment {namespace}/op" in e.value.msg and "kept changing" in e.value.msg, e.value.msg
    assert client.conflicts == _operator_gang.CONFLICT_RETRIES
    dep = k.AppsV1Api(api).read_namespaced_deployment("op", namespace)
    assert dep.spec.template.spec.containers[0].command == ["/manager"]
    assert len(dep.spec.template.spec.containers[0].env) == _operator_gang.CONFLICT_RETRIES
