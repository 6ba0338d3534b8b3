"""component_ready's runner: one read each, then again only for what is not ready, until a deadline."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _component_ready

CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
DEP = "/apis/apps/v1/namespaces/vs/deployments/"
DS = "/apis/apps/v1/namespaces/vs/daemonsets/"
MWC = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"


def _crd(ok=True):
    return {"metadata": {"generation": 1}, "status": {"conditions": [{"type": "Established", "status": str(ok)}]}}


def _dep(ok=True):
    st = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1 if ok else 0}
    return {"metadata": {"generation": 1}, "spec": {"replicas": 1}, "status": st}


def _ds(ready=2, want=2):
    return {
        "metadata": {"generation": 1},
        "status": {
            "observedGeneration": 1,
            "desiredNumberScheduled": want,
            "numberReady": ready,
            "updatedNumberScheduled": want,
        },
    }


def _mwc(ca=True):
    return {
        "webhooks": [
            {"name": "a", "clientConfig": {"caBundle": "x" if ca else ""}},
            {"name": "b", "clientConfig": {"caBundle": "y"}},
        ]
    }


class Cluster:
    """Objects by path; ``later`` maps a path to the object it becomes after that many reads of it."""

    def __init__(self, objects, later=None):
        self.objects, self.later, self.reads = dict(objects), later or {}, []

    def get_or_none(self, path, what=""):
        self.reads.append(path)
        if path in self.later and self.reads.count(path) > self.later[path][0]:
            return self.later[path][1]
        return self.objects.get(path)

    def list_or_empty(self, path, what="", labelSelector=None):
        self.reads.append(f"{path}?{labelSelector}")
        key = f"{path}?{labelSelector}"
        if key in self.later and self.reads.count(key) > self.later[key][0]:
            return self.later[key][1]
        return self.objects.get(key, [])

    def list(self, path, what=""):
        self.reads.append(path)
        if path in self.later and self.reads.count(path) > self.later[path][0]:
            return self.later[path][1]
        return self.objects.get(path, [])


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


def params(**over):
    p = {
        "crds": ["a.x.io"],
        "namespace": "vs",
        "deployments": ["sched"],
        "daemonsets": [],
        "mutating_webhook_configurations": ["hooks"],
        "validating_webhook_configurations": [],
        "wait": True,
        "wait_timeout": 10,
    }
    p.update(over)
    return p


def _run(cluster, **over):
    clock = Clock()
    return _component_ready.run(cluster, params(**over), False, print, clock=clock, sleep=clock.sleep), clock


def test_all_ready_is_one_read_each_and_no_wait():
    c = Cluster({CRD + "a.x.io": _crd(), DEP + "sched": _dep(), MWC + "hooks": _mwc()})
    res, clock = _run(c)
    assert "_failed" not in res and res["changed"] is False
    assert res["ready"] == [
        "CustomResourceDefinition a.x.io",
        "Deployment vs/sched",
        "MutatingWebhookConfiguration hooks",
    ]
    assert res["not_ready"] == [] and res["waited_for"] == [] and clock.t == 0
    assert sorted(c.reads) == sorted([CRD + "a.x.io", DEP + "sched", MWC + "hooks"])


def test_only_what_is_not_ready_is_read_again_until_it_is():
    c = Cluster(
        {CRD + "a.x.io": _crd(), DEP + "sched": _dep(ok=False), MWC + "hooks": _mwc(ca=False)},
        later={DEP + "sched": (2, _dep()), MWC + "hooks": (4, _mwc())},
    )
    res, clock = _run(c)
    assert "_failed" not in res, res
    assert res["waited_for"] == ["Deployment vs/sched", "MutatingWebhookConfiguration hooks"]
    assert c.reads.count(CRD + "a.x.io") == 1 and c.reads.count(MWC + "hooks") == 5
    assert res["not_ready"] == [] and 3 <= clock.t <= 5


def test_the_timeout_names_each_object_and_why():
    c = Cluster({CRD + "a.x.io": _crd(False), DEP + "sched": _dep(), MWC + "hooks": _mwc(ca=False)})
    res, clock = _run(c, wait_timeout=3)
    assert res["_failed"].startswith(
        "Timed out after 3s waiting for CustomResourceDefinition a.x.io: not Established yet"
    )
    assert "MutatingWebhookConfiguration hooks: no caBundle yet in a" in res["_failed"]
    assert "raise wait_timeout" in res["_failed"] and clock.t == 3
    assert res["ready"] == ["Deployment vs/sched"]


def test_missing_and_stale_and_daemonsets():
    stale = _dep()
    stale["metadata"]["generation"] = 2  # Available, but for the spec before
    c = Cluster({DEP + "sched": stale, DS + "plugin": _ds(ready=1)})
    res, _ = _run(c, crds=["gone.x.io"], daemonsets=["plugin"], mutating_webhook_configurations=[], wait=False)
    assert "_failed" not in res and res["waited_for"] == []
    assert res["not_ready"] == [
        {"object": "CustomResourceDefinition gone.x.io", "why": "not found"},
        {"object": "Deployment vs/sched", "why": "the controller has not seen the new generation yet"},
        {"object": "DaemonSet vs/plugin", "why": "1 of 2 pods ready, 2 updated"},
    ]


def test_namespaced_kinds_need_the_namespace():
    res, _ = _run(Cluster({}), namespace=None)
    need = (
        "namespace is required with deployments, daemonsets, daemonset_selector, services, service_accounts or secrets;"
        " set it to theirs"
    )
    assert res["_failed"] == need
    only_secrets = {"crds": [], "deployments": [], "mutating_webhook_configurations": [], "secrets": ["s"]}
    res, _ = _run(Cluster({}), namespace=None, **only_secrets)
    assert res["_failed"] == need


def test_a_service_is_ready_with_a_ready_endpoint_in_its_slices():
    slices = "/apis/discovery.k8s.io/v1/namespaces/vs/endpointslices?kubernetes.io/service-name=hooks"
    only = {"crds": [], "deployments": [], "mutating_webhook_configurations": [], "services": ["hooks"]}
    starting = [{"endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": False}}]}]
    res, _ = _run(Cluster({slices: starting}), wait=False, **only)
    assert res["not_ready"] == [{"object": "Service vs/hooks", "why": "no ready endpoint yet"}]
    ready = [{"endpoints": []}, {"endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}]}]
    res, _ = _run(Cluster({slices: ready}), **only)
    assert res["ready"] == ["Service vs/hooks"] and "_failed" not in res


def test_return_objects_gives_each_last_read_found_and_no_service():
    slices = "/apis/discovery.k8s.io/v1/namespaces/vs/endpointslices?kubernetes.io/service-name=web"
    ready_slices = [{"endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}]}]
    c = Cluster(
        {CRD + "a.x.io": _crd(), DEP + "sched": _dep(ok=False), slices: ready_slices},
        later={DEP + "sched": (1, _dep())},
    )
    res, _ = _run(c, crds=["a.x.io", "gone.x.io"], mutating_webhook_configurations=[], services=["web"], wait=False)
    assert "objects" not in res
    res, _ = _run(c, crds=["a.x.io"], mutating_webhook_configurations=[], services=["web"], return_objects=True)
    # the Deployment as read last (ready), not as first read; the Service's slices are not an object of it
    assert res["objects"] == [_crd(), _dep()] and "_failed" not in res
    res, _ = _run(Cluster({}), crds=["gone.x.io"], mutating_webhook_configurations=[], wait=False, return_objects=True)
    assert res["objects"] == [] and res["not_ready"][-1]["why"] == "not found"


def test_namespaces_service_accounts_and_secrets_are_ready_once_they_exist_and_secrets_come_without_data():
    ns, sa, sec = "/api/v1/namespaces/vs", "/api/v1/namespaces/vs/serviceaccounts/op", "/api/v1/namespaces/vs/secrets/"
    secret = {"kind": "Secret", "metadata": {"name": "certs"}, "type": "Opaque", "data": {"tls.key": "c2VjcmV0"}}
    only = {"crds": [], "deployments": [], "mutating_webhook_configurations": []}
    want = {"namespaces": ["vs"], "service_accounts": ["op"], "secrets": ["certs", "gone"]}
    c = Cluster({ns: {"kind": "Namespace"}, sa: {"kind": "ServiceAccount"}, sec + "certs": secret})
    res, clock = _run(c, wait=False, return_objects=True, **only, **want)
    assert res["ready"] == ["Namespace vs", "ServiceAccount vs/op", "Secret vs/certs"], res
    assert res["not_ready"] == [{"object": "Secret vs/gone", "why": "not found"}] and clock.t == 0
    assert res["objects"] == [
        {"kind": "Namespace"},
        {"kind": "ServiceAccount"},
        {"kind": "Secret", "metadata": {"name": "certs"}, "type": "Opaque"},
    ]
    assert secret["data"] == {"tls.key": "c2VjcmV0"}  # the read itself is left as it was
    # waited for: a Secret its controller writes later
    c = Cluster({}, later={sec + "gone": (2, secret)})
    res, clock = _run(c, **only, namespace="vs", secrets=["gone"])
    assert "_failed" not in res and res["waited_for"] == ["Secret vs/gone"] and clock.t == 2


NONE = {"crds": [], "deployments": [], "mutating_webhook_configurations": []}
SEL = "/apis/apps/v1/namespaces/vs/daemonsets?app.kubernetes.io/instance=gpu"
NODES = "/api/v1/nodes"


def _named(name, ds):
    return {**ds, "metadata": {**ds["metadata"], "name": name}}


def _node(gpus):
    return {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "8", "nvidia.com/gpu": str(gpus)}}}


def test_daemonsets_by_label_wait_for_one_to_exist_and_every_one_to_be_ready():
    plugin, mps = _named("gpu-plugin", _ds(ready=0)), _named("gpu-mps", _ds(ready=0, want=0))
    sel = {"daemonset_selector": "app.kubernetes.io/instance=gpu", **NONE}
    res, _ = _run(Cluster({}), wait=False, **sel)
    assert res["not_ready"] == [
        {"object": "DaemonSets vs -l app.kubernetes.io/instance=gpu", "why": "no DaemonSet has the labels yet"}
    ]
    # found at the second read, one not ready (one with nothing desired is: 0 of 0 pods) until the timeout
    res, _ = _run(Cluster({}, later={SEL: (1, [plugin, mps])}), wait_timeout=2, **sel)
    assert (
        "DaemonSets vs -l app.kubernetes.io/instance=gpu: gpu-plugin: 0 of 2 pods ready, 2 updated." in res["_failed"]
    )
    # ready at the fourth read: the objects as one DaemonSetList
    done = [_named("gpu-plugin", _ds()), mps]
    res, clock = _run(Cluster({}, later={SEL: (3, done)}), return_objects=True, **sel)
    assert "_failed" not in res and res["ready"] == ["DaemonSets vs -l app.kubernetes.io/instance=gpu"]
    assert res["objects"] == [{"apiVersion": "apps/v1", "kind": "DaemonSetList", "items": done}] and clock.t == 3
    res, _ = _run(Cluster({}), namespace=None, **sel)
    assert res["_failed"].startswith("namespace is required with")


def test_allocatable_adds_up_over_the_nodes_and_waits_until_it_reaches_the_number():
    c = Cluster({NODES: [_node(0), _node(0)]}, later={NODES: (2, [_node(1), _node(1)])})
    res, clock = _run(c, allocatable={"nvidia.com/gpu": 2}, **NONE)
    assert "_failed" not in res and res["ready"] == ["Nodes' allocatable nvidia.com/gpu"]
    assert res["waited_for"] == ["Nodes' allocatable nvidia.com/gpu"] and clock.t == 2
    res, _ = _run(Cluster({NODES: [_node(1), _node(0)]}), allocatable={"nvidia.com/gpu": 2}, wait_timeout=3, **NONE)
    assert "Nodes' allocatable nvidia.com/gpu: 1 allocatable on 2 node(s), 2 wanted" in res["_failed"]
    assert "objects" not in _run(Cluster({NODES: [_node(2)]}), allocatable={"nvidia.com/gpu": "2"}, **NONE)[0]
    res, _ = _run(Cluster({NODES: [_node(2)]}), allocatable={"nvidia.com/gpu": "two"}, **NONE)
    assert (
        res["_failed"]
        == "allocatable.nvidia.com/gpu must be a whole number (got 'two'); set it to the nodes' total wanted"
    )


def test_a_large_cluster_s_nodes_are_listed_again_at_most_every_nodes_per_100_seconds():
    many = [_node(0)] * 500
    c = Cluster({NODES: many}, later={NODES: (3, [_node(1)] * 500)})
    res, clock = _run(c, allocatable={"nvidia.com/gpu": 500}, wait_timeout=60, **NONE)
    assert "_failed" not in res
    # 500 nodes: listed at 0, 5, 10 and 15 s (ready at the fourth list), not once a second
    assert c.reads.count(NODES) == 4 and clock.t == 15
