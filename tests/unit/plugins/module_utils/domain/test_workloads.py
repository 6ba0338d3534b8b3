"""The objects the collection builds: label gangs (seed 003, Koordinator) on Pods and Kubeflow jobs; the smoke
test's TrainJob and its runtimes (the gang, the control, a user's runtime and why one is no gang), the run
label on all of them, and the order a run's kinds are removed in."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api, _trainjobs, _workloads
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _koordinator, _registry, _smoke_objects

NAME, MIN = _koordinator.LABEL_GANG_NAME, _koordinator.LABEL_GANG_MIN


def _job(kind, specs_key, replicas):
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {
            specs_key: {r: {"replicas": n, "template": {"spec": {"containers": []}}} for r, n in replicas.items()}
        },
    }


def test_every_member_template_of_a_job_joins_one_gang_of_all_its_pods():
    job = _job("TFJob", "tfReplicaSpecs", {"PS": 1, "Worker": 4})
    out = _koordinator.label_gang(job, "koord-scheduler")
    for spec in out["spec"]["tfReplicaSpecs"].values():
        assert spec["template"]["metadata"]["labels"] == {NAME: "train", MIN: "5"}
        assert spec["template"]["spec"]["schedulerName"] == "koord-scheduler"
    assert "metadata" not in job["spec"]["tfReplicaSpecs"]["PS"]["template"], "the input was changed"


def test_mpijob_launcher_is_not_a_member():
    out = _koordinator.label_gang(_job("MPIJob", "mpiReplicaSpecs", {"Launcher": 1, "Worker": 3}), "koord", 2, "g")
    specs = out["spec"]["mpiReplicaSpecs"]
    assert specs["Worker"]["template"]["metadata"]["labels"] == {NAME: "g", MIN: "2"}
    assert (
        "metadata" not in specs["Launcher"]["template"] and "schedulerName" not in specs["Launcher"]["template"]["spec"]
    )


def test_a_pod_keeps_its_labels():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app": "x"}}, "spec": {}}
    out = _koordinator.label_gang(pod, "koord-scheduler")
    assert out["metadata"]["labels"] == {"app": "x", NAME: "p", MIN: "1"}
    assert out["spec"]["schedulerName"] == "koord-scheduler"


def test_a_batch_job_is_one_label_gang_of_its_parallelism():
    """The smoke test's Indexed Job on Koordinator (the job Kueue admits in front of it): the label gang on its pod
    template, its pods for the profile given."""
    docs, selector = _smoke_objects.indexed_job("ns", "g", "r", 3, {"cpu": "1"}, "koordinator", "gang-profile")
    (job,) = docs
    tmpl = job["spec"]["template"]
    assert tmpl["metadata"]["labels"][NAME] == "g" and tmpl["metadata"]["labels"][MIN] == "3"
    assert tmpl["spec"]["schedulerName"] == "gang-profile" and job["spec"]["parallelism"] == 3
    assert selector == "gangsched.kubeflow/gang=g" and "scheduling" not in job["spec"]


@pytest.mark.parametrize(
    "doc,min_available,words",
    [
        ({"kind": "Deployment", "metadata": {"name": "d"}}, None, "kind Deployment is not"),
        ({"kind": "PyTorchJob"}, None, "needs a Pod or a Kubeflow job"),
        ({"kind": "Deployment", "metadata": {"name": "d"}}, None, "is not a Pod, a batch Job or a Kubeflow job"),
        ({"kind": "PyTorchJob", "metadata": {"name": "j"}, "spec": {}}, None, "has no spec.pytorchReplicaSpecs"),
        ({"kind": "Pod", "metadata": {"name": "p"}}, 0, "min_available must be"),
        ({"kind": "Pod", "metadata": {"name": "p"}}, True, "min_available must be"),
    ],
)
def test_bad_input_is_named(doc, min_available, words):
    with pytest.raises(ValueError, match=words):
        _koordinator.label_gang(doc, "koord-scheduler", min_available)


def test_smoke_pods_for_a_label_gang_scheduler_have_no_podgroup():
    docs, selector = _smoke_objects.pods("ns", "g", "r", 3, {"cpu": "1"}, "koordinator", "koord-scheduler")
    assert [d["kind"] for d in docs] == ["Pod"] * 3 and selector == "gangsched.kubeflow/gang=g"
    for p in docs:
        assert p["metadata"]["labels"][NAME] == "g" and p["metadata"]["labels"][MIN] == "3"
        assert p["spec"]["schedulerName"] == "koord-scheduler"


@pytest.mark.parametrize("kind", ["pytorchjob", "tfjob", "mpijob"])
def test_smoke_jobs_for_a_label_gang_scheduler_label_their_member_templates(kind):
    (job,), _ = _smoke_objects.kubeflow_job(kind, "ns", "g", "r", 4, {"cpu": "1"}, "koordinator", "koord")
    specs = next(v for k, v in job["spec"].items() if k.endswith("ReplicaSpecs"))
    members = {r: s for r, s in specs.items() if r != "Launcher"}
    assert sum(s["replicas"] for s in members.values()) == 4
    for s in members.values():
        assert s["template"]["metadata"]["labels"][MIN] == "4" and s["template"]["spec"]["schedulerName"] == "koord"
    (plain,), _ = _smoke_objects.kubeflow_job(kind, "ns", "g", "r", 4, {"cpu": "1"})
    assert MIN not in str(plain)


# ---- Kubeflow Trainer v2: the smoke TrainJob and its runtime -------------------------------------------
RUN = _workloads.RUN_LABEL
GPU = {"nvidia.com/gpu": "1"}


def _pod_specs(rt):
    return [rj["template"]["spec"]["template"]["spec"] for rj in rt["spec"]["template"]["spec"]["replicatedJobs"]]


def _label_levels(rt):
    """The labels of the runtime, its JobSet template, every Job template and every pod template."""
    js = rt["spec"]["template"]
    out = [rt["metadata"]["labels"], js["metadata"]["labels"]]
    for rj in js["spec"]["replicatedJobs"]:
        out += [rj["template"]["metadata"]["labels"], rj["template"]["spec"]["template"]["metadata"]["labels"]]
    return out


@pytest.mark.parametrize(
    "gang,sname,policy", [("scheduler_plugins", "sp-sched", "coscheduling"), ("volcano", "volcano", "volcano")]
)
def test_smoke_trainjob_runs_on_a_gang_runtime_of_its_own(gang, sname, policy):
    queue = _registry.get(gang).smoke_queue
    (rt, job), selector = _trainjobs.trainjob("ns", "smoke-r-gang", "r", 4, GPU, gang, sname, queue=queue)
    assert (rt["kind"], rt["metadata"]["namespace"], rt["metadata"]["name"]) == (
        "TrainingRuntime",
        "ns",
        "smoke-r-gang",
    )
    assert list(rt["spec"]["podGroupPolicy"]) == [policy]
    if gang == "scheduler_plugins":
        assert rt["spec"]["podGroupPolicy"]["coscheduling"]["scheduleTimeoutSeconds"] == 600
    else:
        assert rt["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] == "default"
    (pod,) = _pod_specs(rt)
    assert pod["schedulerName"] == sname
    # minResources sums requests: the GPU is requested and limited
    assert pod["containers"][0]["resources"] == {"requests": GPU, "limits": GPU}
    assert pod["containers"][0]["name"] == "node" and pod["restartPolicy"] == "OnFailure"
    # what JobSet's mutating webhook would fill is spelled out
    js = rt["spec"]["template"]["spec"]
    assert js["successPolicy"] == {"operator": "All"} and js["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    assert js["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    assert js["replicatedJobs"][0]["template"]["spec"]["completionMode"] == "Indexed"
    assert js["replicatedJobs"][0]["template"]["metadata"]["labels"][_trainjobs.ANCESTOR] == "trainer"
    for labels in _label_levels(rt) + [job["metadata"]["labels"]]:
        assert labels[RUN] == "r", labels
    assert job["kind"] == "TrainJob" and job["spec"]["trainer"] == {"numNodes": 4}
    assert job["spec"]["runtimeRef"] == {
        "apiGroup": "trainer.kubeflow.org",
        "kind": "TrainingRuntime",
        "name": "smoke-r-gang",
    }
    assert selector == "jobset.sigs.k8s.io/jobset-name=smoke-r-gang"
    assert _trainjobs.trainjob_members(None, 4) == 4


def test_smoke_trainjob_control_is_the_same_runtime_without_the_gang():
    (gang_rt, _), _ = _trainjobs.trainjob("ns", "g", "r", 3, GPU, "scheduler_plugins", "sp-sched")
    (rt, job), _ = _trainjobs.trainjob("ns", "c", "r", 3, GPU)
    assert "podGroupPolicy" not in rt["spec"] and "schedulerName" not in _pod_specs(rt)[0]
    assert _pod_specs(rt)[0]["containers"] == _pod_specs(gang_rt)[0]["containers"]
    assert job["spec"]["runtimeRef"]["name"] == "c" and all(lv[RUN] == "r" for lv in _label_levels(rt))


def _user_runtime(policy=None, sname=None, jobs=(("node", "trainer"),), depends=False):
    spec = {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": name,
                        **(
                            {"dependsOn": [{"name": "init", "status": "Complete"}]}
                            if depends and name == "node"
                            else {}
                        ),
                        "template": {
                            "metadata": {"labels": {_trainjobs.ANCESTOR: step}} if step else {},
                            "spec": {
                                "template": {
                                    "spec": {
                                        **({"schedulerName": sname} if sname else {}),
                                        "containers": [{"name": name, "image": "pytorch/pytorch"}],
                                    }
                                }
                            },
                        },
                    }
                    for name, step in jobs
                ]
            }
        },
    }
    if policy:
        spec["podGroupPolicy"] = policy
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "torch-gang"},
        "spec": spec,
    }


COSCHED = {"coscheduling": {"scheduleTimeoutSeconds": 60}}


def test_smoke_trainjob_on_a_users_runtime_creates_no_runtime_and_labels_through_runtime_patches():
    user = _user_runtime(COSCHED, "sp-sched", jobs=(("init", None), ("node", "trainer")))
    (job,), selector = _trainjobs.trainjob("ns", "g", "r", 4, GPU, "scheduler_plugins", "sp-sched", user)
    assert job["spec"]["runtimeRef"] == {
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
        "name": "torch-gang",
    }
    t = job["spec"]["trainer"]
    assert t["numNodes"] == 4 and t["resourcesPerNode"] == {"requests": GPU, "limits": GPU}
    assert t["image"] == _workloads.IMAGE
    (patch,) = job["spec"]["runtimePatches"]
    tpl = patch["trainingRuntimeSpec"]["template"]
    assert tpl["metadata"]["labels"][RUN] == "r"
    assert [rj["name"] for rj in tpl["spec"]["replicatedJobs"]] == ["init", "node"]
    for rj in tpl["spec"]["replicatedJobs"]:
        assert rj["template"]["metadata"]["labels"][RUN] == "r"
        assert rj["template"]["spec"]["template"]["metadata"]["labels"][RUN] == "r"
    # the initializer's pod is a member too
    assert _trainjobs.trainjob_members(user, 4) == 5
    # the control: a TrainingRuntime of the run's, from the user's spec without the gang
    (copy_, control), _ = _trainjobs.trainjob("ns", "c", "r", 4, GPU, None, None, user)
    assert copy_["kind"] == "TrainingRuntime" and copy_["metadata"]["labels"][RUN] == "r"
    assert "podGroupPolicy" not in copy_["spec"] and all("schedulerName" not in p for p in _pod_specs(copy_))
    assert control["spec"]["runtimeRef"]["kind"] == "TrainingRuntime" and control["spec"]["runtimeRef"]["name"] == "c"
    assert user["spec"]["podGroupPolicy"] == COSCHED, "the user's runtime was changed"


@pytest.mark.parametrize(
    "runtime,words",
    [
        (_user_runtime(), ["has no spec.podGroupPolicy", "starts partially", "trainer_runtime_gang filter"]),
        (_user_runtime({"volcano": {}}, "sp-sched"), ["podGroupPolicy volcano, not coscheduling"]),
        (_user_runtime(COSCHED), ["name scheduler 'default-scheduler', not 'sp-sched'", "Trainer never sets it"]),
        (
            _user_runtime(COSCHED, "sp-sched", jobs=(("init", None), ("node", "trainer")), depends=True),
            ["dependsOn init", "can never start"],
        ),
        (_user_runtime(COSCHED, "sp-sched", jobs=(("node", None),)), ["no replicatedJob labelled"]),
    ],
    ids=["no-policy", "other-policy", "no-scheduler-name", "depends-on", "no-trainer-step"],
)
def test_a_users_runtime_that_is_no_gang_is_named_with_the_fix(runtime, words):
    msg = _trainjobs.runtime_problem(runtime, "scheduler_plugins", "sp-sched")
    assert msg and msg.startswith("ClusterTrainingRuntime torch-gang"), msg
    for w in words:
        assert w in msg, msg


def test_a_users_gang_runtime_is_no_problem():
    assert _trainjobs.runtime_problem(_user_runtime(COSCHED, "sp-sched"), "scheduler_plugins", "sp-sched") is None


def _dep(image, ready=1, ns="kubeflow-system", name="m"):
    return {
        "metadata": {"namespace": ns, "name": name},
        "spec": {"template": {"spec": {"containers": [{"name": "manager", "image": image}]}}},
        "status": {"readyReplicas": ready},
    }


def test_trainjob_needs_trainer_and_jobset_running():
    trainer = _dep("ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.2.0")
    jobset = _dep("registry.k8s.io/jobset/jobset:v0.11.1", ns="jobset-system")
    assert _trainjobs.controllers_missing([trainer, jobset]) == []
    staging = _dep("us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset:main")
    assert _trainjobs.controllers_missing([trainer, staging]) == []
    (msg,) = _trainjobs.controllers_missing([jobset])
    assert "no Deployment runs Kubeflow Trainer v2" in msg and "install it" in msg
    (msg,) = _trainjobs.controllers_missing([trainer, _dep("registry.k8s.io/jobset/jobset:v0.11.1", ready=0)])
    assert "JobSet" in msg and "no ready replica" in msg
    assert _trainjobs.controllers([trainer, jobset])["trainer"] == [trainer]


def test_run_kinds_delete_jobs_before_their_runtimes_podgroups_and_pods():
    kinds = [k for k, _v in _smoke_objects.RUN_KINDS]
    assert ("TrainJob", "trainer.kubeflow.org/v1alpha1") in _smoke_objects.RUN_KINDS
    assert ("TrainingRuntime", "trainer.kubeflow.org/v1alpha1") in _smoke_objects.RUN_KINDS
    assert kinds.index("TrainJob") < kinds.index("TrainingRuntime") < kinds.index("PodGroup") < kinds.index("Pod")
    for job in _workloads.JOB_API:
        assert kinds.index(job) < kinds.index("PodGroup")
    assert kinds[-1] == "Pod" and _workloads.WAITED_KINDS == ("TrainJob", "TrainingRuntime")
    assert _api.path("TrainJob", "ns", api_version_=_workloads.TRAINER_API) == (
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs"
    )
