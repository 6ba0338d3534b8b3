"""site.yml with gangsched_trainer=true and Volcano on a fresh lab: the chain with Kubeflow Trainer v2 and JobSet
after the scheduler, and the smoke test proving TrainJobs as it proves
pods (the fitting gang all Running, the oversized one all Pending, the control without a gang partial); a second
run changes nothing; gang_info sees no problem. Then, as a user would: a runtime as Trainer ships them, its gang
copy made by trainer_runtime_gang (scheduler name derived: volcano), and the seeds replayed with TrainJobs on
it (N where N-2 fit all Pending; a second job held whole while a first runs; capacity added releasing a held
gang). uninstall.yml removes Trainer and JobSet. (The scheduler-plugins
side is the Molecule scenario trainer.)"""

from __future__ import annotations

import uuid

import pytest
import seeds
from ansible_run import module, playbook, run_module
from kubernetes import client as k

from lab import kube, scenarios

pytestmark = pytest.mark.timeout(1500)

SMOKE = "gangsched.kubeflow.gang_smoke_test : "
EXTRA = {"gangsched_gang_scheduler": "volcano", "gangsched_trainer": True, "gang_smoke_test_control": True}


def _trainer_deployments(lab) -> set[str]:
    apps = k.AppsV1Api(kube.api(lab))
    return {
        f"{d.metadata.namespace}/{d.metadata.name}"
        for d in apps.list_deployment_for_all_namespaces().items
        if d.metadata.namespace in ("kubeflow-system", "jobset-system")
    }


def test_site_with_trainer_proves_trainjobs_and_converges(lab, pod_ports_named):
    run = playbook(lab, "site", **EXTRA)
    assert run.rc == 0, run.failures()
    assert _trainer_deployments(lab) == {
        "kubeflow-system/kubeflow-trainer-controller-manager",
        "jobset-system/jobset-controller-manager",
    }
    fits = [r for r in run.results(SMOKE + "Fitting gang runs as a whole") if r.get("verdict")]
    big = [r for r in run.results(SMOKE + "Oversized gang stays entirely Pending") if r.get("verdict")]
    # the role ran twice: pods, then a TrainJob
    assert [r["verdict"] for r in fits] == ["gang_held_running"] * 2, fits
    assert [r["verdict"] for r in big] == ["gang_held_pending"] * 2, big
    assert [(r.get("control") or {}).get("verdict") for r in big] == ["partial"] * 2, big
    # the report's fact holds both runs' verdicts, the pods' first
    (results,) = run.facts("gang_smoke_test_results")[-1:]
    assert [r["verdict"] for r in results] == ["gang_held_running", "gang_held_pending"] * 2, results
    pod_ports_named()

    again = playbook(lab, "site", "--skip-tags", "smoke", **EXTRA)
    assert again.rc == 0, again.failures()
    assert again.changed() == [], again.changed()
    assert again.writers_run() == [], again.writers_run()

    info = module(lab, "gang_info")
    assert info["problems"] == [], info["problems"]


def test_seeds_replayed_with_trainjobs_on_a_gang_copy_of_a_stock_runtime(lab, pool):
    kube.apply(lab, [scenarios.stock_training_runtime("torch-stock")])
    made = run_module(
        lab,
        "trainer_runtime_gang",
        {"name": "torch-stock", "gang_name": "torch-stock-gang", "gang_scheduler": "volcano"},
    )
    assert made.get("failed") is not True, made.get("msg")
    assert made["changed"] is True and made["scheduler_name"] == "volcano", made
    core = k.CoreV1Api(kube.api(lab))
    ns = f"seed-{uuid.uuid4().hex[:6]}"
    kube.ensure_namespace(core, ns)
    try:
        with seeds.Jobs(lab, ns, selector=seeds.TRAINJOB_PODS) as jobs:
            seen = seeds.check_trainjob_seeds(jobs, pool, "torch-stock-gang", "volcano")
    finally:
        kube.delete_namespace(core, ns, timeout=120)
    assert seen["seed3_ran"]["running"] and not seen["seed3_ran"]["pending"], seen


def test_uninstall_refuses_while_a_users_trainjob_is_not_finished(lab):
    """A user's TrainJob (suspended: no pod) still needs Trainer's controllers: uninstall.yml refuses before any
    change, naming it; once it is deleted, nothing is named."""
    core = k.CoreV1Api(kube.api(lab))
    ns = f"team-{uuid.uuid4().hex[:6]}"
    kube.ensure_namespace(core, ns)
    job = scenarios.trainjob(ns, "train", "torch-stock-gang", 2)
    job["spec"]["suspend"] = True
    try:
        kube.apply(lab, [job])
        run = playbook(lab, "uninstall", **EXTRA)
        assert run.rc != 0
        assert f"TrainJob {ns}/train" in run.failures() and "gangsched_uninstall_in_use" in run.failures()
        assert run.changed() == [] and len(_trainer_deployments(lab)) == 2, run.changed()
    finally:
        kube.delete_namespace(core, ns, timeout=120)
    assert "trainer" not in run_module(lab, "gang_info", {})["in_use"]


def test_uninstall_removes_trainer_and_jobset(lab):
    run = playbook(lab, "uninstall", **EXTRA)
    assert run.rc == 0, run.failures()
    assert _trainer_deployments(lab) == set()
    assert _crds(lab), "uninstall.yml kept the CRDs (trainer_uninstall_crds false), yet none is there"
    # the CRDs too when asked, then again with nothing left to remove: nothing changes, no failure
    gone = playbook(lab, "uninstall", **EXTRA, trainer_uninstall_crds=True)
    assert gone.rc == 0, gone.failures()
    assert _crds(lab) == []
    again = playbook(lab, "uninstall", **EXTRA, trainer_uninstall_crds=True)
    assert again.rc == 0 and again.changed() == [], (again.failures(), again.changed())


def _crds(lab) -> list[str]:
    """The CRDs labelled as the trainer role's (Trainer's and JobSet's)."""
    api = k.ApiextensionsV1Api(kube.api(lab))
    found = api.list_custom_resource_definition(label_selector="gangsched.kubeflow/crds-of in (trainer, jobset)")
    return sorted(c.metadata.name for c in found.items)
