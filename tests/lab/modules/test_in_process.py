"""The collection's modules run in Ansible's worker where the module process would be ansible-playbook's own
Python on this machine (``ansible localhost``: a local connection, the interpreter ansible_playbook_python),
and as a module process everywhere else: with ``gangsched_in_process: false``, or another interpreter. What
was shipped is read off the remote temp directory that Ansible keeps (ANSIBLE_KEEP_REMOTE_FILES): a module
process leaves its AnsiballZ file there, the worker nothing. Either way the result is the same."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ansible_run import run_module

BIN = Path(sys.executable).parent
VOLATILE = {"invocation", "_stderr", "warnings", "deprecations", "seconds"}


def run(lab, tmp_path: Path, module: str, args: dict, **extra_vars) -> tuple[dict, bool]:
    """The task result and whether a module process ran (its AnsiballZ file was shipped)."""
    remote = tmp_path / f"remote-{len(list(tmp_path.glob('remote-*')))}"
    env = {"ANSIBLE_KEEP_REMOTE_FILES": "1", "ANSIBLE_REMOTE_TMP": str(remote)}
    res = run_module(lab, module, args, diff=False, env=env, extra_vars=extra_vars or None)
    return res, any(remote.rglob(f"AnsiballZ_{module}.py"))


def same(res: dict) -> dict:
    return {k: v for k, v in res.items() if k not in VOLATILE}


def test_gang_info_runs_in_the_worker_and_reads_what_its_module_process_reads(lab, tmp_path):
    worker, shipped = run(lab, tmp_path, "gang_info", {})
    assert worker.get("failed") is not True, worker.get("msg")
    assert shipped is False
    module, shipped = run(lab, tmp_path, "gang_info", {}, gangsched_in_process=False)
    assert module.get("failed") is not True, module.get("msg")
    assert shipped is True
    assert same(worker) == same(module)
    assert worker["gpus"]["nodes"] == 4  # the lab's GPU nodes: a real read, not an empty answer


def test_another_interpreter_gets_the_module_process(lab, tmp_path):
    # the same venv under another name: the worker cannot know it is the same Python, so it ships the module
    own = (BIN / "ansible").read_text().splitlines()[0].removeprefix("#!").strip()  # ansible_playbook_python
    other = next(p for p in sorted(BIN.glob("python3*")) if str(p) != own)
    res, shipped = run(lab, tmp_path, "gang_info", {}, ansible_python_interpreter=str(other))
    assert res.get("failed") is not True, res.get("msg")
    assert shipped is True


@pytest.mark.parametrize(
    "args,words",
    [
        ({"bogus": 1}, ["Unsupported parameters for (gangsched.kubeflow.component_ready) module: bogus"]),
        ({"wait_timeout": "soon"}, ["wait_timeout", "int"]),
        ({"wait_timeout": -1}, ["wait_timeout must be >= 0 (got -1)"]),
    ],
    ids=["unknown-option", "wrong-type", "below-its-floor"],
)
def test_bad_input_fails_alike_either_way(lab, tmp_path, args, words):
    worker, shipped = run(lab, tmp_path, "component_ready", args)
    assert shipped is False
    module, _ = run(lab, tmp_path, "component_ready", args, gangsched_in_process=False)
    assert worker["failed"] is True and module["failed"] is True
    assert worker["msg"] == module["msg"]
    for w in words:
        assert w in worker["msg"], worker["msg"]
    assert "Traceback" not in worker["msg"]


def test_render_manifests_writes_the_same_files_either_way(lab, tmp_path):
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gang-a"}}]
    documents = ["apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: gang-a}\ndata: {k: v}\n"]
    out = {}
    for label, extra in (("worker", {}), ("module", {"gangsched_in_process": False})):
        path = tmp_path / label
        res, shipped = run(
            lab, tmp_path, "render_manifests", {"path": str(path), "objects": objects, "documents": documents}, **extra
        )
        assert res.get("failed") is not True, res.get("msg")
        assert shipped is (label == "module") and res["changed"] is True
        out[label] = {f.name: f.read_text() for f in sorted(path.iterdir())}
    assert out["worker"] == out["module"] and len(out["worker"]) == 2


def test_the_smoke_tests_removal_runs_in_the_worker_and_the_smoke_test_in_its_own_process(lab, tmp_path):
    """state=absent (the leftovers' removal, which traps no signal) in the worker, the same result as its module
    process; a smoke test itself always a process of its own (it traps SIGTERM and SIGINT to remove its gang)."""
    worker, shipped = run(lab, tmp_path, "gang_smoke_test", {"state": "absent"})
    assert worker.get("failed") is not True, worker.get("msg")
    assert shipped is False
    module, shipped = run(lab, tmp_path, "gang_smoke_test", {"state": "absent"}, gangsched_in_process=False)
    assert module.get("failed") is not True, module.get("msg")
    assert shipped is True
    assert same(worker) == same(module)
    # a bad scheduler name fails at once, before anything is created, but only after the module was shipped
    res, shipped = run(lab, tmp_path, "gang_smoke_test", {"gang_scheduler": "no-such-path"})
    assert res["failed"] is True and "gang_scheduler" in res["msg"], res.get("msg")
    assert shipped is True
