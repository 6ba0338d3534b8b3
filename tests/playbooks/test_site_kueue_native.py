"""site.yml with Kueue in front of kube-scheduler's own gang (gangsched_gang_scheduler=native) on a fresh lab of 4
one-GPU nodes whose control plane runs upstream's defaults: refused, changing nothing, without the native gang's Job
integration (Kueue admits jobs, and of jobs only an Indexed Job is one native gang); with it, native_gang turns the
gang and the Job integration on, Kueue goes in front, and the smoke test sends Indexed Jobs through the ClusterQueue
(6 GPUs, the lab's inventory): 4 admitted and Running together under the Job controller's PodGroup, 5 admitted and held
whole by kube-scheduler, 7 held by Kueue for quota with not one pod made."""

from __future__ import annotations

import pytest
from ansible_run import playbook

pytestmark = pytest.mark.timeout(1500)

EXTRA = {"gangsched_gang_scheduler": "native", "native_gang_become": False, "gangsched_kueue": True}
SMOKE = "gangsched.kubeflow.gang_smoke_test : "
RUNS = (
    "Fitting gang runs as a whole",
    "Oversized gang stays entirely Pending",
    "Through Kueue, a gang over the ClusterQueue's quota is held by Kueue, suspended, not one pod made",
)


def test_kueue_over_the_native_gang(lab):
    manifests = {p.name: p.read_bytes() for p in lab.manifests.glob("*.yaml")}
    run = playbook(lab, "site", **EXTRA)
    assert run.rc != 0
    assert "set native_gang_job_integration: true, or gangsched_kueue: false" in run.failures().lower(), run.failures()
    assert {p.name: p.read_bytes() for p in lab.manifests.glob("*.yaml")} == manifests

    run = playbook(lab, "site", **EXTRA, native_gang_job_integration=True)
    assert run.rc == 0, run.failures()
    assert run.verdicts() == ["gang_held_running", "gang_held_pending", "kueue_held_quota"], run.verdicts()
    (fits,), (over_nodes,), (over_quota,) = (run.results(SMOKE + name) for name in RUNS)
    assert fits["workload"] == "job" and fits["gang"]["kueue"]["admitted"] is True, fits["gang"]
    # admitted by Kueue, then held by kube-scheduler's own decision on the gang's PodGroup
    assert over_nodes["gang"]["kueue"]["admitted"] is True and over_nodes["gang"]["bound"] == [], over_nodes["gang"]
    held = over_quota["gang"]["kueue"]
    assert held["admitted"] is False and held["suspended"] is True and held["pods"] == 0, held
    assert "insufficient" in held["held"], held
