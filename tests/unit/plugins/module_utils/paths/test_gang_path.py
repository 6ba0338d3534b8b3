"""What every gang path checks of its gangs (paths/_gang_path), and gang_info's reads for them: member pods that never
reach their gang scheduler, PodGroups left without a pod whose owner is gone (an owner read each), gangs that can
never fit, and the jobs a quota or an admission webhook let create only part of their pods."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _gpu_node_facts, _pod_facts
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import NotFound
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _koordinator, _scheduler_plugins, _volcano
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _gang_info_gangs

NOW = 1_800_000_000.0
OLD = "2027-01-01T00:00:00Z"
VOLCANO = {"kind": "volcano", "ready": True, "scheduler_names": ["volcano"], "gang_profiles": ["volcano"]}
SP = {"kind": "scheduler_plugins", "ready": True, "scheduler_names": ["sp"], "gang_profiles": ["sp"]}
KOORD = {"kind": "koordinator", "ready": True, "scheduler_names": ["koord"], "gang_profiles": ["koord"]}
GANG = "scheduling.k8s.io/group-name"


def _pod(name, sname, node=None, gpus=1, annotations=None, labels=None):
    return {
        "metadata": {
            "name": name,
            "namespace": "team",
            "creationTimestamp": OLD,
            "annotations": annotations or {},
            "labels": labels or {},
        },
        "spec": {
            "schedulerName": sname,
            **({"nodeName": node} if node else {}),
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        },
        "status": {"phase": "Running" if node else "Pending"},
    }


def test_pods_with_a_paths_member_key_on_another_scheduler_are_named():
    pods = [_pod(f"w{i}", "default-scheduler", node="n1" if i else None, annotations={GANG: "job"}) for i in range(3)]
    keyed = _pod_facts.fold(pods, NOW, 60).keyed()
    (p,) = _volcano.PATH.member_problems(keyed, [VOLCANO])
    assert p["object"] == "Pods team/w0 and 2 more"
    assert "3 pod(s) (1 unbound) carry the annotation scheduling.k8s.io/group-name of a Volcano gang" in p["message"]
    assert "'default-scheduler'" in p["message"] and "operator_gang" in p["fix"]
    # the same pods on the scheduler that serves them, and a label gang on koord-scheduler, say nothing
    served = [_pod("w", "volcano", annotations={GANG: "job"})]
    assert _volcano.PATH.member_problems(_pod_facts.fold(served, NOW, 60).keyed(), [VOLCANO]) == []
    koord = [_pod("k", "koord", labels={_koordinator.LABEL_GANG_NAME: "g", _koordinator.LABEL_GANG_MIN: "1"})]
    assert _koordinator.PATH.member_problems(_pod_facts.fold(koord, NOW, 60).keyed(), [KOORD]) == []
    sp = [_pod("s", "default-scheduler", labels={"scheduling.x-k8s.io/pod-group": "g"})]
    sp_default = {**SP, "gang_profiles": ["default-scheduler"]}  # Coscheduling in the default scheduler
    assert _scheduler_plugins.PATH.member_problems(_pod_facts.fold(sp, NOW, 60).keyed(), [sp_default]) == []
    assert len(_scheduler_plugins.PATH.member_problems(_pod_facts.fold(sp, NOW, 60).keyed(), [SP])) == 1


NODES = [{"name": f"n{i}", "allocatable": 4, "schedulable": True} for i in range(2)]


def test_a_gang_that_can_never_fit_is_named_with_the_numbers():
    big = [_pod(f"b{i}", "volcano", gpus=8, annotations={GANG: "big"}) for i in range(2)]
    many = [_pod(f"m{i}", "volcano", gpus=2, annotations={GANG: "many"}) for i in range(5)]
    ok = [_pod(f"o{i}", "volcano", gpus=2, annotations={GANG: "ok"}) for i in range(4)]
    unfit = _pod_facts.fold(big + many + ok, NOW, 60).unfit(NODES)
    assert [(u["gang"], u["why"], u["asks"], u["most"]) for u in unfit] == [
        ("team/big", "member", 8, 4),
        ("team/many", "gang", 10, 8),
    ]
    # a minimum of 4 of the 5 fits the 8 GPUs: the gang can start
    assert _pod_facts.fold(many, NOW, 60).unfit(NODES, {"team/many": 4}) == []
    (p, q) = _gang_info_gangs.unfit_problems(unfit)
    assert "asks for 8 GPU(s) and no schedulable node has more than 4" in p["message"] and "at most 4" in p["fix"]
    assert "5 members asking for 10 GPU(s) together" in q["message"]


class _Client:
    def __init__(self, objects=None, events=()):
        self.objects, self.events, self.reads, self.lists = objects or {}, list(events), [], []

    def get_or_none(self, path, what=""):
        self.reads.append(path)
        return self.objects.get(path)

    def list(self, path, what="", **query):
        self.lists.append(path)
        if path.endswith("/events"):
            field, _eq, reason = query["fieldSelector"].partition("=")
            assert field == "reason" and reason in _gang_info_gangs.CREATE_FAILED, query
            return [e for e in self.events if e.get("reason", "FailedCreate") == reason]
        return [o for p, o in self.objects.items() if p.rsplit("/", 1)[0] == path]

    def list_or_empty(self, path, what="", **query):
        return []


def _podgroup(name, owner_kind="PyTorchJob", phase="Inqueue", uid="u1"):
    return {
        "metadata": {
            "name": name,
            "namespace": "team",
            "creationTimestamp": OLD,
            "ownerReferences": [{"kind": owner_kind, "name": name, "uid": uid, "controller": True}],
        },
        "spec": {"minMember": 2},
        "status": {"phase": phase},
    }


def test_a_podgroup_without_pods_whose_owner_is_gone_is_stale():
    facts = {
        "now": NOW,
        "threshold": 60,
        "gangs": {"team/live"},
        "keyed": {},
        "lists": {
            "volcano": {
                "podgroups": [
                    _podgroup("gone"),
                    _podgroup("live"),
                    _podgroup("done", phase="Completed"),
                    _podgroup("here"),
                ],
                "queues": [],
            }
        },
    }
    here = "/apis/kubeflow.org/v1/namespaces/team/pytorchjobs/here"
    client = _Client({here: {"metadata": {"uid": "u1"}}})
    probs = _gang_info_gangs.path_problems(client, [VOLCANO], [], facts)
    assert [p["object"] for p in probs] == ["PodGroup team/gone", "PyTorchJob team/here"]
    # the job still there, its PodGroup let in, no pod: the operator missed it
    assert "PodGroup is Inqueue, let in by the scheduler, yet the job has no pod" in probs[1]["message"]
    assert "rollout restart" in probs[1]["fix"]
    assert "Inqueue with no pod, and its PyTorchJob team/gone is gone" in probs[0]["message"]
    assert (
        "still counts against its queue" in probs[0]["message"]
        and "delete podgroups.scheduling.volcano.sh" in probs[0]["fix"]
    )
    # the stale-looking first, then a waiting PyTorchJob's (its minimum); a finished one is not read
    assert client.reads == ["/apis/kubeflow.org/v1/namespaces/team/pytorchjobs/gone", here, f"{here[:-4]}live"]


def test_failed_creates_of_a_quota_or_an_admission_webhook_are_named_per_job():
    def ev(name, msg, count=1, uid=None):
        return {
            "involvedObject": {"kind": "PyTorchJob", "namespace": "team", "name": name, "uid": uid or f"u-{name}"},
            "message": msg,
            "count": count,
        }

    refused = 'admission webhook "validatepod.volcano.sh" denied the request: failed to get PodGroup'
    client = _Client(
        objects={
            f"/apis/kubeflow.org/v1/namespaces/team/pytorchjobs/{n}": {"metadata": {"uid": f"u-{n}"}} for n in "aqr"
        },
        events=[
            ev("q", 'pods "q-worker-3" is forbidden: exceeded quota: gpus, requested: requests.nvidia.com/gpu=1', 2),
            ev("a", refused),
            ev("x", "something else"),
            ev("gone", refused),  # its job deleted since: the events outlive it
            ev("r", refused, uid="u0"),  # made again under the same name: the events were the old one's
        ],
    )
    probs = _gang_info_gangs.event_problems(client)
    # the jobs' kind listed once in their namespace, whatever the number of jobs named
    events = ["/api/v1/events"] * len(_gang_info_gangs.CREATE_FAILED)  # one list a controller's reason
    assert client.lists == [*events, "/apis/kubeflow.org/v1/namespaces/team/pytorchjobs"]
    assert [p["object"] for p in probs] == ["PyTorchJob team/a", "PyTorchJob team/q"]
    assert "refused 1 of its pods" in probs[0]["message"] and "its queue is Open" in probs[0]["fix"]
    assert "could not create 2 pod(s): a namespace ResourceQuota refused them" in probs[1]["message"]


def test_nothing_is_read_or_said_on_a_healthy_cluster():
    facts = {
        "now": NOW,
        "threshold": 60,
        "gangs": {"team/live"},
        "keyed": {},
        "lists": {"volcano": {"podgroups": [_podgroup("live", phase="Running")], "queues": []}},
    }
    client = _Client()
    assert _gang_info_gangs.path_problems(client, [VOLCANO], [], facts) == [] and client.reads == []
    assert _gang_info_gangs.event_problems(_Client()) == []
    assert NotFound  # the client's 404 is get_or_none's None


def test_an_operators_minimum_the_job_cannot_meet_is_named():
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _operators

    def mpijob(policy):
        return {
            "kind": "MPIJob",
            "spec": {
                **({"launcherCreationPolicy": policy} if policy else {}),
                "mpiReplicaSpecs": {"Launcher": {"replicas": 1}, "Worker": {"replicas": 2}},
            },
        }

    msg, fix = _operators.minimum_problem(mpijob("WaitForWorkersReady"), 3)
    assert "minimum is 3, the launcher counted with its 2 worker(s)" in msg and "minAvailable to 2" in fix
    assert _operators.minimum_problem(mpijob("WaitForWorkersReady"), 2) is None  # minAvailable set to the workers
    assert _operators.minimum_problem(mpijob("AtStartup"), 3) is None
    assert _operators.minimum_problem(mpijob(None), 3) is None
    elastic = {"kind": "PyTorchJob", "spec": {"elasticPolicy": {"minReplicas": 2, "maxReplicas": 5}}}
    msg, fix = _operators.minimum_problem(elastic, 5)
    assert "minReplicas 2, maxReplicas 5" in msg and "minimum is 5" in msg and "minAvailable to 2" in fix
    chosen = {**elastic, "spec": {**elastic["spec"], "runPolicy": {"schedulingPolicy": {"minAvailable": 2}}}}
    assert _operators.minimum_problem(chosen, 2) is None
    assert _operators.minimum_problem({"kind": "PyTorchJob", "spec": {}}, 5) is None  # not elastic


def test_a_gang_on_shared_gpus_is_named_and_one_on_whole_gpus_is_not():
    pods = [_pod(f"s{i}", "volcano", node="n0", annotations={GANG: "shared"}) for i in range(2)]
    pods += [_pod("w0", "volcano", node="n1", annotations={GANG: "whole"})]
    nodes = [
        {"name": "n0", "allocatable": 4, "labels": {"nvidia.com/gpu.replicas": "4"}},
        {"name": "n1", "allocatable": 1, "labels": {}},
    ]
    shared = _pod_facts.fold(pods, NOW, 60).shared(_gpu_node_facts.replicas(nodes, {}))
    assert shared == [{"gang": "team/shared", "nodes": {"n0": 4}, "bound": 2}]
    # no GPU Feature Discovery label: gpu_node_info's one physical GPU against the kubelet's 4 says the same
    unlabelled = [{**nodes[0], "labels": {}}, nodes[1]]
    seen = {"n0": {"gpus": [{"uuid": "GPU-0"}]}, "n1": {"gpus": [{"uuid": "GPU-1"}]}}
    assert _pod_facts.fold(pods, NOW, 60).shared(_gpu_node_facts.replicas(unlabelled, seen)) == shared
    assert _pod_facts.fold(pods, NOW, 60).shared(_gpu_node_facts.replicas(unlabelled, {})) == []
    (p,) = _gang_info_gangs.shared_problems(shared)
    assert p["object"] == "Gang team/shared" and "share physical GPUs on n0 (each GPU shared 4 ways)" in p["message"]


def test_events_gang_info_may_not_list_are_said_not_skipped():
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import Forbidden

    class _NoEvents(_Client):
        def list(self, path, what="", **query):
            raise Forbidden(f"Forbidden to read {what}")

    (p,) = _gang_info_gangs.event_problems(_NoEvents())
    assert p["object"] == "Events (all namespaces)" and "may not list events" in p["message"] and "grant" in p["fix"]


def test_what_users_run_on_a_path_is_in_use_and_a_finished_gang_is_not():
    pods = [_pod(f"w{i}", "volcano", node="n0", annotations={GANG: "job"}) for i in range(2)]
    pods.append(_pod("x", "default-scheduler", annotations={GANG: "other"}))  # not served by Volcano: not its user
    queues = [{"metadata": {"name": n}} for n in ("default", "root", "team-a")]
    facts = {
        "lists": {"podgroups": [_podgroup("job"), _podgroup("done", phase="Completed")], "queues": queues},
        "keyed": _pod_facts.fold(pods, NOW, 60).keyed(),
    }
    used = _volcano.PATH.in_use([VOLCANO], facts)
    assert used == ["PodGroup team/job", "Pod team/w0 and 1 more pod(s) (volcano)", "Queue team-a"], used
    assert _volcano.PATH.in_use([VOLCANO], {"lists": {}, "keyed": {}}) == []
    listed = {"volcano": facts["lists"]}
    assert _gang_info_gangs.in_use([VOLCANO], {**facts, "lists": listed}) == {"volcano": {"count": 3, "objects": used}}


def _refused(kind, name, reason, msg, uid=None):
    return {
        "involvedObject": {"kind": kind, "namespace": "team", "name": name, "uid": uid or f"u-{name}"},
        "reason": reason,
        "message": msg,
        "count": 1,
    }


def test_every_controllers_refused_creations_are_named_whatever_refused_them():
    """The reason each controller writes (as its source does), and each refuser: a quota, a LimitRange, a PodSecurity
    admission, any other refusal; a failure that is no refusal, mpi-operator's reason for a failed job, and the events
    of a finished job name nothing."""
    quota = 'pods "w-3" is forbidden: exceeded quota: two, requested: pods=1, used: pods=2, limited: pods=2'
    limit = 'pods "w-1" is forbidden: maximum cpu usage per Container is 1, but limit is 2'
    pss = 'pods "w-0" is forbidden: violates PodSecurity "restricted:latest": privileged'
    jobs = {
        ("kubeflow.org/v1", "pytorchjobs"): ("tq", "tl"),
        ("kubeflow.org/v2beta1", "mpijobs"): ("mq", "mdone", "mfail"),
        ("jobset.x-k8s.io/v1alpha2", "jobsets"): ("js",),
        ("trainer.kubeflow.org/v1alpha1", "trainjobs"): ("tj",),
        ("batch/v1", "jobs"): ("bj", "slow"),
    }
    objects = {}
    for (api, plural), names in jobs.items():
        for n in names:
            done = [{"type": "Succeeded", "status": "True"}] if n == "mdone" else []
            objects[f"/apis/{api}/namespaces/team/{plural}/{n}"] = {
                "metadata": {"uid": f"u-{n}"},
                "status": {"conditions": done},
            }
    client = _Client(
        objects=objects,
        events=[
            _refused("PyTorchJob", "tq", "FailedCreatePod", f"Error creating: {quota}"),
            _refused("PyTorchJob", "tl", "FailedCreatePod", f"Error creating: {limit}"),
            _refused("MPIJob", "mq", "MPIJobFailed", f"worker pod created failed: {quota}"),
            _refused("MPIJob", "mdone", "MPIJobFailed", f"worker pod created failed: {quota}"),  # the job finished
            _refused("MPIJob", "mfail", "MPIJobFailed", 'MPIJob team/mfail has failed: pods "x" is forbidden'),
            _refused("JobSet", "js", "JobCreationFailed", 'jobs.batch "js-w-0" is forbidden: exceeded quota: jobs'),
            _refused("TrainJob", "tj", "TrainJobResourcesCreationFailed", 'admission webhook "x" denied the request'),
            _refused("Job", "bj", "FailedCreate", f"Error creating: {pss}"),
            _refused("Job", "slow", "FailedCreate", "Error creating: etcdserver: request timed out"),  # retried
        ],
    )
    probs = {p["object"]: p for p in _gang_info_gangs.event_problems(client)}
    assert sorted(probs) == [
        "Job team/bj",
        "JobSet team/js",
        "MPIJob team/mq",
        "PyTorchJob team/tl",
        "PyTorchJob team/tq",
        "TrainJob team/tj",
    ]
    assert "ResourceQuota refused them" in probs["PyTorchJob team/tq"]["message"]
    assert "ResourceQuota refused them" in probs["MPIJob team/mq"]["message"]
    assert "a LimitRange refused them" in probs["PyTorchJob team/tl"]["message"]
    assert "kubectl -n team describe limitrange" in probs["PyTorchJob team/tl"]["fix"]
    assert "a PodSecurity admission refused them" in probs["Job team/bj"]["message"]
    assert "pod-security.kubernetes.io/enforce" in probs["Job team/bj"]["fix"]
    assert "an admission webhook refused 1" in probs["TrainJob team/tj"]["message"]


def _ownerless(name, phase="Pending", min_gpus=None):
    pg = _podgroup(name, phase=phase)
    pg["metadata"].pop("ownerReferences")
    if min_gpus is not None:
        pg["spec"]["minResources"] = {"nvidia.com/gpu": str(min_gpus)}
    return pg


def _facts(*podgroups, gangs=(), orphaned=None, per_node=None):
    return {
        "now": NOW,
        "threshold": 60,
        "gangs": set(gangs),
        "keyed": {},
        "orphaned": orphaned or {},
        **({"per_node": per_node} if per_node is not None else {}),
        "lists": {"volcano": {"podgroups": list(podgroups), "queues": []}},
    }


def test_a_podgroup_with_no_owner_and_no_workload_of_its_name_is_stale_with_or_without_pods_left():
    """A job deleted with --cascade=orphan: the garbage collector takes the ownerReference off its PodGroup (and off
    its pods, if it had any). No workload of the name: stale; one there (a job made again): not; a gang of plain pods
    with members of its own is not read at all."""
    left = {"members": 2, "bound": 2, "job_label": "training.kubeflow.org/job-name=kept"}
    facts = _facts(
        _ownerless("gone"),
        _ownerless("kept", phase="Running"),
        _ownerless("again"),
        _ownerless("plain", phase="Running"),
        gangs={"team/kept", "team/plain"},
        orphaned={"team/kept": left},
    )
    client = _Client({"/apis/kubeflow.org/v1/namespaces/team/pytorchjobs/again": {"metadata": {"uid": "u9"}}})
    probs = _gang_info_gangs.path_problems(client, [VOLCANO], [], facts)
    assert [p["object"] for p in probs] == ["PodGroup team/gone", "PodGroup team/kept"]
    gone, kept = probs
    assert "no pod, no owner and no job of its name in namespace team" in gone["message"]
    assert "still counts against its queue" in gone["message"] and "--cascade=orphan" in gone["message"]
    assert "delete podgroups.scheduling.volcano.sh gone" in gone["fix"]
    assert "2 pod(s) of the deleted job (training.kubeflow.org/job-name=kept, 2 bound)" in kept["message"]
    assert "delete pods -l training.kubeflow.org/job-name=kept" in kept["fix"]
    # each candidate: one read of each workload kind; the plain-pod gang none
    kinds = len(_gang_info_gangs.WORKLOAD_KINDS)
    assert len(client.reads) == 3 * kinds and not any(r.endswith("/plain") for r in client.reads)


def test_a_gang_that_declares_more_than_the_cluster_has_is_named_before_any_pod_exists():
    """5 one-GPU members on 4 GPUs, no pod (the scheduler never lets the gang in, so the operator makes none): named
    from its PodGroup's minResources; with pods it is the pods' check that names it, not this one; a member bigger
    than any node, from its job's spec once its owner is read."""
    nodes = [{"name": f"n{i}", "allocatable": 1, "schedulable": True} for i in range(4)]
    big = _ownerless("big", min_gpus=5)
    big["metadata"]["ownerReferences"] = [{"kind": "PyTorchJob", "name": "big", "uid": "u1", "controller": True}]
    fits = _podgroup("fits", phase="Pending")
    fits["spec"]["minResources"] = {"nvidia.com/gpu": "4"}
    wide = _podgroup("wide", phase="Pending")
    wide["spec"]["minResources"] = {"nvidia.com/gpu": "2"}
    with_pods = _podgroup("withpods", phase="Pending")
    with_pods["spec"]["minResources"] = {"nvidia.com/gpu": "8"}
    pytorch = "/apis/kubeflow.org/v1/namespaces/team/pytorchjobs/"

    def job(name, gpus, replicas):
        res = {"limits": {"nvidia.com/gpu": str(gpus)}}
        spec = {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "resources": res}]}}}
        return {"kind": "PyTorchJob", "metadata": {"uid": "u1"}, "spec": {"pytorchReplicaSpecs": {"Worker": spec}}}

    client = _Client(
        {
            f"{pytorch}big": job("big", 1, 5),
            f"{pytorch}fits": job("fits", 1, 4),
            f"{pytorch}wide": job("wide", 2, 1),
            f"{pytorch}withpods": job("withpods", 1, 8),
        }
    )
    facts = _facts(big, fits, wide, with_pods, gangs={"team/withpods"}, per_node=nodes)
    probs = _gang_info_gangs.path_problems(client, [VOLCANO], [], facts)
    assert [p["object"] for p in probs] == ["PodGroup team/big", "PodGroup team/wide"]
    assert "asking for 5 GPU(s) together (its minResources), and all schedulable nodes have 4" in probs[0]["message"]
    assert (
        "it can never start" in probs[0]["message"]
        and "nothing is Pending for a cluster autoscaler" in (probs[0]["message"])
    )
    assert "Worker members ask for 2 GPU(s) each, and no schedulable node has more than 1" in probs[1]["message"]
    # no node facts (a caller that gives none): nothing is guessed
    assert _gang_info_gangs.declared_unfit(_volcano.PATH, _facts(big)) == []


def test_a_fold_tells_pods_a_deleted_job_left_behind_from_a_jobs_own_and_plain_pods():
    job = "training.kubeflow.org/job-name"
    owned = {"kind": "PyTorchJob", "name": "a", "controller": True}
    left = [_pod(f"l{i}", "volcano", node="n1", annotations={GANG: "left"}, labels={job: "left"}) for i in range(2)]
    mine = _pod("o", "volcano", node="n1", annotations={GANG: "owned"}, labels={job: "owned"})
    mine["metadata"]["ownerReferences"] = [owned]
    plain = _pod("p", "volcano", annotations={GANG: "plain"})
    orphaned = _pod_facts.fold([*left, mine, plain], NOW, 60).orphaned()
    assert orphaned == {"team/left": {"members": 2, "bound": 2, "job_label": f"{job}=left"}}


def _mine(facts: dict, path: str = "volcano") -> dict:
    """The facts as gang_info hands them to one path: its own lists."""
    return {**facts, "lists": facts["lists"][path]}


def test_podgroups_of_a_group_no_running_scheduler_watches_are_named():
    """Volcano PodGroups that nothing wrote on while only scheduler-plugins runs (or Volcano's scheduler is down):
    named once, with the count; with Volcano running, or a PodGroup the scheduler wrote on, nothing."""
    waiting = [_ownerless(f"w{i}", phase=None) for i in range(3)]
    said = _ownerless("said")
    said["status"]["conditions"] = [{"type": "Unschedulable", "status": "True"}]
    facts = _mine(_facts(*waiting, said))
    sp = {**SP, "source": "Deployment", "namespace": "scheduler-plugins", "name": "sp"}
    (p,) = _volcano.PATH.unwatched_problems([sp], facts)
    assert p["object"] == "PodGroup team/w0 and 2 more"
    assert "3 PodGroup(s) of scheduling.volcano.sh wait with nothing written on them" in p["message"]
    assert "running: scheduler-plugins Deployment scheduler-plugins/sp" in p["message"], p
    assert "gangsched.kubeflow.volcano" in p["fix"]
    down = {**VOLCANO, "ready": False, "source": "Deployment", "namespace": "volcano-system", "name": "vc"}
    assert "no gang scheduler found" in _volcano.PATH.unwatched_problems([down], facts)[0]["message"]
    assert _volcano.PATH.unwatched_problems([VOLCANO], facts) == []
    assert _volcano.PATH.unwatched_problems([sp], _mine(_facts(said))) == []


def test_a_stale_podgroup_is_named_stale_only_even_when_it_would_never_fit():
    nodes = [{"name": "n0", "allocatable": 1, "schedulable": True}]
    facts = _facts(_ownerless("gone", min_gpus=5), per_node=nodes)
    (p,) = _gang_info_gangs.path_problems(_Client(), [VOLCANO], [], facts)
    assert "stale gang object" in p["message"]


def test_pods_that_join_a_podgroup_that_does_not_exist_are_named_not_called_a_hung_scheduler():
    """vc-scheduler v1.15 ignores a gang without its PodGroup (its default admission no longer refuses such pods):
    the pods are never looked at. Named for what it is, and explained so that the scheduler is not called hung; a gang
    whose PodGroup exists, or whose pods go to another scheduler, is not."""
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _gang_info

    pods = [_pod(f"lost-{i}", "volcano", annotations={GANG: "lost"}) for i in range(2)]
    pods += [_pod(f"kept-{i}", "volcano", annotations={GANG: "kept"}) for i in range(2)]
    fold = _pod_facts.fold(pods, NOW, 60)
    kept = _podgroup("kept", phase="Pending")
    facts = _facts(kept)
    vc = {**VOLCANO, "source": "Deployment", "namespace": "volcano-system", "name": "vc"}
    probs, explained = _gang_info_gangs.untried_problems(fold.untried(), [vc], facts)
    (p,) = probs
    assert p["object"] == "Pods team/lost-0 and 1 more"
    assert (
        "join Volcano PodGroup team/lost (annotation scheduling.k8s.io/group-name), which does not exist"
        in p["message"]
    )
    assert "it is not hung" in p["message"] and "create PodGroup lost in namespace team" in p["fix"]
    stalled = _gang_info.stalled_problems(fold.waiting(), [vc], [], explained)
    # the two pods of the gang whose PodGroup exists and is waiting are still counted
    assert len(stalled) == 1 and "2 Pending pod(s)" in stalled[0]["message"], stalled
    # without the PodGroup list (the CRD not Established) nothing is said
    assert _volcano.PATH.missing_podgroup_problems(fold.untried(), [vc], {"lists": {}}) == []


def test_an_unwatched_podgroup_with_live_members_is_left_to_the_pods_checks():
    sp = {**SP, "source": "Deployment", "namespace": "scheduler-plugins", "name": "sp"}
    facts = _mine(_facts(_ownerless("w0", phase=None), gangs={"team/w0"}))
    assert _volcano.PATH.unwatched_problems([sp], facts) == []


def test_a_generic_refusal_gives_way_to_the_check_that_names_its_cause():
    """Trainer could not create its TrainJob's PodGroup (the API server refused a second controller reference, as a
    PyTorchJob of the name owns it): the twin check names the cause, so the event's generic refusal is not repeated;
    on an object nothing else names, it stays."""
    clash = 'podgroups.scheduling.x-k8s.io "twin" is invalid: metadata.ownerReferences: Invalid value: ...'
    client = _Client(
        objects={
            f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/{n}": {"metadata": {"uid": f"u-{n}"}}
            for n in ("twin", "solo")
        },
        events=[
            _refused("TrainJob", "twin", "TrainJobResourcesCreationFailed", clash),
            _refused("TrainJob", "solo", "TrainJobResourcesCreationFailed", clash),
        ],
    )
    refused = _gang_info_gangs.event_problems(client)
    assert [p["object"] for p in refused] == ["TrainJob team/solo", "TrainJob team/twin"]
    assert "the API server refused them" in refused[0]["message"]
    twin = {"object": "TrainJob team/twin", "message": "its PodGroup is shared with PyTorchJob team/twin", "fix": "x"}
    out = _gang_info_gangs.specific_first([twin, *refused])
    assert out == [twin, {k: v for k, v in refused[0].items() if k != _gang_info_gangs.GENERIC}]
    assert all(_gang_info_gangs.GENERIC not in p for p in out)
