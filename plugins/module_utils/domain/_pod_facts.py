# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what gang_info learns from the pods, folded one pod at a time as a
cluster-wide scan decodes them, so that its memory grows with the nodes and the gangs, never with the
pods: the GPUs requested per node, each gang's bound and waiting members (the partial gangs) and the GPUs its
members ask for (a gang that can never fit), the Pending pods no scheduler has looked at (per schedulerName: how
many, and the three that waited longest), the pods that carry a gang scheduler's member key, per schedulerName (a gang
that never reaches its scheduler), what the scheduler last wrote on each gang's unbound members, and when Trainer's
controller pods started. Pure: no I/O. Not a public API."""

from __future__ import annotations

import datetime
import heapq

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import (
    _capacity,
    _component_discovery,
    _podgroups,
)

# where a pod names its gang: its PodGroup (each scheduler's way), else its Kubeflow job or a smoke run's gang
GANG_KEYS = (
    *_podgroups.member_keys(),
    ("label", "training.kubeflow.org/job-name"),
    ("label", "gangsched.kubeflow/gang"),
)
TERMINAL = ("Succeeded", "Failed")
# a label gang's minimum (seed 003, Koordinator); a PodGroup's minMember is read with the PodGroup
LABEL_MIN = "pod-group.scheduling.sigs.k8s.io/min-available"
EXAMPLES = 3  # the longest-waiting pods a no-progress problem names
SAID = 3  # the distinct messages of a gang's unbound members kept (their PodScheduled condition)
# the labels a job's controller puts on the pods it creates, valued with the job's name: a pod that carries one but no
# controller ownerReference was left behind by a job deleted with --cascade=orphan (the garbage collector drops the
# reference)
JOB_LABELS = ("training.kubeflow.org/job-name", "jobset.sigs.k8s.io/jobset-name", "batch.kubernetes.io/job-name")


def timestamp(s: str | None) -> float | None:
    """An object's time as the API writes it ('2025-06-01T10:00:00Z') in seconds since the epoch."""
    if not s:
        return None
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def gang_key(pod: dict) -> str | None:
    """'namespace/gang' of the gang a pod belongs to (its native PodGroup, else ``GANG_KEYS``, first found), else
    None."""
    meta = pod.get("metadata") or {}
    native = ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
    if native:  # kube-scheduler's own gang (spec.schedulingGroup)
        return f"{meta.get('namespace')}/{native}"
    for where, key in GANG_KEYS:
        v = (meta.get("annotations" if where == "annotation" else "labels") or {}).get(key)
        if v:
            return f"{meta.get('namespace')}/{v}"
    return None


class _Gang:
    """One gang's members so far: the names of those bound and of those waiting past the threshold
    (a partial gang lists them all), the GPUs the bound hold, their nodes, the longest wait; how many members
    there are, how many are unbound (of any age), the GPUs all of them ask for and the most one unbound asks for."""

    __slots__ = (
        "bound",
        "held",
        "nodes",
        "pending",
        "longest",
        "members",
        "unbound",
        "asked",
        "largest",
        "example",
        "minimum",
        "said",
        "untried",
        "scheduler",
        "orphans",
        "job_label",
        "member_key",
    )

    def __init__(self):
        self.bound: list[str] = []
        self.held = 0
        self.nodes: set[str] = set()
        self.pending: list[str] = []
        self.longest = 0.0
        self.members = 0
        self.unbound = 0
        self.asked = 0.0
        self.largest = 0.0
        self.example = ""
        self.minimum: int | None = None
        self.said: list[str] = []  # what the scheduler last wrote on its unbound members (distinct, SAID at most)
        self.untried: list[str] = []  # unbound members past the threshold that no scheduler looked at
        self.scheduler = ""  # its members' schedulerName (the first member's)
        self.orphans = 0  # members with a job's label (JOB_LABELS) and no controller ownerReference
        self.job_label = ""  # 'key=value' of the first such member's job label
        self.member_key: tuple | None = None  # the gang scheduler's member key that names the gang, where one does


class PodFold:
    """gang_info's facts about the pods, fed one pod at a time (``add``; the fold itself is a scan's
    ``keep``: it keeps nothing of the pod and returns None).

    ``now`` and ``threshold``: how long (s) an unbound pod must have waited to count (as in
    ``partial_gangs`` and the no-progress problems); ``trainers``: Trainer's controllers
    (``_component_discovery.trainers``), whose pods' start is kept. The facts read the same as the list-based
    maths over the same pods in the same order (sums of quantities included). A quantity or a time that
    does not parse is raised when the facts are read, not while the scan decodes (where it would pass
    for a broken response and be read again)."""

    def __init__(self, now: float, threshold: float, trainers: list[dict] | tuple = ()):
        self.now, self.threshold = now, threshold
        deps = [(t["deployment"], t["container"]["name"]) for t in trainers]
        self._trainers = [(d["metadata"]["namespace"], (d.get("spec") or {}).get("selector"), c) for d, c in deps]
        self.restart()

    def restart(self) -> None:
        """Forget every pod folded so far: a scan whose response broke off decodes the list again from
        its first item (``_client.Client.scan`` calls this before each attempt)."""
        self._requested: dict[str, float] = {}
        self._gangs: dict[str, _Gang] = {}
        self._waiting: dict[str, list] = {}  # schedulerName -> [count, min-heap of the longest (age, 'ns/name')]
        self._started: list[str | None] = [None] * len(self._trainers)
        self._keyed: dict[tuple, list] = {}  # (member key, schedulerName) -> [pods, unbound, an example 'ns/name']
        self._error: ValueError | None = None

    def __call__(self, pod: dict) -> None:
        self.add(pod)

    def add(self, pod: dict) -> None:
        if self._error is not None:
            return
        try:
            self._add(pod)
        except ValueError as e:
            self._error = e

    def _add(self, pod: dict) -> None:
        md, spec, st = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        for i, (ns, selector, container) in enumerate(self._trainers):
            if md.get("namespace") == ns and _component_discovery.selects(selector, md.get("labels")):
                t = _component_discovery.pod_started(pod, container)
                if t and (self._started[i] is None or t < self._started[i]):
                    self._started[i] = t
        if st.get("phase") in TERMINAL:
            return  # holds no GPU, no longer a gang member, not waiting
        node = spec.get("nodeName")
        age, untried = None, False
        req = _capacity.pod_request(pod)
        if node:
            self._requested[node] = self._requested.get(node, 0.0) + req
        elif not md.get("deletionTimestamp") and st.get("phase", "Pending") == "Pending":
            if not any(c.get("type") == "PodScheduled" for c in st.get("conditions") or []):
                age = self.now - (timestamp(md.get("creationTimestamp")) or self.now)
                if age >= self.threshold:  # no scheduler looked at it (bound it, or wrote why it cannot)
                    untried = True
                    w = self._waiting.setdefault(spec.get("schedulerName") or "default-scheduler", [0, []])
                    w[0] += 1
                    item = (age, f"{md.get('namespace')}/{md.get('name')}")
                    (heapq.heappush if len(w[1]) < EXAMPLES else heapq.heappushpop)(w[1], item)
        if not md.get("deletionTimestamp"):
            for mk in _podgroups.member_keys():
                if (md.get("annotations" if mk[0] == "annotation" else "labels") or {}).get(mk[1]):
                    k = self._keyed.setdefault((mk, spec.get("schedulerName") or "default-scheduler"), [0, 0, ""])
                    k[0] += 1
                    k[1] += 0 if node else 1
                    k[2] = k[2] or f"{md.get('namespace')}/{md.get('name')}"
        key = gang_key(pod)
        if not key:
            return
        g = self._gangs.get(key)
        if g is None:
            g = self._gangs[key] = _Gang()
        g.members += 1
        g.asked += req
        if g.member_key is None:
            g.member_key = next(
                (
                    mk
                    for mk in _podgroups.member_keys()
                    if (md.get("annotations" if mk[0] == "annotation" else "labels") or {}).get(mk[1])
                ),
                None,
            )
        if not any(o.get("controller") for o in md.get("ownerReferences") or []):
            labels = md.get("labels") or {}
            job = next((f"{k}={labels[k]}" for k in JOB_LABELS if labels.get(k)), None)
            if job:
                g.orphans += 1
                g.job_label = g.job_label or job
        g.scheduler = g.scheduler or spec.get("schedulerName") or "default-scheduler"
        least = (md.get("labels") or {}).get(LABEL_MIN)
        if least and least.isdigit():
            g.minimum = int(least)
        if not node:
            g.unbound += 1
            said = next((c.get("message") for c in st.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
            if said and said not in g.said and len(g.said) < SAID:
                g.said.append(said)
            if req > g.largest:
                g.largest, g.example = req, f"{md.get('namespace')}/{md.get('name')}"
        if node:
            g.bound.append(md.get("name"))
            g.held += req
            g.nodes.add(node)
            return
        if age is None:
            age = self.now - (timestamp(md.get("creationTimestamp")) or self.now)
        if age >= self.threshold:
            g.pending.append(md.get("name"))
            g.longest = max(g.longest, age)
            if untried:  # as counted in ``waiting``
                g.untried.append(md.get("name"))

    def add_all(self, pods) -> PodFold:
        for p in pods:
            self.add(p)
        return self

    def _check(self) -> None:
        if self._error is not None:
            raise self._error

    def requested(self) -> dict[str, float]:
        """Node name -> the GPUs its bound, non-terminal pods request."""
        self._check()
        return dict(self._requested)

    def nodes_capacity(self, nodes: list[dict]) -> list[dict]:
        """``_capacity.nodes_capacity`` of ``nodes`` and the pods folded."""
        return _capacity.capacity_per_node(nodes, self.requested())

    def partial_gangs(self) -> list[dict]:
        """Gangs with members bound and others unbound for the threshold or longer, by gang."""
        self._check()
        return [
            {
                "gang": key,
                "bound": sorted(g.bound),
                "pending": sorted(g.pending),
                "gpus_held": _capacity.num(g.held),
                "nodes": sorted(g.nodes),
                "pending_for_seconds": int(g.longest),
            }
            for key, g in sorted(self._gangs.items())
            if g.bound and g.pending
        ]

    def unfit(self, per_node: list[dict], minimums: dict | None = None) -> list[dict]:
        """Gangs with unbound members that can never run here, whatever else leaves (``per_node``:
        ``nodes_capacity``): a member asking for more GPUs than any schedulable node has, or the gang's minimum
        (``minimums``: 'namespace/gang' -> its PodGroup's minMember; a label gang's own label; else every member)
        asking for more than all schedulable nodes have together. Counted from the moment the pods exist."""
        self._check()
        minimums = minimums or {}
        nodes = [n for n in per_node if n.get("schedulable", True)]
        most = max((n["allocatable"] for n in nodes), default=0.0)
        total = sum(n["allocatable"] for n in nodes)
        out = []
        for key, g in sorted(self._gangs.items()):
            if not g.unbound or not g.asked:
                continue
            if g.largest > most:
                out.append(
                    {
                        "gang": key,
                        "pod": g.example,
                        "asks": _capacity.num(g.largest),
                        "most": _capacity.num(most),
                        "members": g.members,
                        "why": "member",
                    }
                )
            else:
                least = min(minimums.get(key) or g.minimum or g.members, g.members)
                need = g.asked * least / g.members
                if need > total:
                    out.append(
                        {
                            "gang": key,
                            "pod": g.example,
                            "asks": _capacity.num(need),
                            "most": _capacity.num(total),
                            "members": least,
                            "why": "gang",
                        }
                    )
        return out

    def shared(self, replicas: dict[str, int]) -> list[dict]:
        """Gangs whose bound members sit on nodes that share each physical GPU several ways (``replicas``: node name ->
        ways, _gpu_node_facts.replicas: time-slicing or MPS): the gang fits because its members share GPUs."""
        self._check()
        out = []
        for key, g in sorted(self._gangs.items()):
            on = sorted(n for n in g.nodes if replicas.get(n, 1) > 1)
            if on and g.held:
                out.append({"gang": key, "nodes": {n: replicas[n] for n in on}, "bound": len(g.bound)})
        return out

    def keyed(self) -> dict[tuple, tuple[int, int, str]]:
        """(member key, schedulerName) -> (pods that carry the key, of them unbound, an example 'ns/name'), for the
        pods that carry a gang scheduler's member key (_podgroups.member_keys)."""
        self._check()
        return {k: tuple(v) for k, v in sorted(self._keyed.items())}

    def said(self) -> dict[str, list[str]]:
        """'namespace/gang' -> what the scheduler wrote on its unbound members (their PodScheduled condition's
        message: why it could not place them, or let them go), distinct, ``SAID`` at most, in the scan's order."""
        self._check()
        return {key: list(g.said) for key, g in sorted(self._gangs.items()) if g.said}

    def gangs(self) -> set[str]:
        """'namespace/gang' of every gang with a live (non-terminal) member."""
        self._check()
        return set(self._gangs)

    def orphaned(self) -> dict[str, dict]:
        """'namespace/gang' -> {members, bound, job_label ('key=value')} of the gangs whose live members all carry a
        job's label (``JOB_LABELS``) and no controller ownerReference: pods left behind by a job that was deleted with
        --cascade=orphan."""
        self._check()
        return {
            key: {"members": g.members, "bound": len(g.bound), "job_label": g.job_label}
            for key, g in sorted(self._gangs.items())
            if g.orphans and g.orphans == g.members
        }

    def untried(self) -> dict[str, dict]:
        """'namespace/gang' -> {untried (names of its unbound members that no scheduler looked at for the threshold or
        longer), bound (how many members are bound), members, minimum (its min-available label, else None),
        scheduler (its members' schedulerName), member_key (the gang scheduler's member key that names it, or
        None)}, for the gangs with such members."""
        self._check()
        return {
            key: {
                "untried": sorted(g.untried),
                "bound": len(g.bound),
                "members": g.members,
                "minimum": g.minimum,
                "scheduler": g.scheduler,
                "member_key": g.member_key,
            }
            for key, g in sorted(self._gangs.items())
            if g.untried
        }

    def waiting(self) -> dict[str, tuple[int, list[tuple[float, str]]]]:
        """schedulerName -> (how many Pending pods no scheduler looked at for the threshold or longer,
        the ``EXAMPLES`` that waited longest as (age s, 'namespace/name'), longest first)."""
        self._check()
        return {name: (n, sorted(top, reverse=True)) for name, (n, top) in sorted(self._waiting.items())}

    def started(self) -> list[str | None]:
        """Per Trainer controller (in ``trainers`` order): ``_component_discovery.deployment_started`` of its
        Deployment's pods."""
        self._check()
        return list(self._started)


def fold(pods, now: float, threshold: float, trainers: list[dict] | tuple = ()) -> PodFold:
    """A ``PodFold`` of a list of pods."""
    return PodFold(now, threshold, trainers).add_all(pods)
