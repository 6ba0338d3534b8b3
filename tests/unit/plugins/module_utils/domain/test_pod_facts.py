# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pod fold of gang_info (``_pod_facts.PodFold``): its facts are those the list-based maths gave over
the slim pods gang_info used to keep (the functions as they were, copied below as the reference), for
init containers, terminal, deleted, young, unschedulable and Trainer's pods, partial gangs and pods no
scheduler looks at; the scan keeps no pod, a body read again is not folded twice, and the fold's memory
does not grow with pods that belong to no gang."""

from __future__ import annotations

import datetime
import json
import random
import tracemalloc
import types

import pytest
import urllib3
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import (
    _capacity,
    _component_discovery,
    _pod_facts,
    _podgroups,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._capacity import (
    GPU,
    node_ready,
    num,
    pod_request,
    quantity,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _client
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._stream import stream_items
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import (
    _gang_info,
    _gang_info_gangs,
    _gang_info_trainer,
)

NOW = 1_800_000_000.0
THRESHOLD = 60


# ---- the reference: gang_info's pod maths before the fold, as they were ------------------------------
def _terminal(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


# where a pod names its gang: its PodGroup (each scheduler's way), else its Kubeflow job or a smoke run's gang
GANG_KEYS = (
    *_podgroups.member_keys(),
    ("label", "training.kubeflow.org/job-name"),
    ("label", "gangsched.kubeflow/gang"),
)


def _ts(s: str | None) -> float | None:
    if not s:
        return None
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def gang_key(pod: dict) -> str | None:
    meta = pod.get("metadata") or {}
    for where, key in GANG_KEYS:
        v = (meta.get("annotations" if where == "annotation" else "labels") or {}).get(key)
        if v:
            return f"{meta.get('namespace')}/{v}"
    return None


def partial_gangs(pods: list[dict], now: float, threshold: float) -> list[dict]:
    """Gangs (PodGroups or Kubeflow jobs) with members bound and others unbound longer than threshold."""
    groups: dict[str, list[dict]] = {}
    for p in pods:
        if (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        k = gang_key(p)
        if k:
            groups.setdefault(k, []).append(p)
    out = []
    for key, members in sorted(groups.items()):
        bound = [p for p in members if (p.get("spec") or {}).get("nodeName")]
        waiting = [
            p
            for p in members
            if not (p.get("spec") or {}).get("nodeName")
            and now - (_ts(p["metadata"].get("creationTimestamp")) or now) >= threshold
        ]
        if bound and waiting:
            out.append(
                {
                    "gang": key,
                    "bound": sorted(p["metadata"]["name"] for p in bound),
                    "pending": sorted(p["metadata"]["name"] for p in waiting),
                    "gpus_held": _capacity.num(sum(_capacity.pod_request(p) for p in bound)),
                    "nodes": sorted({p["spec"]["nodeName"] for p in bound}),
                    "pending_for_seconds": int(
                        max(now - (_ts(p["metadata"].get("creationTimestamp")) or now) for p in waiting)
                    ),
                }
            )
    return out


def _where(s: dict) -> str:
    return f"{s['source']} {s['namespace']}/{s['name']}"


def stalled(pods: list[dict], schedulers: list[dict], ops: list[dict], now: float, threshold: float) -> list[dict]:
    """Problems of gang schedulers that are Ready but make no progress: Pending pods with their
    schedulerName that no scheduler has looked at (no PodScheduled condition at all) for ``threshold``
    seconds or more. Pods naming a gang scheduler nobody serves ('volcano', or an operator's gang flag
    value) are reported the same way."""
    waiting: dict[str, list[tuple[float, str]]] = {}
    for p in pods:
        md, spec, st = p.get("metadata") or {}, p.get("spec") or {}, p.get("status") or {}
        name = spec.get("schedulerName") or "default-scheduler"
        if spec.get("nodeName") or md.get("deletionTimestamp") or st.get("phase", "Pending") != "Pending":
            continue
        if any(c.get("type") == "PodScheduled" for c in st.get("conditions") or []):
            continue  # a scheduler looked at it (bound it, or wrote why it cannot)
        age = now - (_ts(md.get("creationTimestamp")) or now)
        if age >= threshold:
            waiting.setdefault(name, []).append((age, f"{md.get('namespace')}/{md.get('name')}"))
    out = []
    pointed = {"volcano"} | {o["gang_value"] for o in ops if o.get("gang_value") not in (None, "true", "false")}
    for name, found in sorted(waiting.items()):
        found.sort(reverse=True)
        eg = ", ".join(w for _age, w in found[:3])
        serving = [s for s in schedulers if name in (s.get("scheduler_names") or [])]
        ready = [s for s in serving if s["ready"]]
        if ready:
            where = ", ".join(_where(s) for s in ready)
            out.append(
                {
                    "object": where,
                    "message": (
                        f"{where} is Ready but makes no progress: {len(found)} Pending pod(s) with schedulerName "
                        f"{name!r} were neither bound nor rejected by it for {int(found[0][0])}s (e.g. {eg}); it is "
                        "frozen, hung or without its leader lease, and every gang for it waits"
                    ),
                    "fix": (
                        "restart it (kubectl -n "
                        + ready[0]["namespace"]
                        + " rollout restart deployment/"
                        + ready[0]["name"]
                        + ") and read its log; then prove it with gangsched.kubeflow.gang_smoke_test"
                    ),
                }
            )
        elif name in pointed and not serving:
            others = "; ".join(
                f"{_where(s)} serves {', '.join(s.get('scheduler_names') or []) or 'nothing'}" for s in schedulers
            )
            out.append(
                {
                    "object": f"Pods {eg}",
                    "message": (
                        f"{len(found)} Pending pod(s) name scheduler {name!r}, which no running scheduler serves "
                        f"({others or 'no gang scheduler found'}); they will never be scheduled"
                    ),
                    "fix": f"run a scheduler that serves {name!r}, or point the workloads at one that runs",
                }
            )
    return out


def nodes_capacity(nodes: list[dict], pods: list[dict], resource: str = GPU) -> list[dict]:
    """Per node: capacity, allocatable, requested (by bound, non-terminal pods), free, schedulable."""
    requested: dict[str, float] = {}
    for p in pods:
        node = (p.get("spec") or {}).get("nodeName")
        if node and not _terminal(p):
            requested[node] = requested.get(node, 0.0) + pod_request(p, resource)
    out = []
    for n in nodes:
        st = n.get("status") or {}
        cap = quantity((st.get("capacity") or {}).get(resource, 0))
        alloc = quantity((st.get("allocatable") or {}).get(resource, 0))
        req = requested.get(n["metadata"]["name"], 0.0)
        out.append(
            {
                "name": n["metadata"]["name"],
                "capacity": num(cap),
                "allocatable": num(alloc),
                "requested": num(req),
                "free": num(max(0.0, alloc - req)),
                "schedulable": node_ready(n) and not (n.get("spec") or {}).get("unschedulable", False),
            }
        )
    return out


# ---- the pods -----
def _iso(age: float) -> str:
    """The creationTimestamp of an object ``age`` seconds old at NOW."""
    return datetime.datetime.fromtimestamp(NOW - age, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod(
    name,
    ns="team",
    node=None,
    phase="Running",
    gpus=(),
    limits=(),
    init=(),
    age=600,
    labels=None,
    annotations=None,
    scheduler=None,
    deleting=False,
    scheduled=None,
):
    """A pod as the API serves it, with what the slim copy drops (managedFields, env, volumes, other
    conditions and annotations). ``gpus``/``limits``/``init``: per container, its GPU request/limit."""

    def container(i, req=None, lim=None, prefix="c"):
        res = {"requests": {"cpu": "10m"}}
        if req is not None:
            res["requests"][GPU] = req
        if lim is not None:
            res["limits"] = {GPU: lim}
        return {"name": f"{prefix}{i}", "image": "busybox", "env": [{"name": "X", "value": "1"}], "resources": res}

    n = max(len(gpus), len(limits), 1)
    gpus, limits = list(gpus) + [None] * (n - len(gpus)), list(limits) + [None] * (n - len(limits))
    md = {
        "namespace": ns,
        "name": name,
        "labels": dict(labels or {}),
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", **(annotations or {})},
        "managedFields": [{"manager": "kubectl"}],
    }
    if age is not None:
        md["creationTimestamp"] = _iso(age)
    if deleting:
        md["deletionTimestamp"] = _iso(1)
    spec = {
        "containers": [container(i, r, lim) for i, (r, lim) in enumerate(zip(gpus, limits, strict=True))],
        "volumes": [{}],
    }
    if init:
        spec["initContainers"] = [container(i, r, prefix="init") for i, r in enumerate(init)]
    if node:
        spec["nodeName"] = node
    if scheduler:
        spec["schedulerName"] = scheduler
    conds = [{"type": "Initialized", "status": "True"}]
    if scheduled is not None:
        conds.append({"type": "PodScheduled", "status": scheduled, "reason": "Unschedulable"})
    status = {"conditions": conds}
    if phase is not None:
        status["phase"] = phase
    return {"metadata": md, "spec": spec, "status": status}


def _node(name, gpus, ready=True, unschedulable=False):
    return {
        "metadata": {"name": name, "labels": {"gpu": str(gpus)}},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": {
            "capacity": {GPU: str(gpus)},
            "allocatable": {GPU: str(gpus)},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


JOB = "training.kubeflow.org/job-name"
VOLCANO_GROUP = "scheduling.k8s.io/group-name"
SP_GROUP = "scheduling.x-k8s.io/pod-group"
KOORD_GROUP = "pod-group.scheduling.sigs.k8s.io/name"
SMOKE_GANG = "gangsched.kubeflow/gang"
NODES = [_node("n1", 8), _node("n2", 8), _node("n3", 4, unschedulable=True), _node("n4", 2, ready=False)]
TRAINER = {
    "metadata": {"namespace": "ml", "name": "trainer"},
    "spec": {
        "selector": {"matchLabels": {"app": "trainer"}},
        "template": {
            "spec": {
                "containers": [
                    {"name": "trainer", "image": "ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.2.0"}
                ]
            }
        },
    },
    "status": {"readyReplicas": 1},
}
TRAINERS = _component_discovery.trainers([TRAINER])
VOLCANO = {
    "metadata": {"namespace": "volcano-system", "name": "vc-scheduler"},
    "spec": {
        "template": {
            "spec": {
                "containers": [
                    {"name": "s", "image": "volcanosh/vc-scheduler:v1.12.1", "args": ["--scheduler-name=gangs"]}
                ]
            }
        }
    },
    "status": {"readyReplicas": 1},
}
SCHEDULERS = _component_discovery.schedulers([VOLCANO])
OPERATOR = {
    "metadata": {"namespace": "kubeflow", "name": "training-operator"},
    "spec": {
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "training-operator",
                        "image": "kubeflow/training-operator:v1-855e096",
                        "command": ["/manager", "--gang-scheduler-name=pointed"],
                    }
                ]
            }
        }
    },
    "status": {"readyReplicas": 1},
}
OPS = [{"operator": "training_operator", "gang_value": "pointed"}, {"operator": "mpi_operator", "gang_value": "true"}]


def _trainer_pod(name, start, ns="ml", labels=None, running=True, deleting=False, phase="Running"):
    p = _pod(name, ns=ns, node="n2", phase=phase, labels={"app": "trainer"} if labels is None else labels)
    p["status"]["startTime"] = _iso(7200)
    state = {"running": {"startedAt": start}} if running else {"waiting": {"reason": "CrashLoopBackOff"}}
    p["status"]["containerStatuses"] = [{"name": "trainer", "state": state, "restartCount": 3, "image": "x"}]
    if deleting:
        p["metadata"]["deletionTimestamp"] = _iso(1)
    return p


def _table():
    """Every kind of pod gang_info's facts tell apart."""
    return [
        # gang a (a Kubeflow job): 2 bound, one waiting long, one too young to count
        _pod("a-0", node="n1", gpus=["1"], labels={JOB: "a"}),
        _pod("a-1", node="n2", gpus=["1"], labels={JOB: "a"}),
        _pod("a-2", phase="Pending", labels={JOB: "a"}, age=900),
        _pod("a-3", phase="Pending", labels={JOB: "a"}, age=10),
        # gang b (Volcano's annotation): all bound, not partial
        _pod("b-0", node="n1", limits=["2"], annotations={VOLCANO_GROUP: "b"}),
        _pod("b-1", node="n1", gpus=["1"], limits=["1"], annotations={VOLCANO_GROUP: "b"}),
        # gang c (scheduler-plugins' label): an init container asks more than the containers' sum; the
        # waiting member was looked at (Unschedulable): partial, but not a no-progress problem
        _pod("c-0", node="n2", gpus=["1", "1"], init=["4", "1"], labels={SP_GROUP: "c"}),
        _pod("c-1", node="n2", gpus=["1"], init=["0"], labels={SP_GROUP: "c"}),
        _pod("c-2", phase="Pending", scheduler="gangs", scheduled="False", labels={SP_GROUP: "c"}, age=3000),
        # gang d (Koordinator's label): its bound members are terminal (hold nothing, in no gang)
        _pod("d-0", node="n1", phase="Succeeded", gpus=["1"], labels={KOORD_GROUP: "d"}),
        _pod("d-1", node="n2", phase="Failed", gpus=["2"], labels={KOORD_GROUP: "d"}),
        _pod("d-2", phase="Pending", labels={KOORD_GROUP: "d"}, age=900),
        # one gang name in two namespaces: two gangs, neither partial
        _pod("e-0", node="n1", gpus=["1"], labels={SMOKE_GANG: "e"}),
        _pod("e-1", ns="other", phase="Pending", labels={SMOKE_GANG: "e"}, age=900),
        # gang f: members being deleted still count in the gang, not as waiting for a scheduler
        _pod("f-0", node="n2", gpus=["1"], labels={JOB: "f"}, deleting=True),
        _pod("f-1", phase="Pending", labels={JOB: "f"}, scheduler="volcano", deleting=True, age=900),
        # gang g: fractions, summed in the order the pods come (float sums are not associative)
        _pod("g-0", node="n3", gpus=["0.1"], labels={JOB: "g"}),
        _pod("g-1", node="n3", gpus=["0.2"], labels={JOB: "g"}),
        _pod("g-2", node="n3", gpus=["0.3"], labels={JOB: "g"}),
        _pod("g-3", node="n3", gpus=["500m"], labels={JOB: "g"}),
        _pod("g-4", phase=None, labels={JOB: "g"}, scheduler="gangs", age=1200),  # no phase yet: Pending
        # gang h: waiting only
        _pod("h-0", phase="Pending", labels={SMOKE_GANG: "h"}, age=900),
        # no gang: bound with and without GPUs, on a node not listed, in an unknown phase
        _pod("x-0", node="n1", gpus=["1"]),
        _pod("x-1", node="n2"),
        _pod("x-2", node="n9", gpus=["3"]),
        _pod("x-3", node="n4", phase="Unknown", gpus=["1"]),
        _pod("x-4", node="n2", phase="Succeeded", gpus=["4"]),
        # waiting for schedulers: Volcano's 'volcano' (not served here: one served 'gangs'), 'gangs',
        # the default scheduler, an operator's gang flag value; ages tie
        *[
            _pod(f"v-{i}", phase="Pending", scheduler="volcano", age=a)
            for i, a in enumerate([100, 900, 900, 61, 60, 30])
        ],
        _pod("w-0", phase="Pending", scheduler="gangs", age=700),
        _pod("w-1", phase="Pending", scheduler="gangs", age=700, scheduled="False"),
        _pod("y-0", phase="Pending", age=4000),
        _pod("y-1", phase="Pending", age=None),  # no creationTimestamp: age 0
        _pod("z-0", phase="Pending", scheduler="pointed", age=800),
        _pod("z-1", phase="Pending", scheduler="pointed", age=800, ns="other"),
        {"metadata": {"namespace": "bare", "name": "bare"}},  # no spec, no status
        # Trainer's controller pods: the oldest running container start of its Deployment's pods counts
        _trainer_pod("t-new", "2025-06-01T10:05:00Z"),
        _trainer_pod("t-old", "2025-06-01T10:01:00Z"),
        _trainer_pod("t-gone", "2025-06-01T09:00:00Z", deleting=True),
        _trainer_pod("t-waiting", None, running=False),
        _trainer_pod("t-done", "2025-06-01T08:30:00Z", phase="Succeeded"),
        _trainer_pod("t-elsewhere", "2025-06-01T08:00:00Z", ns="other"),
        _trainer_pod("t-unrelated", "2025-06-01T08:00:00Z", labels={"app": "x"}),
    ]


def _reference(pods, threshold, trainers=TRAINERS, schedulers=SCHEDULERS, ops=OPS):
    """The facts as gang_info computed them: the maths above over the slim copies it kept."""
    keep = _gang_info_trainer.pod_keep(trainers)
    slim = [keep(p) for p in pods]
    return {
        "nodes": nodes_capacity(NODES, slim),
        "partial_gangs": partial_gangs(slim, NOW, threshold),
        "stalled": stalled(slim, schedulers, ops, NOW, threshold),
        "started": [
            _component_discovery.deployment_started(t["deployment"], t["container"]["name"], slim) for t in trainers
        ],
    }


def _folded(pods, threshold, trainers=TRAINERS):
    fold = _pod_facts.PodFold(NOW, threshold, trainers)
    for p in pods:
        assert fold(p) is None  # as a scan's keep: nothing kept
    return {
        "nodes": fold.nodes_capacity(NODES),
        "partial_gangs": fold.partial_gangs(),
        "stalled": _gang_info.stalled_problems(fold.waiting(), SCHEDULERS, OPS),
        "started": fold.started(),
    }


@pytest.mark.parametrize("threshold", [0, 60, 600, 3600])
@pytest.mark.parametrize("seed", [None, 1, 2, 3])
def test_the_fold_gives_the_facts_of_the_list_maths(threshold, seed):
    pods = _table()
    if seed is not None:
        random.Random(seed).shuffle(pods)
    want = _reference(pods, threshold)
    assert _folded(pods, threshold) == want
    # the list-based entry points are the fold's too
    assert _gang_info.partial_gangs(pods, NOW, threshold) == want["partial_gangs"]
    assert _gang_info.stalled(pods, SCHEDULERS, OPS, NOW, threshold) == want["stalled"]
    assert _capacity.nodes_capacity(NODES, pods) == want["nodes"]


def test_the_table_reaches_every_fact():
    """The comparison above is worth something only if the facts are not empty."""
    want = _reference(_table(), 60)
    gangs = {g["gang"]: g for g in want["partial_gangs"]}
    assert sorted(gangs) == ["team/a", "team/c", "team/f", "team/g"]
    assert gangs["team/a"]["pending"] == ["a-2"] and gangs["team/a"]["pending_for_seconds"] == 900
    assert gangs["team/c"]["gpus_held"] == 5  # max(1 + 1, 4) + max(1, 0)
    assert gangs["team/g"]["gpus_held"] == 0.1 + 0.2 + 0.3 + 0.5 and gangs["team/g"]["nodes"] == ["n3"]
    per = {n["name"]: n for n in want["nodes"]}
    assert per["n1"]["requested"] == 1 + 2 + 1 + 1 + 1 and per["n4"]["requested"] == 1
    msgs = [p["message"] for p in want["stalled"]]
    assert len(msgs) == 3, msgs
    # the 5 of at least 60 s (not the one being deleted), the 3 longest named, a tie broken by name
    assert "5 Pending pod(s) name scheduler 'volcano'" in msgs[2]
    assert want["stalled"][2]["object"] == "Pods team/v-2, team/v-1, team/v-0"
    assert "2 Pending pod(s) with schedulerName 'gangs'" in msgs[0] and "for 1200s" in msgs[0]
    assert "2 Pending pod(s) name scheduler 'pointed'" in msgs[1]
    # a terminal pod whose container status still reads running counts as _component_discovery.pod_started reads
    # it: the fold must not skip terminal pods before Trainer's check
    assert want["started"] == ["2025-06-01T08:30:00Z"]
    assert _reference([p for p in _table() if p["metadata"]["name"] != "t-done"], 60)["started"] == [
        "2025-06-01T10:01:00Z"
    ]


def _random_pods(rng: random.Random, n: int) -> list[dict]:
    pods = []
    for i in range(n):
        gang = rng.choice([None, None, ("l", JOB), ("l", SP_GROUP), ("a", VOLCANO_GROUP), ("l", SMOKE_GANG)])
        labels, annotations = {}, {}
        if gang:
            (labels if gang[0] == "l" else annotations)[gang[1]] = f"g{rng.randrange(40)}"
        if rng.random() < 0.05:
            labels["app"] = "trainer"
        bound = rng.random() < 0.6
        pods.append(
            _pod(
                f"p-{i}",
                ns=rng.choice(["team", "other", "ml"]),
                node=rng.choice(["n1", "n2", "n3", "n4", "n9"]) if bound else None,
                phase=rng.choice(["Running", "Running", "Pending", "Succeeded", "Failed", None]),
                gpus=[rng.choice([None, "1", "2", "250m", "0.5"]) for _ in range(rng.randrange(1, 3))],
                limits=[rng.choice([None, None, "1"])],
                init=[rng.choice(["0", "3"])] if rng.random() < 0.2 else (),
                age=rng.choice([None, 5, 59, 60, 61, 600, 600, 5000]),
                labels=labels,
                annotations=annotations,
                scheduler=rng.choice([None, "volcano", "gangs", "pointed", "other"]),
                deleting=rng.random() < 0.1,
                scheduled=rng.choice([None, None, "False"]),
            )
        )
        if labels.get("app") == "trainer":
            start = f"2025-06-01T10:{rng.randrange(60):02d}:00Z"
            pods[-1]["status"]["containerStatuses"] = [{"name": "trainer", "state": {"running": {"startedAt": start}}}]
            pods[-1]["status"]["startTime"] = _iso(9000)
    return pods


@pytest.mark.parametrize("seed", range(5))
def test_the_fold_gives_the_facts_of_the_list_maths_on_random_clusters(seed):
    pods = _random_pods(random.Random(seed), 2000)
    for threshold in (0, 60):
        want = _reference(pods, threshold)
        assert want["partial_gangs"] and want["stalled"]
        assert _folded(pods, threshold) == want


# ---- gang_info: the scan keeps no pod, and the facts are the reference's ------------------------------
class FoldClient:
    """The cluster of the table: one Volcano scheduler serving 'gangs', Trainer's controller, no CRD."""

    def __init__(self, pods):
        self.pods, self.kept = pods, None

    def get(self, path, what="", query=None, retry_for=None):
        return {"gitVersion": "v1.33.0"} if path == "/version" else {}

    def get_or_none(self, path, what=""):
        return None

    def list(self, path, what="", **query):
        return [VOLCANO, TRAINER, OPERATOR] if path == "/apis/apps/v1/deployments" else []

    list_or_empty = list

    def request(self, method, path, query=None, body=None, what="", **kw):
        """SubjectAccessReviews of the components' gang rights: all allowed."""
        assert method == "POST" and path.endswith("/subjectaccessreviews"), path
        return {"status": {"allowed": True}}

    def scan(self, path, what="", keep=None, **query):
        items = {"/api/v1/nodes": NODES, "/api/v1/pods": self.pods}.get(path, [])
        out = [keep(i) if keep else i for i in items]
        if path == "/api/v1/pods":
            self.kept = out
        return out


def test_gang_info_keeps_no_pod_and_reports_the_reference_facts():
    pods = _table()
    client = FoldClient(pods)
    facts = _gang_info.gather(client, {"partial_threshold_seconds": 60}, NOW)
    assert client.kept == [None] * len(pods)
    want = _reference(pods, 60, schedulers=facts["schedulers"], ops=facts["operators"])
    assert [o["gang_value"] for o in facts["operators"]] == ["pointed"] and len(want["stalled"]) == 3
    assert [{k: v for k, v in n.items() if k != "labels"} for n in facts["nodes"]] == want["nodes"]
    assert facts["gpus"]["requested"] == num(sum(n["requested"] for n in want["nodes"]))
    assert facts["partial_gangs"] == want["partial_gangs"]
    assert facts["problems"][-len(want["stalled"]) :] == want["stalled"]  # no Trainer CRD: no problem after them
    assert [c["started"] for c in facts["trainer"]["controllers"]] == want["started"]


# ---- the scan: a fold keeps nothing, and a body read again is not folded twice ------------------------
def _reset():
    return urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset"))


class StreamApi:
    """A list response read as a stream, broken off ``breaks`` times before it is read whole."""

    def __init__(self, data, breaks=0):
        self.data, self.breaks, self.calls, self.released = data, breaks, 0, 0
        self.configuration = types.SimpleNamespace(host="https://api.test:6443")

    def request(self, method, path, **kw):
        self.calls += 1
        api = self

        class Resp:
            def stream(self, amt):
                for i in range(0, len(api.data), amt):
                    if api.breaks and i:
                        api.breaks -= 1
                        raise _reset()
                    yield api.data[i : i + amt]

            def release_conn(self):
                api.released += 1

        return Resp()


def _body(pods):
    body = {"kind": "PodList", "metadata": {"resourceVersion": "1"}, "items": pods}
    return json.dumps(body, separators=(",", ":")).encode()  # as the API server writes it


@pytest.fixture
def no_sleep(monkeypatch):
    monkeypatch.setattr(_client.time, "sleep", lambda s: None)


def test_a_scan_that_breaks_off_folds_each_pod_once(no_sleep):
    pods = [_pod(f"p-{i}", node=f"n{i % 2 + 1}", gpus=["1"]) for i in range(3000)]
    api = StreamApi(_body(pods), breaks=1)
    fold = _pod_facts.PodFold(NOW, 60)
    assert _client.Client(api).scan("/api/v1/pods", "Pods", keep=fold) == []  # nothing kept
    assert api.calls == 2 and api.released == 2
    assert fold.requested() == {"n1": 1500.0, "n2": 1500.0}
    # without the restart, the items of the broken read would be folded again
    seen = []
    api = StreamApi(_body(pods), breaks=1)
    assert _client.Client(api).scan("/api/v1/pods", "Pods", keep=lambda p: seen.append(1)) == []
    assert api.calls == 2 and len(seen) > 3000


def test_a_quantity_that_does_not_parse_is_raised_with_the_facts_not_read_again(no_sleep):
    pods = [
        _pod("ok", node="n1", gpus=["1"]),
        _pod("bad", node="n1", gpus=["1x"]),
        _pod("later", node="n2", gpus=["1"]),
    ]
    api = StreamApi(_body(pods))
    fold = _pod_facts.PodFold(NOW, 60)
    _client.Client(api).scan("/api/v1/pods", "Pods", keep=fold)
    assert api.calls == 1  # not taken for a broken response
    with pytest.raises(ValueError, match="1x"):
        fold.nodes_capacity(NODES)
    with pytest.raises(ValueError, match="1x"):
        fold.partial_gangs()


def test_stream_items_keeps_nothing_for_none():
    data = _body([{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}])
    keep = lambda p: p["metadata"]["name"] if p["metadata"]["name"] == "b" else None  # noqa: E731
    assert stream_items([data], keep) == ["b"]
    assert stream_items([data[i : i + 3] for i in range(0, len(data), 3)], keep) == ["b"]
    assert stream_items([b'{"items":[{"metadata":{"name":"b"}}],"metadata":{}}'], keep) == ["b"]


# ---- memory: per node and per gang member's name, nothing per other pod --------------------------------
def _stream(n, gangs=0):
    """Pods one at a time, as a scan decodes them (none is held after the fold has seen it)."""
    for i in range(n):
        labels = {JOB: f"job-{i % gangs}"} if gangs else {}
        yield _pod(f"p-{i}", node=f"n{i % 10}", gpus=["1"], labels=labels)


def _retained(fold, pods) -> int:
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        fold.add_all(pods)
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_the_fold_holds_nothing_per_pod_outside_gangs():
    fold = _pod_facts.PodFold(NOW, 60)
    fold.add_all(_stream(100))  # the ten nodes
    grown = _retained(fold, _stream(20000))
    assert grown < 16 * 1024, grown
    assert fold.requested() == {f"n{i}": 2010.0 for i in range(10)}


def test_the_fold_holds_a_name_per_gang_member_and_the_slim_copy_much_more():
    fold = _pod_facts.PodFold(NOW, 60)
    per_member = _retained(fold, _stream(20000, gangs=2000)) / 20000
    keep = _gang_info_trainer.pod_keep([])
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        slim = [keep(p) for p in _stream(2000, gangs=200)]
        per_slim = (tracemalloc.get_traced_memory()[0] - before) / len(slim)
    finally:
        tracemalloc.stop()
    assert per_member < 200, per_member  # its name in the gang's list, and the gang's share
    assert per_slim > 5 * per_member, (per_slim, per_member)


# ---- koord-scheduler v1.8's untried members of a satisfied label gang --------------------------------------------
def _koord(version):
    return {
        "kind": "koordinator",
        "source": "Deployment",
        "namespace": "koordinator-system",
        "name": "koord-scheduler",
        "scheduler_names": ["koord-scheduler"],
        "gang_profiles": ["koord-scheduler"],
        "ready": True,
        "version": version,
    }


def _label_gang(least, bound=2, members=5):
    labels = {"pod-group.scheduling.sigs.k8s.io/name": "loose", _pod_facts.LABEL_MIN: str(least)}
    return [
        _pod(
            f"loose-{i}",
            node=f"n{i}" if i < bound else None,
            phase="Running" if i < bound else "Pending",
            gpus=("1",),
            labels=labels,
            scheduler="koord-scheduler",
        )
        for i in range(members)
    ]


def _untried_and_stalled(pods, version):
    fold = _pod_facts.PodFold(NOW, THRESHOLD).add_all(pods)
    probs, explained = _gang_info_gangs.untried_problems(fold.untried(), [_koord(version)])
    return fold, probs, _gang_info.stalled_problems(fold.waiting(), [_koord(version)], [], explained)


def test_a_satisfied_label_gang_whose_members_koord_scheduler_v1_8_never_tried_is_named_not_called_hung():
    fold, probs, stalled = _untried_and_stalled(_label_gang(1), "v1.8.0")
    assert fold.untried() == {
        "team/loose": {
            "untried": ["loose-2", "loose-3", "loose-4"],
            "bound": 2,
            "members": 5,
            "minimum": 1,
            "scheduler": "koord-scheduler",
            "member_key": ("label", "pod-group.scheduling.sigs.k8s.io/name"),
        }
    }
    assert len(probs) == 1, probs
    assert probs[0]["object"] == "Pods team/loose-2, team/loose-3, team/loose-4"
    assert (
        "3 member(s) of gang team/loose were never tried by Deployment koordinator-system/koord-scheduler"
        in (probs[0]["message"])
    )
    assert "min-available 1 is met" in probs[0]["message"] and "min-available equal to its member" in probs[0]["fix"]
    assert stalled == []  # the scheduler is not called hung for the pods named above
    # without the path's word, the same pods read as a scheduler that makes no progress
    hung = _gang_info.stalled_problems(fold.waiting(), [_koord("v1.8.0")], [])
    assert len(hung) == 1 and "makes no progress: 3 Pending pod(s)" in hung[0]["message"], hung


@pytest.mark.parametrize(
    "pods, version",
    [
        (_label_gang(1), "v1.6.1"),  # not the release that leaves them
        (_label_gang(5), "v1.8.0"),  # min-available is the member count: the gang is held whole, not satisfied
        (_label_gang(3, bound=2), "v1.8.0"),  # min-available not met: nothing explains the wait
        (_label_gang(1, bound=0), "v1.8.0"),
    ],
)
def test_untried_members_are_left_to_the_no_progress_check_unless_koord_v1_8_explains_them(pods, version):
    _fold, probs, stalled = _untried_and_stalled(pods, version)
    assert probs == []
    assert len(stalled) == 1 and "makes no progress" in stalled[0]["message"], stalled
