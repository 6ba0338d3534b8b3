"""operator_gang against the lab: check mode -> real -> idempotent -> idempotent in check mode, with
diff; the check-mode result equals the real one; a training-operator really restarted with the flag
creates PodGroups; the seed's wrong scheduler-plugins name is fixed from what runs; bad inputs fail
with a message naming the object and change nothing."""

from __future__ import annotations

import copy

import pytest
from kubernetes import client as k
from lab_ansible import comparable, run_module
from lab_objects import operator_like

from lab import kube, scenarios


def _container(api, ns, name, container=None):
    dep = k.AppsV1Api(api).read_namespaced_deployment(name, ns)
    cs = dep.spec.template.spec.containers
    c = next(c for c in cs if c.name == (container or name))
    return dep, c


@pytest.fixture(scope="module")
def training_operator(volcano):
    scenarios.install_training_operator(volcano, gang_flag=None)
    return volcano


def test_check_real_idempotent_sequence_on_training_operator(training_operator, api):
    args = {"operator": "training_operator", "gang_scheduler": "volcano", "wait": True, "wait_timeout": 90}
    dep0, _ = _container(api, "kubeflow", "training-operator")

    check = run_module(training_operator, "operator_gang", args, check=True)
    assert check["changed"] is True, check
    assert check["diff"]["before"]["command"] == ["/manager", "--enable-scheme=pytorchjob"], check["diff"]
    dep1, c1 = _container(api, "kubeflow", "training-operator")
    assert dep1.metadata.generation == dep0.metadata.generation, "check mode changed the Deployment"
    assert "--gang-scheduler-name=volcano" not in c1.command

    real = run_module(training_operator, "operator_gang", args)
    assert real["changed"] is True, real
    assert comparable(real) == comparable(check), "check-mode result differs from the real run"
    _, c2 = _container(api, "kubeflow", "training-operator")
    assert c2.command == ["/manager", "--enable-scheme=pytorchjob", "--gang-scheduler-name=volcano"]
    assert real["flag"] == "--gang-scheduler-name=volcano" and real["previous"] is None

    again = run_module(training_operator, "operator_gang", args)
    assert again["changed"] is False and "diff" not in again or again["diff"]["before"] == again["diff"]["after"]
    again_check = run_module(training_operator, "operator_gang", args, check=True)
    assert again_check["changed"] is False
    assert comparable(again_check) == comparable(again)


def test_restarted_training_operator_creates_a_volcano_podgroup(training_operator, api, namespace):
    run_module(
        training_operator, "operator_gang", {"operator": "training_operator", "gang_scheduler": "volcano", "wait": True}
    )
    kube.apply(training_operator, [scenarios.pytorchjob(namespace, "pj", workers=1)])
    co = k.CustomObjectsApi(api)
    pg = kube.wait_for(
        lambda: next(
            iter(co.list_namespaced_custom_object("scheduling.volcano.sh", "v1beta1", namespace, "podgroups")["items"]),
            None,
        ),
        60,
        "a Volcano PodGroup for the PyTorchJob",
    )
    assert pg["metadata"]["name"] == "pj"
    assert pg["spec"]["minMember"] == 2


def test_duplicates_and_space_form_collapse_to_one_in_place(lab, api, namespace):
    dep = operator_like(
        namespace,
        "op",
        command=["/manager", "--gang-scheduler-name", "scheduler-plugins", "--v=2", "-gang-scheduler-name=old"],
    )
    kube.apply(lab, [dep])
    res = run_module(
        lab,
        "operator_gang",
        {
            "operator": "training_operator",
            "gang_scheduler": "volcano",
            "namespace": namespace,
            "name": "op",
            "wait": True,
        },
    )
    assert res["changed"] is True and res["occurrences_before"] == 2 and res["previous"] == "old", res
    _, c = _container(api, namespace, "op")
    assert c.command == ["/manager", "--gang-scheduler-name", "volcano", "--v=2"]
    assert (
        run_module(
            lab,
            "operator_gang",
            {"operator": "training_operator", "gang_scheduler": "volcano", "namespace": namespace, "name": "op"},
        )["changed"]
        is False
    )


def test_mpi_operator_flag_goes_to_args_and_none_removes_it(lab, volcano, api, namespace):
    kube.apply(
        lab,
        [
            operator_like(
                namespace, "mpi-operator", command=["/opt/mpi-operator"], args=["--lock-namespace=mpi-operator"]
            )
        ],
    )
    base = {"operator": "mpi_operator", "namespace": namespace}
    res = run_module(lab, "operator_gang", {**base, "gang_scheduler": "volcano"})
    assert res["changed"] and res["args"] == ["--lock-namespace=mpi-operator", "--gang-scheduling=volcano"], res
    _, c = _container(api, namespace, "mpi-operator")
    assert c.command == ["/opt/mpi-operator"] and c.args == res["args"]
    res = run_module(lab, "operator_gang", {**base, "gang_scheduler": "none"})
    assert res["changed"] and res["flag"] is None and res["previous"] == "volcano", res
    _, c = _container(api, namespace, "mpi-operator")
    assert c.args == ["--lock-namespace=mpi-operator"]
    assert run_module(lab, "operator_gang", {**base, "gang_scheduler": "none"})["changed"] is False


def test_seed_scheduler_name_trap_is_fixed_with_the_derived_profile(lab, api, namespace):
    scenarios.install_scheduler_plugins(lab)
    kube.apply(lab, [operator_like(namespace, "to", command=["/manager", "--gang-scheduler-name=scheduler-plugins"])])
    res = run_module(
        lab,
        "operator_gang",
        {"operator": "training_operator", "gang_scheduler": "scheduler_plugins", "namespace": namespace, "name": "to"},
    )
    assert res["changed"] and res["scheduler_name"] == scenarios.SP_NAME, res
    assert res["previous"] == "scheduler-plugins"
    _, c = _container(api, namespace, "to")
    assert c.command == ["/manager", f"--gang-scheduler-name={scenarios.SP_NAME}"]


BAD = [
    ("deployment-missing", {"name": "nope"}, "Deployment {ns}/nope not found"),
    ("namespace-missing", {"namespace": "no-such-ns-x"}, "Deployment no-such-ns-x/op not found"),
    ("container-missing", {"container": "manager"}, "Container 'manager' not found in Deployment {ns}/op"),
    ("volcano-with-other-name", {"scheduler_name": "my-sched"}, "Leave scheduler_name unset"),
    (
        "sp-name-nobody-serves",
        {"gang_scheduler": "scheduler_plugins", "scheduler_name": "nobody-serves-this"},
        "nobody-serves-this",
    ),
    (
        "sp-name-volcano",
        {"gang_scheduler": "scheduler_plugins", "scheduler_name": "volcano"},
        "set gang_scheduler=volcano instead",
    ),
    (
        "tf-operator-with-sp",
        {"operator": "tf_operator", "gang_scheduler": "scheduler_plugins"},
        "use gang_scheduler=volcano",
    ),
    ("unknown-operator", {"operator": "pytorch_operator"}, "value of operator must be one of"),
    ("unknown-gang-scheduler", {"gang_scheduler": "kube-batch"}, "value of gang_scheduler must be one of"),
    (
        "unreachable-api",
        {"host": "https://127.0.0.1:1", "api_key": "not-a-token", "validate_certs": False},
        "Failed to reach the Kubernetes API at https://127.0.0.1:1",
    ),
    # the path is masked in output (kubeconfig is no_log: it may be an inline config with secrets)
    ("kubeconfig-missing", {"kubeconfig": "/nonexistent/kubeconfig"}, "not found or not a file; set kubeconfig"),
    ("forbidden", {"impersonate_user": "system:serviceaccount:default:default"}, "Forbidden to read Deployment"),
    ("unknown-option", {"replicas": 3}, "Unsupported parameters"),
]


@pytest.mark.parametrize("case,override,message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_fails_naming_the_object_and_changes_nothing(lab, volcano, api, namespace, case, override, message):
    kube.apply(lab, [operator_like(namespace, "op", command=["/manager", "--v=2"])])
    if case == "container-missing":
        kube.apply(lab, [operator_like(namespace, "op", command=["/manager", "--v=2"], containers=2)])
    before, _ = _container(api, namespace, "op")
    args = {"operator": "training_operator", "gang_scheduler": "volcano", "namespace": namespace, "name": "op"}
    args.update(copy.deepcopy(override))
    args = {a: v for a, v in args.items() if v is not None}
    env = {"K8S_AUTH_KUBECONFIG": ""} if case == "unreachable-api" else None
    res = run_module(lab, "operator_gang", args, env=env)
    assert res.get("failed") is True, res
    assert message.format(ns=namespace) in res["msg"], res["msg"]
    assert "Traceback" not in res["msg"]
    after, _ = _container(api, namespace, "op")
    assert after.metadata.generation == before.metadata.generation, "a failed task changed the Deployment"
    assert after.spec.template == before.spec.template


def test_shell_wrapped_operator_is_refused(lab, volcano, api, namespace):
    kube.apply(lab, [operator_like(namespace, "op", command=["/bin/sh", "-c", "/manager --gang-scheduler-name=x"])])
    before, _ = _container(api, namespace, "op")
    res = run_module(
        lab,
        "operator_gang",
        {"operator": "training_operator", "gang_scheduler": "volcano", "namespace": namespace, "name": "op"},
    )
    assert res.get("failed") and "through a shell" in res["msg"] and f"{namespace}/op" in res["msg"], res
    after, _ = _container(api, namespace, "op")
    assert after.metadata.generation == before.metadata.generation


def test_original_puts_the_argv_back_and_a_missing_deployment_is_nothing_to_restore(lab, volcano, api, namespace):
    kube.apply(lab, [operator_like(namespace, "op", command=["/manager", "--enable-scheme=tfjob"])])
    base = {"operator": "training_operator", "namespace": namespace, "name": "op"}
    assert run_module(lab, "operator_gang", {**base, "gang_scheduler": "volcano"})["changed"] is True
    back = run_module(lab, "operator_gang", {**base, "gang_scheduler": "original"})
    assert back["changed"] is True and back["flag"] is None, back
    dep, c = _container(api, namespace, "op")
    assert c.command == ["/manager", "--enable-scheme=tfjob"] and c.args is None
    assert "gangsched.kubeflow/original-argv" not in (dep.metadata.annotations or {})
    assert run_module(lab, "operator_gang", {**base, "gang_scheduler": "original"})["changed"] is False
    # an uninstall where the operator never ran: a warning, no change, no failure
    gone = run_module(lab, "operator_gang", {**base, "name": "absent-op", "gang_scheduler": "original"})
    assert gone["changed"] is False and not gone.get("failed"), gone
    assert any("not found: nothing to put back" in w for w in gone.get("warnings", [])), gone
    # any other value still needs the Deployment
    bad = run_module(lab, "operator_gang", {**base, "name": "absent-op", "gang_scheduler": "volcano"})
    assert bad.get("failed") and f"Deployment {namespace}/absent-op not found" in bad["msg"], bad
