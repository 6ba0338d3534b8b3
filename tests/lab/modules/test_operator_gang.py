"""operator_gang against the lab: check mode -> real -> idempotent -> idempotent in check mode, with
diff; the check-mode result equals the real one; a training-operator really restarted with the flag
creates PodGroups; the seed's wrong scheduler-plugins name is fixed from what runs; bad inputs fail
with a message naming the object and change nothing."""

from __future__ import annotations

import copy
import time

import pytest
from ansible_run import comparable, run_module
from kubernetes import client as k
from lab_objects import MPI_OPERATOR_IMAGE, TRAINING_OPERATOR_IMAGE, operator_like

from lab import kube, scenarios


def _container(api, ns, name, container=None):
    dep = k.AppsV1Api(api).read_namespaced_deployment(name, ns)
    cs = dep.spec.template.spec.containers
    c = next(c for c in cs if c.name == (container or name))
    return dep, c


def _settled(api, ns, name):
    """The Deployment once its rollout is done and its status stopped changing: from then on its
    resourceVersion moves only when someone writes it."""

    def stable():
        a = k.AppsV1Api(api).read_namespaced_deployment(name, ns)
        if a.status.observed_generation != a.metadata.generation or not a.status.available_replicas:
            return None
        time.sleep(2)
        b = k.AppsV1Api(api).read_namespaced_deployment(name, ns)
        return b if b.metadata.resource_version == a.metadata.resource_version else None

    return kube.wait_for(stable, 120, f"Deployment {ns}/{name} rolled out and settled")


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
                namespace,
                "mpi-operator",
                command=["/opt/mpi-operator"],
                args=["--lock-namespace=mpi-operator"],
                image=MPI_OPERATOR_IMAGE,
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
    ("namespace-not-a-name", {"namespace": "Kubeflow"}, "namespace='Kubeflow' is not a valid namespace name"),
    ("name-not-a-name", {"name": "op_1"}, "name='op_1' is not a valid Deployment name"),
    ("container-not-a-name", {"container": "Op"}, "container='Op' is not a valid container name"),
    ("scheduler-name-empty", {"scheduler_name": ""}, "scheduler_name='' is not a valid scheduler"),
    ("expected-image-not-an-image", {"expected_image": "a b"}, "expected_image='a b' is not an image repository"),
    (
        "expected-image-other",
        {"expected_image": "acme/trainer"},
        f"Deployment {{ns}}/op container op runs image '{TRAINING_OPERATOR_IMAGE}', not 'acme/trainer'",
    ),
    ("wait-timeout-negative", {"wait": True, "wait_timeout": -5}, "wait_timeout=-5 with wait=true"),
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


# (id, operator, command/args of the container, the shell the message names)
SHELL_WRAPPED = [
    ("training-sh-c", "training_operator", {"command": ["/bin/sh", "-c", "/manager --x"]}, "/bin/sh -c"),
    (
        "training-sh-script-in-args",
        "training_operator",
        {"command": ["sh"], "args": ["-c", "/manager --enable-scheme=pytorchjob"]},
        "sh -c",
    ),
    (
        "training-bash-lc",
        "training_operator",
        {"command": ["bash", "-lc", "exec /manager --gang-scheduler-name=volcano"]},
        "bash -lc",
    ),
    (
        "training-tini-sh-c",
        "training_operator",
        {"command": ["/usr/bin/tini", "--", "/bin/sh", "-c", "/manager"]},
        "/bin/sh -c",
    ),
    (
        "mpi-sh-c",
        "mpi_operator",
        {"command": ["/bin/sh", "-c", "/opt/mpi-operator --lock-namespace=mpi-operator"]},
        "/bin/sh -c",
    ),
    (
        "mpi-dumb-init-bash-c-in-args",
        "mpi_operator",
        {"command": ["dumb-init", "--"], "args": ["bash", "-c", "/opt/mpi-operator"]},
        "bash -c",
    ),
]


@pytest.mark.parametrize("operator,shape,shell", [c[1:] for c in SHELL_WRAPPED], ids=[c[0] for c in SHELL_WRAPPED])
def test_shell_wrapped_operator_is_refused_with_nothing_changed(lab, volcano, api, namespace, operator, shape, shell):
    """The flag would land outside the script (sh -c "<script>" --flag gives the script $0): refused, in
    check mode too, for every gang_scheduler that edits, and the Deployment keeps its resourceVersion."""
    image = TRAINING_OPERATOR_IMAGE if operator == "training_operator" else MPI_OPERATOR_IMAGE
    kube.apply(lab, [operator_like(namespace, "op", image=image, **shape)])
    before = _settled(api, namespace, "op")
    flag = "--gang-scheduler-name" if operator == "training_operator" else "--gang-scheduling"
    base = {"operator": operator, "namespace": namespace, "name": "op"}
    for gang, check in (("volcano", True), ("volcano", False), ("none", False)):
        res = run_module(lab, "operator_gang", {**base, "gang_scheduler": gang}, check=check)
        assert res.get("failed") is True, res
        msg = res["msg"]
        assert f"Deployment {namespace}/op container op runs its binary through a shell ({shell} <script>)" in msg, msg
        assert f"a {flag} flag added to command/args would land outside the script" in msg, msg
        assert "Put the operator binary in command/args directly" in msg and "nothing was changed" in msg, msg
    after, c = _container(api, namespace, "op")
    assert after.metadata.resource_version == before.metadata.resource_version, "a refused edit changed it"
    assert (c.command, c.args) == (shape.get("command"), shape.get("args"))


def test_tini_around_the_binary_gets_the_flag_after_the_binary(lab, volcano, api, namespace):
    """No shell: tini in command, the operator binary in args. The flag goes into args, after the binary
    (into command it would come before /manager and be read by tini)."""
    kube.apply(lab, [operator_like(namespace, "op", command=["/usr/bin/tini", "--"], args=["/manager", "--v=2"])])
    args = {"operator": "training_operator", "gang_scheduler": "volcano", "namespace": namespace, "name": "op"}
    res = run_module(lab, "operator_gang", args)
    assert res["changed"] is True, res
    _, c = _container(api, namespace, "op")
    assert c.command == ["/usr/bin/tini", "--"]
    assert c.args == ["/manager", "--v=2", "--gang-scheduler-name=volcano"]
    assert run_module(lab, "operator_gang", args)["changed"] is False


def test_image_of_another_program_is_refused_unless_expected(lab, volcano, api, namespace):
    base = {"operator": "training_operator", "gang_scheduler": "volcano", "namespace": namespace, "name": "op"}
    vc = "example.invalid/mirror/volcanosh/vc-scheduler:v1.10.0"
    kube.apply(lab, [operator_like(namespace, "op", command=["/vc-scheduler", "--v=2"], image=vc)])
    before = _settled(api, namespace, "op")
    for check in (True, False):
        res = run_module(lab, "operator_gang", base, check=check)
        assert res.get("failed") is True, res
        assert f"Deployment {namespace}/op container op runs image '{vc}', not training-operator" in res["msg"], res
        assert "set expected_image" in res["msg"] and "nothing was changed" in res["msg"], res
    after, _ = _container(api, namespace, "op")
    assert after.metadata.resource_version == before.metadata.resource_version

    # a build of the operator under a name of its own: refused too, until it is named
    own = "example.invalid/acme/kubeflow-trainer:v1.8.1-acme"
    kube.apply(lab, [operator_like(namespace, "op", command=["/manager"], image=own)])
    before = _settled(api, namespace, "op")
    res = run_module(lab, "operator_gang", base)
    assert res.get("failed") is True and f"runs image '{own}', not training-operator" in res["msg"], res
    res = run_module(lab, "operator_gang", {**base, "expected_image": "acme/other-trainer"})
    assert res.get("failed") is True and "not 'acme/other-trainer' (expected_image)" in res["msg"], res
    after, _ = _container(api, namespace, "op")
    assert after.metadata.resource_version == before.metadata.resource_version
    res = run_module(lab, "operator_gang", {**base, "expected_image": "acme/kubeflow-trainer"})
    assert res["changed"] is True, res
    _, c = _container(api, namespace, "op")
    assert c.command == ["/manager", "--gang-scheduler-name=volcano"]


@pytest.mark.parametrize("wait_timeout", [-5, 0])
def test_bad_wait_timeout_is_refused_before_any_patch(lab, volcano, api, namespace, wait_timeout):
    kube.apply(lab, [operator_like(namespace, "op", command=["/manager"])])
    before = _settled(api, namespace, "op")
    args = {"operator": "training_operator", "gang_scheduler": "volcano", "namespace": namespace, "name": "op"}
    res = run_module(lab, "operator_gang", {**args, "wait": True, "wait_timeout": wait_timeout})
    assert res.get("failed") is True, res
    assert f"wait_timeout={wait_timeout} with wait=true" in res["msg"] and "nothing was changed" in res["msg"], res
    after, c = _container(api, namespace, "op")
    assert after.metadata.resource_version == before.metadata.resource_version
    assert c.command == ["/manager"]


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
