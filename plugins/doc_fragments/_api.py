# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Private to this collection: options and attributes every module that talks to the Kubernetes API has next
# to the connection options of _k8s_auth. May change without notice.

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
requirements:
  - python >= 3.10
  - kubernetes >= 24.2.0 (the Python client; tested up to 37)
  - PyYAML >= 5.1
options:
  api_timeout:
    description:
      - Seconds each Kubernetes API call may take, connecting and reading, including the first contact
        (the server's version and API groups); a server that accepts the connection and never answers
        fails the task with a timeout message naming it within this time.
      - While the API server cannot be reached (a restart) a call is retried for this long too.
      - A watch may stay open for its own length plus this time.
    type: int
    default: 30
    version_added: 0.1.0
attributes:
  action_group:
    description: Use C(group/gangsched.kubeflow.kubeflow) in C(module_defaults) to set defaults (such as the
      authentication options) for this module.
    support: full
    membership:
      - gangsched.kubeflow.kubeflow
  platform:
    description: Target the Kubernetes API; the module runs where the task runs (usually the controller, C(localhost)).
    support: full
    platforms: kubernetes
"""
