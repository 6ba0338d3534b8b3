"""Malformed inventory variables stop site.yml in its Preflight play, with a message that names the
variable, before any role changes anything in the cluster.

Each case is a host of its own in the inventory (the lab's, with the case's variables as host variables, as a user
sets them), all in one site.yml run on those hosts alone: each host fails on its own, and the run ends with the
Preflight play, where every host failed."""

from __future__ import annotations

import pytest
import yaml
from ansible_run import playbook
from kubernetes import client as k

from lab import build, kube
from lab import versions as V

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
    # the lab's build of Helm 4, which this venv's kubernetes.core (ansible's bundle, requirements.txt) does not drive:
    # without the preflight, the first kubernetes.core.helm task fails on `helm list --all` (the compat cells' newest,
    # kubernetes.core 6.4.0 and later, runs site.yml with it)
    "Helm 4 and a kubernetes.core before 6.4.0": (
        {"gangsched_helm_binary": str(build.binary_where("helm", V.HELM4))},
        "Upgrade kubernetes.core (ansible-galaxy collection install 'kubernetes.core>=6.4.0,<7.0.0'), or point "
        "gpu_device_plugin_helm_binary at a Helm 3 binary",
    ),
    "helm binary missing": ({"volcano_helm_binary": "/nonexistent/helm"}, "point volcano_helm_binary at it"),
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


HOSTS = {case: f"bad{i}" for i, case in enumerate(CASES)}


@pytest.fixture(scope="module")
def site(lab, tmp_path_factory):
    """The cluster before, one site.yml run with every case as a host, the cluster after."""
    local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    hosts = {host: {**local, **CASES[case][0]} for case, host in HOSTS.items()}
    inventory = tmp_path_factory.mktemp("bad_vars") / "cases.yml"
    inventory.write_text(yaml.safe_dump({"gangsched_cluster": {"children": {"bad_cases": {"hosts": hosts}}}}))
    before = _state(lab)
    run = playbook(lab, "site", "-i", str(inventory), gangsched_hosts="bad_cases")
    return before, run, _state(lab)


@pytest.mark.parametrize("case", CASES)
def test_bad_variable_stops_at_preflight_naming_it(site, case):
    before, run, after = site
    host, named = HOSTS[case], CASES[case][1]
    assert run.rc != 0, "site.yml succeeded"
    failed = [
        # a failed loop says "One or more items failed"; each item's message is in its results
        (
            play["play"]["name"],
            task["task"]["name"],
            " ".join([h.get("msg", "")] + [r.get("msg", "") for r in h.get("results", [])]),
        )
        for play in run.data["plays"]
        for task in play["tasks"]
        for name, h in task["hosts"].items()
        if name == host and h.get("failed") and not h.get("ignore_errors")
    ]
    assert failed, f"{case}: {host} did not fail: {run.failures()}"
    play, task, msg = failed[0]
    assert play == "Preflight", failed  # the first play: nothing has been applied yet
    assert named in msg, f"{case}: {msg!r} does not name {named}"
    assert [p["play"]["name"] for p in run.data["plays"]] == ["Preflight"]
    assert after == before, "the cluster changed"
