# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what trainer_runtime_gang does — check the options, the CRDs and the
scheduler that runs, make a Kubeflow Trainer v2 runtime (in place, or a copy of it) gang-scheduled or
take that back, write it guarded by its resourceVersion (a server-side dry run in check mode), and
report. Returns data; raises GangError. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _trainer_runtimes
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import Conflict, GangError, NotFound
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _trainer_runtime_gang_checks

CONFLICT_RETRIES = _service.CONFLICT_RETRIES
NOTHING = _trainer_runtime_gang_checks.NOTHING


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
        "_diff": {"before": _trainer_runtimes.view(before), "after": _trainer_runtimes.view(after)},
    }


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
    what = _trainer_runtimes.ref(
        source.get("kind"), (source.get("metadata") or {}).get("namespace"), source["metadata"]["name"]
    )
    _trainer_runtime_gang_checks.check_jobs(source, what)
    try:
        out, changes = _trainer_runtimes.gang_runtime(
            source, gang, sname, params.get("schedule_timeout"), params.get("queue") or None
        )
    except ValueError as e:
        raise GangError(f"{e}" + NOTHING) from e
    if params.get("jobset_defaults", True):
        out, more = _trainer_runtimes.jobset_defaults(out, keep_set=in_place)
        changes += more
    return out, changes


def present(client, params: dict, check_mode: bool, warn, kind: str, version: str) -> dict:
    gang, name = params["gang_scheduler"], params["name"]
    ns, target = params.get("namespace") or None, params.get("gang_name") or None
    sname = _trainer_runtime_gang_checks.scheduler_name(client, gang, params.get("scheduler_name"), warn)
    if (
        _trainer_runtimes.POLICY[gang] != _trainer_runtimes.COSCHEDULING_POLICY
        and params.get("schedule_timeout") is not None
    ):
        warn("schedule_timeout is coscheduling's scheduleTimeoutSeconds; Volcano's podGroupPolicy has none: ignored")
    what = _trainer_runtimes.ref(kind, ns, target or name)
    before = result = None
    changes: list[str] = []
    for _attempt in _service.conflict_attempts(what, AGAIN):
        source = _trainer_runtime_gang_checks.read_runtime(client, kind, version, ns, name)
        out, changes = desired(source, gang, sname, params, in_place=not target)
        if target:
            before = client.get_or_none(_trainer_runtimes.path(kind, version, ns, target), what)
            if before is not None:
                _trainer_runtime_gang_checks.check_ours(before, what, name, "overwrite")
                if (before.get("metadata") or {}).get("deletionTimestamp"):
                    raise GangError(
                        f"{what} is being deleted (Trainer keeps it while TrainJobs use it): run again once it is "
                        "gone, or choose another gang_name" + NOTHING
                    )
            out = _trainer_runtimes.gang_copy(out, target, before)
            fixed = _trainer_runtimes.immutable_changes(before, out) if before is not None else []
            if fixed:
                raise GangError(
                    f"{what} cannot follow {_trainer_runtimes.ref(kind, ns, name)}: its JobSet {', '.join(fixed)} "
                    "changed "
                    "there, and a runtime's CRD refuses a change to them once set (Value is immutable). Delete the "
                    "copy (state=absent, after the TrainJobs on it) and run again to make it anew" + NOTHING
                )
            if before is None:
                changes = [
                    f"{what} created as a gang-scheduled copy of {_trainer_runtimes.ref(kind, ns, name)}"
                ] + changes
            else:
                changes = _trainer_runtimes.differences(_trainer_runtimes.view(before), _trainer_runtimes.view(out))
        else:
            before = source
        if before is not None and _trainer_runtimes.view(out) == _trainer_runtimes.view(before):
            result = before
            break
        try:
            if before is None:
                result = write(client, "POST", _trainer_runtimes.path(kind, version, ns), _body(out), check_mode, what)
            else:
                path = _trainer_runtimes.path(kind, version, ns, target or name)
                result = write(client, "PUT", path, _body(out), check_mode, what)
            break
        except Conflict:
            # someone wrote in between (or made the copy meanwhile): re-read and redo it on what is there now
            continue
    changed = _trainer_runtimes.view(result) != _trainer_runtimes.view(before)
    if not changed:
        changes = []
    elif before is not None:
        _trainer_runtime_gang_checks.warn_trainjobs(client, kind, version, ns, target or name, warn)
    return _result(changed, result, changes, gang, sname, kind, before, result)


def absent_copy(client, params: dict, check_mode: bool, warn, kind: str, version: str) -> dict:
    gang, name, ns, target = (
        params["gang_scheduler"],
        params["name"],
        params.get("namespace") or None,
        params["gang_name"],
    )
    what = _trainer_runtimes.ref(kind, ns, target)
    path = _trainer_runtimes.path(kind, version, ns, target)
    before = None
    for _attempt in _service.conflict_attempts(what, AGAIN):
        before = client.get_or_none(path, what)
        if before is None:
            return _result(False, None, [], gang, params.get("scheduler_name"), kind, None, None)
        _trainer_runtime_gang_checks.check_ours(before, what, name, "delete")
        meta = before["metadata"]
        if meta.get("deletionTimestamp"):
            _trainer_runtime_gang_checks.warn_trainjobs(client, kind, version, ns, target, warn, deleting=True)
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
    _trainer_runtime_gang_checks.warn_trainjobs(client, kind, version, ns, target, warn, deleting=True)
    return _result(True, None, [f"{what} deleted"], gang, params.get("scheduler_name"), kind, before, None)


def absent_in_place(client, params: dict, check_mode: bool, warn, kind: str, version: str) -> dict:
    gang, name, ns = params["gang_scheduler"], params["name"], params.get("namespace") or None
    what = _trainer_runtimes.ref(kind, ns, name)
    path = _trainer_runtimes.path(kind, version, ns, name)
    before = client.get_or_none(path, what)
    if before is None:
        warn(f"{what} not found: nothing to take back")
        return _result(False, None, [], gang, params.get("scheduler_name"), kind, None, None)
    sname = params.get("scheduler_name") or _registry.get(gang).fixed_scheduler_name
    if sname is None:
        try:
            sname = _registry.derive_scheduler_name(gang, None, _service.find_schedulers(client))
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
            out, changes = _trainer_runtimes.ungang_runtime(before, gang, sname)
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
    changed = _trainer_runtimes.view(result) != _trainer_runtimes.view(before)
    if changed:
        _trainer_runtime_gang_checks.warn_trainjobs(client, kind, version, ns, name, warn)
    return _result(changed, result, changes if changed else [], gang, sname, kind, before, result)


def run(client, params: dict, check_mode: bool, warn) -> dict:
    _trainer_runtime_gang_checks.validate(params)
    ns = params.get("namespace") or None
    kind = _trainer_runtimes.kind_of(ns)
    state = params.get("state") or "present"
    version = _trainer_runtime_gang_checks.runtime_crd_version(client, kind, required=state == "present")
    if version is None:
        warn(f"CustomResourceDefinition {_trainer_runtimes.CRDS[kind]} is not there: no {kind} to take back")
        return _result(False, None, [], params["gang_scheduler"], params.get("scheduler_name"), kind, None, None)
    if state == "absent":
        if params.get("gang_name"):
            return absent_copy(client, params, check_mode, warn, kind, version)
        return absent_in_place(client, params, check_mode, warn, kind, version)
    return present(client, params, check_mode, warn, kind, version)
