"""Malformed inventory variables stop site.yml in its Preflight play, with a message that names the
variable, before any role changes anything in the cluster."""

from __future__ import annotations

import pytest
from ansible_run import playbook
from kubernetes import client as k

from lab import kube

pytestmark = pytest.mark.timeout(900)

SP = {"gangsched_gang_scheduler": "scheduler_plugins"}
CASES = {
    "unknown gang scheduler": ({"gangsched_gang_scheduler": "kube-batch"}, "gangsched_gang_scheduler"),
    "scheduler-plugins mode typo": ({**SP, "scheduler_plugins_mode": "defualt"}, "scheduler_plugins_mode"),
    "negative smoke-test replicas": ({"gang_smoke_test_fit_replicas": -1}, "gang_smoke_test_fit_replicas"),
    "smoke-test workload unknown": ({"gang_smoke_test_workload": "jaxjob"}, "gang_smoke_test_workload"),
    "negative expected GPUs": ({"gpu_device_plugin_expected_gpus": -2}, "gpu_device_plugin_expected_gpus"),
    "chart path missing": ({"volcano_chart_ref": "/nonexistent/volcano"}, "volcano_chart_ref=/nonexistent/volcano"),
    "version with a v": ({"volcano_version": "v1.10.0"}, "volcano_version"),
    "local chart not the pinned version": ({"volcano_version": "1.9.0"}, "volcano_version"),
    # the lab accepts its own skew (no release is built on its minor); a user who did not is refused
    "scheduler-plugins outside the version-skew policy": (
        {
            **SP,
            "scheduler_plugins_chart_repo_url": "https://scheduler-plugins.example.invalid",
            "scheduler_plugins_chart_ref": "scheduler-plugins",
            "scheduler_plugins_version": "0.31.8",
            "scheduler_plugins_accept_skew": False,
        },
        "scheduler_plugins_version=0.31.8 is built on Kubernetes 1.31",
    ),
    "operator unknown": ({"kubeflow_gang_operators": ["tf_operator"]}, "kubeflow_gang_operators"),
    "operator CRDs missing": ({"kubeflow_gang_training_operator_crd_src": "/nonexistent"}, "crd_src"),
    "Volcano with another scheduler name": ({"kubeflow_gang_scheduler_name": "other"}, "kubeflow_gang_scheduler_name"),
}


def _state(lab) -> dict:
    api = kube.api(lab)
    apps, core = k.AppsV1Api(api), k.CoreV1Api(api)
    return {
        "namespaces": sorted(n.metadata.name for n in core.list_namespace().items),
        "deployments": sorted(
            f"{d.metadata.namespace}/{d.metadata.name}" for d in apps.list_deployment_for_all_namespaces().items
        ),
        "daemonsets": sorted(
            f"{d.metadata.namespace}/{d.metadata.name}" for d in apps.list_daemon_set_for_all_namespaces().items
        ),
        "clusterroles": sorted(
            r.metadata.name
            for r in k.RbacAuthorizationV1Api(api).list_cluster_role().items
            if "gangsched" in r.metadata.name
        ),
        "crds": sorted(c.metadata.name for c in k.ApiextensionsV1Api(api).list_custom_resource_definition().items),
    }


@pytest.mark.parametrize("case", CASES)
def test_bad_variable_stops_at_preflight_naming_it(lab, case):
    extra, named = CASES[case]
    before = _state(lab)
    run = playbook(lab, "site", **extra)
    assert run.rc != 0, f"{case}: site.yml succeeded with {extra}"
    failed = [
        # a failed loop says "One or more items failed"; each item's message is in its results
        (
            play["play"]["name"],
            task["task"]["name"],
            " ".join([h.get("msg", "")] + [r.get("msg", "") for r in h.get("results", [])]),
        )
        for play in run.data["plays"]
        for task in play["tasks"]
        for h in task["hosts"].values()
        if h.get("failed") and not h.get("ignore_errors")
    ]
    assert failed, run.failures()
    play, task, msg = failed[0]
    assert play == "Preflight", failed  # the first play: nothing has been applied yet
    assert named in msg, f"{case}: {msg!r} does not name {named}"
    assert _state(lab) == before, f"{case}: the cluster changed"
