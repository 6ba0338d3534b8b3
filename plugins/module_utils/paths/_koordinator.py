# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the Koordinator gang path — koord-scheduler's Coscheduling profile forming a gang
from two labels on the pods (seed 003: pod-group.scheduling.sigs.k8s.io/name and /min-available), with no PodGroup
object made; why an operator's gang flag or a Trainer runtime cannot carry it; the CRDs and releases it needs, and
what gang_info checks of it. Pure: no I/O. Not a public API."""

from __future__ import annotations

import re

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _pod_facts, _schedulers, _workloads
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._manifests import copy_plain
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _gang_path

_semver = _schedulers.semver
# Koordinator's gang labels (seed 003): a pod joins the gang ``name`` of at least ``min-available``
# members by these two labels and koord-scheduler's schedulerName; no PodGroup object is involved
LABEL_GANG_NAME = "pod-group.scheduling.sigs.k8s.io/name"
LABEL_GANG_MIN = "pod-group.scheduling.sigs.k8s.io/min-available"
# what koord-scheduler's Coscheduling writes on the members of a gang it rejected (v1.6.1); not "child pod not collect
# enough", which it also writes for a moment while its cache has not seen the gang's last member
GANG_WORD = re.compile(r'Gang "\S+" gets rejected')
# koord-scheduler: the CRDs it needs at start even for a gang-only profile (without them it never starts)
KOORDINATOR_CRDS = (
    "podgroups.scheduling.sigs.k8s.io",
    "reservations.scheduling.koordinator.sh",
    "devices.scheduling.koordinator.sh",
)
REPLICA_SPECS, NOT_MEMBERS = _workloads.REPLICA_SPECS, _workloads.NOT_MEMBERS


def label_gang(doc: dict, scheduler_name: str, min_available: int | None = None, name: str | None = None) -> dict:
    """A copy of a Pod, a batch Job or a Kubeflow job whose pods form a label gang: the two labels and
    ``scheduler_name`` on the pod, the Job's pod template, or every member replica's pod template. The gang is named
    after the object unless ``name`` is given; ``min_available`` defaults to the job's member pods (1 for a Pod, a
    Job's parallelism).
    Raises ValueError naming what is wrong."""

    if not isinstance(doc, dict) or not doc.get("kind") or not (doc.get("metadata") or {}).get("name"):
        raise ValueError("needs a Pod or a Kubeflow job with kind and metadata.name")
    out = copy_plain(doc)
    kind = out["kind"]
    gang = name or out["metadata"]["name"]
    if kind == "Pod":
        templates, members = [out], 1
    elif kind == "Job":  # a batch Job: its one pod template, its pods run at once (parallelism)
        spec = out.setdefault("spec", {})
        templates, members = [spec.setdefault("template", {})], int(spec.get("parallelism", 1))
    elif kind in REPLICA_SPECS:
        specs = (out.get("spec") or {}).get(REPLICA_SPECS[kind]) or {}
        chosen = {r: s for r, s in specs.items() if r not in NOT_MEMBERS.get(kind, ())}
        if not chosen:
            raise ValueError(f"{kind} {gang} has no spec.{REPLICA_SPECS[kind]} with a member replica")
        templates = [s.setdefault("template", {}) for s in chosen.values()]
        members = sum(int(s.get("replicas", 1)) for s in chosen.values())
    else:
        raise ValueError(f"kind {kind} is not a Pod, a batch Job or a Kubeflow job ({', '.join(REPLICA_SPECS)})")
    want = members if min_available is None else min_available
    if not isinstance(want, int) or isinstance(want, bool) or want < 1:
        raise ValueError(f"min_available must be a whole number of at least 1, got {want!r}")
    for t in templates:
        t.setdefault("metadata", {}).setdefault("labels", {}).update({LABEL_GANG_NAME: gang, LABEL_GANG_MIN: str(want)})
        t.setdefault("spec", {})["schedulerName"] = scheduler_name
    return out


def koordinator_version_problem(tag: str | None, prebind: bool | None, kube_version: str | None) -> str | None:
    """Why a koord-scheduler version does not gang-schedule here (the versions checked on v1.33):
    v1.7.0 binds no gang member while Coscheduling's preBind is on (it writes an invalid label value),
    v1.8+ needs resource.k8s.io/v1, which only Kubernetes 1.34+ serves."""
    v = _semver(tag)
    if v is None:
        return None
    if v[:2] == (1, 7) and v[2] == 0 and prebind is not False:
        return (
            f"koord-scheduler {tag} binds no gang member while Coscheduling's preBind is enabled (it writes an "
            "invalid label value bind-gang-group-id=<namespace>/<name>)"
        )
    k = _semver(kube_version)
    if v >= (1, 8, 0) and k is not None and k[:2] < (1, 34):
        return (
            f"koord-scheduler {tag} needs resource.k8s.io/v1 (Kubernetes 1.34 or later) and waits forever on "
            f"Kubernetes {kube_version}"
        )
    return None


def koordinator_refusal(sname: str, operator_label: str | None = None) -> str:
    """Why an operator's gang flag must not name koord-scheduler, and the route that works."""
    who = operator_label or "A Kubeflow operator"
    return (
        f"{who}'s gang flag cannot point at koord-scheduler ({sname!r}): the operator would create "
        "scheduling.x-k8s.io or scheduling.volcano.sh PodGroups, which koord-scheduler ignores, so a job that does "
        "not fit starts partially (some pods Running, the rest Pending, GPUs held). Koordinator forms a gang from the "
        "labels pod-group.scheduling.sigs.k8s.io/name and pod-group.scheduling.sigs.k8s.io/min-available on each "
        f"replica's pod template with schedulerName {sname!r}: add them with the gangsched.kubeflow.label_gang filter "
        "and leave the operator's gang flag unset (gang_scheduler=none)"
    )


class Koordinator(_gang_path.GangPath):
    name = "koordinator"
    title = "Koordinator"
    role = "koordinator"
    scheduler_kind = "koordinator"
    rights_component = "koord_scheduler"
    scheduler_rights = {"podgroups": ("list", "watch")}
    # a plain Indexed Job too: its pod template carries the label gang (the job Kueue admits in front of it, which needs
    # no operator; site.yml installs none on this path)
    workloads = ("pods", *_gang_path.KUBEFLOW_WORKLOADS, "job")
    operator_flag = False
    kueue_workload = "job"

    def pod_marks(self, name, replicas):
        return {LABEL_GANG_NAME: name, LABEL_GANG_MIN: str(replicas)}, {}

    def kubeflow_job(self, doc, scheduler_name, replicas, name):
        return label_gang(doc, scheduler_name, replicas, name)

    def gang_job(self, job, scheduler_name=None):
        return label_gang(job, scheduler_name or "koord-scheduler")

    def operator_refusal(self, operator, operator_label, given):
        return koordinator_refusal(given or "koord-scheduler", operator_label)

    def runtime_refusal(self):
        return (
            "gang_scheduler=koordinator: a Kubeflow Trainer v2 runtime cannot carry a Koordinator gang. "
            "koord-scheduler forms a gang from labels on the pods (pod-group.scheduling.sigs.k8s.io/name and "
            "min-available), and min-available must be each TrainJob's numNodes, which a runtime shared by "
            "TrainJobs of every size cannot hold; Trainer's podGroupPolicy knows only coscheduling "
            "(scheduler-plugins) and volcano. Use gang_scheduler=scheduler_plugins or volcano for Trainer v2, or "
            "run the job as a Kubeflow job kind with the gangsched.kubeflow.label_gang filter"
        )

    def scheduler_name(self, given, schedulers, operator_label=None) -> str:
        koord = _schedulers.gang_profiles_of(schedulers, self.scheduler_kind)
        if operator_label:
            raise GangError(koordinator_refusal(given or (koord[0] if koord else "koord-scheduler"), operator_label))
        return _schedulers.derive_profile(self.scheduler_kind, given, koord, schedulers)

    def gang_word(self, message: str) -> bool:
        # koord-scheduler's Coscheduling rejecting the gang for a member that cannot be placed
        return bool(GANG_WORD.search(message))

    def serves(self, s, sname):
        return s["kind"] == self.scheduler_kind and sname in (s.get("gang_profiles") or [])

    def claims_flag(self, value: str, schedulers: list[dict]) -> bool:
        """Whether an operator's gang flag ``value`` names a profile a koord-scheduler serves."""
        return value in _schedulers.gang_profiles_of(schedulers, self.scheduler_kind)

    def flag_problems(self, o, value, schedulers, crds):
        return [
            (
                f"--{o['gang_flag']}={value} points the operator's gangs at koord-scheduler, which ignores the "
                "PodGroups the operator creates: a job that does not fit starts partially (some pods Running, the rest "
                "Pending, GPUs held)",
                "remove the flag (gangsched.kubeflow.operator_gang with gang_scheduler=none) and gang the jobs by the "
                f"labels pod-group.scheduling.sigs.k8s.io/name and /min-available with schedulerName {value} "
                "(filter gangsched.kubeflow.label_gang)",
            )
        ]

    def untried_problems(self, untried, schedulers):
        """koord-scheduler v1.8 lets one member of a gang at a time into its queue (Coscheduling's PreEnqueue turns
        the others away) and brings none of them back once the gang's min-available is met: a gang whose
        min-available is below its member count keeps members never tried although they might fit."""
        out = []
        for key, g in untried.items():
            s = next((s for s in schedulers if self.serves(s, g["scheduler"])), None)
            v = _semver(s.get("version")) if s else None
            least = g["minimum"]
            if v is None or v[:2] != (1, 8) or least is None or least >= g["members"] or g["bound"] < least:
                continue
            ns = key.split("/", 1)[0]
            pods = [f"{ns}/{n}" for n in g["untried"]]
            many = _pod_facts.EXAMPLES
            shown = ", ".join(pods[:many]) + (f" and {len(pods) - many} more" if len(pods) > many else "")
            problem = {
                "object": f"Pods {shown}",
                "message": f"{len(pods)} member(s) of gang {key} were never tried by {_gang_path.where(s)} "
                f"(koord-scheduler {s.get('version')}) while {g['bound']} of its {g['members']} members are bound: "
                f"its min-available {least} is met, and koord-scheduler v1.8 brings back no member that its "
                "Coscheduling turned away while another member of the gang was being scheduled",
                "fix": "give the gang a min-available equal to its member count (gangsched.kubeflow.label_gang's "
                "default); to start the waiting members now, delete them so that their controller creates them again "
                "(a new member brings them back), or restart koord-scheduler",
            }
            out.append((problem, key))
        return out

    def crds_to_read(self, schedulers):
        return KOORDINATOR_CRDS if any(s["kind"] == self.scheduler_kind for s in schedulers) else ()

    def cluster_problems(self, schedulers, ops, facts):
        """koord-scheduler set up so that it cannot gang-schedule: a CRD it needs at start missing, or a
        version that binds no gang member here."""
        missing = [n for n in KOORDINATOR_CRDS if not (facts.get("crd_state") or {}).get(n)]
        out = []
        for s in (s for s in schedulers if s["kind"] == self.scheduler_kind):
            obj = _gang_path.where(s)
            if missing:
                out.append(
                    {
                        "object": obj,
                        "message": f"koord-scheduler needs CustomResourceDefinition {', '.join(missing)} even for a "
                        "gang-only profile, and does not start without them",
                        "fix": "apply them from the release's config/crd/bases (role gangsched.kubeflow.koordinator "
                        "does)",
                    }
                )
            why = koordinator_version_problem(
                s.get("version"), s.get("coscheduling_prebind"), facts.get("kube_version")
            )
            if why:
                out.append(
                    {
                        "object": obj,
                        "message": why,
                        "fix": "run koord-scheduler v1.6.1 (role gangsched.kubeflow.koordinator), or for v1.7.0 add "
                        "preBind: {disabled: [{name: Coscheduling}]} to its gang profile",
                    }
                )
        return out


PATH = Koordinator()
