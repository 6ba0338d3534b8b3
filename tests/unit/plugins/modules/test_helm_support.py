"""helm_support through Ansible on this machine, against stand-in helm binaries (scripts printing what `helm version
--template {{.Version}}` prints): Helm 3 driven by any kubernetes.core, Helm 4 only from 6.4.0 on, each problem naming
the binary, both versions and the fix; kubernetes.core's version read by the action from the collection Ansible loads;
a missing, unrunnable, failing or hanging binary named, never a failure of the task; check mode the same. The real
Helm 3 and Helm 4 binaries meet kubernetes.core in tests/compat.py (its newest cell runs Helm 4) and in the
playbook test of the preflight's refusal."""

from __future__ import annotations

import json
import os

import pytest
from ansible_run import BIN, ansible_cli, ansible_env


def _run(args: dict, check: bool = False) -> dict:
    cmd = [str(BIN / "ansible"), "localhost", "-m", "gangsched.kubeflow.helm_support", "-a", json.dumps(args)]
    cmd += ["--check"] if check else []
    out = ansible_cli(cmd, ansible_env(None), timeout=120)
    return json.loads(out.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


def _helm(tmp_path, body: str, name: str = "helm"):
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def _installed_core() -> str:
    from ansible_collections.kubernetes.core import __path__ as core_path  # the dev venv's, as Ansible loads it

    with open(os.path.join(list(core_path)[0], "MANIFEST.json")) as f:
        return json.load(f)["collection_info"]["version"]


@pytest.mark.parametrize(
    ("printed", "core", "fine"),
    [
        ("v3.18.6", "5.0.0", True),
        ("v3.21.4", "6.3.0", True),
        ("v4.3.2", "6.4.0", True),
        ("v4.0.0-rc.1", "6.6.0", True),
        ("v4.3.2", "6.3.0", False),
        ("v4.3.2", "5.4.1", False),
        ("v5.0.0", "6.6.0", False),
        ("v2.17.0", "6.6.0", False),
    ],
)
def test_helm_majors_against_kubernetes_core(tmp_path, printed, core, fine):
    helm = _helm(tmp_path, f"[ \"$1 $2 $3\" = 'version --template {{{{.Version}}}}' ] || exit 9\nprintf '%s' {printed}")
    res = _run({"binary_path": helm, "kubernetes_core_version": core})
    assert res["changed"] is False and not res.get("failed"), res
    assert res["path"] == helm and res["kubernetes_core_version"] == core
    assert res["version"] == printed.lstrip("v").split("-")[0]
    if fine:
        assert res["problem"] == ""
        return
    assert res["problem"].startswith(f"helm {printed.split('-')[0]} ({helm}) is Helm {printed[1]}"), res["problem"]
    if printed.startswith("v4"):
        assert f"kubernetes.core {core}'s helm module does not drive" in res["problem"]
        assert "ansible-galaxy collection install 'kubernetes.core>=6.4.0,<7.0.0'" in res["problem"]
        assert res["problem"].endswith("or point binary_path at a Helm 3 binary")
    else:
        assert res["problem"].endswith("Point binary_path at a Helm 4 or Helm 3 binary")
    assert _run({"binary_path": helm, "kubernetes_core_version": core}, check=True) == res


def test_kubernetes_core_version_read_from_the_collection_ansible_loads(tmp_path):
    core = _installed_core()
    res = _run({"binary_path": _helm(tmp_path, "printf v4.3.2")})
    assert res["kubernetes_core_version"] == core
    major, minor = (int(x) for x in core.split(".")[:2])
    assert (res["problem"] == "") is ((major, minor) >= (6, 4)), res


def test_helm_on_the_path_by_name(tmp_path):
    helm = _helm(tmp_path, "printf v3.18.6")
    env = ansible_env(None)
    env["PATH"] = f"{tmp_path}{os.pathsep}{env['PATH']}"
    cmd = [str(BIN / "ansible"), "localhost", "-m", "gangsched.kubeflow.helm_support"]
    res = json.loads(ansible_cli(cmd, env, timeout=120).stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert res["path"] == helm and res["version"] == "3.18.6" and res["problem"] == ""


def test_a_binary_that_cannot_tell_its_version_is_named(tmp_path):
    missing = str(tmp_path / "no-helm")
    res = _run({"binary_path": missing, "kubernetes_core_version": "6.6.0"})
    assert not res.get("failed") and "path" not in res and res["version"] == ""
    gone = f"the helm binary {missing} (no such file) was not found: install Helm, or point binary_path at it"
    assert res["problem"] == gone

    res = _run({"binary_path": "no-such-helm-anywhere", "kubernetes_core_version": "6.6.0"})
    assert res["problem"].startswith("the helm binary no-such-helm-anywhere (not on the PATH) was not found")

    plain = tmp_path / "helm.txt"
    plain.write_text("not a program")
    res = _run({"binary_path": str(plain), "kubernetes_core_version": "6.6.0"})
    assert res["problem"] == f"{plain} cannot be run (Permission denied): point binary_path at an executable helm"

    failing = _helm(tmp_path, "echo 'Error: unknown flag: --template' >&2; exit 1", "old-helm")
    res = _run({"binary_path": failing, "kubernetes_core_version": "6.6.0"})
    assert res["problem"] == (
        f"{failing}: helm version failed (Error: unknown flag: --template); point binary_path at a working helm"
    )

    garbled = _helm(tmp_path, "printf 'not a version'", "odd-helm")
    res = _run({"binary_path": garbled, "kubernetes_core_version": "6.6.0"})
    assert res["problem"] == f"{garbled}: its version could not be read (helm version printed 'not a version')"


def test_a_hanging_binary_is_cut_at_timeout(tmp_path):
    hanging = _helm(tmp_path, "exec sleep 30", "slow-helm")
    res = _run({"binary_path": hanging, "kubernetes_core_version": "6.6.0", "timeout": 1})
    assert res["problem"] == f"{hanging}: helm version took more than 1 s; check the binary, or raise timeout"
    res = _run({"binary_path": hanging, "timeout": 0})
    assert res["failed"] is True and res["msg"] == "timeout must be 1 s or more (got 0). Nothing was run"
