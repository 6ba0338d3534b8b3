"""gang_info's check of the running components' gang rights (_gang_info_rights): SubjectAccessReviews as each
operator's and gang scheduler's own ServiceAccount, for the rights on its PodGroups' group without which its gangs do
not form; one problem per component that lacks any, naming them and gang_rbac's arguments; nothing where all are
allowed, where nothing points at a PodGroup path, or for a static-pod scheduler."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import Forbidden
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _gang_info_rights

OPS = [{"operator": "training_operator", "deployment": "kubeflow/training-operator", "gang_value": "volcano"}]
SCHEDULERS = [
    {
        "kind": "volcano",
        "source": "Deployment",
        "namespace": "volcano-system",
        "name": "volcano-scheduler",
        "ready": True,
        "scheduler_names": ["volcano"],
        "gang_profiles": ["volcano"],
    },
    {
        "kind": "scheduler_plugins",
        "source": "Pod",
        "namespace": "kube-system",
        "name": "kube-scheduler-cp",
        "ready": True,
        "scheduler_names": ["default-scheduler"],
        "gang_profiles": ["default-scheduler"],
    },
]


def _dep(ns, name, sa):
    return {"metadata": {"namespace": ns, "name": name}, "spec": {"template": {"spec": {"serviceAccountName": sa}}}}


DEPLOYMENTS = [
    _dep("kubeflow", "training-operator", "training-operator"),
    _dep("volcano-system", "volcano-scheduler", "volcano-scheduler"),
]


class _Client:
    """Answers SubjectAccessReviews: allowed unless (user, verb, resource[/sub]) is in ``denied``."""

    def __init__(self, denied=(), forbidden=False):
        self.denied, self.forbidden, self.reviews = set(denied), forbidden, []

    def request(self, method, path, body=None, what="", **kw):
        assert method == "POST" and path.endswith("/subjectaccessreviews")
        if self.forbidden:
            raise Forbidden("subjectaccessreviews.authorization.k8s.io is forbidden", status=403)
        spec = body["spec"]
        attrs = spec["resourceAttributes"]
        res = attrs["resource"] + (f"/{attrs['subresource']}" if attrs.get("subresource") else "")
        self.reviews.append((spec["user"], attrs["verb"], attrs["group"], res))
        return {"status": {"allowed": (spec["user"].rsplit(":", 1)[1], attrs["verb"], res) not in self.denied}}


def test_all_rights_allowed_names_nothing_and_asks_only_the_gang_rights():
    client = _Client()
    assert _gang_info_rights.rights_problems(client, OPS, SCHEDULERS, DEPLOYMENTS) == []
    operator = sorted(v for u, v, g, r in client.reviews if u.endswith(":training-operator"))
    assert operator == ["create", "list", "watch"]
    assert all(g == "scheduling.volcano.sh" for u, v, g, r in client.reviews if u.endswith(":training-operator"))
    sched = {(v, r) for u, v, g, r in client.reviews if u.endswith(":volcano-scheduler")}
    # what Volcano's own chart grants vc-scheduler: no get, no status (its PodGroup CRD has no status subresource)
    assert sched == {("list", "podgroups"), ("watch", "podgroups"), ("update", "podgroups"), ("create", "pods/binding")}
    # the static kube-scheduler runs as a user of its own: not asked
    assert not any("kube-scheduler" in u for u, *_ in client.reviews)


def test_an_operator_and_a_scheduler_without_their_rights_are_named_with_gang_rbacs_arguments():
    client = _Client(
        denied={("training-operator", "create", "podgroups"), ("volcano-scheduler", "create", "pods/binding")}
    )
    op, sched = _gang_info_rights.rights_problems(client, OPS, SCHEDULERS, DEPLOYMENTS)
    assert op["object"] == "Deployment kubeflow/training-operator"
    assert "ServiceAccount kubeflow/training-operator may not create scheduling.volcano.sh/podgroups" in op["message"]
    assert "component: training_operator, gang_scheduler: volcano" in op["fix"]
    assert "service_account: {namespace: kubeflow, name: training-operator}" in op["fix"]
    assert sched["object"] == "Deployment volcano-system/volcano-scheduler"
    assert "may not create core/pods/binding" in sched["message"] and "stay Pending" in sched["message"]


def test_no_right_to_review_is_said_once_and_no_gang_path_asks_nothing():
    (p,) = _gang_info_rights.rights_problems(_Client(forbidden=True), OPS, SCHEDULERS, DEPLOYMENTS)
    assert p["object"] == "SubjectAccessReviews" and "not checked" in p["message"]
    client = _Client()
    unset = [{**OPS[0], "gang_value": None}]
    assert _gang_info_rights.rights_problems(client, unset, SCHEDULERS[1:], DEPLOYMENTS) == []
    assert client.reviews == []


def test_a_volcano_scheduler_from_1_12_on_must_watch_hypernodes():
    """vc-scheduler v1.15 waits at its start until it has listed HyperNodes: without the right it schedules nothing.
    Asked of a release from v1.12 on, not of v1.10."""
    newer = [{**SCHEDULERS[0], "version": "v1.15.1"}]
    client = _Client(denied={("volcano-scheduler", "list", "hypernodes")})
    (p,) = _gang_info_rights.rights_problems(client, [], newer, DEPLOYMENTS)
    assert "may not list topology.volcano.sh/hypernodes" in p["message"], p
    older = [{**SCHEDULERS[0], "version": "v1.10.0"}]
    client = _Client(denied={("volcano-scheduler", "list", "hypernodes")})
    assert _gang_info_rights.rights_problems(client, [], older, DEPLOYMENTS) == []
    assert not any(r == "hypernodes" for *_x, r in client.reviews)
