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
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import ApiError, Conflict, GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _client, _stream


def _refused():
    return urllib3.exceptions.MaxRetryError(
        None, "/x", urllib3.exceptions.NewConnectionError(None, "[Errno 111] Connection refused")
    )


def _reset():
    return urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset"))


class Resp:
    """What the DynamicClient's request(serialize=False) hands back: the raw urllib3 response."""

    def __init__(self, data=b'{"ok": true}', api=None):
        self.data, self.api = data, api

    def release_conn(self):
        if self.api is not None:
            self.api.released += 1


class FakeApi:
    """request raises each scripted failure once, then answers {"ok": true}."""

    def __init__(self, failures):
        self.failures, self.calls, self.released, self.kwargs = list(failures), 0, 0, []
        self.configuration = types.SimpleNamespace(host="https://api.test:6443")

    def request(self, method, path, **kw):
        self.calls += 1
        self.kwargs.append(kw)
        if self.failures:
            raise self.failures.pop(0)
        return Resp(api=self)


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
    assert "connection refused" in e.value.msg
    assert 5 < api.calls < 40  # about the client timeout (DEFAULT_TIMEOUT) of one-second ticks, not forever
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
    assert _stream.stream_items(chunks) == pods
    names = _stream.stream_items(chunks, keep=lambda p: p["metadata"]["name"])
    assert names == [f"p-{i}" for i in range(5)]


def test_stream_items_empty_null_and_broken_lists():
    assert _stream.stream_items([b'{"kind":"PodList","metadata":{},"items":[]}']) == []
    assert _stream.stream_items([b'{"kind":"PodList","metadata":{},"items":null}']) == []
    _, data = _pods_json(2)
    with pytest.raises(ValueError):
        _stream.stream_items([data[: len(data) // 2]])  # the connection broke off mid-item


class StreamApi(FakeApi):
    """A list response read as a stream, broken off once by a connection reset before it succeeds."""

    def __init__(self, data, breaks=0):
        super().__init__([])
        self.data, self.breaks, self.queries = data, breaks, []

    def request(self, method, path, query_params=(), **kw):
        self.calls += 1
        self.queries.append(dict(query_params))
        api, data = self, self.data

        class StreamResp(Resp):
            def stream(self, amt):
                for i in range(0, len(data), amt):
                    if api.breaks and i:
                        api.breaks -= 1
                        raise _reset()
                    yield data[i : i + amt]

        return StreamResp(api=self)


def test_scan_is_one_request_without_pages_and_retried_when_the_body_breaks_off():
    pods, data = _pods_json(3000)
    api = StreamApi(data, breaks=1)
    got = _client.Client(api).scan("/api/v1/pods", "Pods", keep=lambda p: p["metadata"]["name"], fieldSelector="x")
    assert got == [p["metadata"]["name"] for p in pods]
    assert api.calls == 2 and api.released == 2  # the broken read, then the whole list in one request
    assert all(q == {"fieldSelector": "x"} for q in api.queries)  # no limit, no continue: never paged


def test_a_bug_in_the_transport_is_raised_as_it_is_at_once_never_retried():
    api = FakeApi([TypeError("call_api() got an unexpected keyword argument 'query_params'")] * 5)
    with pytest.raises(TypeError):
        _client.Client(api).get("/version")
    assert api.calls == 1


def test_each_call_is_bounded_by_the_client_timeout_and_asks_for_the_raw_response():
    api = FakeApi([])
    _client.Client(api, timeout=7).get("/api/v1/pods", query={"labelSelector": "a=b"})
    kw = api.kwargs[0]
    # (connect, read): the client's REST layer ignores a float, so a silent server would hold the call forever
    connect, read = kw["_request_timeout"]
    assert kw["serialize"] is False and 6.5 < connect <= 7 and read == connect
    assert kw["query_params"] == [("labelSelector", "a=b")]
    assert api.released == 1


def test_a_string_reason_in_the_error_chain_is_no_crash():
    err = urllib3.exceptions.MaxRetryError(None, "/x", reason=None)
    err.reason = "certificate verify failed"  # some clients put a plain string there
    api = FakeApi([err])
    with pytest.raises(ApiError) as e:
        _client.Client(api).get("/x", retry_for=0)
    assert "__cause__" not in e.value.msg and "object has no attribute" not in e.value.msg


def _wrapped_tls_error():
    """What the generated client raises for a TLS failure: ApiException(status=0) raised while handling it."""
    try:
        try:
            raise urllib3.exceptions.SSLError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
        except urllib3.exceptions.SSLError as e:
            raise kubernetes.client.ApiException(status=0, reason=f"SSLError\n{e}") from None
    except kubernetes.client.ApiException as wrapped:
        wrapped.__context__ = urllib3.exceptions.SSLError("certificate verify failed")
        return wrapped


@pytest.mark.parametrize(
    "exc,words",
    [
        (_wrapped_tls_error(), "set ca_cert"),
        (urllib3.exceptions.ReadTimeoutError(None, "/x", "Read timed out."), "no answer within 3s"),
        (urllib3.exceptions.ConnectTimeoutError(None, "timed out"), "no connection within 3s"),
        (_refused(), "connection refused"),
        (_reset(), "closed the connection"),
    ],
)
def test_transport_errors_read_as_what_to_fix(exc, words):
    api = FakeApi([exc])
    with pytest.raises(ApiError) as e:
        _client.Client(api, timeout=3).request("POST", "/x", body={}, retry_for=0)
    assert words in e.value.msg and e.value.status == 0
    assert "Traceback" not in e.value.msg and "Errno" not in e.value.msg


@pytest.mark.parametrize(
    "text,words",
    [
        ("gpu-node-1\n", "is not a kubeconfig"),
        ("- a\n- b\n", "is not a kubeconfig"),
        ("a: [unclosed\n", "is not YAML"),
    ],
)
def test_a_file_that_is_not_a_kubeconfig_is_named(tmp_path, text, words):
    path = tmp_path / "config"
    path.write_text(text)
    with pytest.raises(GangError) as e:
        _client.Client.from_params({"kubeconfig": str(path)})
    assert words in e.value.msg and str(path) in e.value.msg and "kubeconfig" in e.value.msg


def test_a_missing_certificate_file_names_its_option(tmp_path):
    with pytest.raises(GangError) as e:
        _client.Client.from_params({"host": "https://127.0.0.1:1", "ca_cert": str(tmp_path / "ca.crt")})
    assert e.value.msg.startswith("ca_cert ") and "ca.crt" in e.value.msg


def test_a_server_that_accepts_and_never_answers_fails_within_api_timeout():
    """A real listener on loopback that accepts connections and never writes a byte."""
    import socket
    import time

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    try:
        host = f"https://127.0.0.1:{srv.getsockname()[1]}"
        t0 = time.monotonic()
        with pytest.raises(GangError) as e:
            _client.Client.from_params(
                {"host": host, "api_key": "x", "validate_certs": False, "api_timeout": 2, "kubeconfig": None}
            )
        took = time.monotonic() - t0
    finally:
        srv.close()
    # bounded by api_timeout (2 s; the handshake and the first request), far from the default 30 s, with room for
    # a busy machine (a test run beside it took it past 6 s)
    assert took < 12, took
    assert host in e.value.msg and ("within 2s" in e.value.msg) and "api_timeout" in e.value.msg, e.value.msg


def test_an_empty_context_is_no_context(tmp_path):
    """ansible-core 2.16 renders a role default of none inside module_defaults as "": that is no
    context at all (the kubeconfig's current one), not a context named "" that does not exist."""
    path = tmp_path / "config"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: lab\n"
        "clusters: [{name: lab, cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}}]\n"
        "contexts: [{name: lab, context: {cluster: lab, user: lab}}]\n"
        "users: [{name: lab, user: {token: x}}]\n"
    )
    with pytest.raises(GangError) as e:
        _client.Client.from_params({"kubeconfig": str(path), "context": "", "api_timeout": 2})
    assert "Failed to reach the Kubernetes API" in e.value.msg, e.value.msg
    assert "client configuration" not in e.value.msg


@pytest.mark.parametrize(
    "why,said",
    [
        ("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed", "TLS certificate could not be verified"),
        ("[SSL: WRONG_VERSION_NUMBER] wrong version number", "did not answer TLS"),
    ],
)
def test_a_tls_answer_that_asking_again_cannot_change_is_not_retried(why, said):
    failure = urllib3.exceptions.MaxRetryError(None, "/x", urllib3.exceptions.SSLError(why))
    api = FakeApi([failure, failure, failure])
    with pytest.raises(ApiError) as e:
        _client.Client(api).get("/x")
    assert api.calls == 1 and said in e.value.msg and e.value.status == 0, (api.calls, e.value.msg)
    # a broken connection is still asked again
    api = FakeApi([_reset()])
    assert _client.Client(api).get("/x") == {"ok": True} and api.calls == 2
