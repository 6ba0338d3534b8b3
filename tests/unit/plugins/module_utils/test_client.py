# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The client's retry while the API server is away: which calls are retried, and for how long."""

from __future__ import annotations

import types

import kubernetes
import pytest
import urllib3
from ansible_collections.gangsched.kubeflow.plugins.module_utils import _client
from ansible_collections.gangsched.kubeflow.plugins.module_utils._exceptions import ApiError, Conflict


def _refused():
    return urllib3.exceptions.MaxRetryError(
        None, "/x", urllib3.exceptions.NewConnectionError(None, "[Errno 111] Connection refused")
    )


def _reset():
    return urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset"))


class FakeApi:
    """call_api raises each scripted failure once, then answers {}."""

    def __init__(self, failures):
        self.failures, self.calls = list(failures), 0
        self.configuration = types.SimpleNamespace(host="https://api.test:6443")

    def call_api(self, *a, **kw):
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return types.SimpleNamespace(data=b'{"ok": true}')


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr(_client.time, "sleep", lambda s: None)


@pytest.mark.parametrize("method", ["GET", "POST", "PATCH", "DELETE"])
def test_refused_connection_is_retried_for_every_verb(method):
    api = FakeApi([_refused(), _refused()])
    assert _client.Client(api).request(method, "/x", body={} if method != "GET" else None) == {"ok": True}
    assert api.calls == 3


def test_broken_connection_is_retried_for_a_read_only():
    api = FakeApi([_reset()])
    assert _client.Client(api).get("/x") == {"ok": True}
    api = FakeApi([_reset()])
    with pytest.raises(ApiError) as e:
        _client.Client(api).request("POST", "/x", body={})
    assert api.calls == 1 and e.value.status == 0 and "Failed to reach the Kubernetes API" in e.value.msg


def test_service_unavailable_retried_for_reads_conflict_never():
    api = FakeApi([kubernetes.client.ApiException(status=503, reason="Service Unavailable")])
    assert _client.Client(api).get("/x") == {"ok": True}
    api = FakeApi([kubernetes.client.ApiException(status=409, reason="Conflict")])
    with pytest.raises(Conflict):
        _client.Client(api).get("/x")
    assert api.calls == 1


def test_retry_stops_at_its_deadline_with_the_connection_error(monkeypatch):
    clock = iter(range(0, 1000, 1))
    monkeypatch.setattr(_client.time, "monotonic", lambda: next(clock))
    api = FakeApi([_refused()] * 100)
    with pytest.raises(ApiError) as e:
        _client.Client(api).get("/apis/apps/v1/deployments", what="Deployments")
    assert "Connection refused" in e.value.msg
    assert 5 < api.calls < 40  # about RETRY_SECONDS of one-second ticks, not forever
    api = FakeApi([_refused()])
    with pytest.raises(ApiError):
        _client.Client(api).get("/x", retry_for=0)
    assert api.calls == 1
