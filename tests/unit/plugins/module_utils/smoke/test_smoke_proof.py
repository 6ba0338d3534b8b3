"""gang_smoke_test's proof that cannot lie, without a cluster: every bad input refused before anything
is created (a fake API client records every call), the liveness canary, the causes that name the
scheduler, per-node slot arithmetic (module and the role's filter), gang_info's checks of the
served scheduler names and of a Ready scheduler that makes no progress, and workload=trainjob: its
refusals, a user's runtime that is no gang, the verdict resting on Trainer's PodGroup, the removal of a
TrainJob before its runtime."""

from __future__ import annotations

import os
import time

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gangsched.kubeflow.plugins.filter.gang import gang_slots
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api, _trainjobs
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _capacity as C
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import Forbidden, GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _together, _waiter
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry, _smoke_objects
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _gang_info
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import (
    _diagnosis,
    _smoke,
    _smoke_input,
    _sweep,
    _trial,
    _watch,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _queue as _queue_mod
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _verdict as V

CRD = {"status": {"conditions": [{"type": "Established", "status": "True"}]}}
NOW = 1_800_000_000.0


def _node(name, gpus, schedulable=True):
    return {
        "metadata": {"name": name},
        "spec": {"unschedulable": not schedulable},
        "status": {
            "capacity": {"nvidia.com/gpu": str(gpus)},
            "allocatable": {"nvidia.com/gpu": str(gpus)},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _volcano(ns="volcano-system", args=(), ready=1):
    return {
        "metadata": {"namespace": ns, "name": "vc-scheduler"},
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "s", "image": "volcanosh/vc-scheduler:v1.10.0", "args": list(args)}]}
            }
        },
        "status": {"readyReplicas": ready},
    }


FOUR_BY_ONE = [_node(f"g{i}", 1) for i in range(4)]
MIXED = [_node(f"two-{i}", 2) for i in range(3)] + [_node(f"one-{i}", 1) for i in range(2)]


class FakeClient:
    """An API server in a dict: records every call; ``bind`` says whether pods get a node."""

    def __init__(self, nodes=FOUR_BY_ONE, deployments=None, bind=True):
        self.nodes = nodes
        self.deployments = [_volcano()] if deployments is None else deployments
        self.bind = bind
        self.objects: dict[str, dict] = {}
        self.calls: list[tuple[str, str]] = []

    @property
    def writes(self):
        return [c for c in self.calls if c[0] not in ("GET", "WATCH")]

    def request(self, method, path, body=None, query=None, **kw):
        self.calls.append((method, path))
        if method == "POST":
            name = body["metadata"]["name"]
            obj = {**body, "metadata": {**body["metadata"], "resourceVersion": "1"}}
            if body["kind"] == "Pod" and self.bind:
                obj["spec"] = {**body["spec"], "nodeName": "g0"}
            self.objects[f"{path}/{name}"] = obj
            return obj
        if method == "DELETE":
            if (query or {}).get("labelSelector"):
                for p in [p for p in self.objects if p.startswith(path + "/")]:
                    self.objects.pop(p)
            else:
                self.objects.pop(path, None)
            return {}
        return self.objects.get(path) or {}

    def get(self, path, what="", query=None, retry_for=None):
        return self.request("GET", path)

    def get_or_none(self, path, what=""):
        self.calls.append(("GET", path))
        if "customresourcedefinitions" in path:
            return CRD
        return self.objects.get(path)

    def list(self, path, what="", **query):
        self.calls.append(("GET", path))
        if path == "/apis/apps/v1/deployments":
            return self.deployments
        return [o for p, o in self.objects.items() if p.startswith(path + "/")]

    list_or_empty = list

    def watch(self, path, timeout_seconds, what="", fieldSelector=None, **query):
        """One round of a watch by name: the pod as it is now when it has a node, else nothing (a short
        wait stands for the server holding the watch open)."""
        self.calls.append(("WATCH", path))
        name = (fieldSelector or "").partition("metadata.name=")[2]
        obj = self.objects.get(f"{path}/{name}") if name else None
        if obj is not None and (obj.get("spec") or {}).get("nodeName"):
            yield {"type": "MODIFIED", "object": obj}
            return
        time.sleep(min(0.05, timeout_seconds))

    def scan(self, path, what="", keep=None, **query):
        self.calls.append(("GET", path))
        items = self.nodes if path == "/api/v1/nodes" else []
        return [keep(i) for i in items] if keep else items


def params(**over):
    p = {
        "state": "present",
        "gang_scheduler": "volcano",
        "scheduler_name": None,
        "workload": "pods",
        "replicas": 2,
        "resources": {"nvidia.com/gpu": 1},
        "expect": "auto",
        "namespace": "gangsched-smoke",
        "timeout": 30,
        "settle_seconds": 5,
        "skew_seconds": 1,
        "liveness_timeout": 2,
        "allow_system_namespace": False,
        "control": False,
        "cleanup": True,
        "report_dir": None,
        "run_id": None,
    }
    p.update(over)
    return p


BAD = [
    ("replicas-zero", {"replicas": 0}, "replicas must be >= 1"),
    ("quantity", {"resources": {"nvidia.com/gpu": "lots"}}, "is not a Kubernetes quantity"),
    ("timeout-zero", {"timeout": 0}, "timeout must be >= 1 (got 0)"),
    ("settle-negative", {"settle_seconds": -1}, "settle_seconds must be >= 0 (got -1)"),
    ("skew-negative", {"skew_seconds": -1}, "skew_seconds must be >= 0 (got -1)"),
    ("liveness-zero", {"liveness_timeout": 0}, "liveness_timeout must be >= 1 (got 0)"),
    ("kube-system", {"namespace": "kube-system"}, "namespace 'kube-system' is a system namespace"),
    ("kube-public", {"namespace": "kube-public"}, "namespace 'kube-public' is a system namespace"),
    ("kube-node-lease", {"namespace": "kube-node-lease"}, "namespace 'kube-node-lease' is a system namespace"),
    ("volcano-system", {"namespace": "volcano-system"}, "allow_system_namespace=true"),
    ("scheduler-plugins", {"namespace": "scheduler-plugins"}, "is a system namespace"),
    ("scheduler-own-ns", {"namespace": "gpu-sched"}, "namespace 'gpu-sched' is a system namespace"),
    ("namespace-format", {"namespace": "Bad_NS"}, "namespace 'Bad_NS' is not a valid namespace name"),
    ("run-id-format", {"run_id": "Bad Run!"}, "run_id 'Bad Run!' is not usable"),
    ("run-id-63", {"run_id": "a" * 64}, "at most 63"),
    ("run-id-names", {"run_id": "a" * 45}, "run_id '" + "a" * 45 + "' is too long"),
    ("report-dir-under-a-file", {"report_dir": "FILE/reports"}, "report_dir"),
    ("running-500", {"replicas": 500, "expect": "running"}, "only 4 member(s) of 1 nvidia.com/gpu fit"),
    (
        "trainjob-koordinator",
        {"workload": "trainjob", "gang_scheduler": "koordinator"},
        "workload=trainjob cannot be tested with gang_scheduler=koordinator",
    ),
    ("trainer-runtime-not-trainjob", {"trainer_runtime": "torch"}, "not workload=pods; set workload=trainjob"),
    ("trainer-runtime-name", {"workload": "trainjob", "trainer_runtime": "Bad_RT"}, "trainer_runtime='Bad_RT'"),
    ("trainjob-no-trainer", {"workload": "trainjob"}, "no Deployment runs Kubeflow Trainer v2"),
    (
        "running-per-node",
        {"replicas": 4, "expect": "running", "resources": {"nvidia.com/gpu": 2}, "_nodes": MIXED},
        "only 3 member(s) of 2 nvidia.com/gpu fit",
    ),
]


@pytest.mark.parametrize("case,over,message", BAD, ids=[b[0] for b in BAD])
@pytest.mark.parametrize("check_mode", [False, True], ids=["real", "check"])
def test_bad_input_is_refused_before_anything_is_created(tmp_path, case, over, message, check_mode):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    over = dict(over)
    if over.get("report_dir"):
        over["report_dir"] = over["report_dir"].replace("FILE", str(a_file))
    client = FakeClient(nodes=over.pop("_nodes", FOUR_BY_ONE), deployments=[_volcano(), _volcano("gpu-sched")])
    with pytest.raises(GangError) as e:
        _smoke.run(client, params(**over), check_mode, lambda m: None)
    assert message in e.value.msg, e.value.msg
    assert client.writes == [], client.writes
    assert sorted(os.listdir(tmp_path)) == ["a-file"]


def test_report_dir_is_created_before_the_test_but_not_in_check_mode(tmp_path):
    where = tmp_path / "r" / "s"
    client = FakeClient()
    res = _smoke.run(client, params(report_dir=str(where), replicas=5), True, print)
    assert res["verdict"] is None and not where.exists() and client.writes == []
    # the runner writes the reports (here of a preflight error: no scheduler serves the name)
    client = FakeClient(deployments=[])
    res = _smoke.run(client, params(report_dir=str(where), replicas=2), False, print)
    assert res["verdict"] == V.ERROR and where.is_dir()
    assert sorted(os.listdir(where)) == [
        "gang-smoke-preflight.json",
        "gang-smoke-preflight.svg",
        "gang-smoke-preflight.xml",
    ]
    assert res["reports"]["json"] == str(where / "gang-smoke-preflight.json")


def test_system_namespace_with_allow_passes_validation():
    client = FakeClient()
    res = _smoke.run(client, params(namespace="kube-system", allow_system_namespace=True), True, print)
    assert res["namespace"] == "kube-system" and res["verdict"] is None and client.writes == []


@pytest.mark.parametrize(
    "deployments,fragment",
    [
        ([_volcano(args=["--scheduler-name=other"])], "serves 'other' (--scheduler-name)"),
        ([_volcano(ready=0)], "Volcano Deployment volcano-system/vc-scheduler serves 'volcano' but has no ready"),
        ([], "no ready scheduler serves 'volcano'"),
    ],
    ids=["name-not-served", "scaled-to-0", "none"],
)
def test_scheduler_not_serving_or_not_ready_is_an_error_naming_it_and_nothing_is_created(deployments, fragment):
    client = FakeClient(deployments=deployments)
    res = _smoke.run(client, params(replicas=2), False, print)
    assert res["verdict"] == V.ERROR and res["ok"] is False and fragment in res["cause"], res["cause"]
    assert res["_failed"].startswith("Gang smoke test: verdict error")
    assert client.writes == []


def test_canary_not_bound_is_an_error_naming_the_scheduler_and_no_gang_is_created():
    client = FakeClient(bind=False)
    over = {"replicas": 2, "expect": "pending", "liveness_timeout": 1, "keep_namespace": True}
    res = _smoke.run(client, params(**over), False, print)
    # an error verdict: the namespace the run made is removed, keep_namespace or not
    assert res["namespace_kept"] is False and ("DELETE", "/api/v1/namespaces/gangsched-smoke") in client.writes
    assert res["verdict"] == V.ERROR and res["ok"] is False
    assert "scheduler 'volcano' (Volcano Deployment volcano-system/vc-scheduler)" in res["cause"], res["cause"]
    assert "did not bind the liveness canary" in res["cause"]
    assert res["liveness"] == {"canary_seconds": None, "recheck_seconds": None, "timeout": 1}
    posted = [p for m, p in client.writes if m == "POST"]
    # the namespace, the canary's PodGroup and pod: no gang member
    assert posted == [
        "/api/v1/namespaces",
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/gangsched-smoke/podgroups",
        "/api/v1/namespaces/gangsched-smoke/pods",
    ]
    canary = [o for o in client.calls if o[0] == "DELETE" and o[1].endswith("-live1-0")]
    assert canary, client.calls
    assert client.objects == {}


class _BindsLater(FakeClient):
    """Creates pods without a node; the scheduler binds one on the watch's second round."""

    def __init__(self):
        super().__init__(bind=False)
        self.rounds = 0

    def watch(self, path, timeout_seconds, what="", fieldSelector=None, **query):
        self.rounds += 1
        if self.rounds == 2:
            for p, o in self.objects.items():
                if p.startswith(path + "/") and o["kind"] == "Pod":
                    o["spec"] = {**o["spec"], "nodeName": "g1"}
        yield from super().watch(path, timeout_seconds, what, fieldSelector=fieldSelector, **query)


def test_the_canary_is_watched_from_its_create_not_polled():
    client = _BindsLater()
    trial = _trial.Trial(client, params(liveness_timeout=5), "r1", "volcano", WHO)
    assert trial.canary(1, 5) is not None
    pod = "/api/v1/namespaces/gangsched-smoke/pods"
    assert client.calls.count(("WATCH", pod)) == 2, client.calls
    assert not [c for c in client.calls if c[0] == "GET"], client.calls
    # removed at once, bound or not
    assert client.objects == {}


def test_a_canary_deleted_while_watched_is_not_bound():
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._waiter import wait_pod_bound

    class _Deletes:
        def watch(self, path, timeout_seconds, what="", **query):
            yield {"type": "DELETED", "object": {"metadata": {"name": "p", "resourceVersion": "9"}, "spec": {}}}

    pod = {"metadata": {"name": "p", "resourceVersion": "3"}, "spec": {}}
    assert wait_pod_bound(_Deletes(), "ns", pod, 5) is False


class _Refuses(FakeClient):
    """A scheduler that looks at a canary and refuses it (its PodScheduled condition False, as Coscheduling says when
    its cache does not hold the new PodGroup yet); with ``binds_fresh``, it binds the fresh canary made after."""

    SAID = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "PodGroup not found"}

    def __init__(self, binds_fresh: bool):
        super().__init__(bind=False)
        self.binds_fresh = binds_fresh

    def watch(self, path, timeout_seconds, what="", fieldSelector=None, **query):
        self.calls.append(("WATCH", path))
        name = (fieldSelector or "").partition("metadata.name=")[2]
        obj = self.objects.get(f"{path}/{name}")
        if obj is not None:
            if self.binds_fresh and name.endswith("b-0"):
                obj["spec"] = {**obj["spec"], "nodeName": "g1"}
            else:
                obj["status"] = {"conditions": [self.SAID]}
            yield {"type": "MODIFIED", "object": obj}
            if obj["spec"].get("nodeName"):
                return
        time.sleep(min(0.05, timeout_seconds))


def test_a_refused_canary_is_replaced_once_by_a_fresh_one(monkeypatch):
    """A scheduler that refused the canary (it looked before its caches held the new PodGroup) is asked again with a
    fresh canary after CANARY_RETRY seconds, within the same liveness timeout; it binds that one."""
    monkeypatch.setattr(_trial, "CANARY_RETRY", 0.2)
    monkeypatch.setattr(_waiter, "ROUND", 0.1)
    client = _Refuses(binds_fresh=True)
    trial = _trial.Trial(client, params(liveness_timeout=2), "r1", "volcano", WHO)
    secs = trial.canary(1, 2)
    assert secs is not None and 0.2 <= secs < 2, secs
    pods = [p for m, p in client.writes if m == "POST" and p.endswith("/pods")]
    assert len(pods) == 2 and trial.canary_problem is None
    # both removed at once
    assert client.objects == {}


def test_a_canary_refused_twice_names_what_the_scheduler_said(monkeypatch):
    monkeypatch.setattr(_trial, "CANARY_RETRY", 0.2)
    monkeypatch.setattr(_waiter, "ROUND", 0.1)
    client = _Refuses(binds_fresh=False)
    res = _smoke.run(client, params(replicas=2, expect="pending", liveness_timeout=1), False, print)
    assert res["verdict"] == V.ERROR and res["ok"] is False
    assert res["cause"].startswith(WHO + " looked at the liveness canary"), res["cause"]
    assert "nor a fresh one: it said Unschedulable: PodGroup not found" in res["cause"], res["cause"]
    pods = [p for m, p in client.writes if m == "POST" and p.endswith("/pods")]
    assert len(pods) == 2, client.writes


def test_a_canary_held_by_a_scheduling_gate_is_not_replaced(monkeypatch):
    """A pod held by a scheduling gate was not refused by the scheduler: a fresh canary would be held too."""
    monkeypatch.setattr(_trial, "CANARY_RETRY", 0.2)
    monkeypatch.setattr(_waiter, "ROUND", 0.1)
    client = _Refuses(binds_fresh=True)
    client.SAID = {**_Refuses.SAID, "reason": "SchedulingGated", "message": "Scheduling is blocked due to gates"}
    trial = _trial.Trial(client, params(liveness_timeout=1), "r1", "volcano", WHO)
    assert trial.canary(1, 1) is None
    assert len([p for m, p in client.writes if m == "POST" and p.endswith("/pods")]) == 1
    assert "did not bind it in 1s: it said SchedulingGated: Scheduling is blocked" in trial.canary_problem


def test_a_canary_no_scheduler_looked_at_is_not_replaced(monkeypatch):
    """No word from any scheduler (frozen, or serving another name): the same canary is waited for, the whole
    timeout, and the cause is the scheduler not scheduling."""
    monkeypatch.setattr(_trial, "CANARY_RETRY", 0.2)
    monkeypatch.setattr(_waiter, "ROUND", 0.1)
    client = FakeClient(bind=False)
    trial = _trial.Trial(client, params(liveness_timeout=1), "r1", "volcano", WHO)
    assert trial.canary(1, 1) is None and trial.canary_problem is None
    assert len([p for m, p in client.writes if m == "POST" and p.endswith("/pods")]) == 1


def test_the_canary_stops_when_the_controller_is_gone(monkeypatch):
    monkeypatch.setattr(_trial, "controller_gone", lambda: True)
    client = FakeClient(bind=False)
    trial = _trial.Trial(client, params(), "r1", "volcano", WHO)
    with pytest.raises(_trial.Interrupted):
        trial.canary(1, 5)
    assert client.objects == {}


def _gang(size=2, rejected=False, present=0.0):
    g = V.Gang(size=size, skew_seconds=1)
    for i in range(size):
        g.observe("ADDED", {"metadata": {"name": f"m{i}", "resourceVersion": str(i + 1)}, "status": {}}, present)
    if rejected:
        for i in range(size):
            g.observe(
                "MODIFIED",
                {
                    "metadata": {"name": f"m{i}", "resourceVersion": str(10 + i)},
                    "status": {"conditions": [{"type": "PodScheduled", "status": "False", "message": "0/4 fit"}]},
                },
                present + 1,
            )
    return g


WHO = "scheduler 'volcano' (Volcano Deployment volcano-system/vc-scheduler)"


@pytest.mark.parametrize(
    "verdict,expect,rejected,fragments",
    [
        (V.INCONCLUSIVE, "pending", False, [WHO, "never rejected the whole gang", "m0, m1", "canary in 0.5s"]),
        (V.INCONCLUSIVE, "running", False, [WHO, "no member was bound in 30s"]),
        (V.GANG_HELD_PENDING, "running", True, [WHO, "rejected every member", "0/4 fit"]),
        (V.TIMEOUT, "running", False, [WHO, "bound no member in 30s"]),
    ],
)
def test_causes_name_the_scheduler(verdict, expect, rejected, fragments):
    g = _gang(rejected=rejected)
    cause = _diagnosis.gang_cause(verdict, g, expect, WHO, 30, {"before": 0.5})
    for f in fragments:
        assert f in cause, cause


@pytest.mark.parametrize("verdict", [V.GANG_HELD_RUNNING, V.PARTIAL])
def test_no_cause_where_the_verdict_speaks_for_itself(verdict):
    assert _diagnosis.gang_cause(verdict, _gang(), "running", WHO, 30, {}) is None


def test_settled_alone_is_never_a_success():
    g = _gang()
    for t in (5.0, 20.0, 179.0):
        assert g.verdict(t, 5, "pending") is None
    assert g.unproven(20.0, 5) and g.final(180.0, 5) == V.INCONCLUSIVE and g.held_pending_by is None
    r = _gang(rejected=True)
    assert r.verdict(2.0, 5, "pending") == V.GANG_HELD_PENDING and r.held_pending_by == "rejected"


@pytest.mark.parametrize(
    "nodes,per,slots",
    [
        (MIXED, 2, 3),
        (MIXED, 1, 8),
        (MIXED, 3, 0),
        (FOUR_BY_ONE, 1, 4),
        (FOUR_BY_ONE + [_node("off", 8, schedulable=False)], 1, 4),
        ([_node("big", 3)], 2, 1),
    ],
)
def test_slots_are_counted_node_by_node(nodes, per, slots):
    per_node = C.nodes_capacity(nodes, [])
    assert C.member_slots(per_node, per) == slots
    assert gang_slots(per_node, per) == slots
    assert gang_slots(per_node, str(per)) == slots


@pytest.mark.parametrize("nodes,per", [("x", 1), ([{"free": 1, "schedulable": True}], 0), ([], "lots")])
def test_gang_slots_filter_refuses_bad_input(nodes, per):
    with pytest.raises(AnsibleFilterError):
        gang_slots(nodes, per)


# ---- gang_info ------------------------------------------------------------------------------------
def _sched(names, ready=True, ns="volcano-system", name="vc-scheduler"):
    return {
        "kind": "volcano",
        "namespace": ns,
        "name": name,
        "source": "Deployment",
        "ready": ready,
        "scheduler_names": names,
        "gang_profiles": names,
    }


def _pending(name, scheduler="volcano", age=120, scheduled=None):
    ts = __import__("datetime").datetime.fromtimestamp(NOW - age, __import__("datetime").timezone.utc)
    conds = [{"type": "PodScheduled", "status": scheduled}] if scheduled else []
    return {
        "metadata": {"namespace": "team", "name": name, "creationTimestamp": ts.strftime("%Y-%m-%dT%H:%M:%SZ")},
        "spec": {"schedulerName": scheduler},
        "status": {"phase": "Pending", "conditions": conds},
    }


def test_a_ready_scheduler_that_looks_at_no_pod_is_a_problem_with_a_fix():
    probs = _gang_info.stalled([_pending("a"), _pending("b", age=90)], [_sched(["volcano"])], [], NOW, 60)
    assert len(probs) == 1
    assert "Deployment volcano-system/vc-scheduler is Ready but makes no progress" in probs[0]["message"]
    assert "2 Pending pod(s)" in probs[0]["message"] and "team/a" in probs[0]["message"]
    assert "rollout restart deployment/vc-scheduler" in probs[0]["fix"]


@pytest.mark.parametrize(
    "pods",
    [
        [_pending("young", age=10)],
        [_pending("rejected", scheduled="False")],
        [_pending("other", scheduler="default-scheduler")],
        [{**_pending("bound"), "spec": {"schedulerName": "volcano", "nodeName": "n"}}],
    ],
    ids=["young", "looked-at", "other-scheduler", "bound"],
)
def test_no_progress_problem_only_for_pods_no_scheduler_looked_at_long_enough(pods):
    assert _gang_info.stalled(pods, [_sched(["volcano"])], [], NOW, 60) == []


def test_pods_naming_a_scheduler_nobody_serves_are_a_problem():
    probs = _gang_info.stalled([_pending("a")], [_sched(["other"])], [], NOW, 60)
    assert len(probs) == 1 and "name scheduler 'volcano', which no running scheduler serves" in probs[0]["message"]
    assert "serves other" in probs[0]["message"]


def test_volcano_serving_another_name_than_the_operators_flag_is_a_problem():
    ops = [
        {
            "operator": "training_operator",
            "deployment": "kubeflow/training-operator",
            "gang_flag": "gang-scheduler-name",
            "gang_value": "volcano",
            "flag_occurrences": 1,
            "_container": {},
        }
    ]
    crds = {"podgroups.scheduling.volcano.sh": {"established": True}}
    probs = _gang_info.problems(FakeClient(), ops, [_sched(["other"])], crds, [])
    msgs = [p["message"] for p in probs]
    assert any("--gang-scheduler-name=volcano names no scheduler" in m and "serves other" in m for m in msgs), msgs
    assert _gang_info.problems(FakeClient(), ops, [_sched(["volcano"])], crds, []) == []


def test_volcano_serving_only_another_name_is_a_problem_without_any_operator():
    probs = _gang_info.path_problems(FakeClient(), [_sched(["lab-other"])], [], None)
    assert [p["object"] for p in probs] == ["Deployment volcano-system/vc-scheduler"]
    assert "serves only lab-other (--scheduler-name), not 'volcano'" in probs[0]["message"]
    assert _gang_info.path_problems(FakeClient(), [_sched(["lab-other", "volcano"])], [], None) == []


class _Clock:
    """Advances half a second each time it is read."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        self.t += 0.5
        return self.t


class _Unbound:
    """A watch whose gang members exist and are never bound nor marked by any scheduler."""

    def __init__(self, client, path, what, **query):
        self.fed = False

    def run(self, on_event, timeout):
        if not self.fed:
            for i in range(2):
                on_event("ADDED", {"metadata": {"name": f"m{i}", "resourceVersion": str(i + 1)}, "spec": {}}, {})
            self.fed = True
        return False


@pytest.mark.parametrize("still_binding", [False, True], ids=["stopped", "live"])
def test_unbound_unrejected_gang_rechecks_liveness(monkeypatch, still_binding):
    monkeypatch.setattr(_watch, "Watcher", _Unbound)
    client = FakeClient(bind=still_binding)
    p = params(timeout=20, settle_seconds=3, liveness_timeout=2, expect="pending", run_id="r1")
    trial = _trial.Trial(client, p, "r1", "volcano", WHO, clock=_Clock())
    trial.liveness["before"] = 0.4  # the first canary was bound
    g = trial.one_gang({"nvidia.com/gpu": "1"}, "pending", control=False)
    posted = [path for m, path in client.writes if m == "POST"]
    assert posted.count("/api/v1/namespaces/gangsched-smoke/pods") == 3  # 2 members, 1 canary
    if still_binding:
        assert g["verdict"] == V.INCONCLUSIVE and trial.liveness["during"] is not None
        assert "never rejected the whole gang" in g["cause"] and "again in" in g["cause"], g["cause"]
    else:
        assert g["verdict"] == V.ERROR and trial.liveness["during"] is None
        assert WHO + " stopped scheduling" in g["cause"], g["cause"]


def test_an_operator_flag_naming_koord_scheduler_is_a_problem_with_the_label_route():
    """The trap seen on the lab: training-operator with --gang-scheduler-name=koord-scheduler makes
    scheduling.x-k8s.io PodGroups that koord-scheduler ignores, and a job starts partially."""
    ops = [
        {
            "operator": "training_operator",
            "deployment": "kubeflow/training-operator",
            "gang_flag": "gang-scheduler-name",
            "gang_value": "koord-scheduler",
            "flag_occurrences": 1,
            "_container": {},
        }
    ]
    koord = {**_sched(["koord-scheduler"], ns="koordinator-system", name="koord-scheduler"), "kind": "koordinator"}
    probs = _gang_info.problems(FakeClient(), ops, [koord], {}, [])
    assert len(probs) == 1, probs
    assert "koord-scheduler, which ignores the PodGroups" in probs[0]["message"]
    assert "starts partially" in probs[0]["message"] and "label_gang" in probs[0]["fix"]
    assert probs[0]["object"] == "Deployment kubeflow/training-operator"


def test_a_koord_scheduler_that_cannot_gang_schedule_is_a_problem():
    """v1.7.0 with Coscheduling's preBind on, and the two Koordinator CRDs it needs at start missing."""
    koord = {
        **_sched(["koord-scheduler"], ns="koordinator-system", name="koord-scheduler"),
        "kind": "koordinator",
        "version": "v1.7.0",
        "coscheduling_prebind": True,
    }

    class NoKoordinatorCrds(FakeClient):
        def get_or_none(self, path, what=""):
            return None if "koordinator.sh" in path else super().get_or_none(path, what)

    probs = _gang_info.path_problems(NoKoordinatorCrds(), [koord], [], "v1.33.5")
    msgs = [p["message"] for p in probs]
    assert any(
        "reservations.scheduling.koordinator.sh, devices.scheduling.koordinator.sh" in m and "does not start" in m
        for m in msgs
    ), msgs
    assert any("binds no gang member" in m for m in msgs), msgs
    assert all(p["object"] == "Deployment koordinator-system/koord-scheduler" and p["fix"] for p in probs)
    assert _gang_info.path_problems(FakeClient(), [_sched(["volcano"])], [], "v1.33.5") == []


# ---- workload trainjob ------------------------------------------------------------------------------
def _controller(image, ns, name):
    return {
        "metadata": {"namespace": ns, "name": name},
        "spec": {"template": {"spec": {"containers": [{"name": "manager", "image": image}]}}},
        "status": {"readyReplicas": 1},
    }


TRAINER = _controller(
    "ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.2.0",
    "kubeflow-system",
    "kubeflow-trainer-controller-manager",
)
JOBSET = _controller("registry.k8s.io/jobset/jobset:v0.11.1", "jobset-system", "jobset-controller-manager")
CTR = "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes"


class _TrainerClient(FakeClient):
    """With Trainer and JobSet running; SubjectAccessReviews answered with ``allowed``."""

    allowed = True

    def request(self, method, path, body=None, query=None, **kw):
        if path == "/apis/authorization.k8s.io/v1/subjectaccessreviews":
            self.calls.append((method, path))
            return {"status": {"allowed": self.allowed}}
        return super().request(method, path, body, query, **kw)


def _trainjob_client(allowed=True, **kw):
    client = _TrainerClient(deployments=[_volcano(), TRAINER, JOBSET], **kw)
    client.allowed = allowed
    return client


def test_a_users_runtime_without_podgrouppolicy_is_an_error_with_the_fix_and_nothing_is_created():
    client = _trainjob_client()
    client.objects[f"{CTR}/torch"] = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "torch"},
        "spec": {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {}}]}}},
    }
    res = _smoke.run(client, params(workload="trainjob", trainer_runtime="torch", replicas=5), False, print)
    assert res["verdict"] == V.ERROR and res["ok"] is False, res
    assert "ClusterTrainingRuntime torch has no spec.podGroupPolicy" in res["cause"], res["cause"]
    assert "trainer_runtime_gang filter (gang_scheduler=volcano, scheduler_name=volcano)" in res["cause"]
    assert res["runtime"] == {"kind": "ClusterTrainingRuntime", "name": "torch", "created": False}
    assert res["_failed"].startswith("Gang smoke test: verdict error") and client.writes == []


def test_a_missing_users_runtime_is_refused_before_anything_is_created():
    client = _trainjob_client()
    with pytest.raises(GangError) as e:
        _smoke.run(client, params(workload="trainjob", trainer_runtime="nope"), False, print)
    assert "ClusterTrainingRuntime nope not found (trainer_runtime)" in e.value.msg and client.writes == []


def test_check_mode_scans_for_leftovers_once_per_kind_and_predicts_the_trainjob_run():
    client = _trainjob_client()
    res = _smoke.run(client, params(workload="trainjob", replicas=5, run_id="r1"), True, print)
    assert res["verdict"] is None and res["expected"] == "pending" and client.writes == []
    assert res["runtime"] == {"kind": "TrainingRuntime", "name": "gangsched-smoke/smoke-r1-gang", "created": True}
    for kind, version in _smoke_objects.RUN_KINDS:
        path = _api.path(kind, "gangsched-smoke", api_version_=version)
        assert client.calls.count(("GET", path)) == 1, (kind, client.calls)


class _Feed:
    """A watch that delivers ``pods`` once, then nothing."""

    pods: list = []

    def __init__(self, client, path, what, **query):
        self.fed = False

    def run(self, on_event, timeout):
        done = False
        if not self.fed:
            self.fed = True
            for p in self.pods:
                done = on_event("ADDED", p, {}) or done
        return done


def _member(i, sname, running=True):
    return {
        "metadata": {"name": f"smoke-r1-gang-node-0-{i}-x", "resourceVersion": str(i + 1)},
        "spec": {"schedulerName": sname, **({"nodeName": f"g{i}"} if running else {})},
        "status": {"phase": "Running" if running else "Pending"},
    }


def _pg(min_member, owner="TrainJob"):
    return {
        "metadata": {"name": "smoke-r1-gang", "ownerReferences": [{"kind": owner, "name": "smoke-r1-gang"}]},
        "spec": {"minMember": min_member},
        "status": {"phase": "Running"},
    }


PG_PATH = "/apis/scheduling.volcano.sh/v1beta1/namespaces/gangsched-smoke/podgroups/smoke-r1-gang"


FORBIDDEN = (
    "Forbidden: ServiceAccount kubeflow-system/default of Deployment "
    "kubeflow-system/kubeflow-trainer-controller-manager may not create scheduling.volcano.sh/podgroups in "
    "namespace gangsched-smoke; grant it with gangsched.kubeflow.gang_rbac (component=trainer, gang_scheduler=volcano)"
)


@pytest.mark.parametrize(
    "pg,sname,allowed,verdict,words",
    [
        (_pg(2), "volcano", True, V.GANG_HELD_RUNNING, []),
        (_pg(1), "volcano", True, V.ERROR, ["has minMember 1, not the TrainJob's 2 pods", "not be all or nothing"]),
        (_pg(2, owner="PyTorchJob"), "volcano", True, V.ERROR, ["is not Trainer's for TrainJob", "PyTorchJob"]),
        (_pg(2), "default-scheduler", True, V.ERROR, ["JobSet created pod", "'default-scheduler'", "runtime_gang"]),
        (None, "volcano", True, V.ERROR, ["no PodGroup was created for TrainJob", "their CRD existed when it started"]),
        (None, "volcano", False, V.ERROR, [FORBIDDEN]),
    ],
    ids=["trainers-podgroup", "min-member", "not-trainers", "scheduler-name", "no-podgroup", "forbidden"],
)
def test_a_trainjob_verdict_rests_on_trainers_podgroup_for_the_whole_gang(
    monkeypatch, pg, sname, allowed, verdict, words
):
    _Feed.pods = [_member(i, sname) for i in range(2)]
    monkeypatch.setattr(_watch, "Watcher", _Feed)
    monkeypatch.setattr(_watch, "PODGROUP_WAIT", 1.0)
    client = _trainjob_client(allowed)
    if pg:
        client.objects[PG_PATH] = pg
    p = params(workload="trainjob", timeout=20, run_id="r1")
    trial = _trial.Trial(client, p, "r1", "volcano", WHO, clock=_Clock(), trainer_deployments=[TRAINER])
    g = trial.one_gang({"nvidia.com/gpu": "1"}, "running", control=False)
    assert g["verdict"] == verdict, g
    for w in words:
        assert w in g["cause"], g["cause"]
    posted = [path for m, path in client.writes if m == "POST" and "subjectaccessreviews" not in path]
    assert posted == [
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/gangsched-smoke/trainingruntimes",
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/gangsched-smoke/trainjobs",
    ]
    if verdict == V.GANG_HELD_RUNNING:
        assert g["podgroup"] == {"name": "smoke-r1-gang", "min_member": 2, "owners": ["TrainJob smoke-r1-gang"]}


class _ReadKeys(_TrainerClient):
    """Trainer, JobSet and Volcano running, the native gang's API served, a ClusterTrainingRuntime torch; records each
    read as the client's ``get`` keys it (``_together.read_key``): a list's query is its first page's."""

    def __init__(self):
        super().__init__(deployments=[_volcano(), TRAINER, JOBSET])
        self.keys: list[tuple] = []
        self.objects["/apis/scheduling.k8s.io"] = {"versions": [{"version": "v1beta1"}]}
        self.objects["/apis/scheduling.k8s.io/v1beta1"] = {"resources": [{"name": "workloads"}, {"name": "podgroups"}]}
        self.objects[f"{CTR}/torch"] = {"metadata": {"name": "torch"}, "spec": {}}

    def get(self, path, what="", query=None, retry_for=None):
        self.keys.append(_together.read_key(path, what, query))
        return super().get(path, what, query, retry_for)

    def get_or_none(self, path, what=""):
        self.keys.append(_together.read_key(path, what, None))
        return super().get_or_none(path, what)

    def list(self, path, what="", **query):
        self.keys.append(_together.read_key(path, what, _api.list_query(**query)))
        return super().list(path, what, **query)

    list_or_empty = list


@pytest.mark.parametrize(
    "gang,workload,runtime",
    [(gang, "pods", None) for gang in _registry.GANG_PATHS]
    + [("volcano", "pytorchjob", None), ("volcano", "trainjob", "torch"), ("scheduler_plugins", "trainjob", None)],
)
def test_the_reads_asked_ahead_of_a_run_are_those_its_sweep_and_preflight_make(gang, workload, runtime, monkeypatch):
    """The sweep's lists and the preflight's reads (the path's CRD or API group, the job's CRDs, the Deployments, the
    kube-scheduler static pods, the user's runtime) are asked for together as a run starts, under the very keys the
    run then reads them by: a read asked ahead under another name or query would be sent for nothing, and one the run
    makes that was not asked ahead would go one after another again (only those that depend on another's answer: a
    scheduler's ConfigMap, the API group's versions)."""
    client = _ReadKeys()
    # which scheduler serves the name is not what this test is about: the reads are the same on any cluster
    monkeypatch.setattr(_registry, "derive_scheduler_name", lambda _gang, given, _schedulers: given or "volcano")
    p = params(gang_scheduler=gang, workload=workload, trainer_runtime=runtime)
    ahead = [_together.read_key(*r) for r in _sweep.stale_reads("gangsched-smoke", "r1")]
    ahead += [_together.read_key(*r) for r in _smoke_input.preflight_reads(p)]
    found = _sweep.find_stale(client, "gangsched-smoke", "r1")
    pf = _smoke_input.preflight(client, p, _sweep.stale_pods(client, "gangsched-smoke", "r1", found))
    assert pf["scheduler_name"]
    made = client.keys
    assert [k for k in ahead if k not in made] == []
    later = [k for k in made if k not in ahead]
    assert all("/configmaps/" in k[0] or k[0] == "/apis/scheduling.k8s.io/v1beta1" for k in later), later
    assert (runtime is not None) == any(k[0] == f"{CTR}/torch" for k in ahead)
    # all namespaces (state=absent): the namespaces' list too
    client.keys.clear()
    ahead = [_together.read_key(*r) for r in _sweep.stale_reads(None, None)]
    _sweep.find_stale(client, None)
    assert sorted(client.keys) == sorted(ahead) and ahead[-1][0] == "/api/v1/namespaces"


class _Recorder(FakeClient):
    """Records each DELETE's query; a deleted runtime stays until its second read (Trainer dropping its
    resource-in-use finalizer once the TrainJob is gone)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.deletes: list[tuple[str, dict]] = []
        self.reads_left: dict[str, int] = {}

    def request(self, method, path, body=None, query=None, **kw):
        if method == "DELETE":
            self.deletes.append((path, dict(query or {})))
            if "/trainingruntimes" in path and not (query or {}).get("labelSelector"):
                self.calls.append((method, path))
                self.reads_left[path] = 2
                return {}
        return super().request(method, path, body, query, **kw)

    def get_or_none(self, path, what=""):
        if path in self.reads_left:
            self.calls.append(("GET", path))
            self.reads_left[path] -= 1
            if self.reads_left[path] <= 0:
                self.objects.pop(path, None)
            return self.objects.get(path)
        return super().get_or_none(path, what)


def test_a_stale_trainjob_is_deleted_before_its_runtime_and_both_are_waited_for():
    tj = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/s/trainjobs/old"
    rt = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/s/trainingruntimes/old"
    client = _Recorder()
    client.objects[tj] = {"metadata": {"namespace": "s", "name": "old"}}
    client.objects[rt] = {"metadata": {"namespace": "s", "name": "old"}}
    removed, left = _sweep.remove_stale(client, "s", keep="mine", check_mode=False)
    assert removed == ["TrainJob s/old", "TrainingRuntime s/old"] and left == []
    # in the background: nothing updates the TrainJob, so neither Trainer nor its webhook need be up
    assert client.deletes == [(tj, {"propagationPolicy": "Background"}), (rt, {"propagationPolicy": "Background"})]
    assert client.calls.count(("GET", rt)) == 2, client.calls  # waited until gone
    assert ("GET", tj) in client.calls


def test_a_runs_cleanup_deletes_its_trainjob_before_its_runtime_and_waits_for_both():
    client = _Recorder()
    docs, _sel = _trainjobs.trainjob("s", "smoke-r-gang", "r", 2, {"nvidia.com/gpu": "1"}, "volcano", "volcano")
    left = _sweep.remove_run(client, "s", "r", docs, False, 5, clock=_Clock())
    assert left == []
    assert [(p.rsplit("/", 1)[-1], q["propagationPolicy"]) for p, q in client.deletes] == [
        ("trainjobs", "Background"),
        ("trainingruntimes", "Background"),
    ]
    waited = {p for m, p in client.calls if m == "GET"}
    assert "/apis/trainer.kubeflow.org/v1alpha1/namespaces/s/trainjobs" in waited
    assert "/apis/trainer.kubeflow.org/v1alpha1/namespaces/s/trainingruntimes" in waited


class _KueueLetsGoLater(FakeClient):
    """Kueue's Workload of a deleted queued job is listed for ``rounds`` more lists (its finalizer, the garbage
    collector), of ``owner`` ((kind, name)); a Workload of another job stays."""

    def __init__(self, rounds, owner=("PyTorchJob", "smoke-r-gang")):
        super().__init__()
        self.rounds = rounds
        self.owner = owner

    def list(self, path, what="", **query):
        if path.startswith("/apis/kueue.x-k8s.io/") and path.endswith("/workloads"):
            self.calls.append(("GET", path))
            other = {"metadata": {"name": "theirs", "ownerReferences": [{"kind": "PyTorchJob", "name": "theirs"}]}}
            if self.rounds <= 0:
                return [other]
            self.rounds -= 1
            kind, name = self.owner
            return [other, {"metadata": {"name": f"{name}-wl", "ownerReferences": [{"kind": kind, "name": name}]}}]
        return super().list(path, what, **query)

    list_or_empty = list


def _job() -> dict:
    md = {"name": "smoke-r-gang", "namespace": "s"}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": md}


def _queued_job() -> dict:
    return _queue_mod.queued(_job(), "smoke-r")


def test_a_runs_cleanup_waits_until_kueue_lets_its_queued_jobs_workloads_go():
    """The next trial's gang would be held for the quota a Workload of this one still holds."""
    client = _KueueLetsGoLater(rounds=2)
    left = _sweep.remove_run(client, "s", "r", [_queued_job()], False, 30, clock=_Clock())
    assert left == []
    assert client.rounds == 0  # listed until it was gone
    assert client.calls.count(("GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/s/workloads")) == 3


def test_a_workload_kueue_never_lets_go_is_named_as_left():
    client = _KueueLetsGoLater(rounds=10**6)
    left = _sweep.remove_run(client, "s", "r", [_queued_job()], False, 2, clock=_Clock())
    assert left == ["Workload s/smoke-r-gang-wl (Kueue's, of PyTorchJob smoke-r-gang)"]


def test_a_stale_queued_job_is_removed_and_its_workload_waited_for():
    """An earlier run interrupted before its cleanup: its job goes, the sweep ends once Kueue let its Workload go."""
    client = _KueueLetsGoLater(rounds=2)
    job = _job()
    job["metadata"]["labels"] = {"gangsched.kubeflow/smoke-run": "r"}
    client.objects[_api.path("PyTorchJob", "s", "smoke-r-gang")] = job
    removed, left = _sweep.remove_stale(client, "s", keep="mine", check_mode=False, timeout=30)
    assert removed == ["PyTorchJob s/smoke-r-gang"] and left == []
    assert client.rounds == 0


def test_a_run_without_kueue_reads_no_workload():
    client = _KueueLetsGoLater(rounds=10**6)
    assert _sweep.remove_run(client, "s", "r", [_job()], False, 5, clock=_Clock()) == []
    assert not [c for c in client.calls if c[1].endswith("/workloads")]


class _NamespaceGoesLater(FakeClient):
    """Namespace ``ns`` is there, terminating (``going``) or not, for ``reads`` more reads of it once deleted
    or already terminating."""

    def __init__(self, ns="old", going=True, reads=2):
        super().__init__()
        self.path = _api.path("Namespace", name=ns)
        md = {"name": ns, "labels": {"gangsched.kubeflow/smoke-run": "r0"}, "resourceVersion": "1"}
        if going:
            md["deletionTimestamp"] = "2026-12-07T09:00:00Z"
        self.objects[self.path] = {"apiVersion": "v1", "kind": "Namespace", "metadata": md}
        self.reads = reads
        self.going = going

    def request(self, method, path, body=None, query=None, **kw):
        if method == "DELETE" and path == self.path:
            self.calls.append((method, path))
            self.going = True  # the namespace controller empties it later
            return {}
        return super().request(method, path, body, query, **kw)

    def get_or_none(self, path, what=""):
        if path == self.path and self.going:
            self.calls.append(("GET", path))
            self.reads -= 1
            if self.reads < 0:
                self.objects.pop(path, None)
            return self.objects.get(path)
        return super().get_or_none(path, what)

    def watch(self, path, timeout_seconds, what="", fieldSelector=None, **query):
        if path != _api.path("Namespace") or not self.going:
            yield from super().watch(path, timeout_seconds, what, fieldSelector=fieldSelector, **query)
            return
        self.calls.append(("WATCH", path))
        self.reads -= 1
        if self.reads < 0 and self.path in self.objects:
            yield {"type": "DELETED", "object": self.objects.pop(self.path)}


@pytest.mark.parametrize("check_mode", [False, True], ids=["real", "check"])
def test_a_namespace_a_run_left_terminating_is_waited_for_not_deleted_again_nor_counted_as_removed(check_mode):
    """state=absent after a run that did not wait for its namespace: reporting it removed would say a change was made
    that an earlier run made."""
    client = _NamespaceGoesLater()
    removed, left = _sweep.remove_stale(client, None, None, check_mode=check_mode, timeout=30)
    assert removed == [] and left == []
    assert not [c for c in client.calls if c[0] == "DELETE"], client.calls
    # waited until gone (not in check mode, which removes nothing and waits for nothing)
    assert (client.path in client.objects) is check_mode


def test_a_stale_namespace_not_yet_terminating_is_deleted_counted_and_waited_for():
    client = _NamespaceGoesLater(going=False)
    removed, left = _sweep.remove_stale(client, None, None, check_mode=False, timeout=30)
    assert removed == ["Namespace old"] and left == []
    assert ("DELETE", client.path) in client.calls and client.path not in client.objects


@pytest.mark.parametrize("wait", [True, False], ids=["wait", "no-wait"])
def test_a_runs_cleanup_waits_for_its_namespace_only_when_told_to(wait):
    client = _NamespaceGoesLater(ns="s", going=False)
    left = _sweep.remove_run(client, "s", "r", [], True, 30, clock=_Clock(), wait_namespace=wait)
    assert left == [] and ("DELETE", client.path) in client.calls
    after = client.calls[client.calls.index(("DELETE", client.path)) + 1 :]
    # waited: read (and watched) until gone; not waited: never read again, still there, terminating
    assert bool(after) is wait and (client.path in client.objects) is not wait, after


def test_an_error_verdict_waits_for_the_namespace_even_without_wait_namespace_gone():
    client = FakeClient(bind=False)
    over = {"replicas": 2, "expect": "pending", "liveness_timeout": 1, "wait_namespace_gone": False}
    res = _smoke.run(client, params(**over), False, print)
    assert res["verdict"] == V.ERROR and res["namespace_terminating"] is False and res["namespace_kept"] is False
    ns = "/api/v1/namespaces/gangsched-smoke"
    assert ("GET", ns) in client.calls[client.calls.index(("DELETE", ns)) + 1 :], client.calls


class _CacheLag(_TrainerClient):
    """Trainer's webhook refuses the first ``refusals`` TrainJobs: its cache has not seen the runtime."""

    refusals = 2

    def request(self, method, path, body=None, query=None, **kw):
        if method == "POST" and path.endswith("/trainjobs") and self.refusals:
            self.refusals -= 1
            self.calls.append((method, path))
            ref = body["spec"]["runtimeRef"]["name"]
            raise Forbidden(f'Forbidden to create TrainJob: TrainingRuntime "{ref}" not found: created before?', 403)
        return super().request(method, path, body, query, **kw)


@pytest.mark.parametrize("users_runtime", [False, True], ids=["own-runtime", "users-runtime"])
def test_a_trainjob_refused_until_trainer_has_seen_the_runtime_just_made_is_sent_again(monkeypatch, users_runtime):
    monkeypatch.setattr(_trial.time, "sleep", lambda s: None)
    client = _CacheLag(deployments=[_volcano(), TRAINER, JOBSET])
    user = {"kind": "ClusterTrainingRuntime", "metadata": {"name": "torch"}, "spec": {}}
    trial = _trial.Trial(
        client,
        params(workload="trainjob"),
        "r1",
        "volcano",
        WHO,
        clock=_Clock(),
        runtime=user if users_runtime else None,
    )
    docs, _sel = _trainjobs.trainjob(
        "gangsched-smoke", "g", "r1", 2, {"nvidia.com/gpu": "1"}, "volcano", "volcano", trial.runtime
    )
    if users_runtime:
        # a runtime the run did not make is not waited for: the refusal is the answer
        with pytest.raises(Forbidden):
            trial.create(docs)
        assert client.refusals == 1
    else:
        trial.create(docs)
        assert [d["kind"] for d in trial.created] == ["TrainingRuntime", "TrainJob"] and client.refusals == 0


@pytest.mark.parametrize(
    "crd,words",
    [
        ("trainjobs.trainer.kubeflow.org", "install Kubeflow Trainer v2 (ghcr.io/kubeflow/trainer/trainer-controller"),
        ("jobsets.jobset.x-k8s.io", "install JobSet (registry.k8s.io/jobset/jobset) first (workload=trainjob)"),
    ],
)
def test_trainjob_without_trainers_or_jobsets_crd_names_what_to_install(crd, words):
    class Missing(_TrainerClient):
        def get_or_none(self, path, what=""):
            return None if path.endswith("/" + crd) else super().get_or_none(path, what)

    client = Missing(deployments=[_volcano(), TRAINER, JOBSET])
    with pytest.raises(GangError) as e:
        _smoke.run(client, params(workload="trainjob"), False, print)
    assert f"CustomResourceDefinition {crd} is missing" in e.value.msg and words in e.value.msg, e.value.msg
    assert client.writes == []


class _NoAccountYet(FakeClient):
    """Refuses pods as the ServiceAccount admission does while the namespace has no ServiceAccount, ``refusals``
    times (None: always)."""

    def __init__(self, refusals):
        super().__init__()
        self.refusals = refusals

    def request(self, method, path, body=None, query=None, **kw):
        if method == "POST" and body["kind"] == "Pod" and (self.refusals is None or self.refusals > 0):
            from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import Forbidden

            self.refusals = None if self.refusals is None else self.refusals - 1
            ns = body["metadata"]["namespace"]
            raise Forbidden(
                f'pods "{body["metadata"]["name"]}" is forbidden: error looking up service account {ns}/default: '
                'serviceaccount "default" not found'
            )
        return super().request(method, path, body, query, **kw)


def test_pods_refused_until_the_namespaces_service_account_exists_are_created_again(monkeypatch):
    monkeypatch.setattr(_trial.time, "sleep", lambda s: None)
    client = _NoAccountYet(refusals=3)
    trial = _trial.Trial(client, params(), "r1", "volcano", WHO, clock=_Clock())
    (pod,) = trial.create([_pod_doc()])
    assert pod["metadata"]["name"] == "p0" and client.refusals == 0


def test_a_service_account_that_never_comes_is_an_error_naming_kube_controller_manager(monkeypatch):
    monkeypatch.setattr(_trial.time, "sleep", lambda s: None)
    trial = _trial.Trial(_NoAccountYet(refusals=None), params(), "r1", "volcano", WHO, clock=_Clock())
    with pytest.raises(_trial.GangError, match="has no ServiceAccount yet .*check that kube-controller-manager runs"):
        trial.create([_pod_doc()])


def _pod_doc():
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p0", "namespace": "gangsched-smoke"}, "spec": {}}
