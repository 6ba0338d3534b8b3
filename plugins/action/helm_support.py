# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The action of gangsched.kubeflow.helm_support: the version of the kubernetes.core that Ansible loads on the
controller (whose modules are the ones a task runs, wherever it runs them) given to the module when the task leaves
it out; then the module's code in Ansible's worker where the module would run in ansible-playbook's own Python on
this machine, else the module itself (plugin_utils/_inprocess)."""

from __future__ import annotations

import importlib
import json
import os

import yaml
from ansible_collections.gangsched.kubeflow.plugins.modules import helm_support
from ansible_collections.gangsched.kubeflow.plugins.plugin_utils._inprocess import InProcessAction


def kubernetes_core_version() -> str:
    """The version of the kubernetes.core Ansible's collection loader resolves, from its MANIFEST.json (an installed
    collection) or galaxy.yml (a source checkout); '' when neither says."""
    try:
        package = importlib.import_module("ansible_collections.kubernetes.core")
        root = list(package.__path__)[0]
    except (ImportError, IndexError, AttributeError):
        return ""
    try:
        with open(os.path.join(root, "MANIFEST.json"), encoding="utf-8") as f:
            return str(json.load(f)["collection_info"]["version"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        with open(os.path.join(root, "galaxy.yml"), encoding="utf-8") as f:
            return str(yaml.safe_load(f)["version"])
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        return ""


class ActionModule(InProcessAction):
    entry = helm_support.entry()

    def run(self, tmp=None, task_vars=None):
        if not self._task.args.get("kubernetes_core_version"):
            self._task.args = {**self._task.args, "kubernetes_core_version": kubernetes_core_version()}
        return super().run(tmp, task_vars)
