# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: chart_version
author: gangsched.kubeflow maintainers (@gangsched)
short_description: The version of a local Helm chart on the controller, a directory or a .tgz
version_added: 0.1.0
description:
  - Each term is a local Helm chart on the controller, a chart directory or a chart archive (C(.tgz)). Returns the
    C(version) of its C(Chart.yaml), as a string; for an archive, the C(Chart.yaml) of its top directory (not a
    subchart's).
  - Returns an empty string for a term that is not such a chart (no such path, a directory without a C(Chart.yaml),
    a file that is no chart archive), so that a task can name the variable to fix; the roles' preflight asserts that
    a local chart is the pinned version this way.
  - Runs on the controller, where the roles' local charts are.
options:
  _terms:
    description: Chart directories or archives. C(~) is expanded; a relative path is taken from the directory
      C(ansible-playbook) runs in.
    required: true
    type: list
    elements: path
"""

EXAMPLES = r"""
- name: The local Volcano chart is the pinned version
  ansible.builtin.assert:
    that: lookup('gangsched.kubeflow.chart_version', '/srv/charts/volcano-1.10.0.tgz') == '1.10.0'
"""

RETURN = r"""
_raw:
  description: The version of each chart, in the order of the terms; an empty string for a term that is not a chart.
  type: list
  elements: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._charts import chart_meta


def chart_version(ref: str) -> str:
    """The version of the local chart ``ref``, or '' when it is not one."""
    try:
        meta = chart_meta(ref)
    except ValueError:
        return ""
    version = (meta or {}).get("version")
    return "" if version is None else str(version)


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        out = []
        for term in terms:
            if not isinstance(term, str) or not term:
                raise AnsibleLookupError(f"chart_version: each term is a chart directory or archive, got {term!r}")
            out.append(chart_version(term))
        return out
