"""trainer_runtime_gang's runner against a recording fake cluster: bad options make no API call, refusals
after reads write nothing, check mode writes only dry runs, a copy is made, kept following its runtime
and removed, an in-place edit is taken back, and a concurrent edit is kept."""

from __future__ import annotations

import copy

import pytest
import yaml
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _trainer_runtimes
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import Conflict, GangError, NotFound
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _trainer_runtime_gang

CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
TR = "/apis/trainer.kubeflow.org/v1alpha1/"
CTR = TR + "clustertrainingruntimes/"
SP_DEP = "/apis/apps/v1/namespaces/scheduler-plugins/deployments/scheduler-plugins-scheduler"
VC_DEP = "/apis/apps/v1/namespaces/volcano-system/deployments/vc-scheduler"
WRITES = ("PUT", "POST", "DELETE", "PATCH")


def _crd(name: str) -> dict:
    return {
        "metadata": {"name": name},
        "spec": {"versions": [{"name": "v1alpha1", "served": True, "storage": True}]},
        "status": {"conditions": [{"type": "Established", "status": "True"}]},
    }


def _sp_scheduler() -> dict:
    cfg = {
        "profiles": [
            {
                "schedulerName": "scheduler-plugins-scheduler",
                "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]}},
            }
        ]
    }
    dep = {
        "metadata": {"namespace": "scheduler-plugins", "name": "scheduler-plugins-scheduler"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "scheduler",
                            "image": "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.31.8",
                            "args": ["--config=/etc/kubernetes/scheduler-config.yaml"],
                            "volumeMounts": [{"name": "cfg", "mountPath": "/etc/kubernetes"}],
                        }
                    ],
                    "volumes": [{"name": "cfg", "configMap": {"name": "scheduler-config"}}],
                }
            }
        },
        "status": {"readyReplicas": 1},
    }
    cm = {"metadata": {"name": "scheduler-config"}, "data": {"scheduler-config.yaml": yaml.safe_dump(cfg)}}
    return {SP_DEP: dep, "/api/v1/namespaces/scheduler-plugins/configmaps/scheduler-config": cm}


def _vc_scheduler() -> dict:
    dep = {
        "metadata": {"namespace": "volcano-system", "name": "vc-scheduler"},
        "spec": {"template": {"spec": {"containers": [{"name": "s", "image": "volcanosh/vc-scheduler:v1.13.0"}]}}},
        "status": {"readyReplicas": 1},
    }
    return {VC_DEP: dep}


def _runtime(name="torch", kind="ClusterTrainingRuntime", ns=None, jobs=("node",), **meta) -> dict:
    md = {"name": name, "resourceVersion": "10", "uid": f"uid-{name}", **meta}
    if ns:
        md["namespace"] = ns
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": kind,
        "metadata": md,
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": j,
                            "template": {
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "containers": [
                                                {
                                                    "name": j,
                                                    "image": "pytorch",
                                                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                                                }
                                            ]
                                        }
                                    }
                                }
                            },
                        }
                        for j in jobs
                    ]
                }
            },
        },
    }


def _cluster(**extra) -> dict:
    objects = {
        CRD + "trainingruntimes.trainer.kubeflow.org": _crd("trainingruntimes.trainer.kubeflow.org"),
        CRD + "clustertrainingruntimes.trainer.kubeflow.org": _crd("clustertrainingruntimes.trainer.kubeflow.org"),
        CRD + "podgroups.scheduling.x-k8s.io": _crd("podgroups.scheduling.x-k8s.io"),
        CTR + "torch": _runtime(),
        TR + "namespaces/team-b/trainingruntimes/local": _runtime("local", "TrainingRuntime", "team-b"),
        **_sp_scheduler(),
    }
    objects.update(extra)
    return {p: o for p, o in objects.items() if o is not None}


def _parent(path: str) -> str:
    """The cluster-wide list a namespaced object is in: /apis/g/v/namespaces/n/things/x -> /apis/g/v/things."""
    parts = path.split("/")
    if "namespaces" in parts[:-2]:
        i = parts.index("namespaces")
        parts = parts[:i] + parts[i + 2 :]
    return "/".join(parts[:-1])


class FakeCluster:
    """API paths -> objects. Every call is recorded as (method, path, query); writes are applied (not
    under dryRun=All), guarded by the resourceVersion or the delete preconditions like the API server;
    ``conflicts``: that many writes answer 409 after ``meanwhile`` (someone else's edit) ran."""

    def __init__(self, objects: dict, conflicts: int = 0, meanwhile=None):
        self.objects = copy.deepcopy(objects)
        self.calls: list[tuple[str, str, dict]] = []
        self.rv = 100
        self.conflicts, self.meanwhile = conflicts, meanwhile

    def writes(self) -> list[tuple[str, str, dict]]:
        return [c for c in self.calls if c[0] in WRITES]

    def _bump(self) -> str:
        self.rv += 1
        return str(self.rv)

    def get(self, path, what="", query=None, retry_for=None):
        self.calls.append(("GET", path, query or {}))
        if path not in self.objects:
            raise NotFound(f"{what} not found", 404)
        return copy.deepcopy(self.objects[path])

    def get_or_none(self, path, what=""):
        try:
            return self.get(path, what)
        except NotFound:
            return None

    def list(self, path, what="", **query):
        self.calls.append(("LIST", path, query))
        out = []
        for p, o in self.objects.items():
            if path not in (p.rsplit("/", 1)[0], _parent(p)):
                continue
            field = query.get("fieldSelector")
            if field and o["metadata"]["name"] != field.split("=", 1)[1]:
                continue
            sel = query.get("labelSelector")
            if sel and "=" in sel:
                k, v = sel.split("=", 1)
                if ((o["metadata"].get("labels") or {}).get(k)) != v:
                    continue
            out.append(copy.deepcopy(o))
        return out

    list_or_empty = list

    def request(self, method, path, body=None, query=None, **_):
        query = query or {}
        self.calls.append((method, path, query))
        dry = query.get("dryRun") == "All"
        if self.conflicts:
            self.conflicts -= 1
            if self.meanwhile:
                self.meanwhile(self)
            raise Conflict("Conflict", 409)
        if method == "POST":
            target = f"{path}/{body['metadata']['name']}"
            if target in self.objects:
                raise Conflict("AlreadyExists", 409)
            new = copy.deepcopy(body)
            new["metadata"].update(uid="uid-new", resourceVersion=self._bump() if not dry else "0")
            if not dry:
                self.objects[target] = new
            return copy.deepcopy(new)
        if path not in self.objects:
            raise NotFound("not found", 404)
        cur = self.objects[path]
        if method == "PUT":
            if body["metadata"].get("resourceVersion") != cur["metadata"]["resourceVersion"]:
                raise Conflict("the object has been modified", 409)
            new = copy.deepcopy(body)
            if not dry:
                new["metadata"]["resourceVersion"] = self._bump()
                self.objects[path] = new
            return copy.deepcopy(new)
        if method == "DELETE":
            pre = (body or {}).get("preconditions") or {}
            if pre.get("resourceVersion") not in (None, cur["metadata"]["resourceVersion"]):
                raise Conflict("precondition failed", 409)
            if not dry:
                del self.objects[path]
            return {}
        raise AssertionError(f"unexpected {method} {path}")


BASE = {"name": "torch", "gang_scheduler": "scheduler_plugins", "jobset_defaults": True, "state": "present"}


def _run(cluster: FakeCluster, check_mode=False, **params):
    warnings: list[str] = []
    res = _trainer_runtime_gang.run(cluster, {**BASE, **params}, check_mode, warnings.append)
    return res, warnings


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch):
    monkeypatch.setattr(_service.time, "sleep", lambda s: None)


# ---- refused before any API call ------------------------------------------------------------------------
OPTIONS_BAD = [
    ("koordinator", {"gang_scheduler": "koordinator"}, "cannot carry a Koordinator gang"),
    ("queue-with-scheduler-plugins", {"queue": "q"}, "queue='q' with gang_scheduler=scheduler_plugins"),
    ("schedule-timeout-zero", {"schedule_timeout": 0}, "schedule_timeout=0"),
    ("schedule-timeout-negative", {"schedule_timeout": -3}, "at least 1"),
    ("gang-name-is-name", {"gang_name": "torch"}, "gang_name='torch' is the runtime itself"),
    ("name-upper-case", {"name": "Torch"}, "name='Torch' is not a valid runtime name"),
    ("gang-name-slash", {"gang_name": "a/b"}, "gang_name='a/b' is not a valid runtime name"),
    ("namespace-dot", {"namespace": "team.a"}, "namespace='team.a' is not a valid namespace name"),
    ("queue-blank", {"gang_scheduler": "volcano", "queue": " q"}, "queue=' q' is not a valid Volcano queue name"),
    ("volcano-other-name", {"gang_scheduler": "volcano", "scheduler_name": "vc2"}, "scheduled by 'volcano'"),
    ("sp-named-volcano", {"scheduler_name": "volcano"}, "Set gang_scheduler=volcano"),
    ("name-too-long-for-label", {"name": "t" * 64, "gang_name": "g"}, "cannot name it"),
    ("koordinator-absent", {"gang_scheduler": "koordinator", "state": "absent"}, "Koordinator gang"),
]


@pytest.mark.parametrize("params,text", [c[1:] for c in OPTIONS_BAD], ids=[c[0] for c in OPTIONS_BAD])
def test_bad_options_make_no_api_call(params, text):
    cluster = FakeCluster(_cluster())
    with pytest.raises(GangError) as e:
        _run(cluster, **params)
    assert text in e.value.msg and e.value.msg.endswith("nothing was changed"), e.value.msg
    assert cluster.calls == [], "a refused option reached the API"


# ---- refused after reading: nothing written ---------------------------------------------------------------
def _not_ours():
    return _runtime("taken", labels={"team": "a"})


def _copy_of_other():
    return _runtime("taken", labels={_trainer_runtimes.GANG_OF: "other"})


def _no_jobs():
    rt = _runtime()
    rt["spec"]["template"]["spec"]["replicatedJobs"] = []
    return rt


def _volcano_policy():
    rt = _runtime()
    rt["spec"]["podGroupPolicy"] = {"volcano": {}}
    return rt


READ_BAD = [
    (
        "no-trainer-crds",
        {CRD + "clustertrainingruntimes.trainer.kubeflow.org": None},
        {},
        "clustertrainingruntimes.trainer.kubeflow.org is missing or not Established",
    ),
    ("no-volcano-crd", _vc_scheduler(), {"gang_scheduler": "volcano"}, "podgroups.scheduling.volcano.sh is missing"),
    (
        "no-volcano-scheduler",
        {CRD + "podgroups.scheduling.volcano.sh": _crd("podgroups.scheduling.volcano.sh")},
        {"gang_scheduler": "volcano"},
        "No Volcano scheduler serving 'volcano' was found",
    ),
    ("no-scheduler-plugins", {SP_DEP: None}, {}, "Cannot determine the scheduler-plugins scheduler name"),
    ("name-nobody-serves", {}, {"scheduler_name": "mine"}, "Pods would stay Pending forever"),
    ("runtime-not-found", {}, {"name": "nope"}, "ClusterTrainingRuntime nope not found: set name"),
    (
        "runtime-in-another-namespace",
        {},
        {"name": "local", "namespace": "team-a"},
        "TrainingRuntime team-a/local not found: a TrainingRuntime local is in namespace team-b: set namespace",
    ),
    (
        "cluster-runtime-not-namespaced",
        {},
        {"name": "torch", "namespace": "team-a"},
        "a ClusterTrainingRuntime torch exists: leave namespace unset",
    ),
    ("gang-name-not-ours", {CTR + "taken": _not_ours()}, {"gang_name": "taken"}, "not a gang copy made by"),
    ("gang-name-copy-of-other", {CTR + "taken": _copy_of_other()}, {"gang_name": "taken"}, "gang copy of 'other'"),
    ("no-replicated-jobs", {CTR + "torch": _no_jobs()}, {}, "has no spec.template.spec.replicatedJobs"),
    (
        "absent-copy-not-ours",
        {CTR + "taken": _not_ours()},
        {"gang_name": "taken", "state": "absent"},
        "refusing to delete it",
    ),
    (
        "absent-other-policy",
        {CTR + "torch": _volcano_policy()},
        {"state": "absent"},
        "carries podGroupPolicy volcano, not coscheduling: set gang_scheduler=volcano",
    ),
]


@pytest.mark.parametrize("extra,params,text", [c[1:] for c in READ_BAD], ids=[c[0] for c in READ_BAD])
@pytest.mark.parametrize("check_mode", [False, True])
def test_refusals_after_reads_write_nothing(extra, params, text, check_mode):
    cluster = FakeCluster(_cluster(**extra))
    before = copy.deepcopy(cluster.objects)
    with pytest.raises(GangError) as e:
        _run(cluster, check_mode, **params)
    assert text in e.value.msg and e.value.msg.endswith("nothing was changed"), e.value.msg
    assert cluster.writes() == [] and cluster.objects == before


# ---- check mode: dry runs only, and the same answer as the real run ------------------------------------------
def _ganged_copy() -> FakeCluster:
    cluster = FakeCluster(_cluster())
    _run(cluster, gang_name="torch-gang")
    return cluster


CASES = [
    ("copy-create", lambda: FakeCluster(_cluster()), {"gang_name": "torch-gang"}),
    ("in-place", lambda: FakeCluster(_cluster()), {}),
    ("copy-delete", _ganged_copy, {"gang_name": "torch-gang", "state": "absent"}),
]


@pytest.mark.parametrize("make,params", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_check_mode_writes_only_dry_runs_and_predicts_the_real_run(make, params):
    cluster = make()
    before = copy.deepcopy(cluster.objects)
    n = len(cluster.calls)
    check, _ = _run(cluster, True, **params)
    writes = [c for c in cluster.calls[n:] if c[0] in WRITES]
    assert writes and all(q.get("dryRun") == "All" for _, _, q in writes), writes
    assert cluster.objects == before, "check mode changed the cluster"
    real, _ = _run(cluster, **params)
    assert check["changed"] is real["changed"] is True
    assert check["changes"] == real["changes"] and check["_diff"]["after"] == real["_diff"]["after"]
    assert (check["runtime"] or {}).get("spec") == (real["runtime"] or {}).get("spec")


# ---- a copy: made, idempotent, following its runtime, removed --------------------------------------------------
def test_copy_is_made_labelled_and_leaves_the_runtime_alone():
    cluster = FakeCluster(_cluster())
    res, _ = _run(cluster, gang_name="torch-gang", schedule_timeout=600)
    assert res["changed"] and res["kind"] == "ClusterTrainingRuntime"
    assert res["scheduler_name"] == "scheduler-plugins-scheduler"
    assert [(m, p) for m, p, _ in cluster.writes()] == [("POST", CTR.rstrip("/"))]
    copy_ = cluster.objects[CTR + "torch-gang"]
    assert copy_["metadata"]["labels"] == {
        _trainer_runtimes.GANG_OF: "torch",
        "app.kubernetes.io/managed-by": "gangsched.kubeflow",
    }
    assert copy_["spec"]["podGroupPolicy"] == {"coscheduling": {"scheduleTimeoutSeconds": 600}}
    pod = copy_["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["schedulerName"] == "scheduler-plugins-scheduler" and pod["restartPolicy"] == "OnFailure"
    assert pod["containers"][0]["resources"]["requests"] == {"nvidia.com/gpu": "1"}
    assert cluster.objects[CTR + "torch"] == _runtime(), "the runtime copied was changed"
    assert (
        res["changes"][0]
        == "ClusterTrainingRuntime torch-gang created as a gang-scheduled copy of ClusterTrainingRuntime torch"
    )
    assert res["_diff"]["before"] == {} and res["_diff"]["after"]["spec"] == copy_["spec"]

    again, _ = _run(cluster, gang_name="torch-gang", schedule_timeout=600)
    assert again["changed"] is False and again["changes"] == [] and len(cluster.writes()) == 1

    cluster.objects[CTR + "torch"]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"
    ]["containers"][0]["image"] = "pytorch:2"
    follow, _ = _run(cluster, gang_name="torch-gang", schedule_timeout=600)
    assert follow["changed"] and follow["changes"] == [
        "spec.template.spec.replicatedJobs[node].template.spec.template.spec.containers[node].image changed"
    ]
    assert cluster.writes()[-1][0] == "PUT"
    assert (
        follow["runtime"]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
            "containers"
        ][0]["image"]
        == "pytorch:2"
    )

    gone, _ = _run(cluster, gang_name="torch-gang", state="absent")
    assert gone["changed"] and gone["runtime"] is None and CTR + "torch-gang" not in cluster.objects
    method, path, _ = cluster.writes()[-1]
    assert (method, path) == ("DELETE", CTR + "torch-gang")
    again, _ = _run(cluster, gang_name="torch-gang", state="absent")
    assert again["changed"] is False and cluster.writes()[-1][0] == "DELETE" and len(cluster.writes()) == 3


def test_namespaced_copy_in_the_runtimes_namespace():
    cluster = FakeCluster(_cluster())
    res, _ = _run(cluster, name="local", namespace="team-b", gang_name="local-gang")
    assert res["kind"] == "TrainingRuntime" and res["changed"]
    assert TR + "namespaces/team-b/trainingruntimes/local-gang" in cluster.objects
    assert res["runtime"]["metadata"]["namespace"] == "team-b"


# ---- in place: edited, idempotent, taken back ----------------------------------------------------------------
def test_in_place_edit_is_idempotent_and_taken_back_leaving_others_scheduler_names():
    cluster = FakeCluster(_cluster(**{CTR + "torch": _runtime(jobs=("initializer", "node"))}))
    res, _ = _run(cluster)
    assert res["changed"] and "podGroupPolicy coscheduling" in res["changes"]
    assert "JobSet startupPolicy AnyOrder" in res["changes"]
    ((method, path, query),) = cluster.writes()
    assert (method, path, query.get("fieldManager")) == ("PUT", CTR + "torch", "gangsched.kubeflow")
    again, _ = _run(cluster)
    assert again["changed"] is False and len(cluster.writes()) == 1

    rt = cluster.objects[CTR + "torch"]
    rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["schedulerName"] = "x"
    back, _ = _run(cluster, state="absent")
    assert back["changed"] and back["changes"] == [
        "podGroupPolicy coscheduling removed",
        "replicatedJob node: schedulerName scheduler-plugins-scheduler removed",
    ]
    rt = cluster.objects[CTR + "torch"]
    assert "podGroupPolicy" not in rt["spec"]
    pods = [rj["template"]["spec"]["template"]["spec"] for rj in rt["spec"]["template"]["spec"]["replicatedJobs"]]
    assert [p.get("schedulerName") for p in pods] == ["x", None]
    again, _ = _run(cluster, state="absent")
    assert again["changed"] is False


def test_without_jobset_defaults_only_the_gang_is_written():
    cluster = FakeCluster(_cluster())
    res, _ = _run(cluster, jobset_defaults=False)
    js = cluster.objects[CTR + "torch"]["spec"]["template"]["spec"]
    assert "network" not in js and "startupPolicy" not in js and res["changed"]


def test_default_mode_scheduler_plugins_gives_default_scheduler():
    pod = {
        "metadata": {
            "name": "kube-scheduler-cp",
            "namespace": "kube-system",
            "labels": {"component": "kube-scheduler"},
        },
        "spec": {"containers": [{"name": "s", "image": "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.31.8"}]},
        "status": {"phase": "Running"},
    }
    cluster = FakeCluster(_cluster(**{SP_DEP: None, "/api/v1/namespaces/kube-system/pods/kube-scheduler-cp": pod}))
    res, _ = _run(cluster)
    assert res["scheduler_name"] == "default-scheduler"


def test_volcano_with_a_queue():
    cluster = FakeCluster(
        _cluster(
            **_vc_scheduler(), **{CRD + "podgroups.scheduling.volcano.sh": _crd("podgroups.scheduling.volcano.sh")}
        )
    )
    res, warnings = _run(cluster, gang_scheduler="volcano", queue="research", schedule_timeout=30)
    rt = cluster.objects[CTR + "torch"]
    assert res["scheduler_name"] == "volcano" and rt["spec"]["podGroupPolicy"] == {"volcano": {}}
    assert rt["metadata"]["annotations"] == {"scheduling.volcano.sh/queue-name": "research"}
    assert any("schedule_timeout" in w and "ignored" in w for w in warnings), warnings


# ---- concurrency and warnings -------------------------------------------------------------------------------
def test_a_concurrent_edit_is_kept():
    def someone_else(c: FakeCluster):
        rt = c.objects[CTR + "torch"]
        rt["metadata"]["labels"] = {"edited": "meanwhile"}
        rt["metadata"]["resourceVersion"] = c._bump()

    cluster = FakeCluster(_cluster(), conflicts=1, meanwhile=someone_else)
    res, _ = _run(cluster)
    rt = cluster.objects[CTR + "torch"]
    assert res["changed"] and rt["metadata"]["labels"] == {"edited": "meanwhile"} and "podGroupPolicy" in rt["spec"]
    assert [m for m, _, _ in cluster.writes()] == ["PUT", "PUT"]


def test_endless_conflicts_fail_naming_the_runtime_and_change_nothing():
    cluster = FakeCluster(_cluster(), conflicts=100)
    before = copy.deepcopy(cluster.objects)
    with pytest.raises(GangError, match="Failed to write ClusterTrainingRuntime torch: it kept changing"):
        _run(cluster)
    assert cluster.objects == before and len(cluster.writes()) == _trainer_runtime_gang.CONFLICT_RETRIES


def test_trainjobs_on_the_edited_runtime_are_warned_about():
    def job(ns, name, runtime, kind=None):
        ref = {"name": runtime, **({"kind": kind} if kind else {})}
        return {"metadata": {"namespace": ns, "name": name}, "spec": {"runtimeRef": ref}}

    jobs = {
        TR + "namespaces/a/trainjobs/j1": job("a", "j1", "torch"),
        TR + "namespaces/b/trainjobs/j2": job("b", "j2", "torch", "TrainingRuntime"),
        TR + "namespaces/b/trainjobs/j3": job("b", "j3", "other"),
    }
    cluster = FakeCluster(_cluster(**jobs))
    _, warnings = _run(cluster, check_mode=True)
    assert [w for w in warnings if "TrainJob" in w] == [
        "1 TrainJob(s) already use ClusterTrainingRuntime torch (a/j1): Trainer does not update the PodGroups (or "
        "pods) of existing TrainJobs, so the change applies to TrainJobs created from now on; recreate these to "
        "gang-schedule them"
    ]
    _run(cluster)
    _, warnings = _run(cluster)
    assert not [w for w in warnings if "TrainJob" in w], "warned without a change"


def test_absent_when_nothing_is_there_changes_nothing():
    cluster = FakeCluster(_cluster(**{CRD + "clustertrainingruntimes.trainer.kubeflow.org": None}))
    res, warnings = _run(cluster, state="absent")
    assert res["changed"] is False and cluster.writes() == [] and warnings
    cluster = FakeCluster(_cluster())
    res, warnings = _run(cluster, name="nope", state="absent")
    assert res["changed"] is False and cluster.writes() == [] and "not found" in warnings[0]


def test_a_copy_whose_runtime_changed_an_immutable_jobset_field_is_refused():
    cluster = FakeCluster(_cluster())
    _run(cluster, gang_name="torch-gang")
    cluster.objects[CTR + "torch"]["spec"]["template"]["spec"]["network"] = {"subdomain": "other"}
    before = copy.deepcopy(cluster.objects)
    with pytest.raises(GangError) as e:
        _run(cluster, gang_name="torch-gang")
    assert "cannot follow ClusterTrainingRuntime torch: its JobSet network changed" in e.value.msg
    assert "Delete the copy (state=absent" in e.value.msg and cluster.objects == before


def test_in_place_leaves_a_set_network_alone():
    rt = _runtime()
    rt["spec"]["template"]["spec"]["network"] = {"subdomain": "x"}
    cluster = FakeCluster(_cluster(**{CTR + "torch": rt}))
    res, _ = _run(cluster)
    assert res["changed"] and cluster.objects[CTR + "torch"]["spec"]["template"]["spec"]["network"] == {
        "subdomain": "x"
    }


def test_a_copy_being_deleted_is_neither_rewritten_nor_deleted_again():
    cluster = FakeCluster(_cluster())
    _run(cluster, gang_name="torch-gang")
    cluster.objects[CTR + "torch-gang"]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    n = len(cluster.writes())
    res, _ = _run(cluster, gang_name="torch-gang", state="absent")
    assert res["changed"] is False and len(cluster.writes()) == n
    with pytest.raises(GangError, match="ClusterTrainingRuntime torch-gang is being deleted"):
        _run(cluster, gang_name="torch-gang")
    assert len(cluster.writes()) == n
