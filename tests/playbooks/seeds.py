"""The seed guides' examples, end to end, on a lab that site.yml set up: TFJobs and MPIJobs are
submitted as a user would, the operators the collection installed and flagged create their pods and
PodGroups, the scheduler the collection installed places them, and every pod transition is watched
(a pod bound for a moment and released again still counts as bound).

Each ``check_*`` function runs one example and asserts what the issue promises; it returns what it
saw so that a test can report it. The lab has 4 GPU nodes x 1 GPU and a CPU node; examples that need
another shape cordon those GPU nodes and add KWOK nodes, and ``Pool`` puts the lab back afterwards.
"""

from __future__ import annotations

import time

from ansible_run import module
from kubernetes import client as k

from lab import kube, nodes, scenarios

JOB_LABEL = "training.kubeflow.org/job-name"
HOLD = 15.0  # how long a held gang is watched for any bind
PARTIAL_AFTER = 3  # gang_info partial_threshold_seconds
PG_API = {"volcano": ("scheduling.volcano.sh", "v1beta1"), "scheduler_plugins": ("scheduling.x-k8s.io", "v1alpha1")}


class Pool:
    """Shapes the lab's GPU capacity (cordon the stock GPU nodes, add KWOK nodes) and restores it."""

    def __init__(self, lab):
        self.api = kube.api(lab)
        self.core = k.CoreV1Api(self.api)
        self.stock = sorted(
            n.metadata.name
            for n in self.core.list_node(label_selector="nvidia.com/gpu.present=true").items
            if not n.spec.unschedulable
        )
        self.added: list[str] = []
        self.cordoned: set[str] = set()
        self.tainted: set[str] = set()

    def cordon(self, names, on: bool = True) -> None:
        for name in names:
            self.core.patch_node(name, {"spec": {"unschedulable": on}})
            (self.cordoned.add if on else self.cordoned.discard)(name)

    def taint(self, names, taint: dict | None) -> None:
        """Put one NoSchedule taint on the nodes (None: take the lab's taints off again)."""
        for name in names:
            self.core.patch_node(name, {"spec": {"taints": [taint] if taint else None}})
            (self.tainted.add if taint else self.tainted.discard)(name)

    def add(self, gpus: int) -> str:
        name = nodes.add(self.api, gpus=gpus)
        self.added.append(name)
        nodes.wait_ready(self.api, names=[name])
        return name

    def restore(self) -> None:
        for name in self.added:
            nodes.remove(self.api, name)
        self.added.clear()
        self.cordon(list(self.cordoned), on=False)
        self.taint(list(self.tainted), None)


class Jobs:
    """Kubeflow jobs of one namespace and every transition of their pods (``selector``: the label every
    pod of those jobs carries; Trainer v2's TrainJob pods carry JobSet's)."""

    def __init__(self, lab, ns: str, selector: str = JOB_LABEL):
        self.lab, self.ns = lab, ns
        self.co = k.CustomObjectsApi(kube.api(lab))
        self.watcher = kube.PodWatcher(lab, ns, selector)
        self.docs: dict[str, dict] = {}

    def __enter__(self) -> Jobs:
        self.watcher.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.watcher.__exit__(*exc)

    def submit(self, *docs: dict) -> None:
        for d in docs:
            self.docs[d["metadata"]["name"]] = d
        kube.apply(self.lab, list(docs))

    def delete(self, *names: str) -> None:
        kube.delete(self.lab, [self.docs.pop(n) for n in names])
        kube.wait_for(lambda: not any(self.pods(n) for n in names), 90, f"the pods of {', '.join(names)} to go")

    def pods(self, job: str) -> dict[str, dict]:
        return {n: p for n, p in self.watcher.snapshot().latest.items() if n.startswith(f"{job}-")}

    def state(self, job: str) -> dict:
        s = self.watcher.snapshot()
        mine = {n: p for n, p in s.latest.items() if n.startswith(f"{job}-")}
        return {
            "pods": len(mine),
            "running": sorted(n for n, p in mine.items() if p["phase"] == "Running"),
            "pending": sorted(n for n, p in mine.items() if p["phase"] == "Pending"),
            "ever_bound": sorted(n for n in s.ever_bound() if n.startswith(f"{job}-")),
        }

    def wait(self, job: str, running: int, pending: int = 0, timeout: float = 90) -> dict:
        def there():
            st = self.state(job)
            return st if (len(st["running"]), len(st["pending"])) == (running, pending) else None

        return kube.wait_for(there, timeout, f"{job}: {running} Running, {pending} Pending")

    def podgroup(self, job: str, scheduler: str) -> dict | None:
        group, version = PG_API[scheduler]
        try:
            return self.co.get_namespaced_custom_object(group, version, self.ns, "podgroups", job)
        except k.ApiException as e:
            if e.status == 404:
                return None
            raise

    def held(self, job: str, members: int, scheduler: str) -> dict:
        """Watch a gang that cannot fit for HOLD seconds: no member may be bound at any moment. Volcano
        keeps the PodGroup Pending and training-operator then waits with creating the pods; whatever
        pods exist must be Pending."""
        time.sleep(HOLD)
        st = self.state(job)
        pg = self.podgroup(job, scheduler)
        st["podgroup_phase"] = ((pg or {}).get("status") or {}).get("phase")
        assert st["ever_bound"] == [], f"{job}: members bound while the gang could not fit: {st}"
        assert st["running"] == [] and len(st["pending"]) == st["pods"] <= members, st
        assert pg is not None, f"{job}: the operator made no PodGroup"
        assert pg["spec"]["minMember"] == members, pg["spec"]
        return st


def partial(ns: str, lab) -> dict[str, dict]:
    """gang_info's partial gangs of one namespace, by job name (asked once the newest member has been
    Pending longer than the threshold)."""
    time.sleep(PARTIAL_AFTER + 1)
    info = module(lab, "gang_info", partial_threshold_seconds=PARTIAL_AFTER)
    assert info.get("failed") is not True, info
    return {g["gang"].split("/", 1)[1]: g for g in info["partial_gangs"] if g["gang"].startswith(f"{ns}/")}


# ---- seed 003: 1 PS + 4 workers x 2 GPUs on a 4-GPU cluster -------------------------------------------
def seed003_cluster(pool: Pool) -> None:
    """4 GPUs as 2 nodes x 2 GPUs (a worker needs 2 on one node)."""
    pool.cordon(pool.stock)
    pool.add(2)
    pool.add(2)


def check_seed003_without_gang(jobs: Jobs, pool: Pool) -> dict:
    seed003_cluster(pool)
    jobs.submit(scenarios.tfjob(jobs.ns, "seed3", workers=4, worker_gpus=2))
    st = jobs.wait("seed3", running=3, pending=2)
    time.sleep(5)
    st = jobs.state("seed3")
    assert "seed3-ps-0" in st["running"], st
    assert len(st["running"]) == 3 and len(st["pending"]) == 2, f"the stock scheduler should start a partial job: {st}"
    jobs.delete("seed3")
    pool.restore()
    return st


def check_seed003_gang(jobs: Jobs, pool: Pool, scheduler: str) -> dict:
    seed003_cluster(pool)
    jobs.submit(scenarios.tfjob(jobs.ns, "seed3", workers=4, worker_gpus=2))
    held = jobs.held("seed3", 5, scheduler)
    pool.add(2)
    pool.add(2)
    t0 = time.monotonic()
    ran = jobs.wait("seed3", running=5, timeout=120)
    ran["after_adding_gpus_s"] = round(time.monotonic() - t0, 1)
    jobs.delete("seed3")
    pool.restore()
    return {"held": held, "ran": ran}


def check_seed003_label_gang(jobs: Jobs, pool: Pool, scheduler_name: str) -> dict:
    """Seed 003 as written (ACK): the TFJob's replica templates carry the two gang labels,
    min-available 5, and the scheduler name; no PodGroup object, no operator gang flag."""
    from ansible_collections.gangsched.kubeflow.plugins.filter.gang import label_gang

    seed003_cluster(pool)
    job = label_gang(scenarios.tfjob(jobs.ns, "seed3", workers=4, worker_gpus=2), scheduler_name, 5)
    jobs.submit(job)
    jobs.wait("seed3", running=0, pending=5)
    time.sleep(HOLD)
    held = jobs.state("seed3")
    assert held["ever_bound"] == [] and held["running"] == [] and len(held["pending"]) == 5, held
    pgs = jobs.co.list_namespaced_custom_object("scheduling.sigs.k8s.io", "v1alpha1", jobs.ns, "podgroups")
    assert pgs["items"] == [], f"a label gang needs no PodGroup object: {pgs['items']}"
    pool.add(2)
    pool.add(2)
    t0 = time.monotonic()
    ran = jobs.wait("seed3", running=5, timeout=120)
    ran["after_adding_gpus_s"] = round(time.monotonic() - t0, 1)
    jobs.delete("seed3")
    pool.restore()
    return {"held": held, "ran": ran}


# ---- seed 004: two jobs on 4 single-GPU nodes -------------------------------------------------------------
def seed004_jobs(jobs: Jobs) -> None:
    jobs.submit(scenarios.tfjob(jobs.ns, "seed4-first", workers=3))
    jobs.wait("seed4-first", running=4)
    jobs.submit(scenarios.tfjob(jobs.ns, "seed4-second", workers=2))


def check_seed004_without_gang(jobs: Jobs, lab) -> dict:
    seed004_jobs(jobs)
    st = jobs.wait("seed4-second", running=2, pending=1)
    assert "seed4-second-ps-0" in st["running"], st
    gangs = partial(jobs.ns, lab)
    assert set(gangs) == {"seed4-second"}, gangs
    assert gangs["seed4-second"]["gpus_held"] == 1, gangs
    jobs.delete("seed4-first", "seed4-second")
    return {"second": st, "gang_info": gangs}


def check_seed004_gang(jobs: Jobs, scheduler: str) -> dict:
    seed004_jobs(jobs)
    held = jobs.held("seed4-second", 3, scheduler)
    jobs.delete("seed4-first")
    ran = jobs.wait("seed4-second", running=3)
    assert jobs.state("seed4-second")["pending"] == []
    jobs.delete("seed4-second")
    return {"held": held, "ran": ran}


# ---- seed 000: an MPIJob of N pods where N-2 fit --------------------------------------------------------
def check_seed000_mpijob(jobs: Jobs, scheduler: str) -> dict:
    # launcher (CPU) + 6 workers x 1 GPU = 7 pods; 4 GPUs: 5 of them would fit
    jobs.submit(scenarios.mpijob(jobs.ns, "seed0", workers=6))
    held = jobs.held("seed0", 7, scheduler)
    jobs.delete("seed0")
    return held


# ---- the seeds with Kubeflow Trainer v2 TrainJobs on a gang runtime (one pod of 1 GPU per node) ------------------
TRAINJOB_PODS = "jobset.sigs.k8s.io/jobset-name"


def check_trainjob_seeds(jobs: Jobs, pool: Pool, runtime: str, scheduler: str) -> dict:
    """Seed 000/002: 6 nodes where 4 fit, all Pending. Seed 004: a second TrainJob (2 nodes) while a first (3
    nodes) runs on the 4 GPUs, held whole until the first is gone. Seed 003: 5 nodes on 4 GPUs held, then all
    Running once a fifth GPU node joins."""
    ns, seen = jobs.ns, {}
    jobs.submit(scenarios.trainjob(ns, "seed0", runtime, 6))
    seen["seed0_held"] = jobs.held("seed0", 6, scheduler)
    jobs.delete("seed0")

    jobs.submit(scenarios.trainjob(ns, "seed4-first", runtime, 3))
    jobs.wait("seed4-first", running=3)
    jobs.submit(scenarios.trainjob(ns, "seed4-second", runtime, 2))
    seen["seed4_held"] = jobs.held("seed4-second", 2, scheduler)
    jobs.delete("seed4-first")
    seen["seed4_ran"] = jobs.wait("seed4-second", running=2)
    jobs.delete("seed4-second")

    jobs.submit(scenarios.trainjob(ns, "seed3", runtime, 5))
    seen["seed3_held"] = jobs.held("seed3", 5, scheduler)
    pool.add(1)
    t0 = time.monotonic()
    seen["seed3_ran"] = jobs.wait("seed3", running=5, timeout=120)
    seen["seed3_ran"]["after_adding_gpus_s"] = round(time.monotonic() - t0, 1)
    jobs.delete("seed3")
    pool.restore()
    return seen


# ---- deadlock: two gang-less jobs that each hold half of what they need ------------------------------------
TEAM_B = {"key": "gangsched.kubeflow/e2e-team", "value": "b", "effect": "NoSchedule"}


def check_deadlock_without_gang(jobs: Jobs, pool: Pool, lab) -> dict:
    """Two teams' jobs arriving together, each placed half: half of the GPU nodes are tainted for team
    B while the jobs are placed (A's pods cannot go there, B's can), then the taint goes. Every GPU is
    then taken, every node schedulable, and neither job can ever finish."""
    half_b = pool.stock[2:]
    pool.taint(half_b, TEAM_B)
    jobs.submit(scenarios.pytorchjob(jobs.ns, "dl-a", workers=2))
    jobs.wait("dl-a", running=2, pending=1)
    b = scenarios.pytorchjob(jobs.ns, "dl-b", workers=2)
    for r in b["spec"]["pytorchReplicaSpecs"].values():
        r["template"]["spec"]["tolerations"] = [{**TEAM_B, "operator": "Equal"}]
    jobs.submit(b)
    jobs.wait("dl-b", running=2, pending=1)
    pool.taint(half_b, None)
    time.sleep(5)  # every GPU node open to both again: nothing moves, neither job can finish
    a, b = jobs.state("dl-a"), jobs.state("dl-b")
    assert (len(a["running"]), len(b["running"])) == (2, 2), (a, b)
    gangs = partial(jobs.ns, lab)
    assert set(gangs) == {"dl-a", "dl-b"}, gangs
    assert [gangs[j]["gpus_held"] for j in ("dl-a", "dl-b")] == [2, 2], gangs
    info = module(lab, "gang_info")
    assert info["gpus"]["free"] == 0, info["gpus"]
    jobs.delete("dl-a", "dl-b")
    return {"dl-a": a, "dl-b": b, "gang_info": gangs}


def check_deadlock_gang(jobs: Jobs, scheduler: str) -> dict:
    """The same two jobs, submitted together under gang scheduling: one runs whole, the other waits
    whole, and runs once the first is gone."""
    jobs.submit(scenarios.pytorchjob(jobs.ns, "dl-a", workers=2), scenarios.pytorchjob(jobs.ns, "dl-b", workers=2))
    first = kube.wait_for(
        lambda: next((j for j in ("dl-a", "dl-b") if len(jobs.state(j)["running"]) == 3), None), 90, "one job Running"
    )
    second = "dl-b" if first == "dl-a" else "dl-a"
    held = jobs.held(second, 3, scheduler)
    jobs.delete(first)
    ran = jobs.wait(second, running=3)
    jobs.delete(second)
    return {"first": first, "held": held, "ran": ran}


# ---- a Running gang member deleted while another gang waits ------------------------------------------------
def check_member_deleted_under_load(jobs: Jobs, scheduler: str, lab) -> dict:
    """Gang A (Master + 3 Workers) holds all 4 GPUs; gang B (Master + 1 Worker, 2 GPUs) waits. One of
    A's Running workers is deleted: one GPU is free, the operator recreates the worker. B cannot fit in
    one GPU, so A must get its member back (regang) and B must stay entirely Pending; gang_info must
    report exactly the partial gangs the pods show."""
    jobs.submit(scenarios.pytorchjob(jobs.ns, "load-a", workers=3))
    jobs.wait("load-a", running=4)
    jobs.submit(scenarios.pytorchjob(jobs.ns, "load-b", workers=1))
    time.sleep(5)
    victim = "load-a-worker-0"
    uid = k.CoreV1Api(kube.api(lab)).read_namespaced_pod(victim, jobs.ns).metadata.uid
    k.CoreV1Api(kube.api(lab)).delete_namespaced_pod(victim, jobs.ns, grace_period_seconds=0)

    def recreated():
        try:
            return k.CoreV1Api(kube.api(lab)).read_namespaced_pod(victim, jobs.ns).metadata.uid != uid
        except k.ApiException:
            return False

    kube.wait_for(recreated, 60, f"{victim} recreated by the operator")
    t0 = time.monotonic()
    a = jobs.wait("load-a", running=4, timeout=90)
    a["regang_s"] = round(time.monotonic() - t0, 1)
    time.sleep(5)
    b = jobs.state("load-b")
    assert b["ever_bound"] == [] and b["running"] == [], f"load-b started partly or took A's GPU: {b}"
    gangs = partial(jobs.ns, lab)
    assert gangs == {}, gangs
    jobs.delete("load-a")
    b_ran = jobs.wait("load-b", running=2)
    jobs.delete("load-b")
    return {"scheduler": scheduler, "a": a, "b_while_a_ran": b, "b_after_a": b_ran, "gang_info": gangs}


def wildcard_rules(lab) -> list[str]:
    """Roles and ClusterRoles outside Kubernetes' own bootstrap set that hold a '*' anywhere."""
    rbac = k.RbacAuthorizationV1Api(kube.api(lab))
    roles = [("ClusterRole", r) for r in rbac.list_cluster_role().items]
    roles += [("Role", r) for r in rbac.list_role_for_all_namespaces().items]
    out = []
    for kind, r in roles:
        if (r.metadata.labels or {}).get("kubernetes.io/bootstrapping") == "rbac-defaults":
            continue
        for rule in r.rules or []:
            if "*" in (rule.verbs or []) + (rule.resources or []) + (rule.api_groups or []):
                where = f"{r.metadata.namespace}/" if r.metadata.namespace else ""
                out.append(f"{kind} {where}{r.metadata.name}: {rule.to_dict()}")
    return out
