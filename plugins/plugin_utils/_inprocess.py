# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the action plugin of each module (the smoke test's for its state=absent only).
When the task would run its module in the very Python that runs ansible-playbook, on this machine, as this user
(a local connection, ``ansible_python_interpreter`` set to ``ansible_playbook_python``, no become, no delegation,
no ``environment``, not async), the module's own code (its entry: options, requirements, runner) runs in Ansible's
worker process instead of a new Python process for each task; everything else, and ``gangsched_in_process: false``,
runs the module as any module runs. The result is the same either way: the options are validated against the same
argument spec, the runner is the same code, and no_log values are masked the same way.

Why: a module process costs about 0.3 s before it does anything, and each of ours 0.5 s more to import the
``kubernetes`` client. The action plugins of the cluster modules import that client when Ansible loads them,
which it does in ansible-playbook's own process before it forks the task's worker, so the worker finds it
imported. Not a public API."""

from __future__ import annotations

import datetime
import json
import os
import sys
from collections.abc import Mapping

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.errors import UnsupportedError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash
from ansible_collections.gangsched.kubeflow.plugins.plugin_utils import _preload


class _Plain(json.JSONEncoder):
    """The task's arguments as a module process would receive them: JSON, nothing of the controller's types."""

    def default(self, o):
        if isinstance(o, Mapping):
            return dict(o)
        if isinstance(o, (datetime.date, datetime.datetime, datetime.time)):
            return o.isoformat()
        if isinstance(o, bytes):
            return o.decode("utf-8", errors="surrogateescape")
        if isinstance(o, (set, frozenset, tuple)):
            return list(o)
        return str(o)


def plain(args: Mapping) -> dict:
    """``args`` after the round trip through JSON that a module process's arguments make."""
    return json.loads(json.dumps(args, cls=_Plain))


def run_entry(entry: dict, args: Mapping, check_mode: bool, diff: bool, name: str) -> dict:
    """The module's result for ``args``, as its own process would return it (less ``_ansible_*`` keys)."""
    missing = entry["missing"]()
    if missing:
        return {**missing, "failed": True}
    validator = ArgumentSpecValidator(entry["argument_spec"], **entry["module_kwargs"])
    validated = validator.validate(plain(args))
    hidden = validated._no_log_values  # what AnsibleModule masks too (it reads the same attribute)
    if validated.error_messages:
        # as AnsibleModule: the first error, an unknown option named as such
        msg = validated.errors.msg
        if isinstance(validated.errors[0], UnsupportedError):
            msg = f"Unsupported parameters for ({name}) module: {msg}"
        return {"failed": True, "msg": msg}
    warnings: list = []
    result = entry["run"](validated.validated_parameters, check_mode, diff, name, warnings.append)
    if not result.get("failed"):
        result.setdefault("changed", False)
    if warnings:
        result["warnings"] = warnings
    result["invocation"] = {"module_args": validated.validated_parameters}
    return remove_values(result, hidden)


def texts_by_size(result: dict, options: tuple) -> dict:
    """``result`` with each of ``options`` in its ``invocation`` (a file's whole text by name, or a list of texts)
    echoed as each text's size: a CRD file is up to a MiB, and the echo would travel from the worker to
    ansible-playbook and through every callback in each run, for a reader who has the files."""
    args = result.get("invocation", {}).get("module_args")
    if not isinstance(args, dict):
        return result
    for option in options:
        value = args.get(option)
        if isinstance(value, Mapping):
            args[option] = {k: _size(v) for k, v in value.items()}
        elif isinstance(value, list):
            args[option] = [_size(v) for v in value]
    return result


def _size(text):
    return f"({len(text)} characters, not echoed)" if isinstance(text, str) else text


class InProcessAction(ActionBase):
    """Set ``entry`` (the module's ``entry()``) in the subclass, and ``texts`` to the options of whole file texts
    that the result's ``invocation`` gives as sizes."""

    _supports_check_mode = True
    _supports_async = True
    entry = None
    texts: tuple = ()

    def _in_process(self, task_vars: dict) -> bool:
        if not boolean(self._templar.template(task_vars.get("gangsched_in_process", True)), strict=False):
            return False
        if getattr(self._connection, "transport", None) != "local" or self._play_context.become:
            return False
        if self._task.async_val or self._task.delegate_to or any(self._task.environment or []):
            return False
        interpreter = self._templar.template(task_vars.get("ansible_python_interpreter"))
        if not isinstance(interpreter, str) or os.path.abspath(interpreter) != os.path.abspath(sys.executable):
            return False
        return self.entry["missing"]() is None

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        if self._in_process(task_vars):
            name = self._task.resolved_action or self._task.action
            done = run_entry(self.entry, self._task.args, self._task.check_mode, self._task.diff, name)
            return texts_by_size(merge_hash(result, done), self.texts)
        wrap_async = self._task.async_val and not self._connection.has_native_async
        result = merge_hash(result, self._execute_module(task_vars=task_vars, wrap_async=wrap_async))
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return texts_by_size(result, self.texts)


# ansible-playbook loads this with the first of the collection's action plugins, in its own process: the roles' Jinja
# plugins loaded there once, for every task's worker after it
_preload.preload()
