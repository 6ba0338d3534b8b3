# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reads asked for ahead (``_together.ahead``): sent as the block starts, handed over once to the get that makes the
same read, their failures raised there; the rest asked as before; none left behind; a stand-in client untouched."""

from __future__ import annotations

import json
import threading
import time
import types

import kubernetes
import pytest
import urllib3
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import ApiError, NotFound
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _client, _together


class Resp:
    def __init__(self, data: bytes):
        self.data = data

    def release_conn(self):
        pass


class Api:
    """Answers each GET with its path and query; ``missing`` paths are 404, ``broken`` ones 403. Counts the calls
    and the most in flight at once (each takes ``delay`` seconds)."""

    def __init__(self, missing=(), broken=(), delay=0.0, pool=None):
        self.missing, self.broken, self.delay = set(missing), set(broken), delay
        self.calls, self.now, self.most, self.lock = [], 0, 0, threading.Lock()
        self.configuration = types.SimpleNamespace(host="https://api.test:6443", connection_pool_maxsize=pool)
        self.client = types.SimpleNamespace(configuration=self.configuration)

    def request(self, method, path, query_params=(), **kw):
        with self.lock:
            self.calls.append((path, tuple(query_params)))
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            time.sleep(self.delay)
            if path in self.missing:
                raise kubernetes.client.ApiException(status=404, reason="Not Found")
            if path in self.broken:
                raise kubernetes.client.ApiException(status=403, reason="Forbidden")
            return Resp(json.dumps({"path": path, "query": dict(query_params)}).encode())
        finally:
            with self.lock:
                self.now -= 1


def client(api) -> _client.Client:
    c = _client.Client(api)
    c.api = api  # the stand-in API itself, not the dynamic layer over a generated client
    return c


def test_a_read_asked_ahead_is_sent_once_and_handed_over():
    api = Api()
    c = client(api)
    reads = [("/a", "A", None), ("/b", "the Bs", _api.list_query())]
    with _together.ahead(c, reads) as early:
        deadline = time.monotonic() + 5
        while len(api.calls) < 2 and time.monotonic() < deadline:  # sent before anything asks for them
            time.sleep(0.01)
        assert sorted(p for p, _q in api.calls) == ["/a", "/b"]
        assert c.get("/a", "A") == {"path": "/a", "query": {}}
        assert c.list("/b", "the Bs") == []
        assert len(api.calls) == 2
        # asked again, or asked otherwise (another name, another query): sent as before
        assert c.get("/a", "A") == {"path": "/a", "query": {}}
        c.get("/b", "other words", {"limit": 500})
        assert len(api.calls) == 4
    assert early.unused == [] and c.early == {}


def test_failures_are_raised_where_the_read_is_made():
    api = Api(missing={"/gone"}, broken={"/shut"})
    c = client(api)
    with _together.ahead(c, [("/gone", "CustomResourceDefinition x", None), ("/shut", "the Ys", None)]):
        assert c.get_or_none("/gone", "CustomResourceDefinition x") is None
        with pytest.raises(ApiError) as e:
            c.get("/shut", "the Ys")
        assert "the Ys" in e.value.msg and e.value.status == 403
        with pytest.raises(NotFound):
            c.get("/gone", "CustomResourceDefinition x")  # handed over once: this one is asked
    assert len(api.calls) == 3


def test_reads_never_made_are_named_and_dropped():
    api = Api()
    c = client(api)
    with _together.ahead(c, [("/used", "U", None), ("/not", "N", {"limit": 500})]) as early:
        c.get("/used", "U")
    assert early.unused == [("/not", "N", (("limit", 500),))]
    assert c.early == {}
    sent = len(api.calls)  # 1 or 2: the block may end before the unused read went out (then it is not sent)
    c.get("/not", "N", {"limit": 500})
    assert len(api.calls) == sent + 1 and sent in (1, 2)


def test_at_once_no_more_than_the_pool_holds_beside_the_runner():
    for pool, most in ((3, 2), (64, _together.WORKERS)):
        api = Api(delay=0.2, pool=pool)
        c = client(api)
        reads = [(f"/r{i}", f"R{i}", None) for i in range(20)]
        with _together.ahead(c, reads):
            for path, what, _q in reads:
                c.get(path, what)
        # at most that many; the big pool's threads all in flight at once but for a very slow start of one
        assert (api.most == most) if pool == 3 else (4 < api.most <= most), (pool, api.most)
        assert len(api.calls) == 20


def test_a_stand_in_client_without_early_is_asked_as_before():
    class StandIn:
        def __init__(self):
            self.asked = []

        def get(self, path, what="", query=None):
            self.asked.append(path)
            return {}

    s = StandIn()
    with _together.ahead(s, [("/a", "A", None)]) as early:
        assert s.asked == []
        s.get("/a", "A")
    assert s.asked == ["/a"] and early.unused == []


class Silent(Api):
    """Every request waits 0.05 s, then times out (no answer): a read is retried for its client's window."""

    def request(self, method, path, query_params=(), **kw):
        with self.lock:
            self.calls.append((path, tuple(query_params)))
        time.sleep(0.05)
        raise urllib3.exceptions.ReadTimeoutError(None, path, "Read timed out.")


def _ahead_then_get(c, paths):
    reads = [(p, p.upper(), None) for p in paths]
    with _together.ahead(c, reads):
        for path, what, _q in reads:
            c.get(path, what)


def _each_get(c, paths):
    _together.each(c, lambda p: c.get(p, p.upper()), paths)


@pytest.mark.parametrize("asked", [_ahead_then_get, _each_get], ids=["ahead", "each"])
def test_an_unreachable_cluster_costs_one_timeout_not_one_per_round(asked):
    api = Silent(pool=64)
    c = _client.Client(api, timeout=1.0)
    c.api = api
    t0 = time.monotonic()
    with pytest.raises(ApiError) as e:
        asked(c, [f"/r{i}" for i in range(3 * _together.WORKERS)])
    took = time.monotonic() - t0
    assert e.value.status == 0 and "/r0" in e.value.msg
    # the first round only: each call retried for its window (1 s), the rounds after it not sent
    assert len({p for p, _q in api.calls}) <= _together.WORKERS, sorted({p for p, _q in api.calls})
    assert took < 2.5, took  # one window and the round's start, not three windows (3 s and more)
