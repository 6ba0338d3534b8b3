# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: gang_paths
author: gangsched.kubeflow maintainers (@gangsched)
short_description: The gang paths the collection installs and proves, by name
version_added: 0.1.0
description:
  - Returns the name of every gang path, the values C(gangsched_gang_scheduler) and every module's C(gang_scheduler)
    option take, in the collection's order (C(volcano), C(scheduler_plugins), C(koordinator), C(native)).
  - With O(operator_flag=true), only the paths the Kubeflow operators' gang flag points at (their PodGroups are made
    by the operators); with O(operator_flag=false), the others.
  - Reads nothing from the cluster; the list comes from the collection's own table of gang paths, so that a play
    holds no list of them. A path's row is the P(gangsched.kubeflow.gang_path#filter) filter's.
options:
  _terms:
    description: Not used.
    required: false
  operator_flag:
    description: Only the paths whose gangs the operators' gang flag makes (true) or does not (false).
    type: bool
"""

EXAMPLES = r"""
- name: The chosen gang path is one the collection knows
  ansible.builtin.assert:
    that: gangsched_gang_scheduler in query('gangsched.kubeflow.gang_paths')
    fail_msg: "gangsched_gang_scheduler must be one of {{ query('gangsched.kubeflow.gang_paths') | join(', ') }}"
"""

RETURN = r"""
_raw:
  description: The gang paths' names.
  type: list
  elements: str
"""

from ansible.plugins.lookup import LookupBase
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        having = {}
        if self.get_option("operator_flag") is not None:
            having["operator_flag"] = self.get_option("operator_flag")
        return _registry.names(**having)
