"""kube-scheduler's own gang: the Job integration's Workloads left without a PodGroup (Kubernetes 1.37.2, a Job's pods
of a system-* priority class), as gang_info reports them."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _workloads
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _native, _smoke_objects
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import (
    _gang_info_native,
    _gang_rbac,
    _operator_gang,
    _trainer_runtime_gang_checks,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _smoke_input, _verdict

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
    """The reads native_info makes, and what they returned (a path not in ``served`` is a 404)."""

    def __init__(self, served: dict):
        self.served, self.calls = served, []

    def scan(self, path, what="", keep=None, **query):
        self.calls.append(path)
        if path not in self.served:
            from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import NotFound

            raise NotFound(what, 404, "not found")
        return [keep(i) for i in self.served[path]] if keep else self.served[path]

    def get(self, path, what=""):
        self.calls.append(path)
        if path == GROUP:
            versions = sorted({p.split("/")[3] for p in self.served if p.startswith(f"{GROUP}/")})
            return {"versions": [{"version": "v1"}] + [{"version": v} for v in versions]}
        served = sorted(p.rsplit("/", 1)[1] for p in self.served if p.startswith(f"{path}/"))
        if not served:
            from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import NotFound

            raise NotFound(what, 404, "not found")
        return {"resources": [{"name": n} for n in served]}

    def list_or_empty(self, path, what="", **query):
        self.calls.append(path)
        return self.served.get(path, [])


GROUP = "/apis/scheduling.k8s.io"
API = "/apis/scheduling.k8s.io/v1beta1"
CONTROL_PLANE = "/api/v1/namespaces/kube-system/pods"
WORKLOADS = f"{API}/workloads"
PODGROUPS = "/apis/scheduling.k8s.io/v1beta1/podgroups"


def test_native_info_reads_only_the_discovery_where_the_api_is_not_served():
    client = _Client({})
    facts, probs = _gang_info_native.native_info(client, NOW, 60)
    assert probs == [] and facts["served_versions"] == [] and facts["supported"] is False
    assert "does not serve Workloads and PodGroups" in facts["unsupported_reason"]
    assert client.calls == [GROUP]  # discovery, which every user may read (a list would be refused by RBAC first)


def test_native_info_reports_an_older_version_as_unsupported_without_reading_it():
    client = _Client({"/apis/scheduling.k8s.io/v1alpha2/workloads": []})
    facts, probs = _gang_info_native.native_info(client, NOW, 60)
    assert facts["served_versions"] == ["v1alpha2"] and facts["version"] is None and probs == []
    assert "Kubernetes 1.36" in facts["unsupported_reason"]
    assert client.calls == [GROUP, CONTROL_PLANE]


def _static_pod(component, gates=None):
    flags = [f"--feature-gates={gates}"] if gates else []
    return {
        "metadata": {"namespace": "kube-system", "name": f"{component}-cp", "labels": {"component": component}},
        "spec": {"containers": [{"name": component, "command": [component, *flags]}]},
    }


def test_native_info_names_a_kube_scheduler_without_the_gate():
    client = _Client(
        {
            WORKLOADS: [],
            PODGROUPS: [
                {
                    "metadata": {"namespace": "ml", "name": "big"},
                    "status": {
                        "conditions": [{"type": "PodGroupInitiallyScheduled", "status": "False", "message": "m"}]
                    },
                }
            ],
            CONTROL_PLANE: [
                _static_pod("kube-scheduler"),
                _static_pod("kube-controller-manager", "GenericWorkload=true,WorkloadWithJob=true"),
            ],
        }
    )
    facts, probs = _gang_info_native.native_info(client, NOW, 60)
    assert facts["supported"] is True and facts["kube_scheduler_gate"] is False and facts["job_integration"] is True
    assert facts["podgroups"] == 1 and facts["held_podgroups"] == [{"podgroup": "ml/big", "message": "m"}]
    (p,) = probs
    assert p["object"] == "Pod kube-system/kube-scheduler-cp" and "one by one" in p["message"], p
    assert "--feature-gates=GenericWorkload=true" in p["fix"]


def test_native_info_reads_podgroups_and_names_a_suspect():
    raw = {
        "metadata": {"namespace": "default", "name": "ok-1", "creationTimestamp": "2027-01-15T07:58:00Z"},
        "spec": {"controllerRef": {"kind": "Job", "name": "ok"}, "podGroupTemplates": [{"name": "t"}]},
    }
    client = _Client({WORKLOADS: [raw], PODGROUPS: []})
    facts, probs = _gang_info_native.native_info(client, NOW, 60)
    assert probs == [] and facts["job_integration"] is True
    assert client.calls == [GROUP, API, CONTROL_PLANE, WORKLOADS, PODGROUPS]
    stuck = {**raw, "metadata": {**raw["metadata"], "name": "sys-1"}}
    stuck["spec"] = {**raw["spec"], "controllerRef": {"kind": "Job", "name": "sys"}}
    stuck["spec"]["podGroupTemplates"] = [{"name": "t", "priorityClassName": "system-cluster-critical"}]
    client = _Client({WORKLOADS: [raw, stuck], PODGROUPS: []})
    _facts, (p,) = _gang_info_native.native_info(client, NOW, 60)
    assert p["object"] == "Job default/sys"


# ---- the native gang path: versions, objects, the filter's shapes, refusals ---------------------------------------


@pytest.mark.parametrize(
    "served, says",
    [
        ([], "does not serve Workloads and PodGroups"),
        (["v1"], "does not serve Workloads and PodGroups"),
        (["v1", "v1alpha2"], "only at scheduling.k8s.io/v1alpha2 (Kubernetes 1.36)"),
        (["v1", "v1alpha1"], "only at scheduling.k8s.io/v1alpha1 (Kubernetes 1.35)"),
    ],
)
def test_an_api_not_served_at_the_version_proven_is_refused_with_what_to_turn_on(served, says):
    msg = _native.version_problem(served)
    assert says in msg, msg
    if "does not serve" in msg:
        assert "--runtime-config=scheduling.k8s.io/v1beta1=true" in msg and "GenericWorkload=true" in msg
        assert "managed control plane" in msg
    assert _native.version_problem(["v1", "v1beta1"]) is None


def test_smoke_pods_are_a_workload_a_podgroup_and_members_that_join_it():
    docs, selector = _smoke_objects.pods("ns", "g", "run1", 3, {"nvidia.com/gpu": "1"}, "native", "default-scheduler")
    assert [d["kind"] for d in docs] == ["Workload", "PodGroup", "Pod", "Pod", "Pod"]
    w, pg = docs[0], docs[1]
    assert w["apiVersion"] == pg["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert w["spec"]["podGroupTemplates"] == [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 3}}}]
    assert pg["spec"] == {
        "workloadRef": {"workloadName": "g", "templateName": "workers"},
        "schedulingPolicy": {"gang": {"minCount": 3}},
    }
    for d in docs:
        assert d["metadata"]["labels"][_workloads.RUN_LABEL] == "run1"
    for p in docs[2:]:
        assert (
            p["spec"]["schedulingGroup"] == {"podGroupName": "g"} and p["spec"]["schedulerName"] == "default-scheduler"
        )
        assert not p["metadata"]["annotations"]
    assert _workloads.collection_path(pg) == "/apis/scheduling.k8s.io/v1beta1/namespaces/ns/podgroups"
    assert _workloads.collection_path(w) == "/apis/scheduling.k8s.io/v1beta1/namespaces/ns/workloads"
    assert selector == "gangsched.kubeflow/gang=g"


def test_the_smoke_job_is_indexed_and_asks_for_a_gang_only_when_native():
    (job,), _sel = _smoke_objects.indexed_job("ns", "j", "run1", 4, {"nvidia.com/gpu": "1"}, "native")
    spec = job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 4, 4)
    assert spec["scheduling"] == {"schedulingPolicy": {"gang": {}}}
    assert spec["template"]["metadata"]["labels"][_workloads.RUN_LABEL] == "run1"
    assert _workloads.collection_path(job) == "/apis/batch/v1/namespaces/ns/jobs"
    (plain,), _sel = _smoke_objects.indexed_job("ns", "j", "run1", 4, {"nvidia.com/gpu": "1"}, None)
    assert "scheduling" not in plain["spec"]


def test_the_filter_shapes_pods_and_jobs_and_leaves_the_input_alone():
    pods = [
        {"kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "a"}, "spec": {"containers": []}} for i in range(3)
    ]
    out = _native.gang_pods(pods, min_count=2)
    assert [d["kind"] for d in out] == ["Workload", "PodGroup", "Pod", "Pod", "Pod"]
    assert out[1]["metadata"] == {"name": "p0", "namespace": "a"} and out[1]["spec"]["schedulingPolicy"]["gang"] == {
        "minCount": 2
    }
    assert all(p["spec"]["schedulingGroup"] == {"podGroupName": "p0"} for p in out[2:])
    assert "schedulingGroup" not in pods[0]["spec"]
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"parallelism": 4}}
    (gj,) = _native.gang_pods(job)
    assert gj["spec"]["scheduling"] == {"schedulingPolicy": {"gang": {}}} and "scheduling" not in job["spec"]
    (gj,) = _native.gang_pods(job, min_count=3)
    assert gj["spec"]["scheduling"]["schedulingPolicy"]["gang"] == {"minCount": 3}


@pytest.mark.parametrize(
    "docs, kw, says",
    [
        ([], {}, "needs a Pod"),
        ([{"kind": "Deployment", "metadata": {"name": "d"}}], {}, "needs Pods or one batch/v1 Job"),
        (
            [{"kind": "Pod", "metadata": {"name": "a", "namespace": "x"}}, {"kind": "Pod", "metadata": {"name": "b"}}],
            {},
            "share a namespace",
        ),
        ([{"kind": "Pod", "metadata": {"name": "a"}}], {"min_count": 2}, "from 1 to the 1 pods"),
        ([{"kind": "Pod", "metadata": {}}], {}, "give the gang a name"),
        (
            [{"kind": "Job", "metadata": {"name": "j"}, "spec": {"template": {"spec": {"schedulingGroup": {}}}}}],
            {},
            "already names a PodGroup",
        ),
        ([{"apiVersion": "batch/v2", "kind": "Job", "metadata": {"name": "j"}}], {}, "batch/v1"),
    ],
)
def test_the_filter_refuses_what_it_cannot_shape(docs, kw, says):
    with pytest.raises(ValueError, match=says):
        _native.gang_pods(docs, **kw)


def test_kube_schedulers_decision_is_read_from_either_minors_condition():
    def pg(kind, status, msg=""):
        return {
            "status": {
                "conditions": [{"type": "Other", "status": "True"}, {"type": kind, "status": status, "message": msg}]
            }
        }

    assert _native.scheduled(pg("PodGroupInitiallyScheduled", "True")) == ("True", "")
    assert _native.scheduled(pg("PodGroupScheduled", "False", "minCount (5)")) == ("False", "minCount (5)")
    assert _native.scheduled({"status": {}}) == (None, "")
    assert _native.scheduled(None) == (None, "")


def _member(name, rv, node=None, phase="Pending", msg=None):
    conds = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": msg}] if msg else []
    return {
        "metadata": {"name": name, "resourceVersion": str(rv)},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase, "conditions": conds},
    }


def _pg(status, msg=""):
    return {"status": {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": status, "message": msg}]}}


def test_a_native_gang_running_without_kube_schedulers_mark_is_not_held_running():
    g = _verdict.Gang(size=2, decide=_native.scheduled)
    for i in range(2):
        g.observe("MODIFIED", _member(f"m{i}", 10 + i, node="n", phase="Running"), 1.0)
    assert g.verdict(2.0, 5, "running") is None
    assert g.final(60.0, 5) == _verdict.INCONCLUSIVE
    g.observe_group(_pg("True"), 3.0)
    assert g.verdict(3.0, 5, "running") == _verdict.GANG_HELD_RUNNING
    assert g.summary()["podgroup_scheduled"] is True


def test_a_native_gang_is_held_pending_only_on_its_podgroups_refusal():
    g = _verdict.Gang(size=2, decide=_native.scheduled, skew_seconds=1)
    for i in range(2):
        g.observe("MODIFIED", _member(f"m{i}", 10 + i, msg="0/4 nodes are available"), 1.0)
    for i in range(2):
        g.observe("MODIFIED", _member(f"m{i}", 20 + i, msg="0/4 nodes are available: again"), 2.0)
    # every member marked by the filter, as any scheduler would: no proof of a gang
    assert g.verdict(10.0, 5, "pending") is None and g.final(60.0, 5) == _verdict.INCONCLUSIVE
    g.observe_group(_pg("False", "minCount (2) cannot be satisfied"), 11.0)
    assert g.verdict(11.5, 5, "pending") is None  # within the skew window
    assert g.verdict(12.5, 5, "pending") == _verdict.GANG_HELD_PENDING
    assert g.summary()["podgroup_unschedulable"] == "minCount (2) cannot be satisfied"


def _params(**kw):
    return {"replicas": 2, "resources": {"nvidia.com/gpu": 1}, "namespace": "ns", "workload": "pods", **kw}


@pytest.mark.parametrize(
    "kw, says",
    [
        ({"gang_scheduler": "native", "workload": "pytorchjob"}, "no Kubeflow operator or Trainer runtime"),
        ({"gang_scheduler": "native", "workload": "trainjob"}, "no Kubeflow operator or Trainer runtime"),
        ({"gang_scheduler": "volcano", "workload": "job"}, "needs gang_scheduler=native"),
        ({"gang_scheduler": "native", "scheduler_name": "mine"}, "leave scheduler_name unset"),
    ],
)
def test_the_smoke_test_refuses_what_the_native_gang_cannot_prove(kw, says):
    with pytest.raises(GangError, match=says):
        _smoke_input.validate(_params(**kw))


def test_the_smoke_test_takes_pods_and_jobs_for_the_native_gang():
    for wl in ("pods", "job"):
        assert _smoke_input.validate(_params(gang_scheduler="native", workload=wl)) == {"nvidia.com/gpu": "1"}


def test_operators_runtimes_and_rbac_refuse_the_native_gang_before_any_call():
    with pytest.raises(GangError, match="cannot put its pods in a native gang.*nothing was changed"):
        _operator_gang.validate({"operator": "training_operator", "gang_scheduler": "native"})
    with pytest.raises(GangError, match="Trainer v2 runtime cannot put its pods in a native gang"):
        _trainer_runtime_gang_checks.validate({"name": "rt", "gang_scheduler": "native"})
    with pytest.raises(GangError, match="bootstrap RBAC"):
        _gang_rbac.resolve({"component": "training_operator", "gang_scheduler": "native"})
