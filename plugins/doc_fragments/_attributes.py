# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Private to this collection: the attribute texts every module shares. May change without notice.
# The modules that talk to the Kubernetes API add the action group and platform from the _api fragment.

from __future__ import annotations


class ModuleDocFragment:
    # The descriptions; each module states its own support and details next to them.
    DOCUMENTATION = r"""
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
