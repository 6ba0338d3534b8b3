# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A module's entry run in Ansible's worker (plugin_utils/_inprocess.run_entry) returns what the same entry
returns as its own module process (_module_main.execute): the same validation, messages, diff and no_log
masking; its warnings in the result. The runner is a stub; the lab tests run the real modules both ways."""

from __future__ import annotations

import datetime
import json
from collections import UserDict

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _cluster_entry, _module_main
from ansible_collections.gangsched.kubeflow.plugins.plugin_utils import _inprocess

from tests.unit.plugins.module_utils.k8s.test_cluster_entry import module_args

NAME = "gangsched.kubeflow.stub"
SECRET = "s3cr3t-token-value"


def runner(client, params, check_mode, warn):
    if params["n"] == 7:
        raise GangError("Deployment kubeflow/x not found; set name", deployment="kubeflow/x")
    if params["n"] == 8:
        raise TypeError("a bug")
    warn(f"n is {params['n']}")
    return {"changed": not check_mode, "n": params["n"], "_diff": {"before": 0, "after": params["n"]}, "echo": SECRET}


def entry():
    spec = _cluster_entry.with_auth(n=dict(type="int", default=1), words=dict(type="list", elements="str", default=[]))
    return _cluster_entry.cluster_entry(spec, runner, {"n": 0}, mutually_exclusive=[("n", "words")])


@pytest.fixture(autouse=True)
def no_client(monkeypatch):
    monkeypatch.setattr(_cluster_entry.Client, "from_params", classmethod(lambda cls, p: object()))


def as_module(capsys, args: dict, check_mode: bool = False, diff: bool = False) -> dict:
    full = {**args, "_ansible_check_mode": check_mode, "_ansible_diff": diff, "_ansible_module_name": NAME}
    with module_args(full), pytest.raises(SystemExit):
        _module_main.execute(entry())
    return json.loads(capsys.readouterr().out)


def in_process(args: dict, check_mode: bool = False, diff: bool = False) -> dict:
    return _inprocess.run_entry(entry(), args, check_mode, diff, NAME)


def same(res: dict) -> dict:
    """What both ways must agree on (a module process also reports how it was invoked, in its own terms)."""
    return {k: v for k, v in res.items() if k not in ("invocation", "exception", "warnings", "msg")}


CASES = {
    "plain": ({"n": 3}, False, False),
    "check-mode": ({"n": 3}, True, False),
    "diff-mode": ({"n": 3}, False, True),
    "gang-error": ({"n": 7}, False, False),
    "a-bug": ({"n": 8}, False, False),
    "below-its-floor": ({"n": -1}, False, False),
    "secret-masked": ({"n": 2, "api_key": SECRET}, False, False),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_the_same_result_either_way(capsys, case):
    args, check_mode, diff = CASES[case]
    module, worker = as_module(capsys, args, check_mode, diff), in_process(args, check_mode, diff)
    assert same(worker) == same(module)
    assert worker.get("msg") == module.get("msg")
    # (how a module process hands its warnings over differs by ansible-core; the worker's are in the result)
    assert worker.get("warnings", []) == ([f"n is {args['n']}"] if "n" in worker else [])


def test_a_no_log_value_never_leaves_either_way(capsys):
    args = {"n": 2, "api_key": SECRET}
    module, worker = as_module(capsys, args), in_process(args)
    for res in (module, worker):
        assert SECRET not in json.dumps(res)
    assert worker["invocation"]["module_args"]["api_key"] == "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"
    if "invocation" in module:  # a module process reports it up to ansible-core 2.20
        assert module["invocation"] == worker["invocation"]


@pytest.mark.parametrize(
    "args,words",
    [
        ({"n": 1, "bogus": 1}, ["bogus", "Unsupported parameters"]),
        ({"n": "many"}, ["n", "int"]),
        ({"n": 2, "words": ["a"]}, ["mutually exclusive", "n", "words"]),
    ],
    ids=["unknown-option", "wrong-type", "mutually-exclusive"],
)
def test_bad_options_fail_with_the_option_named_and_nothing_run(capsys, args, words):
    worker, module = in_process(args), as_module(capsys, args)
    assert worker["failed"] is True and module["failed"] is True
    for w in words:
        assert w in worker["msg"], worker["msg"]
        assert w in module["msg"], module["msg"]
    assert "n" not in {k for k in worker if k == "n"}  # the runner never ran
    assert "Traceback" not in worker["msg"]


def test_a_missing_library_is_the_module_message(monkeypatch):
    e = dict(entry(), missing=lambda: {"msg": "needs kubernetes: pip install kubernetes", "exception": "tb"})
    res = _inprocess.run_entry(e, {"n": 1}, False, False, NAME)
    assert res["failed"] is True and res["msg"] == "needs kubernetes: pip install kubernetes"


def test_arguments_reach_the_runner_as_json_would_hand_them():
    class Lazy(UserDict):  # a mapping that is no dict, as a controller's templated value may be
        pass

    args = {"a": Lazy({"b": (1, 2)}), "when": datetime.date(2026, 11, 26), "raw": b"x", "s": {3}}
    assert _inprocess.plain(args) == {"a": {"b": [1, 2]}, "when": "2026-11-26", "raw": "x", "s": [3]}


def test_whole_file_texts_are_echoed_as_their_sizes():
    """A CRD file's text (up to a MiB) is not echoed back in ``invocation``: its size is; the other options as
    they were, and a result without ``invocation`` (a module process of ansible-core 2.21) as it was."""
    crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n" * 1000
    result = {
        "changed": False,
        "invocation": {"module_args": {"files": {"/crds/a.yaml": crd}, "documents": [crd, "b"], "owner": "x"}},
    }
    out = _inprocess.texts_by_size(result, ("files", "documents"))
    args = out["invocation"]["module_args"]
    assert args == {
        "files": {"/crds/a.yaml": f"({len(crd)} characters, not echoed)"},
        "documents": [f"({len(crd)} characters, not echoed)", "(1 characters, not echoed)"],
        "owner": "x",
    }
    assert _inprocess.texts_by_size({"changed": True}, ("files",)) == {"changed": True}
