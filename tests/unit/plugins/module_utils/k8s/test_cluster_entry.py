# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one module entry: a bug fails the task at once as an internal error (traceback in ``exception``,
never blamed on the network); a GangError fails with its message; bad numbers are refused before a
client is made."""

from __future__ import annotations

import contextlib
import json

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _cluster_entry, _module_main


@contextlib.contextmanager
def module_args(args: dict):
    try:
        from ansible.module_utils.testing import patch_module_args  # ansible-core >= 2.19
    except ImportError:  # older ansible-core reads the arguments from this attribute
        from ansible.module_utils import basic
        from ansible.module_utils.common.text.converters import to_bytes

        old = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = old
        return
    with patch_module_args(args):
        yield


def _run(monkeypatch, capsys, runner, args=None, minimums=None):
    made = []
    monkeypatch.setattr(_cluster_entry.Client, "from_params", classmethod(lambda cls, p: made.append(p) or object()))
    spec = _cluster_entry.with_auth(n=dict(type="int", default=1))
    with module_args(args or {}), pytest.raises(SystemExit):
        _module_main.execute(_cluster_entry.cluster_entry(spec, runner, minimums))
    return json.loads(capsys.readouterr().out), made


def test_a_bug_is_an_internal_error_with_its_traceback_in_exception(monkeypatch, capsys):
    def runner(client, params, check_mode, warn):
        raise TypeError("call_api() got an unexpected keyword argument 'query_params'")

    # what the module hands to fail_json (how a controller shows ``exception`` varies by ansible-core)
    handed = {}
    real_fail = _module_main.AnsibleModule.fail_json

    def fail_json(self, msg, **kw):
        handed.update(kw, msg=msg)
        real_fail(self, msg=msg, **kw)

    monkeypatch.setattr(_module_main.AnsibleModule, "fail_json", fail_json)
    res, _ = _run(monkeypatch, capsys, runner)
    assert res["failed"] is True
    assert "Internal error" in res["msg"] and "TypeError" in res["msg"] and "bug" in res["msg"]
    assert "network" in res["msg"] and "Failed to reach" not in res["msg"] and "query_params" not in res["msg"]
    assert "Traceback" in handed["exception"] and "query_params" in handed["exception"]


def test_a_gang_error_fails_with_its_message(monkeypatch, capsys):
    def runner(client, params, check_mode, warn):
        raise GangError("Deployment kubeflow/x not found; set name", deployment="kubeflow/x")

    res, _ = _run(monkeypatch, capsys, runner)
    assert res["failed"] is True and res["msg"] == "Deployment kubeflow/x not found; set name"
    assert res["deployment"] == "kubeflow/x" and "Traceback" not in res["msg"]


@pytest.mark.parametrize(
    "args,words", [({"api_timeout": 0}, "api_timeout must be >= 1"), ({"n": -1}, "n must be >= 0")]
)
def test_numbers_below_their_floor_are_refused_before_any_client(monkeypatch, capsys, args, words):
    res, made = _run(monkeypatch, capsys, lambda *a: {}, args, {"n": 0})
    assert res["failed"] is True and words in res["msg"] and made == []


def test_diff_only_in_diff_mode_and_failed_key_fails_the_task(monkeypatch, capsys):
    res, _ = _run(monkeypatch, capsys, lambda *a: {"changed": True, "_diff": {"before": 1, "after": 2}})
    assert res["changed"] is True and "diff" not in res and "_diff" not in res
    res, _ = _run(monkeypatch, capsys, lambda *a: {"changed": False, "verdict": "x", "_failed": "verdict x"})
    assert res["failed"] is True and res["msg"] == "verdict x" and res["verdict"] == "x"
