"""read_files through Ansible on this machine: files read in one run, in the order asked, the unread ones with why
(missing, a directory, too large), the same in check mode; a relative path refused by name, nothing read."""

from __future__ import annotations

import base64
import json

from ansible_run import BIN, ansible_cli, ansible_env


def _run(args: dict, check: bool = False) -> dict:
    cmd = [str(BIN / "ansible"), "localhost", "-m", "gangsched.kubeflow.read_files", "-a", json.dumps(args)]
    cmd += ["--check"] if check else []
    out = ansible_cli(cmd, ansible_env(None), timeout=120)
    return json.loads(out.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_each_file_read_or_why_not_in_the_order_asked(tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.bin"
    a.write_text("apiVersion: v1\nkind: Pod\n")
    b.write_bytes(b"\x00\xff binary")
    paths = [str(a), str(tmp_path / "gone.yaml"), str(b), str(tmp_path), str(a)]
    res = _run({"paths": paths})
    assert res["changed"] is False and not res.get("failed"), res
    files = res["files"]
    assert [f["path"] for f in files] == paths
    assert base64.b64decode(files[0]["content"]) == a.read_bytes() and files[0]["missing"] is False
    assert files[1]["missing"] is True and "content" not in files[1]
    assert files[1]["error"] == f"{tmp_path / 'gone.yaml'}: no such file"
    assert base64.b64decode(files[2]["content"]) == b"\x00\xff binary"
    assert files[3]["error"] == f"{tmp_path}: a directory, not a file" and files[3]["missing"] is False
    assert files[4] == files[0]
    assert _run({"paths": paths}, check=True)["files"] == files


def test_a_file_over_max_bytes_is_not_read(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"x" * 100)
    res = _run({"paths": [str(big)], "max_bytes": 99})
    too_large = f"{big}: larger than max_bytes (99), not read"
    assert res["files"] == [{"path": str(big), "missing": False, "error": too_large}]
    assert base64.b64decode(_run({"paths": [str(big)], "max_bytes": 100})["files"][0]["content"]) == b"x" * 100


def test_a_relative_path_or_no_max_bytes_is_refused_by_name():
    res = _run({"paths": ["/etc/hostname", "manifests/kube-apiserver.yaml"]})
    assert res["failed"] is True
    assert res["msg"] == "paths must be absolute; not: manifests/kube-apiserver.yaml. Nothing was read"
    assert "files" not in res
    res = _run({"paths": ["/etc/hostname"], "max_bytes": 0})
    assert res["failed"] is True and res["msg"] == "max_bytes must be 1 or more (got 0). Nothing was read"
