# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: crd_files
author: gangsched.kubeflow maintainers (@gangsched)
short_description: The CRD files of a source on the controller, a file or a directory, less excluded names
version_added: 0.1.0
description:
  - Each term is a CRD source on the controller. A file is that file; a directory is its C(*.yaml) and C(*.yml)
    files (not hidden files, not its subdirectories).
  - Files whose name matches one of O(exclude) (shell globs on the file name, not the path) are left out.
  - Returns the paths, sorted. A source that does not exist gives no path; the roles assert that a source holds at
    least one file and name the variable to fix.
  - Runs on the controller, where the C(ansible.builtin.file) lookup that reads the files runs too.
options:
  _terms:
    description: CRD sources, each a file or a directory. C(~) is expanded; a relative path is taken from the
      directory C(ansible-playbook) runs in.
    required: true
    type: list
    elements: path
  exclude:
    description: Shell globs (C(*), C(?), C([...])) on the file name; a file that matches any is left out.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: The training-operator's CRD files, less its kustomization
  ansible.builtin.debug:
    msg: "{{ query('gangsched.kubeflow.crd_files', '/srv/training-operator/crds', exclude=['kustomization*']) }}"
"""

RETURN = r"""
_raw:
  description: The CRD files' paths, sorted, over all terms in order.
  type: list
  elements: path
"""

import fnmatch
import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase


def crd_files(source: str, exclude: list[str]) -> list[str]:
    """The CRD files of ``source`` (a file or a directory of *.yaml/*.yml), less names matching ``exclude``."""
    path = os.path.expanduser(source)
    if os.path.isdir(path):
        found = [
            os.path.join(path, name)
            for name in os.listdir(path)
            if name.endswith((".yaml", ".yml"))
            and not name.startswith(".")
            and os.path.isfile(os.path.join(path, name))
        ]
    elif os.path.isfile(path):
        found = [path]
    else:
        found = []
    return sorted(p for p in found if not any(fnmatch.fnmatchcase(os.path.basename(p), g) for g in exclude))


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        exclude = self.get_option("exclude") or []
        out = []
        for term in terms:
            if not isinstance(term, str) or not term:
                raise AnsibleLookupError(f"crd_files: each source is a file or directory path, got {term!r}")
            out.extend(crd_files(term, exclude))
        return out
