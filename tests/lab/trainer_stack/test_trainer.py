"""Kubeflow Trainer v2 with JobSet and scheduler-plugins' Coscheduling on the lab, installed as a user
would (CRDs from the built modules, our own RBAC, Configuration ConfigMaps, Deployments of the
upstream images run by the pod-process runner, webhooks as upstream registers them with their own
cert rotators filling the Secrets and caBundles: Trainer's validator refuses a TrainJob of a missing
runtime, JobSet's defaulter fills in the JobSet fields Trainer leaves out).

A ClusterTrainingRuntime with ``podGroupPolicy.coscheduling`` and ``schedulerName:
scheduler-plugins-scheduler`` in its pod template: a TrainJob of 5 nodes x 1 GPU on 4 x 1-GPU nodes
gets a PodGroup of minMember 5 and its 5 pods stay Pending, none ever bound (checked on every watch
event); a TrainJob of 4 nodes runs all 4. RBAC never refuses Trainer or JobSet a call.
"""

from __future__ import annotations

import time
import uuid

import pytest
from kubernetes import client as k

from lab import kube, scenarios

RUNTIME = "torch-gang"
TRAINER_USER = f"system:serviceaccount:{scenarios.TRAINER_NS}:{scenarios.TRAINER_NAME}"
JOBSET_USER = f"system:serviceaccount:{scenarios.JOBSET_NS}:{scenarios.JOBSET_NAME}"
# after scheduler-plugins has refused every pod of the gang: long enough for its retries
HOLD = 5.0


@pytest.fixture(scope="module")
def trainer(trainer_stack):
    kube.apply(trainer_stack, [scenarios.training_runtime(RUNTIME)])
    return trainer_stack


@pytest.fixture(scope="module")
def ns(trainer, core):
    name = f"t-{uuid.uuid4().hex[:8]}"
    kube.ensure_namespace(core, name)
    yield name
    kube.delete_namespace(core, name, timeout=120)


def _selector(job: str) -> str:
    return f"jobset.sigs.k8s.io/jobset-name={job}"


def _refused(core, ns: str, selector: str) -> int:
    """Pods the scheduler has tried and left unscheduled (condition PodScheduled False)."""
    return sum(
        any(c.type == "PodScheduled" and c.status == "False" for c in p.status.conditions or [])
        for p in core.list_namespaced_pod(ns, label_selector=selector).items
    )


def _delete_trainjob(api, core, ns: str, name: str) -> None:
    k.CustomObjectsApi(api).delete_namespaced_custom_object(
        "trainer.kubeflow.org", "v1alpha1", ns, "trainjobs", name, propagation_policy="Foreground"
    )
    kube.wait_for(
        lambda: not core.list_namespaced_pod(ns, label_selector=_selector(name)).items, 60, f"pods of {name} gone"
    )


def test_webhooks_are_served_with_the_rotators_certificates(trainer, api):
    adm = k.AdmissionregistrationV1Api(api)
    confs = [adm.read_mutating_webhook_configuration(n) for n in (scenarios.JOBSET_WEBHOOKS[0],)]
    confs += [adm.read_validating_webhook_configuration(scenarios.JOBSET_WEBHOOKS[1])]
    confs += [adm.read_mutating_webhook_configuration(scenarios.TRAINER_WEBHOOKS[0])]
    confs += [adm.read_validating_webhook_configuration(scenarios.TRAINER_WEBHOOKS[1])]
    for conf in confs:
        for w in conf.webhooks:
            assert w.client_config.ca_bundle, f"{conf.metadata.name}/{w.name}: no caBundle injected"
            assert w.failure_policy == "Fail", w


def test_trainers_validating_webhook_refuses_a_trainjob_of_a_missing_runtime(trainer, ns):
    with pytest.raises(RuntimeError) as e:
        kube.apply(trainer, [scenarios.trainjob(ns, "orphan", "no-such-runtime", 1)])
    assert 'admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request' in str(e.value)


def test_five_nodes_on_four_gpus_all_pending(trainer, api, core, ns):
    name = "gang5"
    try:
        with kube.PodWatcher(trainer, ns, _selector(name)) as w:
            kube.apply(trainer, [scenarios.trainjob(ns, name, RUNTIME, 5)])
            kube.wait_for(lambda: kube.podgroup(api, ns, name) is not None, 30, "the TrainJob's PodGroup")
            kube.wait_for(lambda: _refused(core, ns, _selector(name)) == 5, 60, "the scheduler to refuse all 5 pods")
            time.sleep(HOLD)
            s = w.snapshot()
        assert s.ever_bound() == set(), f"pods bound while the gang could not fit: {s.events}"
        assert len(s.pending()) == 5, s.latest
        pg = kube.podgroup(api, ns, name)
        assert pg["spec"]["minMember"] == 5, pg
        assert pg["spec"]["minResources"].get("nvidia.com/gpu") == "5", pg
        assert [o["kind"] for o in pg["metadata"]["ownerReferences"]] == ["TrainJob"], pg
        pods = core.list_namespaced_pod(ns, label_selector=_selector(name)).items
        assert {p.metadata.labels.get("scheduling.x-k8s.io/pod-group") for p in pods} == {name}
        assert {p.spec.scheduler_name for p in pods} == {scenarios.SP_NAME}
        # JobSet's mutating webhook filled in what neither the runtime nor Trainer sets
        js = k.CustomObjectsApi(api).get_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", ns, "jobsets", name)
        assert js["spec"]["successPolicy"]["operator"] == "All", js["spec"]
        assert js["spec"]["startupPolicy"]["startupPolicyOrder"] == "AnyOrder", js["spec"]
    finally:
        _delete_trainjob(api, core, ns, name)


def test_four_nodes_on_four_gpus_all_running(trainer, api, core, ns):
    name = "gang4"
    try:
        with kube.PodWatcher(trainer, ns, _selector(name)) as w:
            kube.apply(trainer, [scenarios.trainjob(ns, name, RUNTIME, 4)])
            kube.wait_for(lambda: len(w.snapshot().running()) == 4, 60, "all 4 TrainJob pods Running")
        assert kube.podgroup(api, ns, name)["spec"]["minMember"] == 4
    finally:
        _delete_trainjob(api, core, ns, name)


@pytest.mark.parametrize("user", [TRAINER_USER, JOBSET_USER], ids=["trainer", "jobset"])
def test_no_call_of_trainer_or_jobset_is_refused(trainer, user):
    """Runs after the tests above: covers every call the two controllers made for them."""
    events = trainer.audit_events(user=user)
    seen = {(e["verb"], e["objectRef"].get("resource")) for e in events if e.get("objectRef")}
    # their own tokens, not the lab's admin
    expected = ("trainjobs", "jobsets", "podgroups") if user == TRAINER_USER else ("jobsets", "jobs", "pods")
    # their informers read each kind by a list, or on a server that streams a watch's initial state (Kubernetes
    # 1.37 with the client-go Trainer and JobSet are built on) by a watch alone
    for resource in expected:
        assert ("list", resource) in seen or ("watch", resource) in seen, sorted(seen)
    denied = trainer.rbac_refusals(user)
    assert denied == [], [(e["verb"], e["requestURI"], e["responseStatus"].get("message")) for e in denied]
