# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The action of gangsched.kubeflow.gang_smoke_test: with O(state=absent) (the removal of earlier runs' objects,
which traps no signal), the module's code in Ansible's worker where the module would run in ansible-playbook's own
Python on this machine; the smoke test itself always a module process of its own, which traps SIGTERM and SIGINT to
remove its gang (the worker's business otherwise) (plugin_utils/_inprocess)."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.modules import gang_smoke_test
from ansible_collections.gangsched.kubeflow.plugins.plugin_utils._inprocess import InProcessAction


class ActionModule(InProcessAction):
    entry = gang_smoke_test.entry()

    def _in_process(self, task_vars: dict) -> bool:
        return self._task.args.get("state") == "absent" and super()._in_process(task_vars)
