# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The client: its retry while the API server is away (which calls are retried, and for how long), and
the one-request scan that decodes a list item by item."""

from __future__ import annotations

import json
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


def _pods_json(n):
    pods = [
        {
            "metadata": {"name": f"p-{i}", "managedFields": [{"manager": "kubelet"}] * 3, "labels": {"ü": "✓"}},
            "spec": {"nodeName": "n", "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
        }
        for i in range(n)
    ]
    body = {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"}, "items": pods}
    return pods, json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 100000])
def test_stream_items_decodes_every_item_whatever_the_chunking(size):
    pods, data = _pods_json(5)
    chunks = [data[i : i + size] for i in range(0, len(data), size)]  # splits multi-byte characters too
    assert _client.stream_items(chunks) == pods
    names = _client.stream_items(chunks, keep=lambda p: p["metadata"]["name"])
    assert names == [f"p-{i}" for i in range(5)]


def test_stream_items_empty_null_and_broken_lists():
    assert _client.stream_items([b'{"kind":"PodList","metadata":{},"items":[]}']) == []
    assert _client.stream_items([b'{"kind":"PodList","metadata":{},"items":null}']) == []
    _, data = _pods_json(2)
    with pytest.raises(ValueError):
        _client.stream_items([data[: len(data) // 2]])  # the connection broke off mid-item


class StreamApi(FakeApi):
    """A list response read as a stream, broken off once by a connection reset before it succeeds."""

    def __init__(self, data, breaks=0):
        super().__init__([])
        self.data, self.breaks, self.queries, self.released = data, breaks, [], 0

    def call_api(self, path, method, query_params=(), **kw):
        self.calls += 1
        self.queries.append(dict(query_params))
        api, data = self, self.data

        class Resp:
            def stream(self, amt):
                for i in range(0, len(data), amt):
                    if api.breaks and i:
                        api.breaks -= 1
                        raise _reset()
                    yield data[i : i + amt]

            def release_conn(self):
                api.released += 1

        return Resp()


def test_scan_is_one_request_without_pages_and_retried_when_the_body_breaks_off():
    pods, data = _pods_json(3000)
    api = StreamApi(data, breaks=1)
    got = _client.Client(api).scan("/api/v1/pods", "Pods", keep=lambda p: p["metadata"]["name"], fieldSelector="x")
    assert got == [p["metadata"]["name"] for p in pods]
    assert api.calls == 2 and api.released == 2  # the broken read, then the whole list in one request
    assert all(q == {"fieldSelector": "x"} for q in api.queries)  # no limit, no continue: never paged
