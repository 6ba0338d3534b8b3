# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Private to this collection: the attribute texts every module shares. May change without notice.

from __future__ import annotations

# check mode, diff mode and idempotence, as every module describes them
_COMMON = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  idempotent:
    description:
      - When run twice in a row outside check mode, with the same arguments, the second run reports no change.
      - This assumes the cluster has not changed in a relevant way in between.
"""


class ModuleDocFragment:
    # The descriptions; each module states its own support and details next to them. The modules that talk
    # to the Kubernetes API (the default fragment) are in the action group; FILES is for those writing files.
    DOCUMENTATION = (
        _COMMON
        + r"""
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
    )

    FILES = (
        _COMMON
        + r"""
  platform:
    description: Writes files on the host the task runs on.
    support: full
    platforms: posix
"""
    )
