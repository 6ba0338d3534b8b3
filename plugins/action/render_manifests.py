# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The action of gangsched.kubeflow.render_manifests: the module's code in Ansible's worker where the
module would run in ansible-playbook's own Python on this machine, else the module itself
(plugin_utils/_inprocess)."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.modules import render_manifests
from ansible_collections.gangsched.kubeflow.plugins.plugin_utils._inprocess import InProcessAction


class ActionModule(InProcessAction):
    entry = render_manifests.entry()
    texts = ("documents",)
