"""Capacity maths, RBAC rule sets and their coverage, the rollout predicate, the re-listing watcher and
the partial-gang scan."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _capacity as C
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _rbac
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import (
    ApiError,
    Forbidden,
    GangError,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _waiter
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _gang_info
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _sweep


@pytest.mark.parametrize("q,v", [("2", 2), (3, 3), ("500m", 0.5), ("1Ki", 1024), ("1G", 1e9), ("1.5", 1.5)])
def test_quantity(q, v):
    assert C.quantity(q) == v


@pytest.mark.parametrize("q", ["", "lots", None, True])
def test_bad_quantity(q):
    with pytest.raises(ValueError):
        C.quantity(q)


def _node(name, gpus, ready=True, unschedulable=False):
    return {
        "metadata": {"name": name},
        "spec": {"unschedulable": unschedulable},
        "status": {
            "capacity": {"nvidia.com/gpu": str(gpus)},
            "allocatable": {"nvidia.com/gpu": str(gpus)},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def _pod(node, gpus, phase="Running", init=0):
    spec = {"nodeName": node, "containers": [{"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    if init:
        spec["initContainers"] = [{"resources": {"requests": {"nvidia.com/gpu": str(init)}}}]
    return {"metadata": {"name": "p"}, "spec": spec, "status": {"phase": phase}}


def test_capacity_counts_bound_nonterminal_pods_and_init_max():
    nodes = [_node("a", 2), _node("b", 2), _node("c", 4, ready=False), _node("d", 1, unschedulable=True)]
    pods = [_pod("a", 1), _pod("a", 1, phase="Succeeded"), _pod("b", 1, init=2)]
    per = {n["name"]: n for n in C.nodes_capacity(nodes, pods)}
    assert (per["a"]["requested"], per["a"]["free"]) == (1, 1)
    assert (per["b"]["requested"], per["b"]["free"]) == (2, 0)
    assert not per["c"]["schedulable"] and not per["d"]["schedulable"]
    assert C.gang_fits(list(per.values()), 1, 1) == (True, 1)
    assert C.gang_fits(list(per.values()), 2, 1) == (False, 1)


def test_gang_fits_per_node_granularity():
    per = C.nodes_capacity([_node("a", 3), _node("b", 3)], [])
    assert C.gang_fits(per, 2, 2) == (True, 2)
    assert C.gang_fits(per, 3, 2) == (False, 2)  # 6 GPUs free but only 2 pods of 2 fit


def test_rbac_tables_have_no_wildcards_and_cover_themselves():
    for (component, _gang), rules in _rbac.RULES.items():
        assert not any(_rbac.has_wildcard(r) for r in rules), component
        for c in _rbac.checks(rules):
            assert _rbac.covers(rules, *c)


def test_operator_rules_name_the_right_podgroup_group():
    vc = _rbac.checks(_rbac.required_rules("training_operator", "volcano"))
    assert ("create", "scheduling.volcano.sh", "podgroups") in vc
    assert ("create", "scheduling.x-k8s.io", "podgroups") not in vc
    sp = _rbac.checks(_rbac.required_rules("mpi_operator", "scheduler_plugins"))
    assert ("create", "scheduling.x-k8s.io", "podgroups") in sp
    sched = _rbac.checks(_rbac.required_rules("scheduler_plugins_scheduler", "scheduler_plugins"))
    assert ("list", "storage.k8s.io", "volumeattachments") in sched and ("list", "storage.k8s.io", "csinodes") in sched
    assert ("update", "scheduling.x-k8s.io", "podgroups/status") in sched


@pytest.mark.parametrize(
    "gang, mine, other",
    [
        ("volcano", "scheduling.volcano.sh", "scheduling.x-k8s.io"),
        ("scheduler_plugins", "scheduling.x-k8s.io", "scheduling.volcano.sh"),
    ],
)
def test_trainer_writes_the_podgroups_of_its_scheduler_and_reads_the_others(gang, mine, other):
    """Trainer watches the PodGroups of every kind whose CRD exists at its start, and writes its runtimes' kind."""
    tr = _rbac.checks(_rbac.required_rules("trainer", gang))
    assert {("create", mine, "podgroups"), ("patch", mine, "podgroups"), ("watch", other, "podgroups")} <= set(tr)
    assert ("create", other, "podgroups") not in tr and not any(v == "delete" for v, _g, _r in tr)
    assert ("update", "trainer.kubeflow.org", "trainjobs/status") in tr
    assert ("create", "jobset.x-k8s.io", "jobsets") in tr
    js = _rbac.checks(_rbac.required_rules("jobset", gang))
    assert ("create", "batch", "jobs") in js and ("update", "jobset.x-k8s.io", "jobsets/status") in js
    assert not any(g.startswith("scheduling.") for _v, g, _r in js), "JobSet never touches PodGroups"
    with pytest.raises(GangError, match="works with gang_scheduler volcano or scheduler_plugins, not koordinator"):
        _rbac.required_rules("trainer", "koordinator")


def test_default_scheduler_gets_coscheduling_rights_from_the_second_schedulers_table():
    """One source: the default kube-scheduler's Coscheduling rights are the PodGroup rules of the
    scheduler-plugins scheduler, bound to User system:kube-scheduler, nothing else."""
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _gang_rbac

    role, binding = _gang_rbac.kube_scheduler_objects("gangsched.kubeflow:kube-scheduler:coscheduling")
    second = _rbac.required_rules("scheduler_plugins_scheduler", "scheduler_plugins")
    assert role["rules"] == [r for r in second if r["apiGroups"] == ["scheduling.x-k8s.io"]]
    assert {c[1] for c in _rbac.checks(role["rules"])} == {"scheduling.x-k8s.io"}
    for c in [("list", "scheduling.x-k8s.io", "podgroups"), ("update", "scheduling.x-k8s.io", "podgroups/status")]:
        assert _rbac.covers(role["rules"], *c), c
    assert role["metadata"]["name"] == binding["metadata"]["name"] == binding["roleRef"]["name"]
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:kube-scheduler"}
    ]
    assert role["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gangsched.kubeflow"


def test_rule_coverage_and_diff():
    have = [{"apiGroups": ["scheduling.volcano.sh"], "resources": ["podgroups"], "verbs": ["get", "list"]}]
    need = _rbac.checks(_rbac.required_rules("training_operator", "volcano"))
    missing = [c for c in need if not _rbac.covers(have, *c)]
    assert ("create", "scheduling.volcano.sh", "podgroups") in missing
    assert ("get", "scheduling.volcano.sh", "podgroups") not in missing
    assert _rbac.covers([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}], "delete", "x", "y")
    assert _rbac.covers([{"apiGroups": ["a"], "resources": ["pg/*"], "verbs": ["update"]}], "update", "a", "pg/status")
    assert not _rbac.covers(
        [{"apiGroups": ["a"], "resources": ["pg"], "verbs": ["get"], "resourceNames": ["x"]}], "get", "a", "pg"
    )


def test_normalize_ignores_order():
    a = [
        {"apiGroups": ["g"], "resources": ["b", "a"], "verbs": ["list", "get"]},
        {"apiGroups": [""], "resources": ["x"], "verbs": ["get"]},
    ]
    b = [
        {"apiGroups": [""], "resources": ["x"], "verbs": ["get"]},
        {"apiGroups": ["g"], "resources": ["a", "b"], "verbs": ["get", "list"]},
    ]
    assert _rbac.normalize(a) == _rbac.normalize(b)


def test_wrong_scheduler_for_component_and_bad_extra_rules():
    with pytest.raises(GangError, match="works with gang_scheduler volcano"):
        _rbac.required_rules("volcano_scheduler", "scheduler_plugins")
    with pytest.raises(GangError, match=r"extra_rules\[0\]"):
        _rbac.validate_extra([{"resources": ["pods"]}])
    assert _rbac.has_wildcard({"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]})


@pytest.mark.parametrize(
    "dep,done",
    [
        ({"metadata": {"generation": 2}, "spec": {"replicas": 1}, "status": {"observedGeneration": 1}}, False),
        (
            {
                "metadata": {"generation": 2},
                "spec": {"replicas": 1},
                "status": {"observedGeneration": 2, "updatedReplicas": 1, "replicas": 2, "availableReplicas": 1},
            },
            False,
        ),
        (
            {
                "metadata": {"generation": 2},
                "spec": {"replicas": 1},
                "status": {"observedGeneration": 2, "updatedReplicas": 1, "replicas": 1, "availableReplicas": 0},
            },
            False,
        ),
        (
            {
                "metadata": {"generation": 2},
                "spec": {"replicas": 1},
                "status": {"observedGeneration": 2, "updatedReplicas": 1, "replicas": 1, "availableReplicas": 1},
            },
            True,
        ),
    ],
)
def test_rollout_complete(dep, done):
    assert _waiter.rollout_complete(dep)[0] is done


class FakeClient:
    """A list then scripted watch streams; a stream may raise (the API server went away)."""

    def __init__(self, lists, streams):
        self.lists, self.streams, self.watch_calls = list(lists), list(streams), []

    def get(self, path, what, query, retry_for=None):
        return self.lists.pop(0)

    def watch(self, path, timeout, what, **q):
        self.watch_calls.append(q.get("resourceVersion"))
        stream = self.streams.pop(0) if self.streams else []
        for ev in stream:
            if isinstance(ev, Exception):
                raise ev
            yield ev


def _obj(name, rv, **extra):
    return {"metadata": {"name": name, "resourceVersion": str(rv)}, **extra}


def test_watcher_relists_after_a_broken_watch_and_resumes():
    lists = [
        {"metadata": {"resourceVersion": "10"}, "items": [_obj("a", 9)]},
        {"metadata": {"resourceVersion": "20"}, "items": [_obj("b", 19)]},
    ]
    streams = [
        [{"type": "MODIFIED", "object": _obj("a", 11)}, ApiError("connection reset", 0)],
        [{"type": "ADDED", "object": _obj("c", 21)}],
    ]
    client = FakeClient(lists, streams)
    seen = []
    w = _waiter.Watcher(client, "/p", "things", sleep=lambda s: None)
    done = w.run(
        lambda kind, obj, store: seen.append((kind, obj["metadata"]["name"])) or obj["metadata"]["name"] == "c",
        timeout=5,
    )
    assert done
    assert seen == [("SYNC", "a"), ("MODIFIED", "a"), ("DELETED", "a"), ("SYNC", "b"), ("ADDED", "c")]
    assert client.watch_calls == ["10", "20"] and w.relists == 2 and w.errors


def test_watcher_gone_410_relists():
    lists = [{"metadata": {"resourceVersion": "1"}, "items": []}, {"metadata": {"resourceVersion": "5"}, "items": []}]
    streams = [[{"type": "ERROR", "object": {"code": 410}}], [{"type": "ADDED", "object": _obj("x", 6)}]]
    w = _waiter.Watcher(FakeClient(lists, streams), "/p", "things", sleep=lambda s: None)
    assert w.run(lambda k, o, s: k == "ADDED", timeout=5)
    assert w.relists == 2


def test_watcher_forbidden_is_not_retried():
    client = FakeClient([{"metadata": {"resourceVersion": "1"}, "items": []}], [[ApiError("Forbidden", 403)]])
    with pytest.raises(ApiError):
        _waiter.Watcher(client, "/p", "things", sleep=lambda s: None).run(lambda *a: False, timeout=5)


class NsClient(FakeClient):
    def __init__(self, obj, lists, streams):
        super().__init__(lists, streams)
        self.obj, self.gets = obj, 0

    def get_or_none(self, path, what=""):
        self.gets += 1
        return self.obj


def test_namespace_gone_is_watched_from_the_read_not_polled():
    ns = _obj("smoke", 7, status={"phase": "Terminating"})
    streams = [[{"type": "MODIFIED", "object": _obj("smoke", 8)}, {"type": "DELETED", "object": _obj("smoke", 9)}]]
    client = NsClient(ns, [], streams)
    assert _sweep.wait_namespace_gone(client, "smoke", 30)
    assert client.gets == 1 and client.watch_calls == ["7"]


def test_namespace_gone_during_a_broken_watch_is_seen_by_the_relist():
    streams = [[ApiError("connection reset", 0)]]
    lists = [{"metadata": {"resourceVersion": "12"}, "items": []}]
    client = NsClient(_obj("smoke", 7), lists, streams)
    assert _sweep.wait_namespace_gone(client, "smoke", 30)


def test_namespace_not_there_needs_no_watch():
    client = NsClient(None, [], [])
    assert _sweep.wait_namespace_gone(client, "smoke", 30)
    assert client.watch_calls == []


def test_namespace_gone_is_polled_when_the_user_may_not_watch_namespaces():
    class NoWatch(NsClient):
        def get_or_none(self, path, what=""):
            self.gets += 1
            return self.obj if self.gets < 3 else None

    client = NoWatch(_obj("smoke", 7), [], [[Forbidden("Forbidden to watch Namespace smoke", 403)]])
    assert _sweep.wait_namespace_gone(client, "smoke", 30)
    assert client.watch_calls == ["7"] and client.gets == 3


def test_namespace_still_there_at_the_deadline_is_false():
    now = [0.0]

    def clock():
        now[0] += 10
        return now[0]

    client = NsClient(_obj("smoke", 7), [], [[{"type": "MODIFIED", "object": _obj("smoke", 8)}]] * 5)
    assert not _sweep.wait_namespace_gone(client, "smoke", 30, clock=clock)


def _gpod(ns, name, key, node, created):
    return {
        "metadata": {
            "namespace": ns,
            "name": name,
            "labels": {"training.kubeflow.org/job-name": key},
            "creationTimestamp": created,
        },
        "spec": {"nodeName": node, "containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]}
        if node
        else {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
        "status": {"phase": "Running" if node else "Pending"},
    }


def test_partial_gangs_scan():
    t0 = "2026-01-01T00:00:00Z"
    now = C.quantity("1767225600") + 120  # t0 + 2 minutes
    pods = [
        _gpod("a", "j1-0", "j1", "n1", t0),
        _gpod("a", "j1-1", "j1", "n2", t0),
        _gpod("a", "j1-2", "j1", None, t0),
        _gpod("a", "j2-0", "j2", "n3", t0),
        _gpod("a", "j2-1", "j2", "n4", t0),
    ]
    out = _gang_info.partial_gangs(pods, now, threshold=60)
    assert [(g["gang"], g["gpus_held"], g["pending"]) for g in out] == [("a/j1", 2, ["j1-2"])]
    assert _gang_info.partial_gangs(pods, now, threshold=600) == []


def test_slim_objects_give_the_same_capacity_and_gangs():
    """A cluster-wide scan keeps only slim_pod/slim_node of each object: the maths must not notice."""
    t0 = "2026-01-01T00:00:00Z"
    now = C.quantity("1767225600") + 120
    pods = [_pod("a", 1), _pod("a", 1, phase="Succeeded"), _pod("b", 1, init=2)]
    pods += [_gpod("a", "j1-0", "j1", "a", t0), _gpod("a", "j1-1", "j1", None, t0)]
    ann = _gpod("a", "g-0", "x", "b", t0)
    ann["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "g", "kubectl.kubernetes.io/last": "{}"}
    pods.append(ann)
    for p in pods:
        p["metadata"]["managedFields"] = [{"manager": "kubelet"}]
        p["spec"]["volumes"] = [{"name": "token"}]
        p["status"]["containerStatuses"] = [{"name": "c"}]
    nodes = [_node("a", 2), _node("b", 4), _node("c", 4, ready=False), _node("d", 1, unschedulable=True)]
    slim_pods, slim_nodes = [C.slim_pod(p) for p in pods], [C.slim_node(n) for n in nodes]
    assert C.nodes_capacity(slim_nodes, slim_pods) == C.nodes_capacity(nodes, pods)
    assert _gang_info.partial_gangs(slim_pods, now, 60) == _gang_info.partial_gangs(pods, now, 60) != []
    assert [_gang_info.gang_key(p) for p in slim_pods] == [_gang_info.gang_key(p) for p in pods]
    assert slim_pods[-1]["metadata"]["annotations"] == {"scheduling.k8s.io/group-name": "g"}
    assert not any("managedFields" in p["metadata"] or "volumes" in p["spec"] for p in slim_pods)


def test_controller_gone_only_when_nobody_reads_our_pipe(tmp_path):
    import os

    from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke._interrupt import controller_gone

    r, w = os.pipe()
    try:
        assert controller_gone(w) is False  # the reader is still there
        os.close(r)
        assert controller_gone(w) is True  # the process reading our output is gone
    finally:
        os.close(w)
    with open(tmp_path / "out", "w") as f:
        assert controller_gone(f.fileno()) is False  # not a pipe: never "gone"


class StaleClient:
    """Serves labelled objects per list path; records deletions; deleted objects are gone at once."""

    def __init__(self, objects):
        self.objects, self.deleted, self.selectors = objects, [], set()

    def list_or_empty(self, path, what="", **q):
        self.selectors.add(q.get("labelSelector"))
        return [o for p, o in self.objects.items() if p.rsplit("/", 1)[0] == path]

    list = list_or_empty

    def get_or_none(self, path, what=""):
        return self.objects.get(path)

    def request(self, method, path, **kw):
        assert method == "DELETE"
        self.deleted.append(path)
        self.objects.pop(path, None)


def test_stale_objects_are_found_jobs_first_and_removed():
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _sweep

    def obj(ns, name):
        return {"metadata": {"namespace": ns, "name": name}}

    objects = {
        "/api/v1/namespaces/s/pods/p-0": obj("s", "p-0"),
        "/apis/kubeflow.org/v1/namespaces/s/tfjobs/j": obj("s", "j"),
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/s/podgroups/g": obj("s", "g"),
    }
    client = StaleClient(dict(objects))
    removed, left = _sweep.remove_stale(client, "s", keep="mine", check_mode=True)
    assert removed == ["TFJob s/j", "PodGroup s/g", "Pod s/p-0"] and client.deleted == []
    assert client.selectors == {"gangsched.kubeflow/smoke-run,gangsched.kubeflow/smoke-run!=mine"}
    removed, left = _sweep.remove_stale(client, "s", keep="mine", check_mode=False)
    assert left == [] and client.deleted == [
        "/apis/kubeflow.org/v1/namespaces/s/tfjobs/j",
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/s/podgroups/g",
        "/api/v1/namespaces/s/pods/p-0",
    ]


class ReviewClient:
    """One training-operator Deployment; SubjectAccessReviews answered from a set of allowed calls, or
    refused (the caller may not ask)."""

    def __init__(self, allowed=frozenset(), may_ask=True):
        self.allowed, self.may_ask, self.reviews = allowed, may_ask, []

    def list(self, path, what=""):
        dep = {
            "metadata": {"namespace": "kubeflow", "name": "training-operator"},
            "spec": {
                "template": {
                    "spec": {
                        "serviceAccountName": "training-operator",
                        "containers": [{"name": "m", "image": "kubeflow/training-operator:v1-855e096"}],
                    }
                }
            },
        }
        return [dep]

    def request(self, method, path, body=None, what=""):
        if not self.may_ask:
            raise Forbidden(f"Forbidden to create {what}", 403)
        spec = body["spec"]
        a = spec["resourceAttributes"]
        self.reviews.append((spec["user"], a["verb"], a["group"], a["resource"], a.get("namespace")))
        return {"status": {"allowed": (a["verb"], a["group"], a["resource"]) in self.allowed}}


def test_forbidden_podgroup_create_names_the_call_and_the_service_account():
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _diagnosis

    client = ReviewClient()
    msg = _diagnosis.forbidden_podgroup_create(client, "tfjob", "volcano", "smoke")
    assert msg.startswith("Forbidden: ServiceAccount kubeflow/training-operator of Deployment kubeflow/")
    assert "may not create scheduling.volcano.sh/podgroups in namespace smoke" in msg
    assert "gangsched.kubeflow.gang_rbac (component=training_operator, gang_scheduler=volcano)" in msg
    assert client.reviews == [
        ("system:serviceaccount:kubeflow:training-operator", "create", "scheduling.volcano.sh", "podgroups", "smoke")
    ]
    # allowed: nothing to name; the other scheduler's API group is the one asked about
    ok = ReviewClient(allowed={("create", "scheduling.x-k8s.io", "podgroups")})
    assert _diagnosis.forbidden_podgroup_create(ok, "pytorchjob", "scheduler_plugins", "smoke") is None
    # an MPIJob's operator is mpi-operator: no such Deployment here, nothing asked
    none = ReviewClient()
    assert _diagnosis.forbidden_podgroup_create(none, "mpijob", "volcano", "smoke") is None and none.reviews == []
    # a caller without the right to ask gets None (the verdict then gives the general advice)
    assert _diagnosis.forbidden_podgroup_create(ReviewClient(may_ask=False), "tfjob", "volcano", "smoke") is None


def test_conflict_attempts_back_off_and_give_up_naming_the_object(monkeypatch):
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service

    slept: list[float] = []
    monkeypatch.setattr(_service.time, "sleep", slept.append)
    seen = []
    with pytest.raises(GangError, match=r"Failed to write Deployment a/b: it kept changing under us \(6 conflicts"):
        for attempt in _service.conflict_attempts("Deployment a/b", "; try later"):
            seen.append(attempt)
    assert seen == list(range(_service.CONFLICT_RETRIES)) and slept == [0.2, 0.4, 0.8, 1.6, 2.0]
    slept.clear()
    for attempt in _service.conflict_attempts("x"):
        if attempt == 1:
            break
    assert slept == [0.2]  # a break after a re-try: no error, one back-off
