# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what gang_smoke_test does, in order — validate every input before
anything is created (_smoke_input), preflight, remove what earlier runs left (_sweep), prove the
scheduler live and run the gang to a verdict (_trial) under SIGTERM/SIGINT handling (_interrupt),
clean up always, write the reports. Not a public API."""

from __future__ import annotations

import uuid

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _together
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _report, _verdict
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke._diagnosis import (
    describe_scheduler,
    not_running_cause,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke._interrupt import interrupt_handlers
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke._smoke_input import (
    check_report_dir,
    expected,
    preflight,
    preflight_reads,
    validate,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke._sweep import (
    find_stale,
    remove_stale,
    stale_pods,
    stale_reads,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke._trial import Trial, conduct


def run_absent(client, check_mode: bool) -> dict:
    """state=absent: remove everything any smoke run left behind, in all namespaces."""
    with _together.ahead(client, stale_reads(None, None)):
        removed, left = remove_stale(client, None, None, check_mode)
    return {"changed": bool(removed), "stale_removed": removed, "left_behind": left}


def _runtime_of(params: dict, pf: dict, run_id: str) -> dict:
    """The result's ``runtime``: the Trainer runtime the TrainJob runs on, and whether the run made it."""
    rt = pf.get("runtime")
    if rt is not None:
        return {"kind": rt["kind"], "name": rt["metadata"]["name"], "created": False}
    return {"kind": "TrainingRuntime", "name": f"{params['namespace']}/smoke-{run_id}-gang", "created": True}


def _finish(result: dict, params: dict) -> dict:
    """Reports (when report_dir is set and a verdict was reached) and, on an unexpected verdict, the
    message the task fails with (``_failed``)."""
    if params.get("report_dir") and result.get("verdict") is not None:
        result["reports"] = _report.write(params["report_dir"], result)
    if result.get("ok") is False:
        g = result.get("gang") or {}
        why = result.get("cause") or (
            f"bound {len(g.get('bound', []))}/{result['replicas']}, running {len(g.get('running', []))}, "
            f"unbound {', '.join(g.get('unbound', [])) or 'none'}"
        )
        result["_failed"] = f"Gang smoke test: verdict {result['verdict']}, expected {result['expected']} ({why})"
    return result


def run(client, params: dict, check_mode: bool, warn) -> dict:
    if params.get("state") == "absent":
        result = run_absent(client, check_mode)
        if result["left_behind"]:
            warn(f"objects left after cleanup: {', '.join(result['left_behind'])}")
        return result
    params = {"liveness_timeout": 30, **params}
    resources = validate(params)
    check_report_dir(params.get("report_dir"), check_mode)
    run_id = params.get("run_id") or uuid.uuid4().hex[:8]
    # an earlier run interrupted before its cleanup may hold GPUs here: its pods do not count in the
    # capacity maths, and what it left is removed once every input is known to be good (one scan for both)
    # the sweep's lists and the preflight's reads asked for together (the nodes and pods are scanned together next)
    with _together.ahead(client, stale_reads(params["namespace"], run_id) + preflight_reads(params)):
        found = find_stale(client, params["namespace"], run_id)
        pf = preflight(client, params, stale_pods(client, params["namespace"], run_id, found))
    exp, cap = expected(params, resources, pf["nodes"], pf["pods"])
    stale, stale_left = remove_stale(client, params["namespace"], run_id, check_mode, found=found)
    if stale_left:
        raise GangError(
            f"objects of an earlier smoke run in namespace {params['namespace']} are still there after being "
            f"deleted: {', '.join(stale_left)}; check what holds them (finalizers) and re-run"
        )
    describe = describe_scheduler(pf["schedulers"], params["gang_scheduler"], pf["scheduler_name"])
    result = {
        "changed": bool(stale),
        "stale_removed": stale,
        "expected": exp,
        "workload": params["workload"],
        "gang_scheduler": params["gang_scheduler"],
        "scheduler_name": pf["scheduler_name"],
        "replicas": params["replicas"],
        "namespace": params["namespace"],
        "capacity": cap,
    }
    if params["workload"] == "trainjob":
        result["runtime"] = _runtime_of(params, pf, run_id)
    if not pf["scheduler_running"]:
        result.update(
            verdict=_verdict.ERROR,
            cause=not_running_cause(pf["schedulers"], params["gang_scheduler"], pf["scheduler_name"]),
        )
        result["ok"] = False
        return _finish(result, params)
    if pf.get("runtime_problem"):
        # the user's runtime is not gang-scheduled: a run on it would start partially, or run a fitting
        # TrainJob whole without any gang; nothing is created
        result.update(verdict=_verdict.ERROR, cause=pf["runtime_problem"], ok=False)
        return _finish(result, params)
    if check_mode:
        result.update(
            verdict=None, ok=None, skipped_reason="check mode: the smoke test creates pods, so it did not run"
        )
        return result

    trial = Trial(
        client,
        params,
        run_id,
        pf["scheduler_name"],
        describe,
        runtime=pf.get("runtime"),
        trainer_deployments=pf.get("trainer_deployments"),
    )
    result["run_id"] = run_id
    left: list[str] = []
    keep = unwaited = False
    with interrupt_handlers():
        try:
            left += conduct(trial, result, resources, exp)
        finally:
            if params.get("cleanup", True):
                # the namespace is left for the next run, or left terminating, only after a verdict as expected (an
                # error, a timeout or an interrupt ends here with no verdict, or another one): then it goes as it did
                as_expected = result.get("verdict") == _verdict.EXPECTED[exp]
                keep = bool(params.get("keep_namespace")) and as_expected
                unwaited = not keep and params.get("wait_namespace_gone") is False and as_expected
                left += trial.cleanup(namespace=not keep, wait_namespace=not unwaited)
    result["namespace_kept"] = keep and trial.created_ns
    result["namespace_terminating"] = unwaited and trial.created_ns
    result["liveness"] = trial.liveness_summary()
    result["left_behind"] = left
    if left:
        warn(f"objects left after cleanup: {', '.join(left)}")
    result["ok"] = result["verdict"] == _verdict.EXPECTED[exp]
    return _finish(result, params)
