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
            assert query == {"fieldSelector": "reason=FailedCreate"}
            return self.events
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
    assert client.lists == ["/api/v1/events", "/apis/kubeflow.org/v1/namespaces/team/pytorchjobs"]
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
