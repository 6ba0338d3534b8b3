"""site.yml with gangsched_gang_scheduler=koordinator on a fresh lab: koord-scheduler installed by its
role, no operator touched (koord-scheduler ignores the operators' PodGroups), the smoke test's label
gangs (fitting gang all Running, oversized gang all Pending), changed=0 on a second run, Kueue in front
of it (its Indexed Jobs with a label gang through the ClusterQueue), and uninstall.yml with the components
removing it again."""

from __future__ import annotations

import pytest
import seeds
from ansible_run import module, playbook
from kubernetes import client as k

from lab import kube, scenarios

pytestmark = pytest.mark.timeout(1500)
KOORD = {"gangsched_gang_scheduler": "koordinator"}


def test_site_installs_and_proves_koord_scheduler(lab, pod_ports_named):
    apps = k.AppsV1Api(kube.api(lab))
    run = playbook(lab, "site", gang_smoke_test_control=True, **KOORD)
    assert run.rc == 0, run.failures()
    assert run.verdicts() == ["gang_held_running", "gang_held_pending"]
    (pending,) = run.results("gangsched.kubeflow.gang_smoke_test : Oversized gang stays entirely Pending")
    assert pending["control"]["verdict"] == "partial", pending["control"]
    assert apps.read_namespaced_deployment("koord-scheduler", "koordinator-system").status.ready_replicas == 1
    deps = {d.metadata.name for d in apps.list_deployment_for_all_namespaces().items}
    assert "training-operator" not in deps and "mpi-operator" not in deps, "no operator is set up for koordinator"
    co = k.CustomObjectsApi(kube.api(lab))
    pgs = co.list_cluster_custom_object("scheduling.sigs.k8s.io", "v1alpha1", "podgroups")
    assert pgs["items"] == [], "label gangs need no PodGroup object"
    pod_ports_named()
    # the healthy installation: gang_info finds nothing wrong
    assert module(lab, "gang_info")["problems"] == []

    again = playbook(lab, "site", "--skip-tags", "smoke", **KOORD)
    assert again.rc == 0, again.failures()
    assert again.changed() == [], again.changed()
    assert again.writers_run() == [], again.writers_run()


def test_seed003_tfjob_label_gang_all_pending_then_all_running(lab, jobs, pool):
    """The seed's own TFJob (1 PS + 4 workers x 2 GPUs, min-available 5) on 2 nodes x 2 GPUs, with a
    training-operator that has no gang flag: all 5 Pending, none bound; 4 more GPUs: all 5 Running."""
    scenarios.install_training_operator(lab, gang_flag=None, schemes=("tfjob",))
    seeds.check_seed003_label_gang(jobs, pool, "koord-scheduler")


def test_kueue_in_front_of_koord_scheduler_admits_label_gang_jobs(lab):
    """With gangsched_kueue: Kueue in front, and the smoke test's Indexed Jobs (a label gang on their pod template; no
    operator runs on this path) through its ClusterQueue of 6 GPUs: 4 admitted and Running together, 5 admitted and
    held whole by koord-scheduler, 7 held by Kueue for quota."""
    run = playbook(lab, "site", **KOORD, gangsched_kueue=True)
    assert run.rc == 0, run.failures()
    assert run.verdicts() == ["gang_held_running", "gang_held_pending", "kueue_held_quota"], run.verdicts()
    fits = run.results("gangsched.kubeflow.gang_smoke_test : Fitting gang runs as a whole")[0]
    assert fits["workload"] == "job" and fits["gang"]["kueue"]["admitted"] is True, fits["gang"]


def test_uninstall_removes_koord_scheduler(lab):
    apps = k.AppsV1Api(kube.api(lab))
    gone = playbook(lab, "uninstall", gangsched_uninstall_components=True, **KOORD)
    assert gone.rc == 0, gone.failures()
    deps = {d.metadata.name for d in apps.list_deployment_for_all_namespaces().items}
    assert "koord-scheduler" not in deps, deps
