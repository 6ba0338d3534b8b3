# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The smoke test's inputs: each gang path takes its workloads (paths/, GangPath.workloads) and refuses the others
with the reason of the path or of the workload, before anything is read."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _smoke_input

WORKLOADS = ("pods", "job", "pytorchjob", "tfjob", "mpijob", "trainjob")
REFUSED = {
    ("koordinator", "trainjob"): "a label gang cannot be put in a runtime",
    ("native", "pytorchjob"): "no Kubeflow operator or Trainer runtime puts its pods in a native gang",
    ("native", "tfjob"): "no Kubeflow operator or Trainer runtime puts its pods in a native gang",
    ("native", "mpijob"): "no Kubeflow operator or Trainer runtime puts its pods in a native gang",
    ("native", "trainjob"): "no Kubeflow operator or Trainer runtime puts its pods in a native gang",
    ("volcano", "job"): "it needs gang_scheduler=native or koordinator, not volcano",
    ("scheduler_plugins", "job"): "it needs gang_scheduler=native or koordinator, not scheduler_plugins",
}


@pytest.mark.parametrize("gang", _registry.GANG_PATHS)
@pytest.mark.parametrize("wl", WORKLOADS)
def test_a_gang_path_refuses_the_workloads_its_row_does_not_take_each_with_its_reason(gang, wl):
    params = {"workload": wl, "gang_scheduler": gang}
    if (gang, wl) in REFUSED:
        with pytest.raises(GangError, match=REFUSED[gang, wl]):
            _smoke_input.check_path(params)
    else:
        _smoke_input.check_path(params)
    assert ((gang, wl) in REFUSED) == (wl not in _registry.get(gang).workloads)
