# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the problems gang_info reports about Kubeflow Trainer v2 (runtimes, TrainJobs).
Each function takes the objects as read (runtimes, TrainJobs, the schedulers gang_info found) and returns
problems {object, message, fix}; gang_info does the reads. Pure: no I/O. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _podgroups, _trainer_runtimes

POLICY_SCHEDULER = {"coscheduling": "scheduler-plugins (Coscheduling)", "volcano": "Volcano"}
POLICY_INSTALL = {
    "coscheduling": "install scheduler-plugins with its CRDs (role gangsched.kubeflow.scheduler_plugins)",
    "volcano": "install Volcano with its CRDs (role gangsched.kubeflow.volcano)",
}
DEFAULT_SCHEDULER_NAME = "default-scheduler"  # what a pod without schedulerName gets
FIX_TOOL = "module or filter gangsched.kubeflow.trainer_runtime_gang"


def runtime_pods(runtime: dict) -> list[tuple[str, dict]]:
    """(replicated job, its pod template's spec) of a runtime, read as it is ({} where it has none)."""
    spec = (((runtime.get("spec") or {}).get("template") or {}).get("spec")) or {}
    out = []
    for rj in spec.get("replicatedJobs") or []:
        pod = ((((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec")) or {}
        out.append((rj.get("name") or "?", pod))
    return out


def gang_policy(runtime: dict) -> str | None:
    """The runtime's podGroupPolicy (coscheduling, volcano, or another key Trainer may add); None without."""
    policy = (runtime.get("spec") or {}).get("podGroupPolicy") or {}
    keys = sorted(k for k, v in policy.items() if v is not None)
    return keys[0] if keys else None


def runtime_name(runtime: dict) -> str:
    md = runtime.get("metadata") or {}
    return _trainer_runtimes.ref(
        runtime.get("kind") or "ClusterTrainingRuntime", md.get("namespace"), md.get("name") or "?"
    )


def scheduler_names(runtime: dict) -> dict:
    """Replicated job -> the schedulerName of its pod template (None where it sets none)."""
    return {job: pod.get("schedulerName") or None for job, pod in runtime_pods(runtime)}


def _gang_schedulers(policy: str, schedulers: list[dict]) -> list[dict]:
    """The running schedulers that serve ``policy``'s gangs (its PodGroups): scheduler-plugins' for
    coscheduling, Volcano's for volcano (koord-scheduler ignores both)."""
    gang = _trainer_runtimes.GANG_OF_POLICY.get(policy)
    return [s for s in schedulers if s.get("ready") and s.get("kind") == gang]


def _served(policy: str, name: str, schedulers: list[dict]) -> bool:
    """Whether a running scheduler takes pods named ``name`` and honours ``policy``'s PodGroups: a
    Coscheduling profile of scheduler-plugins, a name Volcano's scheduler serves."""
    return any(name in (s.get("gang_profiles") or []) for s in _gang_schedulers(policy, schedulers))


def scheduler_for(policy: str, schedulers: list[dict]) -> str:
    """The schedulerName a runtime of ``policy`` should carry, in words, from the schedulers running."""
    names = sorted({n for s in _gang_schedulers(policy, schedulers) for n in s.get("gang_profiles") or []})
    if len(names) == 1:
        return repr(names[0])
    if names:
        return "one of " + ", ".join(repr(n) for n in names)
    return f"the name of a running {POLICY_SCHEDULER[policy]} scheduler (none runs: {POLICY_INSTALL[policy]})"


def _limits_without_requests(runtime: dict) -> list[str]:
    out = []
    for job, pod in runtime_pods(runtime):
        for c in (pod.get("initContainers") or []) + (pod.get("containers") or []):
            res = c.get("resources") or {}
            missing = sorted(r for r in res.get("limits") or {} if r not in (res.get("requests") or {}))
            if missing:
                out.append(f"{job}/{c.get('name')} ({', '.join(missing)})")
    return out


def runtime_problems(runtime: dict, schedulers: list[dict]) -> list[dict]:
    """What keeps a runtime with a podGroupPolicy from gang-scheduling its TrainJobs: two gang plugins named; no running
    scheduler for the policy; a replicated job without schedulerName (the default scheduler ignores the
    PodGroup) or the jobs naming different schedulers; a name that no running scheduler serves for the
    policy; containers with limits but no requests (the PodGroup's minResources comes out empty)."""
    policy = gang_policy(runtime)
    if policy not in _trainer_runtimes.GANG_OF_POLICY:
        return []
    what = runtime_name(runtime)
    out = []

    def add(message: str, fix: str) -> None:
        out.append({"object": what, "message": message, "fix": fix})

    named = sorted(k for k, v in ((runtime.get("spec") or {}).get("podGroupPolicy") or {}).items() if v is not None)
    if len(named) > 1:
        add(
            f"{what} has a podGroupPolicy that names {' and '.join(named)}: Trainer's API takes one gang plugin, and "
            "its CRD does not refuse two, so each TrainJob gets a PodGroup of every kind named while its pods follow "
            "the one scheduler their schedulerName names; the other gang is never held, and gang_info reads the "
            f"runtime as {policy}",
            f"keep one key in spec.podGroupPolicy ({' or '.join(named)}), the one of the scheduler its pods name",
        )

    set_it = (
        f"set schedulerName to {scheduler_for(policy, schedulers)} in every replicated job's pod template ({FIX_TOOL})"
    )
    names = scheduler_names(runtime)
    unset = [job for job, n in names.items() if not n]
    effective = sorted({n or DEFAULT_SCHEDULER_NAME for n in names.values()})
    if not _gang_schedulers(policy, schedulers):
        add(
            f"{what} has podGroupPolicy {policy}, but no {POLICY_SCHEDULER[policy]} scheduler is running: its "
            "TrainJobs' pods are not gang-scheduled (no scheduler honours their PodGroup)",
            f"{POLICY_INSTALL[policy]}, restart Trainer's Deployment so that it watches the new PodGroups, then "
            f"set schedulerName to the new scheduler's name in every replicated job ({FIX_TOOL})",
        )
    elif unset and not _served(policy, DEFAULT_SCHEDULER_NAME, schedulers):
        add(
            f"{what} has podGroupPolicy {policy} but replicated job(s) {', '.join(unset)} set no schedulerName "
            "(Trainer never sets one): their pods go to the default scheduler carrying a PodGroup label it "
            "ignores, so a TrainJob that does not fit starts partially (some pods Running, the rest Pending, "
            "GPUs held), silently",
            set_it,
        )
    elif len(effective) > 1:
        listed = ", ".join(f"{job}: {n or DEFAULT_SCHEDULER_NAME}" for job, n in names.items())
        add(
            f"{what} names different schedulers in its replicated jobs ({listed}): one TrainJob's pods are "
            "split between them and no one scheduler holds the whole gang",
            set_it,
        )
    elif effective and not _served(policy, effective[0], schedulers):
        n = effective[0]
        others = [s for s in schedulers if s.get("ready") and n in (s.get("scheduler_names") or [])]
        if others:
            by = ", ".join(f"{s.get('source')} {s.get('namespace')}/{s.get('name')}" for s in others)
            why = (
                f"which {by} serves without honouring the {policy} PodGroup Trainer creates: the gang is not "
                "held, and a TrainJob that does not fit starts partially"
            )
        else:
            why = (
                f"which no running {POLICY_SCHEDULER[policy]} scheduler serves: the pods stay Pending with no "
                "scheduler to take them, or another scheduler takes them without holding the gang"
            )
        add(f"{what} has podGroupPolicy {policy} and schedulerName {n!r}, {why}", set_it)
    limits = _limits_without_requests(runtime)
    if limits:
        add(
            f"{what} has podGroupPolicy {policy} and container(s) {'; '.join(limits)} with limits but no "
            "requests: Trainer sums requests into the PodGroup's minResources, which comes out without them, so "
            "the scheduler cannot check that the whole gang has room before it starts placing its pods",
            f"set requests (equal to the limits) in those containers ({FIX_TOOL} does)",
        )
    return out


def runtime_fact(runtime: dict, schedulers: list[dict], crd_ok: dict) -> dict:
    """A runtime as gang_info reports it. ``crd_ok``: policy -> whether Trainer follows its PodGroups
    (the CRD exists and existed when Trainer started). Gang-ready: a podGroupPolicy Trainer knows, its
    PodGroups followed, and none of ``runtime_problems``."""
    md = runtime.get("metadata") or {}
    policy = gang_policy(runtime)
    ready = (
        policy in _trainer_runtimes.GANG_OF_POLICY
        and crd_ok.get(policy, False)
        and not runtime_problems(runtime, schedulers)
    )
    return {
        "kind": runtime.get("kind"),
        "namespace": md.get("namespace"),
        "name": md.get("name"),
        "gang_policy": policy,
        "scheduler_names": scheduler_names(runtime),
        "gang_ready": bool(ready),
    }


def started_before(crd: dict | None, controllers: list[dict]) -> list[dict]:
    """Trainer's controllers whose pod started before the CRD was created (``crd``: as gang_info reports
    a PodGroup CRD, with ``created``; each controller with ``started``, None when no pod runs)."""
    created = (crd or {}).get("created") or ""
    return [c for c in controllers if created and c.get("started") and created > c["started"]]


def crd_followed(crd: dict | None, controllers: list[dict]) -> bool:
    """Whether Trainer follows the PodGroups of this CRD: Established, and existing when Trainer started."""
    return bool((crd or {}).get("established")) and not started_before(crd, controllers)


def restart_command(controller: dict) -> str:
    ns, _sep, name = controller["deployment"].partition("/")
    return f"kubectl -n {ns} rollout restart deployment/{name}"


def podgroup_crd_problems(runtimes: list[dict], crds: dict, controllers: list[dict]) -> list[dict]:
    """The PodGroup CRD of a policy some runtime uses missing, or created after Trainer's pod started
    (Trainer sets up its PodGroup watch at start, only if the CRD exists then). ``crds``: policy ->
    (CRD name, {established, created} as gang_info reports the CRD, or None when missing);
    ``controllers``: Trainer's, each with ``deployment`` (namespace/name) and ``started`` (when its
    oldest running pod started; None when none runs)."""
    out = []
    used: dict[str, list[str]] = {}
    for rt in runtimes:
        p = gang_policy(rt)
        if p in _trainer_runtimes.GANG_OF_POLICY:
            used.setdefault(p, []).append(runtime_name(rt))
    for policy, users in sorted(used.items()):
        name, crd = crds[policy]
        listed = ", ".join(users[:3]) + (f" and {len(users) - 3} more" if len(users) > 3 else "")
        if not (crd or {}).get("established"):
            out.append(
                {
                    "object": f"CustomResourceDefinition {name}",
                    "message": f"{listed} use(s) podGroupPolicy {policy}, but CustomResourceDefinition {name} is "
                    f"{'not Established' if crd else 'missing'}: Trainer cannot create their TrainJobs' PodGroups",
                    "fix": f"{POLICY_INSTALL[policy]}, then restart Trainer"
                    + "".join(f" ({restart_command(c)})" for c in controllers[:1]),
                }
            )
            continue
        for c in started_before(crd, controllers):
            out.append(
                {
                    "object": f"Deployment {c['deployment']}",
                    "message": f"Trainer's pod started at {c['started']}, before CustomResourceDefinition {name} "
                    f"was created ({crd['created']}): Trainer sets up its watch of {policy} PodGroups (and of the "
                    "LimitRanges and RuntimeClasses that count towards their minResources) only when their CRD "
                    f"exists at its start, so until it restarts a PodGroup of {listed} that is changed or deleted "
                    "is not reconciled when it happens",
                    "fix": f"restart Trainer: {restart_command(c)}",
                }
            )
    return out


def runtime_of(trainjob: dict, runtimes: list[dict]) -> dict | None:
    """The runtime a TrainJob runs on, among ``runtimes`` (a TrainingRuntime from the TrainJob's own
    namespace); None when it is not there."""
    ns = (trainjob.get("metadata") or {}).get("namespace")
    for rt in runtimes:
        md = rt.get("metadata") or {}
        kind = rt.get("kind")
        if _trainer_runtimes.uses(trainjob, kind, md.get("name")) and (
            kind != "TrainingRuntime" or md.get("namespace") == ns
        ):
            return rt
    return None


def name_clash_problems(trainjobs: list[dict], runtimes: list[dict], jobs: list[dict]) -> list[dict]:
    """A TrainJob on a gang runtime and a Kubeflow v1 job of the same name in one namespace, gang-scheduled on
    the same scheduler: both controllers name their PodGroup after their job (Trainer after the TrainJob,
    training-operator and mpi-operator after theirs), so both own the one PodGroup <group> <ns>/<name> and
    each writes its minMember over the other's. ``jobs``: each {kind, namespace, name, operators: {gang
    scheduler (volcano, scheduler_plugins): the operator that gangs this kind on it}}."""
    by_key: dict[tuple, list[dict]] = {}
    for j in jobs:
        by_key.setdefault((j["namespace"], j["name"]), []).append(j)
    out = []
    for tj in trainjobs:
        md = tj.get("metadata") or {}
        key = (md.get("namespace"), md.get("name"))
        policy = gang_policy(runtime_of(tj, runtimes) or {})
        gang = _trainer_runtimes.GANG_OF_POLICY.get(policy)
        for j in by_key.get(key, ()) if gang else ():
            operator = j["operators"].get(gang)
            if not operator:
                continue
            ns, name = key
            out.append(
                {
                    "object": f"TrainJob {ns}/{name}",
                    "message": f"TrainJob {ns}/{name} and {j['kind']} {ns}/{name} are both gang-scheduled by "
                    f"{POLICY_SCHEDULER[policy]} ({operator} for the {j['kind']}) and share one PodGroup, "
                    f"{_podgroups.group(gang)} {ns}/{name}: each controller writes its minMember over the other's, "
                    "so either job can start partially",
                    "fix": f"rename one of them: delete the TrainJob or the {j['kind']} and create it again under "
                    "another name",
                }
            )
    return out


def resources_per_node_problems(version: str | None, trainjobs: list[dict], runtimes: list[dict]) -> list[dict]:
    """Trainer v2.1.x leaves a TrainJob's trainer.resourcesPerNode out of its PodGroup's minResources
    (kubeflow/trainer#2525, fixed in v2.2.0): a gang TrainJob that sets it is pre-checked against the
    runtime's requests, not its own."""
    if (version or "").lstrip("v").split(".")[:2] != ["2", "1"]:
        return []
    out = []
    for tj in trainjobs:
        md = tj.get("metadata") or {}
        if not ((tj.get("spec") or {}).get("trainer") or {}).get("resourcesPerNode"):
            continue
        rt = runtime_of(tj, runtimes)
        policy = gang_policy(rt or {})
        if policy not in _trainer_runtimes.GANG_OF_POLICY:
            continue
        out.append(
            {
                "object": f"TrainJob {md.get('namespace')}/{md.get('name')}",
                "message": f"TrainJob {md.get('namespace')}/{md.get('name')} sets trainer.resourcesPerNode, which "
                f"Trainer {version} leaves out of the {policy} PodGroup's minResources (kubeflow/trainer#2525, fixed "
                f"in v2.2.0): the scheduler checks the gang's room against {runtime_name(rt)}'s requests instead",
                "fix": "upgrade Trainer to v2.2.0 or later, or put the resources in the runtime's container requests "
                "and drop resourcesPerNode",
            }
        )
    return out
