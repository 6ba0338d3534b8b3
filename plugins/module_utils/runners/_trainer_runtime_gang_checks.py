# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what trainer_runtime_gang checks before it writes — the options, the runtime CRDs,
the scheduler that serves the gang, the runtime itself (and where else one of that name is), a copy's owner, the
TrainJobs already on it. Part of trainer_runtime_gang's runner (``_trainer_runtime_gang``), imported by it only. Raises
GangError. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import (
    _api,
    _operators,
    _podgroups,
    _schedulers,
    _trainer_runtimes,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry

NOTHING = "; nothing was changed"
SHOWN = 5  # TrainJobs named in a warning


def validate(params: dict) -> None:
    """Every option checked before the first API call, so a bad one changes nothing."""
    gang = params.get("gang_scheduler")
    path = _registry.get(gang)
    refusal = path.runtime_refusal()
    if refusal:
        raise GangError(refusal + NOTHING)
    name, gang_name = params.get("name"), params.get("gang_name")
    _operators.check_name("name", name, "runtime", label=False)
    _operators.check_name("gang_name", gang_name, "runtime", label=False)
    _operators.check_name("namespace", params.get("namespace"), "namespace", label=True)
    _operators.check_name("scheduler_name", params.get("scheduler_name"), "scheduler (profile)", label=False)
    _operators.check_name("queue", params.get("queue"), "Volcano queue", label=False)
    if gang_name and gang_name == name:
        raise GangError(
            f"gang_name={gang_name!r} is the runtime itself: a copy needs a name of its own. Set gang_name to "
            "another name, or leave it unset to edit the runtime in place" + NOTHING
        )
    if gang_name and len(name) > _trainer_runtimes.LABEL_VALUE_MAX:
        raise GangError(
            f"name={name!r} is longer than {_trainer_runtimes.LABEL_VALUE_MAX} characters, so the gang copy's label "
            f"{_trainer_runtimes.GANG_OF} cannot name it. Leave gang_name unset to edit the runtime in place, or copy "
            "a "
            "runtime with a shorter name" + NOTHING
        )
    if params.get("queue") and not path.queues:
        raise GangError(
            f"queue={params['queue']!r} with gang_scheduler={gang}: a queue is a Volcano setting (the runtime "
            "annotation scheduling.volcano.sh/queue-name). Leave queue unset, or use gang_scheduler=volcano" + NOTHING
        )
    timeout = params.get("schedule_timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1):
        raise GangError(
            f"schedule_timeout={timeout!r}: coscheduling's scheduleTimeoutSeconds must be a whole number of "
            "seconds of at least 1. Set it to 1 or more, or leave it unset (the runtime's, else Trainer's 60)" + NOTHING
        )
    given = params.get("scheduler_name")
    refusal = path.runtime_scheduler_refusal(given)
    if refusal:
        raise GangError(refusal + NOTHING)


def runtime_crd_version(client, kind: str, required: bool) -> str | None:
    """The API version of ``kind`` the cluster stores; a GangError (``required``) or None when its CRD is
    missing or not Established."""
    name = _trainer_runtimes.CRDS[kind]
    crd = _service.crd(client, name)
    if _service.crd_established(crd):
        return _trainer_runtimes.served_version(crd)
    if required:
        raise GangError(
            f"CustomResourceDefinition {name} is missing or not Established: {kind}s come with Kubeflow Trainer v2. "
            "Install Trainer v2 (its CRDs and controller) first" + NOTHING
        )
    return None


def scheduler_name(client, gang: str, given: str | None, warn) -> str:
    """The scheduler name the runtime's pods must carry: derived from the schedulers running (or ``given``,
    when one of them serves it), after checking the scheduler's PodGroup CRD is Established."""
    who = _schedulers.label(gang)
    crd_name = _podgroups.crd_name(gang)
    if not _service.crd_established(_service.crd(client, crd_name)):
        raise GangError(
            f"CustomResourceDefinition {crd_name} is missing or not Established: Trainer creates a {who} PodGroup for "
            f"each TrainJob of a gang-scheduled runtime and cannot without it. Install {who} (with its CRDs) first, "
            "then restart Trainer's controller (it watches PodGroups only if their CRD existed at its start)" + NOTHING
        )
    schedulers = _service.find_schedulers(client)
    try:
        sname = _registry.derive_scheduler_name(gang, given, schedulers)
    except GangError as e:
        raise GangError(e.msg + NOTHING) from e
    serving = [s for s in schedulers if _registry.serves(s, gang, sname)]
    found = ", ".join(f"{s['namespace']}/{s['name']}" for s in schedulers) or "none"
    if not serving:
        raise GangError(
            f"No {who} scheduler serving {sname!r} was found (schedulers found: {found}): the runtime's pods would "
            f"stay Pending forever. Install {who} first" + NOTHING
        )
    if not any(s["ready"] for s in serving):
        warn(f"The {who} scheduler serving {sname!r} is not ready yet: gangs stay Pending until it is")
    return sname


def _where_else(client, kind: str, version: str, ns: str | None, name: str) -> str:
    """Where a runtime named ``name`` is, when it is not where it was looked for: a hint for the message."""
    listed = client.list_or_empty(
        _trainer_runtimes.path("TrainingRuntime", version, None),
        what=f"TrainingRuntimes named {name}",
        fieldSelector=f"metadata.name={name}",
    )
    namespaces = sorted({(o.get("metadata") or {}).get("namespace") for o in listed} - {ns, None})
    hints = []
    if namespaces:
        hints.append(f"a TrainingRuntime {name} is in namespace {' and '.join(namespaces)}: set namespace to it")
    if kind == "TrainingRuntime":
        cluster = client.get_or_none(
            _trainer_runtimes.path("ClusterTrainingRuntime", version, None, name), f"ClusterTrainingRuntime {name}"
        )
        if cluster is not None:
            hints.append(f"a ClusterTrainingRuntime {name} exists: leave namespace unset to use it")
    if not hints:
        hints.append(
            "set name (and namespace for a TrainingRuntime) to a runtime that exists: kubectl get "
            "clustertrainingruntimes,trainingruntimes -A lists them"
        )
    return "; ".join(hints)


def read_runtime(client, kind: str, version: str, ns: str | None, name: str) -> dict:
    """The runtime to make gang-scheduled; a GangError saying where else one of that name is when absent."""
    what = _trainer_runtimes.ref(kind, ns, name)
    obj = client.get_or_none(_trainer_runtimes.path(kind, version, ns, name), what)
    if obj is None:
        raise GangError(f"{what} not found: {_where_else(client, kind, version, ns, name)}" + NOTHING)
    return obj


def check_ours(obj: dict, what: str, source: str, doing: str) -> None:
    """GangError unless ``obj`` is the gang copy this module made of the runtime named ``source``."""
    owner = _trainer_runtimes.copy_owner(obj)
    if owner is None:
        raise GangError(
            f"{what} exists and is not a gang copy made by trainer_runtime_gang (it has no label "
            f"{_trainer_runtimes.GANG_OF}): refusing to {doing} it. Choose another gang_name" + NOTHING
        )
    if owner != source:
        raise GangError(
            f"{what} is the gang copy of {owner!r}, not of {source!r}: refusing to {doing} it. Choose another "
            f"gang_name, or set name={owner}" + NOTHING
        )


def check_jobs(runtime: dict, what: str) -> None:
    js = (((runtime.get("spec") or {}).get("template") or {}).get("spec")) or {}
    if not js.get("replicatedJobs"):
        raise GangError(
            f"{what} has no spec.template.spec.replicatedJobs: its TrainJobs have no pod to schedule, so there is no "
            "gang to form. Set name to a runtime with replicated jobs" + NOTHING
        )


def warn_trainjobs(client, kind: str, version: str, ns: str | None, name: str, warn, deleting: bool = False) -> None:
    """Warn when TrainJobs already use the runtime: Trainer does not update their PodGroups."""
    where = ns if kind == "TrainingRuntime" else None
    jobs = client.list_or_empty(
        _api.path("TrainJob", where, api_version_=f"{_trainer_runtimes.GROUP}/{version}"), what="TrainJobs"
    )
    using = sorted(
        f"{(j.get('metadata') or {}).get('namespace')}/{(j.get('metadata') or {}).get('name')}"
        for j in jobs
        if _trainer_runtimes.uses(j, kind, name)
    )
    if not using:
        return
    shown = ", ".join(using[:SHOWN]) + (f" and {len(using) - SHOWN} more" if len(using) > SHOWN else "")
    what = _trainer_runtimes.ref(kind, ns, name)
    if deleting:
        warn(
            f"{len(using)} TrainJob(s) still use {what} ({shown}): Trainer's finalizer "
            f"{_trainer_runtimes.GROUP}/resource-in-use keeps it until they are deleted; delete them to let it go"
        )
        return
    warn(
        f"{len(using)} TrainJob(s) already use {what} ({shown}): Trainer does not update the PodGroups (or pods) of "
        "existing TrainJobs, so the change applies to TrainJobs created from now on; recreate these to gang-schedule "
        "them"
    )
