# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to this collection: the one shape of a changing module's main() — build the module, make the
client, call the runner, turn the collection's exception into a failed task, return the diff only in
diff mode. Not a public API."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gangsched.kubeflow.plugins.module_utils._client import (
    AUTH_ARG_SPEC,
    Client,
    check_requirements,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils._exceptions import GangError


def with_auth(**options) -> dict:
    spec = dict(AUTH_ARG_SPEC)
    spec.update(options)
    return spec


def execute(argument_spec: dict, runner) -> None:
    """``runner(client, params, check_mode, warn) -> dict`` with a ``_diff`` entry."""
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    check_requirements(module)
    try:
        client = Client.from_params(module.params)
        result = runner(client, module.params, module.check_mode, module.warn)
    except GangError as e:
        module.fail_json(msg=e.msg, **e.details)
    diff = result.pop("_diff")
    if module._diff:
        result["diff"] = diff
    module.exit_json(**result)
