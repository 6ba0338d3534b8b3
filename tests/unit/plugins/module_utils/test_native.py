"""kube-scheduler's own gang: the Job integration's Workloads left without a PodGroup (Kubernetes 1.37.2, a Job's pods
of a system-* priority class), as gang_info reports them."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils import _info, _native

NOW = 1_800_000_000.0


def _workload(name="sysjob-1", job="sysjob", priority="system-cluster-critical", created=NOW - 120, kind="Job"):
    return {
        "metadata": {"namespace": "default", "name": name},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": kind, "name": job},
            "podGroupTemplates": [{"name": "t", "priorityClassName": priority}],
        },
        "_created": created,
    }


def _podgroup(workload: str, namespace: str = "default") -> dict:
    return {
        "metadata": {"namespace": namespace, "name": f"{workload}-pg"},
        "spec": {"workloadRef": {"workloadName": workload}},
    }


@pytest.mark.parametrize(
    ("workload", "podgroups", "reported"),
    [
        (_workload(), [], True),
        (_workload(priority="system-node-critical"), [], True),
        (_workload(), [_podgroup("sysjob-1")], False),  # it got its PodGroup
        (_workload(), [_podgroup("sysjob-1", "other")], True),  # another namespace's PodGroup of that name
        (_workload(priority="high"), [], False),  # a user's class: at most 1e9, the PodGroup is accepted
        (_workload(priority=None), [], False),
        (_workload(created=NOW - 5), [], False),  # just made: its PodGroup may be on its way
        (_workload(kind="JobSet"), [], False),  # not the Job controller's
    ],
    ids=["stuck", "node-critical", "has-podgroup", "other-namespace", "user-class", "no-class", "fresh", "not-a-job"],
)
def test_job_priority_problems(workload, podgroups, reported):
    probs = _native.job_priority_problems([workload], podgroups, NOW, 60)
    assert bool(probs) is reported, probs
    if reported:
        (p,) = probs
        assert p["object"] == "Job default/sysjob"
        assert "never creates a pod" in p["message"] and "1000000000" in p["message"]
        assert workload["spec"]["podGroupTemplates"][0]["priorityClassName"] in p["message"]
        assert "WorkloadWithJob" in p["fix"]


class _Client:
    """The two reads native_problems makes, and what they returned (a path not in ``served`` is a 404)."""

    def __init__(self, served: dict):
        self.served, self.calls = served, []

    def scan(self, path, what="", keep=None, **query):
        self.calls.append(path)
        if path not in self.served:
            from ansible_collections.gangsched.kubeflow.plugins.module_utils._exceptions import NotFound

            raise NotFound(what, 404, "not found")
        return [keep(i) for i in self.served[path]] if keep else self.served[path]

    def get(self, path, what=""):
        self.calls.append(path)
        served = sorted(p.rsplit("/", 1)[1] for p in self.served if p.startswith(f"{path}/"))
        if not served:
            from ansible_collections.gangsched.kubeflow.plugins.module_utils._exceptions import NotFound

            raise NotFound(what, 404, "not found")
        return {"resources": [{"name": n} for n in served]}

    def list_or_empty(self, path, what="", **query):
        self.calls.append(path)
        return self.served.get(path, [])


API = "/apis/scheduling.k8s.io/v1beta1"
WORKLOADS = f"{API}/workloads"
PODGROUPS = "/apis/scheduling.k8s.io/v1beta1/podgroups"


def test_native_problems_read_only_the_discovery_where_the_api_is_not_served():
    client = _Client({})
    assert _info.native_problems(client, NOW, 60) == []
    assert client.calls == [API]  # discovery, which every user may read (a list would be refused by RBAC first)


def test_native_problems_read_podgroups_only_for_a_suspect():
    raw = {
        "metadata": {"namespace": "default", "name": "ok-1", "creationTimestamp": "2027-01-15T07:58:00Z"},
        "spec": {"controllerRef": {"kind": "Job", "name": "ok"}, "podGroupTemplates": [{"name": "t"}]},
    }
    client = _Client({WORKLOADS: [raw]})
    assert _info.native_problems(client, NOW, 60) == []
    assert client.calls == [API, WORKLOADS]
    stuck = {**raw, "metadata": {**raw["metadata"], "name": "sys-1"}}
    stuck["spec"] = {**raw["spec"], "controllerRef": {"kind": "Job", "name": "sys"}}
    stuck["spec"]["podGroupTemplates"] = [{"name": "t", "priorityClassName": "system-cluster-critical"}]
    client = _Client({WORKLOADS: [raw, stuck], PODGROUPS: []})
    (p,) = _info.native_problems(client, NOW, 60)
    assert p["object"] == "Job default/sys" and client.calls == [API, WORKLOADS, PODGROUPS]
