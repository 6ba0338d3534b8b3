"""Edits operator_gang and gang_rbac refuse before any write: a shell-wrapped entrypoint (the flag would
land outside the script), a container that is not the named operator's, malformed names and numbers,
wildcard rules. Each refusal names the option or object, and the fake client shows nothing was sent."""

from __future__ import annotations

import copy

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _flags, _images, _operators, _rbac
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError, NotFound
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _gang_rbac, _operator_gang

F = "gang-scheduler-name"
WHAT = "Deployment kubeflow/training-operator container training-operator"
DIGEST = "sha256:" + "0123456789abcdef" * 4

# (id, command, args, the shell the message names)
SHELL_WRAPPED = [
    ("sh-c", ["sh", "-c", "/manager --enable-scheme=pytorchjob"], None, "sh -c"),
    ("sh-then-c-script-in-args", ["sh"], ["-c", "/manager --x"], "sh -c"),
    ("bin-sh-in-command-script-in-args", ["/bin/sh"], ["-c", "/manager --x"], "/bin/sh -c"),
    ("bash-lc", ["bash", "-lc", "/manager --x"], None, "bash -lc"),
    ("bin-sh-ec", ["/bin/sh", "-ec", "exec /manager"], None, "/bin/sh -ec"),
    ("bash-xec", ["/usr/bin/bash", "-x", "-e", "-c", "exec /manager"], None, "/usr/bin/bash -x -e -c"),
    ("bash-o-pipefail-c", ["bash", "-o", "pipefail", "-c", "/manager"], None, "bash -o pipefail -c"),
    ("bash-login-c", ["bash", "--login", "-c", "/manager"], None, "bash --login -c"),
    ("dash-c", ["dash", "-c", "/manager"], None, "dash -c"),
    ("ash-c", ["/bin/ash", "-c", "/manager"], None, "/bin/ash -c"),
    ("zsh-c", ["zsh", "-c", "/manager"], None, "zsh -c"),
    ("ksh-c", ["ksh", "-c", "/manager"], None, "ksh -c"),
    ("busybox-sh-c", ["busybox", "sh", "-c", "/manager --x"], None, "busybox sh -c"),
    ("tini-dashdash-sh-c", ["tini", "--", "sh", "-c", "/manager"], None, "sh -c"),
    ("tini-options-sh-c", ["/sbin/tini", "-s", "-p", "SIGTERM", "--", "/bin/sh", "-c", "/manager"], None, "/bin/sh -c"),
    ("dumb-init-bash-c", ["dumb-init", "--", "bash", "-c", "/manager"], None, "bash -c"),
    ("dumb-init-rewrite-sh-c", ["dumb-init", "-r", "15:2", "sh", "-c", "/manager"], None, "sh -c"),
    ("dumb-init-single-child-dash-c", ["dumb-init", "-c", "sh", "-c", "/manager"], None, "sh -c"),
    ("catatonit-bash-c", ["catatonit", "--", "bash", "-c", "/manager"], None, "bash -c"),
    ("s6-init-sh-c", ["/init", "sh", "-c", "/manager"], None, "sh -c"),
    ("s6-init-with-contenv-bash-c", ["/init", "with-contenv", "bash", "-c", "/manager"], None, "bash -c"),
    ("nice-n-sh-c", ["nice", "-n", "5", "sh", "-c", "/manager"], None, "sh -c"),
    ("env-var-sh-c", ["env", "FOO=1", "sh", "-c", "/manager"], None, "sh -c"),
    ("usr-bin-env-bash-c", ["/usr/bin/env", "-i", "PATH=/bin", "bash", "-c", "/manager"], None, "bash -c"),
    ("env-split-string", ["/usr/bin/env", "-S", "sh -c '/manager --x'"], None, "sh -c"),
    ("gosu-user-sh-c", ["gosu", "nobody", "sh", "-c", "/manager"], None, "sh -c"),
    ("wrapper-in-command-shell-in-args", ["tini", "--"], ["sh", "-c", "/manager"], "sh -c"),
    ("no-command-shell-in-args", None, ["/bin/bash", "-c", "/manager"], "/bin/bash -c"),
    ("no-command-wrapper-and-shell-in-args", None, ["dumb-init", "--", "sh", "-c", "/manager"], "sh -c"),
]


@pytest.mark.parametrize("command,args,shell", [c[1:] for c in SHELL_WRAPPED], ids=[c[0] for c in SHELL_WRAPPED])
def test_shell_wrapped_entrypoint_is_refused_for_set_and_remove(command, args, shell):
    ep = _flags.entrypoint(command, args)
    assert ep.shell == shell and ep.script, ep
    for edit in (
        lambda: _flags.set_flag(command, args, F, "volcano", "command", what=WHAT),
        lambda: _flags.set_flag(command, args, "gang-scheduling", "volcano", "args", what=WHAT),
        lambda: _flags.remove_flag(command, args, F, what=WHAT),
    ):
        with pytest.raises(GangError) as e:
            edit()
        msg = e.value.msg
        assert WHAT in msg and f"({shell} <script>)" in msg, msg
        assert "would land outside the script" in msg and "through a shell" in msg, msg
        assert "operator binary in command/args directly" in msg and "nothing was changed" in msg, msg


@pytest.mark.parametrize(
    "command,args",
    [
        (["sh", "/entrypoint.sh"], ["--x"]),
        (["/bin/bash", "-e", "/opt/run.sh"], None),
        (["tini", "--", "sh", "run.sh"], None),
    ],
    ids=["sh-script-file", "bash-e-script-file", "tini-sh-script-file"],
)
def test_shell_running_a_script_file_is_refused(command, args):
    with pytest.raises(GangError, match="runs a shell script .* may never pass it on to the operator"):
        _flags.set_flag(command, args, F, "volcano", what=WHAT)


@pytest.mark.parametrize(
    "command,args",
    [(["tini", "--"], None), (["/usr/bin/env", "FOO=1"], None), (["dumb-init"], [])],
    ids=["tini-alone", "env-alone", "dumb-init-alone"],
)
def test_wrapper_without_a_program_is_refused(command, args):
    with pytest.raises(GangError, match="with no program after it"):
        _flags.set_flag(command, args, F, "volcano", what=WHAT)


# (id, command, args, prefer, expected command, expected args): the flag lands after the operator binary
NOT_WRAPPED = [
    ("plain-binary-in-command", ["/manager"], None, "command", ["/manager", "--gang-scheduler-name=v"], None),
    (
        "binary-in-args-image-entrypoint",
        None,
        ["/manager", "--x"],
        "command",
        None,
        ["/manager", "--x", "--gang-scheduler-name=v"],
    ),
    (
        "mpi-binary-in-command-flags-in-args",
        ["/opt/mpi-operator"],
        ["--lock-namespace=m"],
        "args",
        ["/opt/mpi-operator"],
        ["--lock-namespace=m", "--gang-scheduler-name=v"],
    ),
    (
        "tini-around-binary",
        ["tini", "--", "/manager"],
        None,
        "command",
        ["tini", "--", "/manager", "--gang-scheduler-name=v"],
        None,
    ),
    (
        "tini-in-command-binary-in-args",
        ["/usr/bin/tini", "--"],
        ["/manager", "--x"],
        "command",
        ["/usr/bin/tini", "--"],
        ["/manager", "--x", "--gang-scheduler-name=v"],
    ),
    (
        "dumb-init-around-binary",
        ["dumb-init", "/manager"],
        None,
        "command",
        ["dumb-init", "/manager", "--gang-scheduler-name=v"],
        None,
    ),
    (
        "env-around-binary",
        ["env", "GOMAXPROCS=2", "/manager"],
        None,
        "command",
        ["env", "GOMAXPROCS=2", "/manager", "--gang-scheduler-name=v"],
        None,
    ),
    (
        "operator-flag-c-is-not-a-shell",
        ["/manager", "-c", "/etc/config.yaml"],
        None,
        "command",
        ["/manager", "-c", "/etc/config.yaml", "--gang-scheduler-name=v"],
        None,
    ),
    (
        "binary-named-like-a-shell-prefix",
        ["/usr/local/bin/shell-operator", "-c", "x"],
        None,
        "command",
        ["/usr/local/bin/shell-operator", "-c", "x", "--gang-scheduler-name=v"],
        None,
    ),
    (
        "busybox-applet-not-a-shell",
        ["busybox", "/manager"],
        None,
        "command",
        ["busybox", "/manager", "--gang-scheduler-name=v"],
        None,
    ),
    (
        "existing-flag-after-tini-replaced-in-place",
        ["tini", "--", "/manager", "--gang-scheduler-name=old"],
        None,
        "command",
        ["tini", "--", "/manager", "--gang-scheduler-name=v"],
        None,
    ),
]


@pytest.mark.parametrize(
    "command,args,prefer,want_cmd,want_args", [c[1:] for c in NOT_WRAPPED], ids=[c[0] for c in NOT_WRAPPED]
)
def test_no_shell_the_flag_lands_after_the_operator_binary(command, args, prefer, want_cmd, want_args):
    ep = _flags.entrypoint(command, args)
    assert ep.shell is None, ep
    s = _flags.set_flag(command, args, F, "v", prefer, what=WHAT)
    assert (s.command, s.args) == (want_cmd, want_args)
    argv = (s.command or []) + (s.args or [])
    if ep.program is not None:
        assert argv.index("--gang-scheduler-name=v") > ep.program
    assert not _flags.set_flag(s.command, s.args, F, "v", prefer, what=WHAT).changed
    gone = _flags.remove_flag(s.command, s.args, F, what=WHAT)
    assert "--gang-scheduler-name=v" not in (gone.command or []) + (gone.args or [])


# ---- images -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "operator,image",
    [
        ("training_operator", "kubeflow/training-operator:v1-855e096"),
        ("training_operator", "docker.io/kubeflow/training-operator:v1.8.1"),
        ("training_operator", f"kubeflow/training-operator@{DIGEST}"),
        ("training_operator", f"registry.corp.example:5000/mirror/kubeflow/training-operator:v1.8.1@{DIGEST}"),
        ("training_operator", "localhost:5000/training-operator"),
        ("training_operator", "harbor.example.com/proxy-cache/kubeflow/training-operator:latest"),
        ("mpi_operator", "mpioperator/mpi-operator:0.6.0"),
        ("mpi_operator", "ghcr.io/acme/mirror/mpi-operator:0.6.0"),
        ("mpi_operator", "kubeflow/mpi-operator:v0.3.0"),
        ("tf_operator", "gcr.io/kubeflow-images-public/tf_operator:v0.5.0"),
        ("tf_operator", "kubeflow/tf-operator:v1.1.0"),
    ],
)
def test_operator_image_matches_under_any_registry_mirror_tag_or_digest(operator, image):
    assert _images.image_matches(image, _operators.OPERATORS[operator]["images"])
    _operator_gang.check_image(operator, {"image": image}, None, WHAT)


@pytest.mark.parametrize(
    "operator,image",
    [
        ("training_operator", "volcanosh/vc-scheduler:v1.10.0"),
        ("training_operator", "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.33.5"),
        ("training_operator", "mpioperator/mpi-operator:0.6.0"),
        ("training_operator", "kubeflow/training-operator-proxy:v1"),
        ("training_operator", "acme/my-training-operator:v1"),
        ("training_operator", "training-operator.example.com/kubeflow/trainer:v1"),
        ("training_operator", ""),
        ("training_operator", None),
        ("mpi_operator", "kubeflow/training-operator:v1-855e096"),
        ("tf_operator", "kubeflow/training-operator:v1-855e096"),
    ],
)
def test_another_image_is_refused_naming_the_container_and_the_override(operator, image):
    assert not _images.image_matches(image, _operators.OPERATORS[operator]["images"])
    with pytest.raises(GangError) as e:
        _operator_gang.check_image(operator, {"image": image}, None, WHAT)
    msg = e.value.msg
    assert WHAT in msg and repr(image) in msg and "set expected_image" in msg and "nothing was changed" in msg, msg


@pytest.mark.parametrize(
    "expected,image,ok",
    [
        ("mycorp/trainer", "registry.example.com:5000/mirror/mycorp/trainer:v1", True),
        ("mycorp/trainer", f"mycorp/trainer@{DIGEST}", True),
        ("registry.example.com/mycorp/trainer:v1", "other.example.com/mycorp/trainer:v9", True),
        ("trainer", "quay.io/x/trainer", True),
        ("mycorp/trainer", "quay.io/othercorp/trainer:v1", False),
        ("mycorp/trainer", "trainer:v1", False),
        ("mycorp/trainer", "kubeflow/training-operator:v1", False),
    ],
)
def test_expected_image_overrides_the_operator_name(expected, image, ok):
    assert _images.image_matches(image, (expected,)) is ok
    if ok:
        _operator_gang.check_image("training_operator", {"image": image}, expected, WHAT)
    else:
        with pytest.raises(GangError, match=r"not .* \(expected_image\)"):
            _operator_gang.check_image("training_operator", {"image": image}, expected, WHAT)


# ---- operator_gang: refused before any write ---------------------------------------------------------
class RecordingClient:
    """Serves one Deployment to GETs; any other call is recorded (and a write fails the test)."""

    def __init__(self, dep: dict | None):
        self.dep = dep
        self.calls: list[tuple[str, str]] = []

    def get(self, path, what=""):
        self.calls.append(("GET", path))
        if self.dep is None:
            raise NotFound(f"{what} not found", 404)
        return copy.deepcopy(self.dep)

    def get_or_none(self, path, what=""):
        self.calls.append(("GET", path))
        return None

    def list(self, path, what="", **_):
        self.calls.append(("LIST", path))
        return []

    def request(self, method, path, **_):
        self.calls.append((method, path))
        raise AssertionError(f"unexpected {method} {path}")


def _deployment(image="kubeflow/training-operator:v1-855e096", command=("/manager",), args=None) -> dict:
    c = {"name": "training-operator", "image": image, "command": list(command)}
    if args is not None:
        c["args"] = list(args)
    return {
        "metadata": {"namespace": "kubeflow", "name": "training-operator", "resourceVersion": "7"},
        "spec": {"template": {"spec": {"containers": [c]}}},
    }


BASE = {"operator": "training_operator", "gang_scheduler": "volcano", "wait": False, "wait_timeout": 120}
DEP = "/apis/apps/v1/namespaces/kubeflow/deployments/training-operator"

# (id, options, deployment or None for "no API call at all", text the message must hold)
OPERATOR_GANG_BAD = [
    ("namespace-upper-case", {"namespace": "Kubeflow"}, None, "namespace='Kubeflow' is not a valid namespace name"),
    ("namespace-too-long", {"namespace": "n" * 64}, None, "is not a valid namespace name"),
    ("namespace-with-dot", {"namespace": "kube.flow"}, None, "namespace='kube.flow'"),
    ("name-underscore", {"name": "training_operator"}, None, "name='training_operator' is not a valid Deployment"),
    ("name-path-traversal", {"name": "../../secrets/x"}, None, "name='../../secrets/x'"),
    ("container-upper-case", {"container": "Manager"}, None, "container='Manager' is not a valid container name"),
    ("container-with-space", {"container": "train op"}, None, "container='train op'"),
    ("scheduler-name-empty", {"scheduler_name": ""}, None, "scheduler_name='' is not a valid scheduler"),
    ("scheduler-name-spaces", {"scheduler_name": "my sched"}, None, "scheduler_name='my sched'"),
    ("wait-timeout-negative", {"wait": True, "wait_timeout": -5}, None, "wait_timeout=-5 with wait=true"),
    ("wait-timeout-zero", {"wait": True, "wait_timeout": 0}, None, "wait_timeout=0 with wait=true"),
    ("expected-image-blank", {"expected_image": ""}, None, "expected_image='' is not an image repository"),
    ("expected-image-spaces", {"expected_image": "my corp/x"}, None, "expected_image='my corp/x'"),
    (
        "image-mismatch",
        {},
        _deployment(image="volcanosh/vc-scheduler:v1.10.0"),
        "runs image 'volcanosh/vc-scheduler:v1.10.0', not training-operator",
    ),
    (
        "expected-image-mismatch",
        {"expected_image": "mycorp/trainer"},
        _deployment(),
        "not 'mycorp/trainer' (expected_image)",
    ),
    (
        "shell-wrapped-command",
        {},
        _deployment(command=["/bin/sh"], args=["-c", "/manager --x"]),
        "(/bin/sh -c <script>)",
    ),
    (
        "shell-wrapped-gang-none",
        {"gang_scheduler": "none"},
        _deployment(command=["bash", "-lc", "/manager --gang-scheduler-name=volcano"]),
        "(bash -lc <script>)",
    ),
    (
        "tini-sh-mpi",
        {
            "operator": "mpi_operator",
            "namespace": "kubeflow",
            "name": "training-operator",
            "container": "training-operator",
        },
        _deployment(
            image="mpioperator/mpi-operator:0.6.0", command=["tini", "--"], args=["sh", "-c", "/opt/mpi-operator"]
        ),
        "--gang-scheduling flag added to command/args would land outside the script",
    ),
]


@pytest.mark.parametrize(
    "options,dep,message", [c[1:] for c in OPERATOR_GANG_BAD], ids=[c[0] for c in OPERATOR_GANG_BAD]
)
def test_operator_gang_refuses_before_any_write(options, dep, message):
    client = RecordingClient(dep if dep is not None else _deployment())
    warnings: list[str] = []
    with pytest.raises(GangError) as e:
        _operator_gang.run(client, {**BASE, **options}, False, warnings.append)
    assert message in e.value.msg, e.value.msg
    assert "nothing was changed" in e.value.msg, e.value.msg
    if dep is None:
        assert client.calls == [], "a malformed option reached the API"
    else:
        assert client.calls == [("GET", DEP)], client.calls  # read the Deployment, nothing else
        assert "Deployment kubeflow/training-operator container training-operator" in e.value.msg


def test_wait_timeout_is_not_checked_without_wait():
    _operator_gang.validate({**BASE, "wait": False, "wait_timeout": -5})


def test_original_does_not_check_image_or_shell():
    """gang_scheduler=original only puts back a recorded argv: no record, no change, no refusal."""
    client = RecordingClient(_deployment(image="volcanosh/vc-scheduler:v1", command=["sh", "-c", "x"]))
    warnings: list[str] = []
    res = _operator_gang.run(client, {**BASE, "gang_scheduler": "original"}, False, warnings.append)
    assert res["changed"] is False and any("nothing to put back" in w for w in warnings)


# ---- gang_rbac: wildcards and malformed rules -------------------------------------------------------
@pytest.mark.parametrize(
    "rule,wild",
    [
        ({"apiGroups": ["*"], "resources": ["pods"], "verbs": ["get"]}, True),
        ({"apiGroups": [""], "resources": ["*"], "verbs": ["get"]}, True),
        ({"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]}, True),
        ({"apiGroups": [""], "resources": ["pods/*"], "verbs": ["get"]}, True),
        ({"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["update"]}, True),
        ({"nonResourceURLs": ["*"], "verbs": ["get"]}, True),
        ({"nonResourceURLs": ["/metrics/*"], "verbs": ["get"]}, True),
        ({"apiGroups": ["*.example.com"], "resources": ["x"], "verbs": ["get"]}, True),
        ({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["*"]}, False),
        ({"apiGroups": [""], "resources": ["pods/status"], "verbs": ["get"]}, False),
        ({"nonResourceURLs": ["/metrics"], "verbs": ["get"]}, False),
    ],
)
def test_any_star_is_a_wildcard(rule, wild):
    assert _rbac.has_wildcard(rule) is wild


SA = {"namespace": "kubeflow", "name": "training-operator"}
RBAC_BASE = {"component": "training_operator", "gang_scheduler": "volcano", "service_account": SA}

# (id, options, text the message must hold)
GANG_RBAC_BAD = [
    ("wildcard-nonresource-url", {"extra_rules": [{"nonResourceURLs": ["*"], "verbs": ["get"]}]}, "wildcard rule"),
    (
        "wildcard-nonresource-prefix",
        {"extra_rules": [{"nonResourceURLs": ["/metrics/*"], "verbs": ["get"]}]},
        "set allow_wildcard=true knowingly",
    ),
    (
        "wildcard-subresource",
        {"extra_rules": [{"apiGroups": [""], "resources": ["pods/*"], "verbs": ["get"]}]},
        "pods/*",
    ),
    (
        "wildcard-every-scale",
        {"extra_rules": [{"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["update"]}]},
        "*/scale",
    ),
    (
        "unknown-field-apiGroup",
        {"extra_rules": [{"apiGroup": "", "resources": ["pods"], "verbs": ["get"]}]},
        "extra_rules[0] has unknown field(s) apiGroup",
    ),
    (
        "resource-rule-without-apigroups",
        {"extra_rules": [{"resources": ["pods"], "verbs": ["get"]}]},
        "extra_rules[0].apiGroups is missing or empty",
    ),
    (
        "resource-rule-empty-apigroups",
        {"extra_rules": [{"apiGroups": [], "resources": ["pods"], "verbs": ["get"]}]},
        "extra_rules[0].apiGroups is missing or empty",
    ),
    (
        "empty-verb",
        {"extra_rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", ""]}]},
        "extra_rules[0].verbs has an empty or space-padded entry ''",
    ),
    (
        "padded-resource",
        {"extra_rules": [{"apiGroups": [""], "resources": [" pods"], "verbs": ["get"]}]},
        "extra_rules[0].resources has an empty or space-padded entry ' pods'",
    ),
    (
        "resource-names-not-a-list",
        {"extra_rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": "x"}]},
        "extra_rules[0].resourceNames must be a list of strings",
    ),
    (
        "urls-and-resources-mixed",
        {
            "extra_rules": [
                {"apiGroups": [""], "resources": ["pods"], "nonResourceURLs": ["/healthz"], "verbs": ["get"]}
            ]
        },
        "extra_rules[0] mixes nonResourceURLs with apiGroups/resources/resourceNames",
    ),
    (
        "url-not-a-path",
        {"extra_rules": [{"nonResourceURLs": ["healthz"], "verbs": ["get"]}]},
        "extra_rules[0].nonResourceURLs entry 'healthz' must be a path",
    ),
    (
        "second-rule-bad",
        {
            "extra_rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
                {"apiGroups": [""], "resources": ["pods"], "verbs": 7},
            ]
        },
        "extra_rules[1].verbs",
    ),
    (
        "sa-namespace-invalid",
        {"service_account": {"namespace": "Kube_Flow", "name": "x"}},
        "service_account.namespace='Kube_Flow' is not a valid namespace name",
    ),
    (
        "sa-name-invalid",
        {"service_account": {"namespace": "kubeflow", "name": "system:serviceaccount:x"}},
        "service_account.name='system:serviceaccount:x' is not a valid ServiceAccount name",
    ),
]


@pytest.mark.parametrize("options,message", [c[1:] for c in GANG_RBAC_BAD], ids=[c[0] for c in GANG_RBAC_BAD])
def test_gang_rbac_refuses_before_any_api_call(options, message):
    client = RecordingClient(None)
    with pytest.raises(GangError) as e:
        _gang_rbac.run(client, {**RBAC_BASE, "allow_wildcard": False, **options}, False, lambda m: None)
    assert message in e.value.msg, e.value.msg
    assert client.calls == [], "a refused input reached the API"


def test_allow_wildcard_accepts_a_nonresource_wildcard_with_a_warning():
    rule = {"nonResourceURLs": ["/metrics/*"], "verbs": ["get"]}
    _rbac.validate_extra([rule])
    warned: list[str] = []
    client = RecordingClient(None)
    with pytest.raises(GangError, match="ServiceAccount kubeflow/training-operator not found"):
        _gang_rbac.run(client, {**RBAC_BASE, "extra_rules": [rule], "allow_wildcard": True}, False, warned.append)
    assert any("wildcard rule" in w for w in warned), warned
