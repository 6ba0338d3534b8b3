"""drift's runner against a stand-in API server: what counts as drifted for objects (not served, not found, another
last-applied configuration, a dry run that would change it) and for a Helm release (no revision, not deployed, another
chart, other values), and that only reads and dry runs are made."""

from __future__ import annotations

import base64
import copy
import gzip
import io
import json
import tarfile

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import ApiError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _together
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _drift

DISCOVERY = {
    "/api/v1": {"resources": [{"name": "configmaps", "kind": "ConfigMap", "namespaced": True}]},
    "/apis/x.io/v1": {
        "resources": [
            {"name": "queues", "kind": "Queue", "namespaced": False},
            {"name": "queues/status", "kind": "Queue", "namespaced": False},
        ]
    },
}


class Server:
    """Objects by path; a dry-run apply merges the body's data/spec into the object held and stores nothing."""

    def __init__(self, objects=None, secrets=None):
        self.objects, self.secrets, self.calls = dict(objects or {}), secrets or [], []

    def get_or_none(self, path, what=""):
        self.calls.append(("GET", path))
        return copy.deepcopy(DISCOVERY.get(path) or self.objects.get(path))

    def apply(self, path, obj, field_manager, what="", dry_run=False):
        self.calls.append(("APPLY", path, dry_run, field_manager))
        held = copy.deepcopy(self.objects[path])
        for key in ("data", "spec"):
            if key in obj:
                held[key] = {**held.get(key, {}), **obj[key]}
        held["metadata"]["managedFields"] = [{"manager": field_manager}]
        return held

    def list(self, path, what="", **query):
        self.calls.append(("LIST", path, query.get("labelSelector")))
        return self.secrets


def cm(data, annotations=None):
    meta = {"name": "c", "namespace": "ns", "resourceVersion": "7", "managedFields": [{"manager": "x"}]}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


WANT = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}, "data": {"a": "1"}}
PATH = "/api/v1/namespaces/ns/configmaps/c"


def run(server, **params):
    return _drift.run(server, {"definition": None, "helm_release": None, "last_applied": False, **params}, False, print)


def test_an_object_as_held_is_the_same_and_only_a_dry_run_is_sent():
    server = Server({PATH: cm({"a": "1", "b": "2"})})  # a field of another manager's is no drift
    res = run(server, definition=[WANT])
    assert res["drifted"] == [] and res["same"] == ["ConfigMap ns/c"] and res["changed"] is False
    assert [c for c in server.calls if c[0] == "APPLY"] == [("APPLY", PATH, True, "gangsched.kubeflow-drift")]


def test_what_drifted_and_why():
    queue = {"apiVersion": "x.io/v1", "kind": "Queue", "metadata": {"name": "q"}, "spec": {"weight": 2}}
    held_queue = {**queue, "metadata": {"name": "q", "generation": 1}, "spec": {"weight": 1}}
    server = Server({"/apis/x.io/v1/queues/q": held_queue})
    gone = {**WANT, "metadata": {"name": "gone", "namespace": "ns"}}
    unserved = {"apiVersion": "y.io/v1", "kind": "Thing", "metadata": {"name": "t"}}
    no_ns = {**WANT, "metadata": {"name": "c"}}
    res = run(server, definition=[queue, gone, unserved, no_ns])
    assert res["drifted"] == [
        {"object": "Queue q", "why": "an apply would change it"},
        {"object": "ConfigMap ns/gone", "why": "not found"},
        {"object": "Thing t", "why": "kind Thing of y.io/v1 is not served"},
        {"object": "ConfigMap c", "why": "namespaced, but no metadata.namespace given"},
    ]
    assert "# Queue q\n" in res["_diff"]["before"] and "weight: 1" in res["_diff"]["before"]
    assert "weight: 2" in res["_diff"]["after"] and "managedFields" not in res["_diff"]["after"]
    # one discovery read per group version, however many objects of it
    assert server.calls.count(("GET", "/api/v1")) == 1


def test_last_applied_is_compared_as_json_only_when_asked():
    same = json.dumps(WANT, sort_keys=True, separators=(",", ":"))
    other = json.dumps({**WANT, "data": {"a": "1", "old": "x"}})
    for annotation, drifted in ((same, False), (other, True), (None, True), ("not json", True)):
        ann = {_drift.LAST_APPLIED: annotation} if annotation else None
        server = Server({PATH: cm({"a": "1"}, ann)})
        res = run(server, definition=[WANT], last_applied=True)
        assert bool(res["drifted"]) is drifted, (annotation, res)
        if drifted:
            assert res["drifted"][0]["why"] == "its last-applied configuration is not this definition"
        assert not run(server, definition=[WANT])["drifted"]


def test_bad_definitions_fail_before_any_request():
    server = Server()
    res = run(server, definition=[WANT, {"kind": "ConfigMap", "metadata": {"namespace": "ns"}}])
    assert res["_failed"].startswith("definition[1] (ConfigMap ns/None) has no apiVersion, metadata.name")
    assert server.calls == []


def test_an_api_error_names_the_object_and_a_refused_dry_run_is_drift():
    class Refusing(Server):
        status = 403

        def apply(self, *a, **k):
            raise ApiError(f"Refused ({self.status}) to patch", self.status)

    with pytest.raises(ApiError) as e:
        run(Refusing({PATH: cm({"a": "1"})}), definition=[WANT])
    assert e.value.msg == "ConfigMap ns/c: Refused (403) to patch"
    Refusing.status = 422  # the content: the apply itself will tell what
    res = run(Refusing({PATH: cm({"a": "1"})}), definition=[WANT])
    assert res["drifted"] == [{"object": "ConfigMap ns/c", "why": "a server-side dry run was refused (422)"}]

    class Untyped(Server):  # what kube-apiserver answers an apply with a string where its schema has a number
        def apply(self, *a, **k):
            why = "failed to create typed patch object (/q): .spec.weight: expected numeric (int or float), got string"
            raise ApiError(f"Failed to patch Queue q (dry run): {why}", 500, why)

    res = run(Untyped({PATH: cm({"a": "1"})}), definition=[WANT])
    assert res["drifted"][0]["why"] == (
        "a server-side dry run was refused (500: failed to create typed patch object (/q): "
        ".spec.weight: expected numeric (int or float), got string)"
    )


def secret(version, status="deployed", chart=("volcano", "1.10.0", "v1.10.0"), config=None, gz=True):
    release = {
        "name": "vc",
        "info": {"status": status},
        "chart": {"metadata": {"name": chart[0], "version": chart[1], "appVersion": chart[2]}},
        "config": config,
    }
    raw = json.dumps(release).encode()
    inner = base64.b64encode(gzip.compress(raw) if gz else raw)
    return {
        "metadata": {"labels": {"owner": "helm", "name": "vc", "version": str(version)}},
        "data": {"release": base64.b64encode(inner).decode()},
    }


def chart_dir(tmp_path, version="1.10.0", app="v1.10.0"):
    d = tmp_path / "volcano"
    d.mkdir(exist_ok=True)
    app_line = f"appVersion: {app}\n" if app else ""
    (d / "Chart.yaml").write_text(f"apiVersion: v2\nname: volcano\nversion: {version}\n{app_line}")
    return d


def helm(tmp_path, **over):
    return {
        "release_name": "vc",
        "release_namespace": "vs",
        "chart_ref": str(tmp_path / "volcano" if (tmp_path / "volcano").is_dir() else chart_dir(tmp_path)),
        "chart_repo_url": None,
        "chart_version": None,
        "release_values": {"custom": {"admission_enable": True}},
        **over,
    }


VALUES = {"custom": {"admission_enable": True}}


def helm_why(tmp_path, secrets, **over):
    server = Server(secrets=secrets)
    res = run(server, helm_release=helm(tmp_path, **over))
    assert all(c[0] == "LIST" for c in server.calls) and len(server.calls) == 1
    assert server.calls[0] == ("LIST", "/api/v1/namespaces/vs/secrets", "owner=helm,name=vc")
    return res["drifted"][0]["why"] if res["drifted"] else ""


def test_a_release_as_helm_left_it_is_the_same(tmp_path):
    # the last revision counts (by its number, not the order listed); an older failed one does not
    revisions = [secret(10, config=VALUES), secret(9, status="superseded"), secret(2, status="failed")]
    assert helm_why(tmp_path, revisions) == ""
    assert helm_why(tmp_path, [secret(1, config=VALUES, gz=False)]) == ""
    res = run(Server(secrets=[secret(3, config=VALUES)]), helm_release=helm(tmp_path))
    assert res["same"] == ["Helm release vs/vc"]


def test_what_makes_helm_upgrade(tmp_path):
    assert helm_why(tmp_path, []) == "not installed"
    assert (
        helm_why(tmp_path, [secret(3, status="failed", config=VALUES)]) == "its last revision is failed, not deployed"
    )
    other_version = [secret(1, chart=("volcano", "1.9.0", "v1.10.0"), config=VALUES)]
    assert helm_why(tmp_path, other_version) == "chart volcano-1.9.0 runs, not volcano-1.10.0"
    other_app = [secret(1, chart=("volcano", "1.10.0", "v1.10.1"), config=VALUES)]
    assert helm_why(tmp_path, other_app) == "appVersion v1.10.1 runs, not v1.10.0"
    assert (
        helm_why(tmp_path, [secret(1, config={"custom": {"admission_enable": False}})])
        == "its values are not release_values"
    )
    assert helm_why(tmp_path, [secret(1, config=None)]) == "its values are not release_values"
    assert helm_why(tmp_path, [{"metadata": {"labels": {"version": "1"}}, "data": {"release": "!!"}}]).startswith(
        "its last revision is unreadable"
    )


def test_no_app_version_in_the_chart_matches_an_empty_one_held(tmp_path):
    chart_dir(tmp_path, app=None)
    assert helm_why(tmp_path, [secret(1, chart=("volcano", "1.10.0", ""), config=VALUES)]) == ""


def test_a_chart_archive_and_a_chart_of_a_repository(tmp_path):
    buf = io.BytesIO()
    text = b"apiVersion: v2\nname: volcano\nversion: 1.10.0\nappVersion: v1.10.0\n"
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in ("volcano/Chart.yaml", "volcano/charts/sub/Chart.yaml"):
            info = tarfile.TarInfo(name)
            info.size = len(text if name == "volcano/Chart.yaml" else b"name: sub\nversion: 9\n")
            tar.addfile(info, io.BytesIO(text if name == "volcano/Chart.yaml" else b"name: sub\nversion: 9\n"))
    archive = tmp_path / "volcano-1.10.0.tgz"
    archive.write_bytes(buf.getvalue())
    assert helm_why(tmp_path, [secret(1, config=VALUES)], chart_ref=str(archive)) == ""
    repo = {"chart_ref": "volcano", "chart_repo_url": "https://charts.example", "chart_version": "1.10.0"}
    assert helm_why(tmp_path, [secret(1, config=VALUES)], **repo) == ""
    assert helm_why(tmp_path, [secret(1, config=VALUES)], **{**repo, "chart_version": "1.11.0"}) == (
        "chart volcano-1.10.0 runs, not volcano-1.11.0"
    )


def test_a_chart_that_cannot_be_read_is_named(tmp_path):
    bad = tmp_path / "not-a-chart.tgz"
    bad.write_text("plain text")
    with pytest.raises(_drift.GangError) as e:
        helm_why(tmp_path, [secret(1, config=VALUES)], chart_ref=str(bad))
    assert e.value.msg == f"chart_ref={bad}: cannot read its Chart.yaml (ReadError); point chart_ref at a chart"


def test_a_group_version_not_served_is_no_error():
    class NoGroup(Server):
        def get_or_none(self, path, what=""):
            if path.startswith("/apis/"):
                return None
            return super().get_or_none(path, what)

    res = run(NoGroup(), definition=[{"apiVersion": "x.io/v1", "kind": "Queue", "metadata": {"name": "q"}}])
    assert res["drifted"] == [{"object": "Queue q", "why": "kind Queue of x.io/v1 is not served"}]


def test_an_empty_annotations_map_as_kubectl_records_it_is_no_drift():
    recorded = {**WANT, "metadata": {**WANT["metadata"], "annotations": {}}}
    server = Server({PATH: cm({"a": "1"}, {_drift.LAST_APPLIED: json.dumps(recorded)})})
    assert run(server, definition=[WANT], last_applied=True)["drifted"] == []
    noted = {**WANT, "metadata": {**WANT["metadata"], "annotations": {"team": "ml"}}}
    assert run(server, definition=[noted], last_applied=True)["drifted"] != []


def _many(n: int) -> tuple[dict, list[dict]]:
    held, wanted = {}, []
    for i in range(n):
        want = {**WANT, "metadata": {"name": f"c{i:02d}", "namespace": "ns"}}
        wanted.append(want)
        if i % 3:  # every third one missing
            held[f"/api/v1/namespaces/ns/configmaps/c{i:02d}"] = {**cm({"a": "1"}), "metadata": {"name": f"c{i:02d}"}}
    return held, wanted


def test_objects_asked_together_are_reported_in_the_order_given():
    import random
    import time

    class Slow(Server):  # answers in another order than asked
        def get_or_none(self, path, what=""):
            time.sleep(random.uniform(0, 0.01))
            return super().get_or_none(path, what)

    held, wanted = _many(30)
    res = run(Slow(held), definition=wanted)
    assert [d["object"] for d in res["drifted"]] == [f"ConfigMap ns/c{i:02d}" for i in range(0, 30, 3)]
    assert res["same"] == [f"ConfigMap ns/c{i:02d}" for i in range(30) if i % 3]
    assert res == run(Server(held), definition=wanted)


def test_the_first_failure_in_order_is_raised_and_the_rest_not_asked():
    import threading

    release = threading.Event()

    class Failing(Server):
        def get_or_none(self, path, what=""):
            if path.endswith("/c00"):
                self.calls.append(("GET", path))
                raise ApiError("Failed to reach the API server: it did not answer within 3s (api_timeout)", 0)
            if path.startswith("/api/v1/namespaces/"):
                release.wait(5)  # the others still waiting when the first fails
            return super().get_or_none(path, what)

    held, wanted = _many(40)
    server = Failing(held)
    threading.Timer(0.3, release.set).start()
    with pytest.raises(ApiError) as e:
        run(server, definition=wanted)
    assert e.value.msg == "ConfigMap ns/c00: Failed to reach the API server: it did not answer within 3s (api_timeout)"
    asked = {c[1] for c in server.calls if c[0] == "GET" and c[1].startswith("/api/v1/namespaces/")}
    assert len(asked) <= 2 * _together.WORKERS, sorted(asked)


def test_no_more_objects_at_once_than_the_client_keeps_connections():
    import threading
    import time
    from types import SimpleNamespace

    class Counting(Server):
        def __init__(self, held, pool):
            super().__init__(held)
            self.api = SimpleNamespace(
                client=SimpleNamespace(configuration=SimpleNamespace(connection_pool_maxsize=pool))
            )
            self.now = self.most = 0
            self.lock = threading.Lock()

        def get_or_none(self, path, what=""):
            with self.lock:
                self.now += 1
                self.most = max(self.most, self.now)
            time.sleep(0.1)
            with self.lock:
                self.now -= 1
            return super().get_or_none(path, what)

    held, wanted = _many(24)
    for pool, most in ((3, 3), (64, _together.WORKERS)):
        server = Counting(held, pool)
        run(server, definition=wanted)
        assert 2 <= server.most <= most and (pool == 3 or server.most > 3), (pool, server.most)
