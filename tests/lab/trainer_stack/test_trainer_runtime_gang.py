"""The trainer_runtime_gang filter on Kubeflow Trainer v2 in the lab (JobSet, Trainer, scheduler-plugins'
second scheduler, run by the runner): a runtime as Trainer ships them (no podGroupPolicy, no scheduler
name, GPUs in limits only) lets a TrainJob of 5 nodes on 4 GPUs start partially; the same runtime
through the filter holds the whole gang Pending (PodGroup minMember 5, minResources 5 GPUs) and runs a
TrainJob of 4 nodes all together."""

from __future__ import annotations

import time

import pytest
from kubernetes import client as k

from lab import kube, scenarios

HOLD = 5.0


def _gang(runtime: dict) -> dict:
    from ansible_collections.gangsched.kubeflow.plugins.filter.gang import trainer_runtime_gang

    return trainer_runtime_gang(runtime, "scheduler_plugins", schedule_timeout=600)


@pytest.fixture(scope="module")
def trainer(trainer_stack):
    kube.apply(
        trainer_stack, [scenarios.stock_training_runtime("plain"), _gang(scenarios.stock_training_runtime("gang"))]
    )
    return trainer_stack


def _sel(job: str) -> str:
    return f"jobset.sigs.k8s.io/jobset-name={job}"


def test_the_runtime_trainer_ships_starts_a_job_partially(trainer, api, ns):
    """The control: without the filter the default scheduler binds 4 of 5 and the fifth waits, GPUs held."""
    with kube.PodWatcher(trainer, ns, _sel("job")) as w:
        kube.apply(trainer, [scenarios.trainjob(ns, "job", "plain", 5)])
        kube.wait_for(lambda: len(w.snapshot().running()) == 4, 60, "4 of the 5 pods Running")
        time.sleep(HOLD)
        s = w.snapshot()
    assert len(s.running()) == 4 and len(s.pending()) == 1, s.latest
    assert kube.podgroup(api, ns, "job") is None


def test_the_filtered_runtime_holds_the_gang_then_runs_it_whole(trainer, api, core, ns):
    with kube.PodWatcher(trainer, ns, _sel("big")) as w:
        kube.apply(trainer, [scenarios.trainjob(ns, "big", "gang", 5)])
        kube.wait_for(lambda: kube.podgroup(api, ns, "big") is not None, 30, "the TrainJob's PodGroup")
        kube.wait_for(
            lambda: sum(
                any(c.type == "PodScheduled" and c.status == "False" for c in p.status.conditions or [])
                for p in core.list_namespaced_pod(ns, label_selector=_sel("big")).items
            )
            == 5,
            60,
            "the scheduler to refuse all 5 pods",
        )
        time.sleep(HOLD)
        s = w.snapshot()
    assert s.ever_bound() == set(), f"pods bound while the gang could not fit: {s.events}"
    pg = kube.podgroup(api, ns, "big")
    assert pg["spec"]["minMember"] == 5 and pg["spec"]["minResources"].get("nvidia.com/gpu") == "5", pg
    k.CustomObjectsApi(api).delete_namespaced_custom_object("trainer.kubeflow.org", "v1alpha1", ns, "trainjobs", "big")
    kube.wait_for(lambda: not core.list_namespaced_pod(ns, label_selector=_sel("big")).items, 60, "big's pods gone")
    with kube.PodWatcher(trainer, ns, _sel("fits")) as w:
        kube.apply(trainer, [scenarios.trainjob(ns, "fits", "gang", 4)])
        kube.wait_for(lambda: len(w.snapshot().running()) == 4, 60, "all 4 pods Running")
