# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: every module's main(), from its entry (``_cluster_entry.cluster_entry`` or one of
the module's own shape): ``argument_spec``, ``module_kwargs`` for AnsibleModule, ``missing()`` (None, or
the failed task's ``msg`` and ``exception`` when a library it needs does not import) and
``run(params, check_mode, diff, name, warn) -> result`` (``failed`` and ``msg`` when it failed). The
in-process action plugin (plugin_utils/_inprocess) runs the same entry in Ansible's worker. Not a public
API."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule


def execute(entry: dict) -> None:
    """Runs ``entry`` as this module process: its options validated by AnsibleModule, its result returned."""
    module = AnsibleModule(argument_spec=entry["argument_spec"], supports_check_mode=True, **entry["module_kwargs"])
    missing = entry["missing"]()
    if missing:
        module.fail_json(**missing)
    result = entry["run"](module.params, module.check_mode, module._diff, module._name, module.warn)
    if result.pop("failed", False):
        module.fail_json(**result)
    module.exit_json(**result)
