"""Why is my job Pending? Each failure gang_info names, reproduced on the lab with the real vc-scheduler and
kube-controller-manager: a Volcano queue whose capability is below the gang's minResources, a queue that does not
exist and a Closed one (which vc-scheduler v1.15 holds a gang for, v1.10 did not), a member bigger than any node, a
gang's pods on the default scheduler (a partial start), a namespace quota that lets a Job create only part of its
pods, a Coscheduling permit wait shorter than the gang takes to be placed (the real scheduler-plugins), and a PodGroup
left behind by its deleted job while the garbage collector is behind (kube-controller-manager frozen).
gang_info names each with the object, the cause and the fix, and on the job itself gives it as the reason; the healthy
gang beside them is named by none."""

from __future__ import annotations

import copy
import os
import signal

import pytest
from ansible_run import playbook, run_module

from lab import kube, scenarios
from lab import versions as V

GPU = "nvidia.com/gpu"


def _about(info: dict, obj: str) -> list[dict]:
    return [p for p in info["problems"] if p["object"] == obj]


def _queue(name: str, capability: dict | None = None) -> dict:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1, "reclaimable": True, **({"capability": capability} if capability else {})},
    }


def _volcano_gang(ns: str, name: str, size: int, queue: str, gpus: int = 1, min_resources: dict | None = None):
    docs = scenarios.gang(ns, name, size, "volcano", gpus=gpus)
    docs[0]["spec"]["queue"] = queue
    if min_resources:
        docs[0]["spec"]["minResources"] = min_resources
    return docs


def _explain(lab, kind: str, ns: str, name: str, threshold: int = 60) -> dict:
    job = {"kind": kind, "namespace": ns, "name": name}
    return run_module(lab, "gang_info", {"job": job, "partial_threshold_seconds": threshold})


@pytest.fixture(scope="module")
def queues(volcano):
    kube.apply(volcano, [_queue("gangsched-small", {GPU: "1"}), _queue("gangsched-shut")])
    yield volcano
    kube.kubectl(volcano, "delete", "queues.scheduling.volcano.sh", "gangsched-small", "gangsched-shut", check=False)


def test_a_queue_below_the_gangs_minimum_holds_it_and_is_named(queues, namespace):
    kube.apply(queues, _volcano_gang(namespace, "big", 2, "gangsched-small", min_resources={GPU: "2"}))
    kube.apply(queues, scenarios.gang(namespace, "fine", 2, "volcano"))
    kube.wait_for(lambda: _bound(queues, namespace, "fine") == 2, 60, "the healthy gang bound")
    info = _explain(queues, "PodGroup", namespace, "big")
    (p,) = _about(info, f"PodGroup {namespace}/big")
    assert f"{GPU} 2 > 1" in p["message"] and "never enqueued" in p["message"], p
    assert "raise Queue gangsched-small's spec.capability" in p["fix"], p
    assert _about(info, f"PodGroup {namespace}/fine") == []
    job = info["job"]
    assert job["found"] and job["gang"]["path"] == "volcano" and job["queue"]["name"] == "gangsched-small", job
    assert "never enqueued" in job["why"] and all(not r["node"] for r in job["pods"]), job
    assert _bound(queues, namespace, "big") == 0


def _queue_command(lab, queue: str, action: str) -> None:
    """A bus.volcano.sh Command on a queue, as ``vcctl queue operate`` makes it; vc-controller-manager's queue
    controller carries it out."""
    out = kube.kubectl(lab, "get", "queues.scheduling.volcano.sh", queue, "-o", "jsonpath={.metadata.uid}")
    ref = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "name": queue,
        "uid": out.stdout.strip(),
        "controller": True,
    }
    cmd = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {
            "name": f"{queue}-{action.lower()}-{os.getpid()}",
            "namespace": "default",
            "ownerReferences": [ref],
        },
        "target": ref,
        "action": action,
    }
    kube.apply(lab, [cmd])


def _queue_state(lab, queue: str) -> str:
    out = kube.kubectl(lab, "get", "queues.scheduling.volcano.sh", queue, "-o", "jsonpath={.status.state}")
    return out.stdout.strip()


def test_a_missing_queue_and_a_closed_one_are_named(queues, namespace):
    """A queue that does not exist keeps its gang waiting, and is named; so does a Closed queue, closed as vcctl closes
    it: vc-scheduler v1.15 allocates nothing to a queue that is not Open (v1.10 still placed a waiting gang there);
    opened again, the gang binds and nothing is named."""
    _queue_command(queues, "gangsched-shut", "CloseQueue")
    kube.wait_for(lambda: _queue_state(queues, "gangsched-shut") == "Closed", 60, "the queue closed")
    kube.apply(queues, _volcano_gang(namespace, "lost", 2, "gangsched-nope"))
    kube.apply(queues, _volcano_gang(namespace, "closed", 2, "gangsched-shut"))
    try:
        info = run_module(queues, "gang_info", {})
        (lost,) = _about(info, f"PodGroup {namespace}/lost")
        assert "queue 'gangsched-nope', which does not exist" in lost["message"], lost
        (closed,) = _about(info, f"PodGroup {namespace}/closed")
        assert "its Volcano queue 'gangsched-shut' is Closed, not Open" in closed["message"], closed
        assert "vcctl queue operate --action open --name gangsched-shut" in closed["fix"], closed
        assert _bound(queues, namespace, "lost") == 0 and _bound(queues, namespace, "closed") == 0
    finally:
        _queue_command(queues, "gangsched-shut", "OpenQueue")
    kube.wait_for(lambda: _bound(queues, namespace, "closed") == 2, 60, "the opened queue's gang bound")
    assert _about(run_module(queues, "gang_info", {}), f"PodGroup {namespace}/closed") == []


def test_a_member_bigger_than_any_node_is_named_at_once(volcano, namespace):
    kube.apply(volcano, scenarios.gang(namespace, "huge", 2, "volcano", gpus=8))
    info = run_module(volcano, "gang_info", {})
    (p,) = [p for p in info["problems"] if p["object"].startswith(f"Pod {namespace}/huge-")]
    assert "asks for 8 GPU(s) and no schedulable node has more than 1" in p["message"], p
    job = _explain(volcano, "PodGroup", namespace, "huge")["job"]
    assert "asks for 8 GPU(s)" in job["why"], job


def test_a_gangs_pods_on_the_default_scheduler_start_in_part_and_are_named(volcano, namespace):
    docs = scenarios.gang(namespace, "half", 5, "volcano")
    for d in docs[1:]:
        d["spec"]["schedulerName"] = "default-scheduler"  # the operator's gang flag unset: Volcano never sees them
    kube.apply(volcano, docs)
    kube.wait_for(lambda: _bound(volcano, namespace, "half") == 4, 60, "4 of 5 bound one by one")
    info = run_module(volcano, "gang_info", {})
    (p,) = [p for p in info["problems"] if p["object"].startswith(f"Pods {namespace}/half-")]
    assert "carry the annotation scheduling.k8s.io/group-name of a Volcano gang" in p["message"], p
    assert "'default-scheduler'" in p["message"] and "operator_gang" in p["fix"], p
    job = _explain(volcano, "PodGroup", namespace, "half")["job"]
    assert "default-scheduler" in job["why"] and sum(1 for r in job["pods"] if r["node"]) == 4, job


def test_a_quota_that_lets_only_part_of_a_job_be_created_is_named(lab, namespace):
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpus", "namespace": namespace},
        "spec": {"hard": {f"requests.{GPU}": "2"}},
    }
    pod = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "w", "image": "busybox:1.36", "resources": {"limits": {GPU: "1"}}}],
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "split", "namespace": namespace},
        "spec": {"parallelism": 4, "completions": 4, "backoffLimit": 0, "template": {"spec": pod}},
    }
    kube.apply(lab, [quota])
    kube.wait_for(lambda: _quota_counted(lab, namespace), 30, "the quota's status")
    kube.apply(lab, [job])
    obj = f"Job {namespace}/split"
    kube.wait_for(lambda: _about(run_module(lab, "gang_info", {}), obj), 60, "the FailedCreate events")
    info = _explain(lab, "Job", namespace, "split")
    (p,) = _about(info, obj)
    assert "a namespace ResourceQuota refused them" in p["message"] and "exceeded quota" in p["message"], p
    job = info["job"]
    assert "ResourceQuota refused" in job["why"] and len(job["pods"]) == 2, job
    assert [q["name"] for q in job["quotas"]] == ["gpus"] and any("FailedCreate" in e for e in job["events"]), job
    # the playbook users run prints the same, the why first
    run = playbook(lab, "why", job=f"Job/{namespace}/split")
    assert run.rc == 0, run.failures()
    (printed,) = run.results("Why")
    lines = printed["msg"]
    assert lines[0].startswith(f"Job {namespace}/split: ") and "ResourceQuota refused" in lines[0], lines
    assert any(line.startswith("quota gpus: requests.nvidia.com/gpu 2/2") for line in lines), lines
    assert playbook(lab, "why", job="nonsense").rc != 0


def _bound(lab, ns: str, gang: str, label: str = "app") -> int:
    out = kube.kubectl(
        lab, "get", "pods", "-n", ns, "-l", f"{label}={gang}", "-o", "jsonpath={.items[*].spec.nodeName}"
    )
    return len(out.stdout.split())


def _quota_counted(lab, ns: str) -> bool:
    out = kube.kubectl(lab, "get", "resourcequota", "gpus", "-n", ns, "-o", "jsonpath={.status.hard}", check=False)
    return GPU in out.stdout


def test_a_volcano_configuration_without_the_gang_plugin_is_named_and_starts_gangs_in_part(volcano, namespace):
    """vc-scheduler restarted on a configuration without enqueue and the gang plugin: gang_info names it from the
    ConfigMap, and the scheduler itself shows why it matters, placing 4 of a gang of 5 on the 4 GPUs."""
    conf = scenarios.VC_CONF.replace('"enqueue, allocate, backfill"', '"allocate, backfill"').replace(
        "  - name: gang\n    enablePreemptable: false\n", ""
    )
    assert conf != scenarios.VC_CONF and "gang" not in conf.split("tiers")[1].split("conformance")[0]
    _vc_conf(volcano, conf)
    try:
        info = run_module(volcano, "gang_info", {})
        (p,) = _about(info, "Deployment volcano-system/vc-scheduler")
        assert "lacks the enqueue action, the gang plugin" in p["message"], p
        assert "members are placed one by one" in p["message"] and "restart it" in p["fix"], p
        kube.apply(volcano, scenarios.gang(namespace, "split", 5, "volcano"))
        kube.wait_for(lambda: _bound(volcano, namespace, "split") == 4, 60, "4 of the 5 placed one by one")
    finally:
        _vc_conf(volcano, scenarios.VC_CONF)
    info = run_module(volcano, "gang_info", {})
    assert _about(info, "Deployment volcano-system/vc-scheduler") == []


def _vc_conf(lab, text: str) -> None:
    cm = scenarios.vc_scheduler()[2]
    cm["data"]["volcano-scheduler.conf"] = text
    kube.apply(lab, [cm])
    kube.kubectl(lab, "-n", "volcano-system", "rollout", "restart", "deployment/vc-scheduler")
    kube.kubectl(lab, "-n", "volcano-system", "rollout", "status", "deployment/vc-scheduler", "--timeout=90s")


@pytest.fixture(scope="module")
def operators(volcano):
    scenarios.install_training_operator(volcano)
    scenarios.install_mpi_operator(volcano)
    return volcano


def _podgroup_min(lab, ns: str, name: str) -> int | None:
    out = kube.kubectl(
        lab, "get", "podgroups.scheduling.volcano.sh", name, "-n", ns, "-o", "jsonpath={.spec.minMember}", check=False
    )
    return int(out.stdout) if out.stdout.strip().isdigit() else None


def test_an_mpijob_whose_launcher_waits_for_the_workers_it_is_counted_with_is_named(operators, namespace):
    job = scenarios.mpijob(namespace, "waits", 2)
    job["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    kube.apply(operators, [job])
    kube.wait_for(lambda: _podgroup_min(operators, namespace, "waits") is not None, 60, "mpi-operator's PodGroup")
    obj = f"MPIJob {namespace}/waits"
    kube.wait_for(lambda: _about(run_module(operators, "gang_info", {"partial_threshold_seconds": 1}), obj), 60, obj)
    info = _explain(operators, "MPIJob", namespace, "waits", threshold=1)
    (p,) = _about(info, obj)
    assert _podgroup_min(operators, namespace, "waits") == 3, "mpi-operator counts the launcher"
    assert "the launcher counted with its 2 worker(s)" in p["message"] and "minAvailable to 2" in p["fix"], p
    assert "WaitForWorkersReady" in info["job"]["why"] and all(not r["node"] for r in info["job"]["pods"]), info["job"]


def test_an_elastic_pytorchjob_whose_minimum_is_its_maximum_is_named(operators, namespace):
    """5 workers at most, 2 at least, on 4 GPUs: the elastic job could start with 2 to 4, but its gang waits for 5."""
    job = scenarios.pytorchjob(namespace, "elastic", 5)
    job["spec"]["pytorchReplicaSpecs"].pop("Master")
    job["spec"]["elasticPolicy"] = {"minReplicas": 2, "maxReplicas": 5, "rdzvBackend": "c10d"}
    kube.apply(operators, [job])
    kube.wait_for(lambda: _podgroup_min(operators, namespace, "elastic") is not None, 60, "the operator's PodGroup")
    obj = f"PyTorchJob {namespace}/elastic"
    kube.wait_for(lambda: _about(run_module(operators, "gang_info", {"partial_threshold_seconds": 1}), obj), 60, obj)
    (p,) = _about(run_module(operators, "gang_info", {"partial_threshold_seconds": 1}), obj)
    assert f"minimum is {_podgroup_min(operators, namespace, 'elastic')}" in p["message"], p
    assert "minReplicas 2, maxReplicas 5" in p["message"] and "minAvailable to 2" in p["fix"], p
    assert _bound(operators, namespace, "elastic", "training.kubeflow.org/job-name") == 0


def test_an_operator_that_misses_its_podgroup_let_in_is_named(operators, namespace):
    """training-operator stopped once it made the PyTorchJob's PodGroup, and the pods it had made deleted (as a node's
    loss would): vc-scheduler keeps the gang let in (Inqueue), no pod comes back, and gang_info names the job and the
    operator; started again, the operator creates the pods."""
    kube.kubectl(operators, "-n", "kubeflow", "scale", "deployment/training-operator", "--replicas=0")
    kube.apply(operators, [scenarios.pytorchjob(namespace, "orphan", 1)])
    try:
        kube.kubectl(operators, "-n", "kubeflow", "scale", "deployment/training-operator", "--replicas=1")
        kube.wait_for(lambda: _podgroup_min(operators, namespace, "orphan") is not None, 60, "the PodGroup")
        kube.kubectl(operators, "-n", "kubeflow", "scale", "deployment/training-operator", "--replicas=0")
        kube.kubectl(operators, "-n", "kubeflow", "delete", "pods", "--all", "--grace-period=0", "--wait=true")
        kube.kubectl(operators, "-n", namespace, "delete", "pods", "--all", "--grace-period=0", "--wait=true")
        kube.wait_for(lambda: _phase(operators, namespace, "orphan") == "Inqueue", 60, "the PodGroup let in")
        obj = f"PyTorchJob {namespace}/orphan"
        kube.wait_for(
            lambda: _about(run_module(operators, "gang_info", {"partial_threshold_seconds": 1}), obj), 60, obj
        )
        (p,) = _about(run_module(operators, "gang_info", {"partial_threshold_seconds": 1}), obj)
        assert "PodGroup is Inqueue, let in by the scheduler, yet the job has no pod" in p["message"], p
        assert "kubeflow/training-operator is not ready" in p["message"], p
    finally:
        kube.kubectl(operators, "-n", "kubeflow", "scale", "deployment/training-operator", "--replicas=1")
    kube.wait_for(lambda: _bound(operators, namespace, "orphan", "training.kubeflow.org/job-name") == 2, 90, "pods")


def _phase(lab, ns: str, name: str) -> str:
    out = kube.kubectl(
        lab, "get", "podgroups.scheduling.volcano.sh", name, "-n", ns, "-o", "jsonpath={.status.phase}", check=False
    )
    return out.stdout.strip()


def test_a_gang_that_fits_only_on_shared_gpus_is_named(volcano, api, core, added_nodes, namespace):
    """The four 1-GPU nodes cordoned and one node whose single GPU the device plugin advertises 4 times, labelled as
    GPU Feature Discovery labels a time-sliced GPU: Volcano binds a gang of 4 there, and gang_info says its members
    share physical GPUs."""
    from lab import nodes

    cordoned = [n.metadata.name for n in core.list_node(label_selector="nvidia.com/gpu.present=true").items]
    for n in cordoned:
        core.patch_node(n, {"spec": {"unschedulable": True}})
    try:
        shared = nodes.add(api, 4, name="gpu-node-shared")
        added_nodes.append(shared)
        core.patch_node(shared, {"metadata": {"labels": {"nvidia.com/gpu.replicas": "4"}}})
        nodes.wait_ready(api, names=[shared])
        kube.apply(volcano, scenarios.gang(namespace, "sliced", 4, "volcano"))
        kube.wait_for(lambda: _bound(volcano, namespace, "sliced") == 4, 60, "the gang bound on the shared GPU")
        (p,) = _about(run_module(volcano, "gang_info", {}), f"Gang {namespace}/sliced")
        assert "share physical GPUs on gpu-node-shared (each GPU shared 4 ways)" in p["message"], p
    finally:
        for n in cordoned:
            core.patch_node(n, {"spec": {"unschedulable": False}})


@pytest.fixture(scope="module")
def coscheduling(volcano):
    """scheduler-plugins' kube-scheduler with Coscheduling beside vc-scheduler, as a second scheduler."""
    scenarios.install_scheduler_plugins(volcano)
    return volcano


def test_a_permit_wait_shorter_than_the_gang_takes_is_named(coscheduling, namespace):
    """A Coscheduling gang of 3 with scheduleTimeoutSeconds 2 whose last member goes to a scheduler no one runs (a
    member written by hand, or by a controller that sets its own schedulerName): Coscheduling counts it, places the two
    others, and they wait 2 s at Permit, are let go and tried again, over and over. gang_info names the PodGroup and
    the wait, and explains the job by its cause (the member's schedulerName); the member made again for the gang's
    scheduler (schedulerName cannot change), the whole gang binds."""
    docs = scenarios.gang(namespace, "late", 3, "scheduler-plugins")
    docs[0]["spec"]["scheduleTimeoutSeconds"] = 2
    right = copy.deepcopy(docs[-1])
    docs[-1]["spec"]["schedulerName"] = "gangsched-test-nobody"
    kube.apply(coscheduling, docs)
    obj = f"PodGroup {namespace}/late"
    kube.wait_for(lambda: _about(run_module(coscheduling, "gang_info", {}), obj), 90, "the permit timeout named")
    info = _explain(coscheduling, "PodGroup", namespace, "late")
    (p,) = _about(info, obj)
    assert "after waiting 2s at Permit" in p["message"] and "its scheduleTimeoutSeconds (2)" in p["message"], p
    assert "raise the PodGroup's scheduleTimeoutSeconds" in p["fix"], p
    # the job's why is the cause, the member no scheduler of the gang serves; the timeout is its consequence
    assert "schedulerName 'gangsched-test-nobody'" in info["job"]["why"], info["job"]
    assert _bound(coscheduling, namespace, "late") == 0
    kube.kubectl(coscheduling, "-n", namespace, "delete", "pod", "late-2", "--wait=true")
    kube.apply(coscheduling, [right])
    kube.wait_for(lambda: _bound(coscheduling, namespace, "late") == 3, 90, "the whole gang bound")


@pytest.mark.skipif(
    tuple(int(x) for x in V.SCHEDULER_PLUGINS.lstrip("v").split(".")[:2]) < (0, 34),
    reason="before v0.34 Coscheduling places the ungated members and lets them go at Permit (the test above's word)",
)
def test_a_gang_held_by_a_gated_member_is_named(coscheduling, namespace):
    """A Coscheduling gang of 3 whose last member is held by a scheduling gate (as Kueue or another controller holds a
    pod until it lets it go): from v0.34 Coscheduling counts no gated member towards minMember and places none of the
    gang. gang_info names the PodGroup, what its members were told and how to find the gates; the gate lifted, the
    whole gang binds."""
    docs = scenarios.gang(namespace, "gated", 3, "scheduler-plugins")
    docs[-1]["spec"]["schedulingGates"] = [{"name": "gangsched.test/late"}]
    kube.apply(coscheduling, docs)
    obj = f"PodGroup {namespace}/gated"

    def held() -> list[dict]:
        return [p for p in _about(run_module(coscheduling, "gang_info", {}), obj) if "scheduling gates" in p["message"]]

    kube.wait_for(held, 90, "the gated members named")
    info = _explain(coscheduling, "PodGroup", namespace, "gated")
    (p,) = [p for p in _about(info, obj) if "scheduling gates" in p["message"]]
    assert "minMember (3)" in p["message"] and "cannot proceed due to gated pods" in p["message"], p
    assert "get pods -l scheduling.x-k8s.io/pod-group=gated" in p["fix"], p
    assert _bound(coscheduling, namespace, "gated") == 0
    ungate = '[{"op": "remove", "path": "/spec/schedulingGates"}]'
    kube.kubectl(coscheduling, "-n", namespace, "patch", "pod", "gated-2", "--type=json", "-p", ungate)
    kube.wait_for(lambda: _bound(coscheduling, namespace, "gated") == 3, 90, "the whole gang bound")


def test_a_stale_podgroup_whose_job_is_gone_is_named(operators, queues, namespace):
    """A PyTorchJob its queue cannot take (its PodGroup Pending, no pod made), deleted while kube-controller-manager is
    frozen (its garbage collector behind, as on a busy cluster): the PodGroup stays, still counted against its queue,
    and gang_info names it stale with the owner that is gone; thawed, the collector removes it."""
    job = scenarios.pytorchjob(namespace, "gone", 1)
    job["spec"]["runPolicy"] = {"schedulingPolicy": {"queue": "gangsched-small"}}
    kube.apply(operators, [job])
    kube.wait_for(lambda: _phase(operators, namespace, "gone") == "Pending", 60, "the job's PodGroup held")
    pid = operators.pid("kube-controller-manager")
    os.kill(pid, signal.SIGSTOP)
    try:
        kube.kubectl(operators, "-n", namespace, "delete", "pytorchjob", "gone")
        obj = f"PodGroup {namespace}/gone"

        def stale() -> list[dict]:
            found = _about(run_module(operators, "gang_info", {"partial_threshold_seconds": 1}), obj)
            return [p for p in found if "a stale gang object" in p["message"]]

        (p,) = kube.wait_for(stale, 60, "the stale PodGroup named")
        assert f"its PyTorchJob {namespace}/gone is gone" in p["message"], p
        assert (
            "still counts against its queue" in p["message"]
            and "delete podgroups.scheduling.volcano.sh gone" in (p["fix"])
        ), p
    finally:
        os.kill(pid, signal.SIGCONT)
    kube.wait_for(lambda: _phase(operators, namespace, "gone") == "", 60, "the collector removed the PodGroup")
