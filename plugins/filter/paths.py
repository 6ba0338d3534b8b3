# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that read the gang paths (plugins/module_utils/paths) for the roles and playbooks, so that no play holds
a list of them: one path's row, and why the smoke test would refuse a workload on a path. Each is documented in the
YAML file of the same name next to this one."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _trainer_runtimes
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _smoke_input


def gang_path(name) -> dict:
    """The row of gang path ``name`` as the plays use it; an empty dict for a name that is no gang path."""
    if not isinstance(name, str) or name not in _registry.PATHS:
        return {}
    p = _registry.get(name)
    return {
        "name": p.name,
        "title": p.title,
        "role": p.role,
        "operator_flag": p.operator_flag,
        "trainer": p.podgroup_kind in _trainer_runtimes.POLICY,
        "workloads": list(p.workloads),
        "queues": p.queues,
        "kueue_workload": p.kueue_workload,
        "kueue_requires": None
        if p.kueue_requires is None
        else dict(zip(("var", "why"), p.kueue_requires, strict=True)),
    }


def smoke_workload_problem(workload, gang_scheduler) -> str:
    """Why the smoke test would refuse ``workload`` on gang path ``gang_scheduler``; empty when it takes it or when
    ``gang_scheduler`` is no gang path (another rule names that)."""
    if gang_scheduler not in _registry.PATHS:
        return ""
    if not isinstance(workload, str):
        raise AnsibleFilterError(f"smoke_workload_problem: the workload is a name, got {workload!r}")
    try:
        _smoke_input.check_path({"workload": workload, "gang_scheduler": gang_scheduler, "scheduler_name": None})
    except (GangError, KeyError) as e:
        return getattr(e, "msg", None) or f"workload={workload} is not a workload the smoke test knows"
    return ""


class FilterModule:
    def filters(self):
        return {"gang_path": gang_path, "smoke_workload_problem": smoke_workload_problem}
