# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the one shape of every cluster module — check the options argspec
cannot, make the client, call the runner, turn the collection's exception into a failed task and
anything else into an internal error (traceback in ``exception`` only), return the diff only in diff
mode — run by the module's own process (``_module_main.execute``) or in Ansible's worker (plugin_utils/_inprocess).
Not a public API."""

from __future__ import annotations

import traceback

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._client import Client
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._connect import (
    AUTH_ARG_SPEC,
    DEFAULT_TIMEOUT,
    missing_requirement,
)

API_ARG_SPEC = {"api_timeout": dict(type="int", default=DEFAULT_TIMEOUT)}


def with_auth(**options) -> dict:
    """kubernetes.core's authentication options, ``api_timeout`` and the module's own ``options``."""
    spec = dict(AUTH_ARG_SPEC)
    spec.update(API_ARG_SPEC)
    spec.update(options)
    return spec


def _at_least(params: dict, minimums: dict) -> str | None:
    for name, low in minimums.items():
        value = params.get(name)
        if value is not None and value < low:
            return f"{name} must be >= {low} (got {value})"
    return None


def cluster_entry(argument_spec: dict, runner, minimums: dict | None = None, **module_kwargs) -> dict:
    """What a cluster module is, for ``execute`` (its process) and the in-process action plugin alike:
    ``runner(client, params, check_mode, warn) -> dict``. The result may hold ``_diff`` (returned as
    ``diff`` in diff mode) and ``_failed`` (a message: the task fails with it and the rest of the
    result). ``minimums`` maps integer options to their lowest allowed value, checked before anything
    is read or written; ``module_kwargs`` go to AnsibleModule (``required_if``, ``mutually_exclusive``…)."""

    def run(params: dict, check_mode: bool, diff: bool, name: str, warn) -> dict:
        return outcome(runner, params, check_mode, diff, name, warn, minimums)

    return dict(argument_spec=argument_spec, module_kwargs=module_kwargs, missing=missing_requirement, run=run)


def outcome(runner, params: dict, check_mode: bool, diff: bool, name: str, warn, minimums: dict | None = None) -> dict:
    """The task's result from validated ``params``: ``failed`` and ``msg`` when it failed."""
    bad = _at_least(params, {"api_timeout": 1, **(minimums or {})})
    if bad:
        return {"failed": True, "msg": bad}
    try:
        client = Client.from_params(params)
        result = runner(client, params, check_mode, warn)
    except GangError as e:
        return {**e.details, "failed": True, "msg": e.msg, "exception": _cause(e)}
    except Exception as e:  # noqa: BLE001 - a bug: never reported as a cluster or network problem
        return {
            "failed": True,
            "msg": f"Internal error in {name} ({type(e).__name__}): a bug in gangsched.kubeflow, not a cluster "
            "or network problem; please report it with the traceback shown by -vvv (the exception field)",
            "exception": traceback.format_exc(),
        }
    found = result.pop("_diff", None)
    if diff and found is not None:
        result["diff"] = found
    failed = result.pop("_failed", None)
    if failed:
        result.update(failed=True, msg=failed)
    return result


def _cause(e: BaseException) -> str:
    """The traceback of what led to a GangError, for ``exception`` (never in ``msg``)."""
    return "".join(traceback.format_exception(type(e), e, e.__traceback__))
