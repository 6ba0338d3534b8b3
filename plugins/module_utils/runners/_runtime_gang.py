# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what trainer_runtime_gang does — check the options, the CRDs and the
scheduler that runs, make a Kubeflow Trainer v2 runtime (in place, or a copy of it) gang-scheduled or
take that back, write it guarded by its resourceVersion (a server-side dry run in check mode), and
report. Returns data; raises GangError. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils import (
    _native,
    _operators,
    _podgroups,
    _runtimes,
    _schedulers,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils._exceptions import Conflict, GangError, NotFound
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service

CONFLICT_RETRIES = _service.CONFLICT_RETRIES
NOTHING = "; nothing was changed"
SHOWN = 5  # TrainJobs named in a warning


def validate(params: dict) -> None:
    """Every option checked before the first API call, so a bad one changes nothing."""
    gang = params.get("gang_scheduler")
    if gang == _native.GANG_PATH:
        raise GangError(_native.operator_refusal("A Kubeflow Trainer v2 runtime") + NOTHING)
    if gang == "koordinator":
        raise GangError(
            "gang_scheduler=koordinator: a Kubeflow Trainer v2 runtime cannot carry a Koordinator gang. "
            "koord-scheduler forms a gang from labels on the pods (pod-group.scheduling.sigs.k8s.io/name and "
            "min-available), and min-available must be each TrainJob's numNodes, which a runtime shared by "
            "TrainJobs of every size cannot hold; Trainer's podGroupPolicy knows only coscheduling "
            "(scheduler-plugins) and volcano. Use gang_scheduler=scheduler_plugins or volcano for Trainer v2, or "
            "run the job as a Kubeflow job kind with the gangsched.kubeflow.label_gang filter" + NOTHING
        )
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
    if gang_name and len(name) > _runtimes.LABEL_VALUE_MAX:
        raise GangError(
            f"name={name!r} is longer than {_runtimes.LABEL_VALUE_MAX} characters, so the gang copy's label "
            f"{_runtimes.GANG_OF} cannot name it. Leave gang_name unset to edit the runtime in place, or copy a "
            "runtime with a shorter name" + NOTHING
        )
    if params.get("queue") and gang != "volcano":
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
    if gang == "volcano" and given not in (None, "volcano"):
        raise GangError(
            f"scheduler_name={given!r} with gang_scheduler=volcano: Volcano gangs are scheduled by 'volcano'. "
            "Leave scheduler_name unset" + NOTHING
        )
    if gang == "scheduler_plugins" and given == "volcano":
        raise GangError(
            "scheduler_name='volcano' with gang_scheduler=scheduler_plugins: the pods would go to Volcano with a "
            "coscheduling PodGroup it ignores. Set gang_scheduler=volcano, or scheduler_name to the scheduler-plugins "
            "profile" + NOTHING
        )


def _result(changed, runtime, changes, gang, sname, kind, before, after) -> dict:
    if runtime is not None:
        runtime = {
            **runtime,
            "metadata": {k: v for k, v in (runtime.get("metadata") or {}).items() if k != "managedFields"},
        }
    return {
        "changed": changed,
        "runtime": runtime,
        "changes": changes,
        "gang_scheduler": gang,
        "scheduler_name": sname,
        "kind": kind,
        "_diff": {"before": _runtimes.view(before), "after": _runtimes.view(after)},
    }


def runtime_crd_version(client, kind: str, required: bool) -> str | None:
    """The API version of ``kind`` the cluster stores; a GangError (``required``) or None when its CRD is
    missing or not Established."""
    name = _runtimes.CRDS[kind]
    crd = _service.crd(client, name)
    if _service.crd_established(crd):
        return _runtimes.served_version(crd)
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
        sname = _schedulers.derive_scheduler_name(gang, given, schedulers)
    except GangError as e:
        raise GangError(e.msg + NOTHING) from e
    serving = [s for s in schedulers if _schedulers.serves(s, gang, sname)]
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
        _runtimes.path("TrainingRuntime", version, None),
        what=f"TrainingRuntimes named {name}",
        fieldSelector=f"metadata.name={name}",
    )
    namespaces = sorted({(o.get("metadata") or {}).get("namespace") for o in listed} - {ns, None})
    hints = []
    if namespaces:
        hints.append(f"a TrainingRuntime {name} is in namespace {' and '.join(namespaces)}: set namespace to it")
    if kind == "TrainingRuntime":
        cluster = client.get_or_none(
            _runtimes.path("ClusterTrainingRuntime", version, None, name), f"ClusterTrainingRuntime {name}"
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
    what = _runtimes.ref(kind, ns, name)
    obj = client.get_or_none(_runtimes.path(kind, version, ns, name), what)
    if obj is None:
        raise GangError(f"{what} not found: {_where_else(client, kind, version, ns, name)}" + NOTHING)
    return obj


def check_ours(obj: dict, what: str, source: str, doing: str) -> None:
    """GangError unless ``obj`` is the gang copy this module made of the runtime named ``source``."""
    owner = _runtimes.copy_owner(obj)
    if owner is None:
        raise GangError(
            f"{what} exists and is not a gang copy made by trainer_runtime_gang (it has no label "
            f"{_runtimes.GANG_OF}): refusing to {doing} it. Choose another gang_name" + NOTHING
        )
    if owner != source:
        raise GangError(
            f"{what} is the gang copy of {owner!r}, not of {source!r}: refusing to {doing} it. Choose another "
            f"gang_name, or set name={owner}" + NOTHING
        )


def _check_jobs(runtime: dict, what: str) -> None:
    js = (((runtime.get("spec") or {}).get("template") or {}).get("spec")) or {}
    if not js.get("replicatedJobs"):
        raise GangError(
            f"{what} has no spec.template.spec.replicatedJobs: its TrainJobs have no pod to schedule, so there is no "
            "gang to form. Set name to a runtime with replicated jobs" + NOTHING
        )


def warn_trainjobs(client, kind: str, version: str, ns: str | None, name: str, warn, deleting: bool = False) -> None:
    """Warn when TrainJobs already use the runtime: Trainer does not update their PodGroups."""
    where = f"namespaces/{ns}/" if kind == "TrainingRuntime" else ""
    jobs = client.list_or_empty(f"/apis/{_runtimes.GROUP}/{version}/{where}trainjobs", what="TrainJobs")
    using = sorted(
        f"{(j.get('metadata') or {}).get('namespace')}/{(j.get('metadata') or {}).get('name')}"
        for j in jobs
        if _runtimes.uses(j, kind, name)
    )
    if not using:
        return
    shown = ", ".join(using[:SHOWN]) + (f" and {len(using) - SHOWN} more" if len(using) > SHOWN else "")
    what = _runtimes.ref(kind, ns, name)
    if deleting:
        warn(
            f"{len(using)} TrainJob(s) still use {what} ({shown}): Trainer's finalizer "
            f"{_runtimes.GROUP}/resource-in-use keeps it until they are deleted; delete them to let it go"
        )
        return
    warn(
        f"{len(using)} TrainJob(s) already use {what} ({shown}): Trainer does not update the PodGroups (or pods) of "
        "existing TrainJobs, so the change applies to TrainJobs created from now on; recreate these to gang-schedule "
        "them"
    )


def _body(obj: dict) -> dict:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def write(client, method: str, path: str, body: dict | None, dry_run: bool, what: str) -> dict:
    """One write of a runtime (PUT guarded by the resourceVersion in ``body``, POST, or DELETE guarded by
    its preconditions), a server-side dry run in check mode."""
    query = {"fieldManager": _service.FIELD_MANAGER} if method != "DELETE" else {}
    if dry_run:
        query["dryRun"] = "All"
    return client.request(method, path, body=body, query=query, what=what)


# what a write that kept meeting Conflicts says to do
AGAIN = "; run the task again once whoever else writes it is done" + NOTHING


def desired(source: dict, gang: str, sname: str, params: dict, in_place: bool) -> tuple[dict, list[str]]:
    """The source runtime gang-scheduled (and with JobSet's defaults spelled out), and the changes in words.
    ``in_place``: the JobSet fields the runtime's CRD keeps immutable stay as they are where set."""
    what = _runtimes.ref(
        source.get("kind"), (source.get("metadata") or {}).get("namespace"), source["metadata"]["name"]
    )
    _check_jobs(source, what)
    try:
        out, changes = _runtimes.gang_runtime(
            source, gang, sname, params.get("schedule_timeout"), params.get("queue") or None
        )
    except ValueError as e:
        raise GangError(f"{e}" + NOTHING) from e
    if params.get("jobset_defaults", True):
        out, more = _runtimes.jobset_defaults(out, keep_set=in_place)
        changes += more
    return out, changes


def present(client, params: dict, check_mode: bool, warn, kind: str, version: str) -> dict:
    gang, name = params["gang_scheduler"], params["name"]
    ns, target = params.get("namespace") or None, params.get("gang_name") or None
    sname = scheduler_name(client, gang, params.get("scheduler_name"), warn)
    if gang == "volcano" and params.get("schedule_timeout") is not None:
        warn("schedule_timeout is coscheduling's scheduleTimeoutSeconds; Volcano's podGroupPolicy has none: ignored")
    what = _runtimes.ref(kind, ns, target or name)
    before = result = None
    changes: list[str] = []
    for _attempt in _service.conflict_attempts(what, AGAIN):
        source = read_runtime(client, kind, version, ns, name)
        out, changes = desired(source, gang, sname, params, in_place=not target)
        if target:
            before = client.get_or_none(_runtimes.path(kind, version, ns, target), what)
            if before is not None:
                check_ours(before, what, name, "overwrite")
                if (before.get("metadata") or {}).get("deletionTimestamp"):
                    raise GangError(
                        f"{what} is being deleted (Trainer keeps it while TrainJobs use it): run again once it is "
                        "gone, or choose another gang_name" + NOTHING
                    )
            out = _runtimes.gang_copy(out, target, before)
            fixed = _runtimes.immutable_changes(before, out) if before is not None else []
            if fixed:
                raise GangError(
                    f"{what} cannot follow {_runtimes.ref(kind, ns, name)}: its JobSet {', '.join(fixed)} changed "
                    "there, and a runtime's CRD refuses a change to them once set (Value is immutable). Delete the "
                    "copy (state=absent, after the TrainJobs on it) and run again to make it anew" + NOTHING
                )
            if before is None:
                changes = [f"{what} created as a gang-scheduled copy of {_runtimes.ref(kind, ns, name)}"] + changes
            else:
                changes = _runtimes.differences(_runtimes.view(before), _runtimes.view(out))
        else:
            before = source
        if before is not None and _runtimes.view(out) == _runtimes.view(before):
            result = before
            break
        try:
            if before is None:
                result = write(client, "POST", _runtimes.path(kind, version, ns), _body(out), check_mode, what)
            else:
                path = _runtimes.path(kind, version, ns, target or name)
                result = write(client, "PUT", path, _body(out), check_mode, what)
            break
        except Conflict:
            # someone wrote in between (or made the copy meanwhile): re-read and redo it on what is there now
            continue
    changed = _runtimes.view(result) != _runtimes.view(before)
    if not changed:
        changes = []
    elif before is not None:
        warn_trainjobs(client, kind, version, ns, target or name, warn)
    return _result(changed, result, changes, gang, sname, kind, before, result)


def absent_copy(client, params: dict, check_mode: bool, warn, kind: str, version: str) -> dict:
    gang, name, ns, target = (
        params["gang_scheduler"],
        params["name"],
        params.get("namespace") or None,
        params["gang_name"],
    )
    what = _runtimes.ref(kind, ns, target)
    path = _runtimes.path(kind, version, ns, target)
    before = None
    for _attempt in _service.conflict_attempts(what, AGAIN):
        before = client.get_or_none(path, what)
        if before is None:
            return _result(False, None, [], gang, params.get("scheduler_name"), kind, None, None)
        check_ours(before, what, name, "delete")
        meta = before["metadata"]
        if meta.get("deletionTimestamp"):
            warn_trainjobs(client, kind, version, ns, target, warn, deleting=True)
            return _result(False, None, [], gang, params.get("scheduler_name"), kind, before, before)
        options = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")},
        }
        try:
            write(client, "DELETE", path, options, check_mode, what)
            break
        except NotFound:
            return _result(False, None, [], gang, params.get("scheduler_name"), kind, None, None)
        except Conflict:
            continue
    warn_trainjobs(client, kind, version, ns, target, warn, deleting=True)
    return _result(True, None, [f"{what} deleted"], gang, params.get("scheduler_name"), kind, before, None)


def absent_in_place(client, params: dict, check_mode: bool, warn, kind: str, version: str) -> dict:
    gang, name, ns = params["gang_scheduler"], params["name"], params.get("namespace") or None
    what = _runtimes.ref(kind, ns, name)
    path = _runtimes.path(kind, version, ns, name)
    before = client.get_or_none(path, what)
    if before is None:
        warn(f"{what} not found: nothing to take back")
        return _result(False, None, [], gang, params.get("scheduler_name"), kind, None, None)
    sname = params.get("scheduler_name") or ("volcano" if gang == "volcano" else None)
    if sname is None:
        try:
            sname = _schedulers.derive_scheduler_name(gang, None, _service.find_schedulers(client))
        except GangError as e:
            raise GangError(
                f"{e.msg}. To take {what}'s gang back anyway, set scheduler_name to the schedulerName its pod "
                "templates carry" + NOTHING
            ) from e
    result = None
    changes: list[str] = []
    for attempt in _service.conflict_attempts(what, AGAIN):
        if attempt:
            before = client.get_or_none(path, what)
            if before is None:
                return _result(False, None, [], gang, sname, kind, None, None)
        try:
            out, changes = _runtimes.ungang_runtime(before, gang, sname)
        except ValueError as e:
            raise GangError(f"{e}" + NOTHING) from e
        if not changes:
            result = before
            break
        try:
            result = write(client, "PUT", path, _body(out), check_mode, what)
            break
        except Conflict:
            continue
    changed = _runtimes.view(result) != _runtimes.view(before)
    if changed:
        warn_trainjobs(client, kind, version, ns, name, warn)
    return _result(changed, result, changes if changed else [], gang, sname, kind, before, result)


def run(client, params: dict, check_mode: bool, warn) -> dict:
    validate(params)
    ns = params.get("namespace") or None
    kind = _runtimes.kind_of(ns)
    state = params.get("state") or "present"
    version = runtime_crd_version(client, kind, required=state == "present")
    if version is None:
        warn(f"CustomResourceDefinition {_runtimes.CRDS[kind]} is not there: no {kind} to take back")
        return _result(False, None, [], params["gang_scheduler"], params.get("scheduler_name"), kind, None, None)
    if state == "absent":
        if params.get("gang_name"):
            return absent_copy(client, params, check_mode, warn, kind, version)
        return absent_in_place(client, params, check_mode, warn, kind, version)
    return present(client, params, check_mode, warn, kind, version)
