"""Discovery from one list of Deployments: gang schedulers (and the ConfigMaps to read for them, the
kube-scheduler static pod) and Kubeflow operators classified from the same list; the service reads it
once, and gang_info's gather lists Deployments once (a recording fake client counts the calls). Kubeflow
Trainer v2's controller from the same list, when its pods started, and gang_info's Trainer reads: one CRD
read without Trainer, a few lists with it, none per object."""

from __future__ import annotations

import copy

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api, _capacity, _component_discovery
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service, _together
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _gang_info, _gang_info_trainer

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
    schedulers = _component_discovery.schedulers(DEPLOYMENTS, {SP_REF: SP_CONFIG})
    operators = _component_discovery.operators(DEPLOYMENTS)
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
    assert _component_discovery.schedulers([NGINX]) == [] and _component_discovery.operators([NGINX]) == []


def test_a_scheduler_whose_config_was_not_read_serves_no_known_name():
    (sp,) = _component_discovery.schedulers([SP])
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
    assert _component_discovery.config_ref(dep, dep["spec"]["template"]["spec"]["containers"][0]) == ref
    assert _component_discovery.config_refs([dep, dep]) == ([ref] if ref else [])


def test_config_refs_only_for_schedulers_that_read_a_config():
    volcano = _dep(
        "v",
        "vc",
        "volcanosh/vc-scheduler:v1",
        args=["--config=/c/x.yaml"],
        mounts=[{"name": "v", "mountPath": "/c"}],
        volumes=[{"name": "v", "configMap": {"name": "vc-conf"}}],
    )
    assert _component_discovery.config_refs([volcano, *DEPLOYMENTS]) == [SP_REF]


def test_static_pod_schedulers():
    assert _brief(_component_discovery.static_pod_schedulers([STATIC, PLAIN_STATIC])) == [
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
        # the one write gang_info makes: SubjectAccessReviews of the components' gang rights (they change nothing)
        if (method, path) != ("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews"):
            raise AssertionError(f"unexpected {method} {path}")
        self.calls.append(("REVIEW", path))
        return {"status": {"allowed": True}}


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
    assert _service.find_operators(client, DEPLOYMENTS) == _component_discovery.operators(DEPLOYMENTS)
    assert DEPLOYMENT_LIST not in client.calls
    assert len(_service.find_operators(client)) == 2 and client.calls.count(DEPLOYMENT_LIST) == 1


def test_gang_info_gather_lists_deployments_once():
    client = RecordingClient()
    facts = _gang_info.gather(client, {"partial_threshold_seconds": 60}, 1_800_000_000.0)
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


class ReadKeyClient(RecordingClient):
    """The same cluster, with a failurePolicy Fail webhook and Volcano's PodGroup CRD Established; records each read as
    the client's ``get`` keys it (``_together.read_key``): a list's query is its first page's, as ``Client.list``
    asks it."""

    WEBHOOKS = [
        {
            "metadata": {"name": "vc"},
            "webhooks": [
                {"name": "a", "clientConfig": {"service": {"namespace": "volcano-system", "name": "admission"}}},
                {"name": "b", "clientConfig": {"service": {"namespace": "volcano-system", "name": "admission"}}},
                {"name": "c", "failurePolicy": "Ignore", "clientConfig": {"service": {"namespace": "x", "name": "y"}}},
            ],
        }
    ]
    VOLCANO_CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/podgroups.scheduling.volcano.sh"

    def __init__(self):
        super().__init__()
        self.keys: list[tuple] = []

    def get(self, path, what="", query=None, retry_for=None):
        self.keys.append(_together.read_key(path, what, query))
        return super().get(path, what, query, retry_for)

    def get_or_none(self, path, what=""):
        self.keys.append(_together.read_key(path, what, None))
        if path == self.VOLCANO_CRD:
            return {
                "metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
                "spec": {"versions": [{"name": "v1beta1", "served": True}]},
                "status": {"conditions": [{"type": "Established", "status": "True"}]},
            }
        return super().get_or_none(path, what)

    def list(self, path, what="", **query):
        self.keys.append(_together.read_key(path, what, _api.list_query(**query)))
        if path == "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations":
            return self.WEBHOOKS
        return super().list(path, what, **query)

    list_or_empty = list


def test_gang_info_asks_ahead_the_reads_that_depend_on_its_first_ones_and_makes_each():
    """The schedulers' ConfigMaps, the EndpointSlices of each failurePolicy Fail webhook's Service (once per Service)
    and each path's lists are asked for together once the reads they depend on are in, under the very keys the runner
    then reads them by: a read asked ahead under another name or query would be sent for nothing."""
    client = ReadKeyClient()
    first = _gang_info._first(client)
    reads = _gang_info.dependent_reads(first)
    assert [path for path, _what, _query in reads] == [
        "/api/v1/namespaces/scheduler-plugins/configmaps/sp-config",
        "/apis/discovery.k8s.io/v1/namespaces/volcano-system/endpointslices",
        "/apis/scheduling.volcano.sh/v1beta1/podgroups",
        "/apis/scheduling.volcano.sh/v1beta1/queues",
    ]
    client.keys.clear()
    _gang_info._gather(client, {"partial_threshold_seconds": 60}, 1_800_000_000.0, first)
    made = client.keys
    assert [_together.read_key(*r) for r in reads if _together.read_key(*r) not in made] == [], made


# ---- Kubeflow Trainer v2: its controller from the same list, its pods' start, its reads -------------
TRAINER_IMAGE = "ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.2.0"
TRAINER = _dep("ml", "trainer", TRAINER_IMAGE)
TRAINER["spec"]["selector"] = {"matchLabels": {"app": "trainer"}}
TRAINJOB_CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/trainjobs.trainer.kubeflow.org"


def _pod(ns, name, labels, start="2025-06-01T10:00:00Z", running=True, container="trainer", deleting=False):
    cs = {"name": container, "state": {"running": {"startedAt": start}} if running else {"waiting": {}}}
    md = {"namespace": ns, "name": name, "labels": labels}
    if deleting:
        md["deletionTimestamp"] = "2025-06-01T11:00:00Z"
    return {
        "metadata": md,
        "spec": {"containers": [{"name": container, "image": TRAINER_IMAGE}]},
        "status": {"phase": "Running", "startTime": "2025-06-01T09:59:00Z", "containerStatuses": [cs]},
    }


def test_trainer_is_found_by_its_image_whatever_its_name():
    mirrored = _dep("x", "my-trainer", "registry.example/mirror/trainer-controller-manager@sha256:" + "a" * 64)
    found = _component_discovery.trainers([*DEPLOYMENTS, TRAINER, mirrored])
    assert [(f["deployment"]["metadata"]["name"], f["container"]["name"]) for f in found] == [
        ("trainer", "trainer"),
        ("my-trainer", "my-trainer"),
    ]
    assert _component_discovery.trainers(DEPLOYMENTS) == []
    assert _component_discovery.operators([TRAINER]) == []  # not an operator with a gang flag


@pytest.mark.parametrize(
    "selector,labels,selected",
    [
        ({"matchLabels": {"app": "t"}}, {"app": "t", "pod-template-hash": "x"}, True),
        ({"matchLabels": {"app": "t"}}, {"app": "u"}, False),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["t", "u"]}]}, {"app": "u"}, True),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["t"]}]}, {"app": "t"}, False),
        ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, {}, False),
        ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, {"b": "1"}, True),
        ({}, {"any": "thing"}, True),
        (None, {"app": "t"}, False),
    ],
    ids=["labels", "labels-differ", "in", "not-in", "exists", "does-not-exist", "empty", "none"],
)
def test_selects(selector, labels, selected):
    assert _component_discovery.selects(selector, labels) is selected


def test_trainer_started_is_its_oldest_running_container_start():
    sel = {"app": "trainer"}
    pods = [
        _pod("ml", "new", sel, start="2025-06-01T10:05:00Z"),
        _pod("ml", "old", sel, start="2025-06-01T10:01:00Z"),
        _pod("ml", "gone", sel, start="2025-06-01T09:00:00Z", deleting=True),  # being deleted
        _pod("ml", "waiting", sel, running=False),  # its container does not run
        _pod("other", "elsewhere", sel, start="2025-06-01T08:00:00Z"),  # another namespace
        _pod("ml", "unrelated", {"app": "x"}, start="2025-06-01T08:00:00Z"),  # not selected
    ]
    assert _component_discovery.deployment_started(TRAINER, "trainer", pods) == "2025-06-01T10:01:00Z"
    assert _component_discovery.deployment_started(TRAINER, "trainer", pods[2:4]) is None
    # no status for the container: the pod's start, while it runs
    bare = {"metadata": {}, "status": {"phase": "Running", "startTime": "2025-06-01T09:59:00Z"}}
    assert _component_discovery.pod_started(bare, "trainer") == "2025-06-01T09:59:00Z"
    assert _component_discovery.pod_started({**bare, "status": {"phase": "Pending"}}, "trainer") is None


def test_the_pod_scan_keeps_start_times_of_trainers_pods_only():
    assert _gang_info_trainer.pod_keep([]) is _capacity.slim_pod  # no Trainer: the scan is as it was
    keep = _gang_info_trainer.pod_keep(_component_discovery.trainers([TRAINER]))
    mine, other = keep(_pod("ml", "t", {"app": "trainer"})), keep(_pod("ml", "o", {"app": "x"}))
    assert mine["status"]["containerStatuses"] == [
        {"name": "trainer", "state": {"running": {"startedAt": "2025-06-01T10:00:00Z"}}}
    ]
    assert mine["status"]["startTime"] == "2025-06-01T09:59:00Z"
    assert "containerStatuses" not in other["status"] and "startTime" not in other["status"]


@pytest.mark.parametrize(
    "ops,kinds,gang",
    [
        ([("training_operator", "gang", ["/manager"])], 6, "scheduler_plugins"),
        ([("training_operator", "gang", ["/manager", "--enable-scheme=pytorchjob,tfjob"])], 2, "scheduler_plugins"),
        ([("training_operator", "volcano", ["/manager"])], 6, "volcano"),  # Volcano's PodGroups, named alike
        ([("training_operator", None, ["/manager"])], 0, None),  # no gang
        ([("mpi_operator", "gang", [])], 1, "scheduler_plugins"),
        ([("mpi_operator", "volcano", [])], 1, "volcano"),
        ([("tf_operator", "true", [])], 0, None),  # kube-batch
    ],
    ids=["training-operator", "enable-scheme", "volcano", "no-gang", "mpi-operator", "mpi-operator-volcano", "tf"],
)
def test_kinds_gang_scheduled_by_an_operator(ops, kinds, gang):
    facts = [{"operator": op, "gang_value": v, "_container": {"command": cmd}} for op, v, cmd in ops]
    got = _gang_info_trainer.gang_kinds(facts)
    assert len(got) == kinds, got
    assert all(set(by_gang) == {gang} for by_gang in got.values()), got
    if ops[0][0] == "mpi_operator":
        assert got == {("MPIJob", "kubeflow.org/v2beta1"): {gang: "mpi-operator"}}
    if kinds == 2:
        assert sorted(got) == [("PyTorchJob", "kubeflow.org/v1"), ("TFJob", "kubeflow.org/v1")]


def test_kinds_of_two_operators_on_two_schedulers_keep_both():
    facts = [
        {"operator": "training_operator", "gang_value": "volcano", "_container": {"command": ["/manager"]}},
        {"operator": "mpi_operator", "gang_value": "scheduler-plugins-scheduler", "_container": {}},
    ]
    got = _gang_info_trainer.gang_kinds(facts)
    assert got[("PyTorchJob", "kubeflow.org/v1")] == {"volcano": "training-operator"}
    assert got[("MPIJob", "kubeflow.org/v2beta1")] == {"scheduler_plugins": "mpi-operator"}


def test_gang_info_reads_one_crd_more_when_trainer_is_not_installed():
    client = RecordingClient()
    facts = _gang_info.gather(client, {"partial_threshold_seconds": 60}, 1_800_000_000.0)
    assert [c for c in client.calls if "trainer.kubeflow.org" in c[1] or "kubeflow.org/" in c[1]] == [
        ("GET", TRAINJOB_CRD)
    ]
    assert facts["trainer"] == {"installed": False, "controllers": [], "runtimes": []}


def _established(created="2025-06-01T09:00:00Z"):
    return {
        "metadata": {"creationTimestamp": created},
        "spec": {"versions": [{"name": "v1alpha1", "served": True, "storage": True}]},
        "status": {"conditions": [{"type": "Established", "status": "True"}]},
    }


class TrainerClient(RecordingClient):
    """The cluster above with Trainer: a coscheduling runtime without schedulerName, scheduler-plugins'
    PodGroup CRD created after Trainer's pod started, a TrainJob and a PyTorchJob of one name, and
    training-operator ganging PyTorchJobs on scheduler-plugins."""

    RUNTIME = {
        "metadata": {"name": "torch"},
        "spec": {
            "podGroupPolicy": {"coscheduling": {}},
            "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {}}]}},
        },
    }
    TRAINJOB = {"metadata": {"namespace": "team-a", "name": "llm"}, "spec": {"runtimeRef": {"name": "torch"}}}

    def __init__(self, gang=True):
        super().__init__()
        flag = ["--gang-scheduler-name=gang"] if gang else []
        to = _dep("kubeflow", "training-operator", "kubeflow/training-operator:v1", command=["/manager", *flag])
        self.deployments = [*[d for d in DEPLOYMENTS if d is not TRAINING], to, TRAINER]

    def get_or_none(self, path, what=""):
        if path == TRAINJOB_CRD:
            self.calls.append(("GET", path))
            return _established()
        if path.endswith("/podgroups.scheduling.x-k8s.io"):
            self.calls.append(("GET", path))
            return _established(created="2025-06-01T10:30:00Z")
        return super().get_or_none(path, what)

    def list(self, path, what="", **query):
        if path == "/apis/apps/v1/deployments":
            self.calls.append(("LIST", path))
            return self.deployments
        if path == "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes":
            self.calls.append(("LIST", path))
            return [copy.deepcopy(self.RUNTIME)]
        if path == "/api/v1/namespaces/kube-system/pods":  # no Coscheduling in the default scheduler
            self.calls.append(("LIST", path))
            return []
        return super().list(path, what, **query)

    list_or_empty = list

    def scan(self, path, what="", keep=None, **query):
        self.calls.append(("LIST", path))
        items = {
            "/api/v1/pods": [_pod("ml", "trainer-1", {"app": "trainer"}, start="2025-06-01T10:00:00Z")],
            "/apis/trainer.kubeflow.org/v1alpha1/trainjobs": [self.TRAINJOB],
            "/apis/kubeflow.org/v1/pytorchjobs": [{"metadata": {"namespace": "team-a", "name": "llm"}}],
        }.get(path, [])
        return [keep(i) if keep else i for i in items]


def test_gang_info_reports_trainers_facts_and_problems_with_a_few_lists():
    client = TrainerClient()
    facts = _gang_info.gather(client, {"partial_threshold_seconds": 60}, 1_800_000_000.0)
    trainer_calls = [c for c in client.calls if "kubeflow.org/" in c[1] or "trainer.kubeflow.org" in c[1]]
    job_lists = [c for c in trainer_calls if c[1].startswith("/apis/kubeflow.org/")]
    assert trainer_calls[:4] == [
        ("GET", TRAINJOB_CRD),
        ("LIST", "/apis/trainer.kubeflow.org/v1alpha1/trainingruntimes"),
        ("LIST", "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes"),
        ("LIST", "/apis/trainer.kubeflow.org/v1alpha1/trainjobs"),
    ]
    # one list per job kind training-operator gangs on scheduler-plugins, nothing per object
    assert len(job_lists) == 6 and len(set(job_lists)) == 6 and len(trainer_calls) == 10, trainer_calls
    assert client.calls.count(DEPLOYMENT_LIST) == 1
    t = facts["trainer"]
    assert t["installed"] is True
    assert t["controllers"] == [
        {
            "deployment": "ml/trainer",
            "container": "trainer",
            "image": TRAINER_IMAGE,
            "version": "v2.2.0",
            "ready": True,
            "started": "2025-06-01T10:00:00Z",
        }
    ]
    assert t["runtimes"] == [
        {
            "kind": "ClusterTrainingRuntime",
            "namespace": None,
            "name": "torch",
            "gang_policy": "coscheduling",
            "scheduler_names": {"node": None},
            "gang_ready": False,
        }
    ]
    objects = [p["object"] for p in facts["problems"]]
    assert "ClusterTrainingRuntime torch" in objects
    assert "Deployment ml/trainer" in objects
    assert "TrainJob team-a/llm" in objects
    assert facts["podgroup_crds"]["podgroups.scheduling.x-k8s.io"]["created"] == "2025-06-01T10:30:00Z"


def test_gang_info_lists_no_v1_jobs_when_no_operator_gangs_them_on_scheduler_plugins():
    client = TrainerClient(gang=False)
    facts = _gang_info.gather(client, {"partial_threshold_seconds": 60}, 1_800_000_000.0)
    assert [c for c in client.calls if c[1].startswith("/apis/kubeflow.org/")] == []
    assert "TrainJob team-a/llm" not in [p["object"] for p in facts["problems"]]
