# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the native gang path — kube-scheduler's own gang scheduling (the Workload and
PodGroup API of scheduling.k8s.io): its versions and gates, the traps of its releases, the objects of a native gang,
kube-scheduler's decision on it (the evidence a held verdict needs), and what it refuses. Pure: no I/O. Not a public
API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._manifests import copy_plain
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _gang_path

GROUP = "scheduling.k8s.io"
# the Workload API's version by Kubernetes minor (1.35 v1alpha1: Workload only; 1.36 v1alpha2; 1.37 v1beta1),
# each off by default (the GenericWorkload gate, and the API group in kube-apiserver's --runtime-config)
VERSIONS = {35: "v1alpha1", 36: "v1alpha2", 37: "v1beta1"}
# a PodGroup's spec.priority may be at most this; the built-in system-* priority classes are above it
MAX_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"


# the gates each control-plane component needs for the native gang (kube-apiserver's also needs the runtime-config)
GATES = {
    "kube-apiserver": ("GenericWorkload",),
    "kube-scheduler": ("GenericWorkload",),
    "kube-controller-manager": ("GenericWorkload",),
}


def feature_gates(container: dict) -> dict[str, bool]:
    """The --feature-gates a control-plane container runs with: {gate: on}; the last occurrence wins.

    >>> feature_gates({"command": ["kube-scheduler", "--feature-gates=GenericWorkload=true,Foo=false"]})
    {'GenericWorkload': True, 'Foo': False}
    """
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _flags

    out: dict[str, bool] = {}
    for hit in _flags.find(container.get("command"), container.get("args"), "feature-gates"):
        for pair in (hit.value or "").split(","):
            name, _sep, value = pair.partition("=")
            if name.strip():
                out[name.strip()] = value.strip().lower() == "true"
    return out


def control_plane_gates(pods: list[dict]) -> dict[str, dict[str, bool]]:
    """Per control-plane component found among ``pods`` (kubeadm's mirror pods, label ``component``), its feature
    gates; a component not found (a managed control plane) is absent."""
    out: dict[str, dict[str, bool]] = {}
    for p in pods:
        component = ((p.get("metadata") or {}).get("labels") or {}).get("component")
        containers = (p.get("spec") or {}).get("containers") or []
        if component in GATES and containers:
            out[component] = feature_gates(containers[0])
    return out


def gate_problems(pods: list[dict], served: bool) -> list[dict]:
    """Where the Workload API is served (``served``), control-plane components seen running without the gate the
    native gang needs of them: kube-scheduler then places a native gang's pods one by one (a partial start), and
    kube-controller-manager does not protect PodGroups in use."""
    if not served:
        return []
    out = []
    for p in pods:
        md = p.get("metadata") or {}
        component = (md.get("labels") or {}).get("component")
        containers = (p.get("spec") or {}).get("containers") or []
        if component not in ("kube-scheduler", "kube-controller-manager") or not containers:
            continue
        missing = [g for g in GATES[component] if not feature_gates(containers[0]).get(g)]
        if not missing:
            continue
        what = (
            "places the pods of a native gang (spec.schedulingGroup) one by one, so a gang that does not fit starts "
            "partially and holds what it got"
            if component == "kube-scheduler"
            else "does not protect PodGroups whose pods still run (its podgroup-protection controller is off)"
        )
        out.append(
            {
                "object": f"Pod {md.get('namespace')}/{md.get('name')}",
                "message": f"the API server serves {GROUP} Workloads and PodGroups, but {component} runs without the "
                f"{', '.join(missing)} feature gate: it {what}",
                "fix": f"add --feature-gates={','.join(f'{g}=true' for g in missing)} to {component} (its static pod "
                f"manifest); all three components need it: {TURN_ON}",
            }
        )
    return out


def held_podgroups(podgroups: list[dict]) -> list[dict]:
    """PodGroups kube-scheduler refuses for now (its scheduled condition False): {podgroup, message}. A held gang is
    what gang scheduling is for; gang_info lists them so a gang waiting for room is seen with its reason."""
    out = []
    for pg in podgroups:
        decided, message = scheduled(pg)
        if decided == "False":
            md = pg.get("metadata") or {}
            out.append({"podgroup": f"{md.get('namespace')}/{md.get('name')}", "message": message})
    return out


def podgroup_workload(podgroup: dict) -> str | None:
    """The name of the Workload a PodGroup belongs to (``spec.workloadRef.workloadName``).

    >>> podgroup_workload({"spec": {"workloadRef": {"workloadName": "w", "templateName": "t"}}})
    'w'
    """
    return (((podgroup.get("spec") or {}).get("workloadRef")) or {}).get("workloadName")


def system_priority_job_workloads(workloads: list[dict], now: float, threshold: float) -> list[tuple[dict, list[str]]]:
    """The Workloads the Job controller made for a Job (its integration, the WorkloadWithJob gate) at least
    ``threshold`` seconds ago whose pod group templates carry a system-* priority class, each with those classes.
    ``now`` and the Workloads' creationTimestamp (as ``_created``, set by the caller) in seconds since the epoch."""
    out = []
    for w in workloads:
        spec = w.get("spec") or {}
        if (spec.get("controllerRef") or {}).get("kind") != "Job" or now - w.get("_created", now) < threshold:
            continue
        classes = sorted(
            {
                t.get("priorityClassName")
                for t in spec.get("podGroupTemplates") or []
                if str(t.get("priorityClassName") or "").startswith(SYSTEM_PRIORITY_CLASS_PREFIX)
            }
        )
        if classes:
            out.append((w, classes))
    return out


def job_priority_problems(workloads: list[dict], podgroups: list[dict], now: float, threshold: float) -> list[dict]:
    """Of ``system_priority_job_workloads``, those without a PodGroup: Kubernetes 1.37.2's Job controller copies the
    class's priority (2000000000 and more) into the PodGroup, which the API server refuses above 1000000000, so the
    Job never creates a pod."""
    with_group = {((pg.get("metadata") or {}).get("namespace"), podgroup_workload(pg)) for pg in podgroups}
    out = []
    for w, classes in system_priority_job_workloads(workloads, now, threshold):
        md = w.get("metadata") or {}
        if (md.get("namespace"), md.get("name")) in with_group:
            continue
        ns, job = md.get("namespace"), w["spec"]["controllerRef"].get("name")
        out.append(
            {
                "object": f"Job {ns}/{job}",
                "message": f"Job {ns}/{job} never creates a pod: the Job controller made it Workload {md.get('name')} "
                f"but no PodGroup, as its pods' priority class {', '.join(classes)} is above a PodGroup's limit of "
                f"{MAX_PRIORITY} and the API server refuses the PodGroup the controller copies it into (a bug of "
                "Kubernetes 1.37.2 with the WorkloadWithJob gate on; a chart's hook Job, such as Volcano's "
                "admission-init, then times the install out)",
                "fix": "turn the WorkloadWithJob feature gate off on kube-controller-manager (and kube-apiserver), or "
                f"give the Job's pods a priority class of at most {MAX_PRIORITY}; the Job starts once it has its "
                "PodGroup",
            }
        )
    return out


# ---- the native gang path of the smoke test and the filters ------------------------------------------
# the version the collection creates Workloads and PodGroups at (the shapes it was proven with); 1.35's
# v1alpha1 and 1.36's v1alpha2 have other shapes and are refused with the minor that serves this one
SUPPORTED_VERSION = "v1beta1"
SUPPORTED_MINOR = 37
API_VERSION = f"{GROUP}/{SUPPORTED_VERSION}"
# the kube-scheduler that runs the gang plugin; its gang profile is the default one
SCHEDULER_NAME = "default-scheduler"
LABEL = "kube-scheduler's native gang (Workload and PodGroup, scheduling.k8s.io)"
TEMPLATE = "workers"
# where kube-scheduler writes its decision on a gang: 1.37 PodGroupInitiallyScheduled, 1.36 PodGroupScheduled
SCHEDULED_CONDITIONS = ("PodGroupInitiallyScheduled", "PodGroupScheduled")
# the message kube-scheduler gives each member of a gang it refuses
REJECTION = "pod group is unschedulable"
# what to turn on, per component, for the native gang of 1.37 (and for the Job integration)
TURN_ON = (
    "kube-apiserver --feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1beta1=true, "
    "kube-scheduler and kube-controller-manager --feature-gates=GenericWorkload=true"
)
TURN_ON_JOBS = "WorkloadWithJob=true on kube-apiserver and kube-controller-manager as well"


def operator_refusal(who: str) -> str:
    """Why ``who`` (a Kubeflow operator, a Trainer runtime) cannot be pointed at the native gang, and what works."""
    return (
        f"gang_scheduler=native: {who} cannot put its pods in a native gang: no Kubeflow operator (training-operator, "
        "mpi-operator) nor Kubeflow Trainer v2 (its podGroupPolicy knows coscheduling and volcano) makes "
        "kube-scheduler's Workload and PodGroup or sets spec.schedulingGroup on the pods yet, so its jobs would start "
        "without a gang. Use gang_scheduler=volcano or scheduler_plugins for Kubeflow jobs; the native gang takes pods "
        "and batch Jobs you submit yourself (the gangsched.kubeflow.native_gang filter)"
    )


def version_problem(served: list[str]) -> str | None:
    """Why the native gang cannot be used at the versions of scheduling.k8s.io the API server serves
    (``served``: e.g. ["v1", "v1beta1"]); None when the supported one is among them.

    >>> version_problem(["v1", "v1beta1"]) is None
    True
    >>> version_problem(["v1"])[:56]
    "the API server does not serve Workloads and PodGroups ("
    """
    if SUPPORTED_VERSION in served:
        return None
    older = [v for v in VERSIONS.values() if v in served]
    if older:
        minor = {v: m for m, v in VERSIONS.items()}[older[0]]
        return (
            f"the API server serves the native gang API only at {GROUP}/{older[0]} (Kubernetes 1.{minor}), whose "
            f"Workload and PodGroup shapes differ from {API_VERSION}, the version this collection creates and "
            f"proves (Kubernetes 1.{SUPPORTED_MINOR}); upgrade the control plane to 1.{SUPPORTED_MINOR}, or use "
            "another gang_scheduler (volcano, scheduler_plugins, koordinator)"
        )
    return (
        f"the API server does not serve Workloads and PodGroups ({API_VERSION}): kube-scheduler's native gang is "
        f"off on this cluster (off by default). Turn it on with {TURN_ON}; on a managed control plane, ask the "
        "provider for these flags, or use another gang_scheduler (volcano, scheduler_plugins, koordinator)"
    )


def workload(ns: str, name: str, labels: dict, min_count: int) -> dict:
    """A Workload ``ns/name`` with one gang pod group template of ``min_count`` members."""
    return {
        "apiVersion": API_VERSION,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
        "spec": {"podGroupTemplates": [{"name": TEMPLATE, "schedulingPolicy": {"gang": {"minCount": min_count}}}]},
    }


def podgroup(ns: str, name: str, workload_name: str, labels: dict, min_count: int) -> dict:
    """The PodGroup ``ns/name`` of Workload ``workload_name``'s template, a gang of ``min_count`` members."""
    return {
        "apiVersion": API_VERSION,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
        "spec": {
            "workloadRef": {"workloadName": workload_name, "templateName": TEMPLATE},
            "schedulingPolicy": {"gang": {"minCount": min_count}},
        },
    }


def join(pod_spec: dict, podgroup_name: str) -> dict:
    """``pod_spec`` (changed in place, and returned) as a member of PodGroup ``podgroup_name``."""
    pod_spec["schedulingGroup"] = {"podGroupName": podgroup_name}
    return pod_spec


def scheduled(pg: dict | None) -> tuple[str | None, str]:
    """kube-scheduler's decision on a PodGroup: ("True", "") once it scheduled the gang, ("False", its message)
    while it refuses it, (None, "") while it has written neither (or without the gang plugin, never).

    >>> scheduled({"status": {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True"}]}})
    ('True', '')
    """
    for c in ((pg or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") in SCHEDULED_CONDITIONS and c.get("status") in ("True", "False"):
            return c["status"], c.get("message") or c.get("reason") or ""
    return None, ""


def owned_by(obj: dict, kind: str, name: str) -> bool:
    """Whether ``obj`` is controlled by the ``kind`` ``name`` (its controller ownerReference)."""
    return any(
        o.get("kind") == kind and o.get("name") == name and o.get("controller")
        for o in (obj.get("metadata") or {}).get("ownerReferences") or []
    )


def gang_job(doc: dict, min_count: int | None = None) -> dict:
    """A copy of a batch/v1 Job whose pods the Job controller puts in one native gang (its Workload and
    PodGroup, with the WorkloadWithJob gate): ``spec.scheduling.schedulingPolicy.gang``, minCount
    ``min_count`` or (None) the Job's parallelism. Raises ValueError naming what is wrong."""
    out = copy_plain(doc)
    spec = out.setdefault("spec", {})
    tmpl = (spec.get("template") or {}).get("spec") or {}
    name = (out.get("metadata") or {}).get("name")
    if "schedulingGroup" in tmpl:
        raise ValueError(
            f"Job {name}: its pod template already names a PodGroup (spec.template.spec.schedulingGroup), so the "
            "Job controller makes none for it; remove it to let the Job be one gang"
        )
    gang: dict = {}
    if min_count is not None:
        if not isinstance(min_count, int) or isinstance(min_count, bool) or min_count < 1:
            raise ValueError(f"min_count must be a whole number of at least 1, got {min_count!r}")
        gang["minCount"] = min_count
    spec["scheduling"] = {"schedulingPolicy": {"gang": gang}}
    return out


def gang_pods(docs: list, name: str | None = None, min_count: int | None = None) -> list[dict]:
    """Pods (or a batch/v1 Job) as one native gang: for pods, a Workload and a PodGroup ``name`` (default: the
    first pod's name) of ``min_count`` members (default: all of them) before copies of the pods that join it;
    for a Job, gang_job. Raises ValueError naming what is wrong."""
    if isinstance(docs, dict):
        docs = [docs]
    if not isinstance(docs, list) or not docs or not all(isinstance(d, dict) for d in docs):
        raise ValueError("needs a Pod, a list of Pods, or a batch/v1 Job")
    kinds = {d.get("kind") for d in docs}
    if kinds == {"Job"} and len(docs) == 1:
        if (docs[0].get("apiVersion") or "batch/v1") != "batch/v1":
            raise ValueError(f"a Job of apiVersion batch/v1 is needed, got {docs[0].get('apiVersion')}")
        return [gang_job(docs[0], min_count)]
    if kinds != {"Pod"}:
        raise ValueError(f"needs Pods or one batch/v1 Job, got kinds {', '.join(sorted(map(str, kinds)))}")
    first = docs[0].get("metadata") or {}
    spaces = {(d.get("metadata") or {}).get("namespace") for d in docs}
    if len(spaces) > 1:
        raise ValueError(f"the pods of one gang must share a namespace, got {', '.join(sorted(map(str, spaces)))}")
    ns = spaces.pop()
    gang = name or first.get("name")
    if not gang:
        raise ValueError("the first pod has no metadata.name: give the gang a name")
    want = len(docs) if min_count is None else min_count
    if not isinstance(want, int) or isinstance(want, bool) or not 1 <= want <= len(docs):
        raise ValueError(f"min_count must be a whole number from 1 to the {len(docs)} pods, got {want!r}")
    head = [workload(ns, gang, {}, want), podgroup(ns, gang, gang, {}, want)]
    for d in head:
        if ns is None:
            d["metadata"].pop("namespace")
        d["metadata"].pop("labels")
    pods = []
    for d in docs:
        p = copy_plain(d)
        join(p.setdefault("spec", {}), gang)
        pods.append(p)
    return head + pods


class NativeGang(_gang_path.GangPath):
    name = "native"
    title = "kube-scheduler's native gang"
    role = "native_gang"
    workloads = ("pods", "job")
    operator_flag = False
    # Kueue admits jobs, and of jobs only an Indexed Job is one native gang (no Kubeflow job makes one yet)
    kueue_workload = "job"
    kueue_requires = (
        "native_gang_job_integration",
        "Kueue admits jobs, and of jobs only an Indexed Job is one native gang, made by the Job controller with the "
        "WorkloadWithJob gate (kube-scheduler's own gang has no Kubeflow job yet)",
    )
    decision = True
    canary_proves_scheduler = True
    decision_api_version = API_VERSION
    TURN_ON = TURN_ON

    def served_group(self):
        return GROUP, ("workloads", "podgroups")

    def served_problem(self, served):
        return version_problem(served)

    def gang_objects(self, ns, name, labels, replicas):
        return [workload(ns, name, labels, replicas), podgroup(ns, name, name, labels, replicas)]

    def join(self, pod_spec, name):
        join(pod_spec, name)

    def gang_job(self, job, scheduler_name=None):
        return gang_job(job)  # kube-scheduler's default profile: the pods name no scheduler

    def run_kinds(self):
        return (("PodGroup", API_VERSION), ("Workload", API_VERSION))

    def refuse_workload(self, workload):
        return (
            f"workload={workload} cannot be tested with gang_scheduler={self.name}: no Kubeflow operator or Trainer "
            "runtime "
            "puts its pods in a native gang (kube-scheduler's Workload and PodGroup) yet, so such a job would not be "
            "gang-scheduled; use workload=pods or workload=job for the native gang, or gang_scheduler=volcano or "
            "scheduler_plugins for Kubeflow jobs"
        )

    def refuse_scheduler_name(self, given):
        if given in (None, SCHEDULER_NAME):
            return None
        return (
            f"scheduler_name={given!r} with gang_scheduler=native: the native gang is scheduled by kube-scheduler's "
            f"default profile {SCHEDULER_NAME!r}; leave scheduler_name unset"
        )

    def operator_refusal(self, operator, operator_label, given):
        return operator_refusal(operator_label or "A Kubeflow operator") + "; nothing was changed"

    def runtime_refusal(self):
        return operator_refusal("A Kubeflow Trainer v2 runtime")

    def rbac_refusal(self, component):
        return (
            f"gang_scheduler=native grants nothing to component={component}: no Kubeflow component creates "
            "kube-scheduler's Workloads and PodGroups, and kube-scheduler's and the Job controller's rights on them "
            "are Kubernetes' own bootstrap RBAC (present once the GenericWorkload gate is on); nothing was changed"
        )

    def scheduler_name(self, given, schedulers, operator_label=None):
        return SCHEDULER_NAME  # kube-scheduler's default profile runs the gang plugin (given: checked by the caller)

    def describe(self, sname):
        return f"kube-scheduler ({sname!r}, its native gang)"

    def scheduled(self, pg):
        return scheduled(pg)

    def owned_by(self, obj, kind, name):
        return owned_by(obj, kind, name)

    def undecided_canary(self, sname: str, where: str) -> str:
        """Why a bound canary whose PodGroup was never marked scheduled proves no gang."""
        return (
            f"kube-scheduler ({sname!r}) bound the liveness canary, a gang of one, but never marked its PodGroup "
            f"{where} scheduled ({' or '.join(SCHEDULED_CONDITIONS)}): it schedules the pods one by "
            "one, without the gang plugin, so no gang would be held. Turn the GenericWorkload feature gate on in "
            f"kube-scheduler (and kube-controller-manager): {TURN_ON}"
        )

    def undecided_gang(self, who: str, timeout) -> str:
        """Why a gang whose members all run, with no decision on its PodGroup, proves nothing."""
        return (
            f"every member runs, but {who} never marked the gang's PodGroup scheduled "
            f"({' or '.join(SCHEDULED_CONDITIONS)}) in {timeout}s: it placed the pods without the gang plugin, "
            f"so nothing shows they were held as one gang. Turn the GenericWorkload gate on in kube-scheduler: "
            f"{TURN_ON}"
        )

    def no_job_podgroup(self, what: str, wait: float) -> str:
        """Why a Job asking for a gang got no PodGroup from the Job controller."""
        return (
            f"the Job controller made no PodGroup for {what} in {wait:.0f}s although the Job asks for a gang "
            "(spec.scheduling.schedulingPolicy.gang): the native gang's Job integration is off. Turn it on with "
            f"{TURN_ON_JOBS} (besides {TURN_ON}), or prove the native gang with workload=pods"
        )


PATH = NativeGang()
