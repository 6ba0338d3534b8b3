"""Discovery from one list of Deployments: gang schedulers (and the ConfigMaps to read for them, the
kube-scheduler static pod) and Kubeflow operators classified from the same list; the service reads it
once, and gang_info's gather lists Deployments once (a recording fake client counts the calls)."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils import _discovery, _info, _service

SP_CONFIG = """
profiles:
- schedulerName: default-scheduler
- schedulerName: gang
  plugins:
    multiPoint: {enabled: [{name: Coscheduling}]}
"""


def _dep(ns, name, image, ready=1, mounts=None, volumes=None, **argv):
    c = {"name": name, "image": image, **argv}
    if mounts:
        c["volumeMounts"] = mounts
    spec = {"containers": [c]}
    if volumes:
        spec["volumes"] = volumes
    return {
        "metadata": {"namespace": ns, "name": name},
        "spec": {"template": {"spec": spec}},
        "status": {"readyReplicas": ready},
    }


VOLCANO = _dep("volcano-system", "vc-scheduler", "volcanosh/vc-scheduler:v1.10.0", args=["--scheduler-name=gangs"])
SP = _dep(
    "scheduler-plugins",
    "sp",
    "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.33.5",
    command=["kube-scheduler", "--config=/etc/cfg/config.yaml"],
    mounts=[{"name": "cfg", "mountPath": "/etc/cfg/"}],
    volumes=[{"name": "cfg", "configMap": {"name": "sp-config", "items": [{"key": "k.yaml", "path": "config.yaml"}]}}],
)
KUBE_BATCH = _dep("kb", "kube-batch", "kubesigs/kube-batch:v0.5", ready=0)
TRAINING = _dep("kubeflow", "training-operator", "kubeflow/training-operator:v1-855e096", command=["/manager"])
MPI = _dep("mpi-operator", "mpi-operator", "mpioperator/mpi-operator:0.6.0", args=["--gang-scheduling=volcano"])
NGINX = _dep("web", "nginx", "nginx:1.27")
DEPLOYMENTS = [VOLCANO, SP, KUBE_BATCH, TRAINING, MPI, NGINX]
SP_REF = ("scheduler-plugins", "sp-config", "k.yaml")
STATIC = {
    "metadata": {"namespace": "kube-system", "name": "kube-scheduler-cp"},
    "spec": {
        "containers": [{"name": "kube-scheduler", "image": "registry.k8s.io/scheduler-plugins/kube-scheduler:v0"}]
    },
    "status": {"phase": "Running"},
}
PLAIN_STATIC = {
    "metadata": {"namespace": "kube-system", "name": "kube-scheduler-cp2"},
    "spec": {"containers": [{"name": "kube-scheduler", "image": "registry.k8s.io/kube-scheduler:v1.33.0"}]},
    "status": {"phase": "Running"},
}


def _brief(entries):
    return [
        (s["kind"], s["namespace"], s["name"], s["scheduler_names"], s["gang_profiles"], s["mode"]) for s in entries
    ]


def test_one_list_gives_both_the_schedulers_and_the_operators():
    schedulers = _discovery.schedulers(DEPLOYMENTS, {SP_REF: SP_CONFIG})
    operators = _discovery.operators(DEPLOYMENTS)
    assert _brief(schedulers) == [
        ("volcano", "volcano-system", "vc-scheduler", ["gangs"], ["gangs"], "second"),
        ("scheduler_plugins", "scheduler-plugins", "sp", ["default-scheduler", "gang"], ["gang"], "default"),
        ("kube_batch", "kb", "kube-batch", ["kube-batch"], ["kube-batch"], "second"),
    ]
    assert [(s["source"], s["version"], s["ready"]) for s in schedulers] == [
        ("Deployment", "v1.10.0", True),
        ("Deployment", "v0.33.5", True),
        ("Deployment", "v0.5", False),
    ]
    assert [(o["operator"], o["deployment"]["metadata"]["name"], o["container"]["name"]) for o in operators] == [
        ("training_operator", "training-operator", "training-operator"),
        ("mpi_operator", "mpi-operator", "mpi-operator"),
    ]
    assert _discovery.schedulers([NGINX]) == [] and _discovery.operators([NGINX]) == []


def test_a_scheduler_whose_config_was_not_read_serves_no_known_name():
    (sp,) = _discovery.schedulers([SP])
    assert (sp["scheduler_names"], sp["gang_profiles"], sp["mode"]) == ([], [], "second")


@pytest.mark.parametrize(
    "argv,mounts,volumes,ref",
    [
        (  # a directory mount, the file renamed by the volume's items
            ["--config=/etc/cfg/config.yaml"],
            [{"name": "cfg", "mountPath": "/etc/cfg/"}],
            [{"name": "cfg", "configMap": {"name": "cm", "items": [{"key": "k.yaml", "path": "config.yaml"}]}}],
            ("ns", "cm", "k.yaml"),
        ),
        (  # a file mounted with subPath
            ["--config", "/c/x.yaml"],
            [{"name": "v", "mountPath": "/c/x.yaml", "subPath": "sched.yaml"}],
            [{"name": "v", "configMap": {"name": "cm"}}],
            ("ns", "cm", "sched.yaml"),
        ),
        (  # not from a ConfigMap
            ["--config=/etc/cfg/config.yaml"],
            [{"name": "cfg", "mountPath": "/etc/cfg"}],
            [{"name": "cfg", "hostPath": {"path": "/etc/cfg"}}],
            None,
        ),
        ([], [{"name": "cfg", "mountPath": "/etc/cfg"}], [{"name": "cfg", "configMap": {"name": "cm"}}], None),
    ],
    ids=["items", "subpath", "hostpath", "no-config-flag"],
)
def test_config_ref(argv, mounts, volumes, ref):
    dep = _dep("ns", "s", "scheduler-plugins/kube-scheduler:v0", args=argv, mounts=mounts, volumes=volumes)
    assert _discovery.config_ref(dep, dep["spec"]["template"]["spec"]["containers"][0]) == ref
    assert _discovery.config_refs([dep, dep]) == ([ref] if ref else [])


def test_config_refs_only_for_schedulers_that_read_a_config():
    volcano = _dep(
        "v",
        "vc",
        "volcanosh/vc-scheduler:v1",
        args=["--config=/c/x.yaml"],
        mounts=[{"name": "v", "mountPath": "/c"}],
        volumes=[{"name": "v", "configMap": {"name": "vc-conf"}}],
    )
    assert _discovery.config_refs([volcano, *DEPLOYMENTS]) == [SP_REF]


def test_static_pod_schedulers():
    assert _brief(_discovery.static_pod_schedulers([STATIC, PLAIN_STATIC])) == [
        (
            "scheduler_plugins",
            "kube-system",
            "kube-scheduler-cp",
            ["default-scheduler"],
            ["default-scheduler"],
            "default",
        )
    ]


class RecordingClient:
    """A cluster in a few lists: records every call; nothing may be written."""

    def __init__(self):
        self.calls: list[tuple[str, str]] = []

    def get(self, path, what="", query=None, retry_for=None):
        self.calls.append(("GET", path))
        return {"gitVersion": "v1.33.0"} if path == "/version" else {}

    def get_or_none(self, path, what=""):
        self.calls.append(("GET", path))
        if path == "/api/v1/namespaces/scheduler-plugins/configmaps/sp-config":
            return {"data": {"k.yaml": SP_CONFIG}}
        return None

    def list(self, path, what="", **query):
        self.calls.append(("LIST", path))
        if path == "/apis/apps/v1/deployments":
            return DEPLOYMENTS
        if path == "/api/v1/namespaces/kube-system/pods":
            return [STATIC]
        return []

    list_or_empty = list

    def scan(self, path, what="", keep=None, **query):
        self.calls.append(("LIST", path))
        return []

    def request(self, method, path, **kw):
        raise AssertionError(f"unexpected {method} {path}")


DEPLOYMENT_LIST = ("LIST", "/apis/apps/v1/deployments")


def test_service_lists_deployments_once_and_reads_each_config_once():
    client = RecordingClient()
    found = _service.find_schedulers(client)
    assert client.calls == [
        DEPLOYMENT_LIST,
        ("GET", "/api/v1/namespaces/scheduler-plugins/configmaps/sp-config"),
        ("LIST", "/api/v1/namespaces/kube-system/pods"),
    ]
    assert [s["name"] for s in found] == ["vc-scheduler", "sp", "kube-batch", "kube-scheduler-cp"]
    # a list already read is not read again
    client = RecordingClient()
    assert _service.find_schedulers(client, DEPLOYMENTS) == found and DEPLOYMENT_LIST not in client.calls
    assert _service.find_operators(client, DEPLOYMENTS) == _discovery.operators(DEPLOYMENTS)
    assert DEPLOYMENT_LIST not in client.calls
    assert len(_service.find_operators(client)) == 2 and client.calls.count(DEPLOYMENT_LIST) == 1


def test_gang_info_gather_lists_deployments_once():
    client = RecordingClient()
    facts = _info.gather(client, {"partial_threshold_seconds": 60}, 1_800_000_000.0)
    assert client.calls.count(DEPLOYMENT_LIST) == 1, client.calls
    assert [(s["kind"], s["name"]) for s in facts["schedulers"]] == [
        ("volcano", "vc-scheduler"),
        ("scheduler_plugins", "sp"),
        ("kube_batch", "kube-batch"),
        ("scheduler_plugins", "kube-scheduler-cp"),
    ]
    assert [(o["operator"], o["deployment"], o["gang_value"]) for o in facts["operators"]] == [
        ("training_operator", "kubeflow/training-operator", None),
        ("mpi_operator", "mpi-operator/mpi-operator", "volcano"),
    ]
