"""The drift module on the lab: objects applied by kubectl (client-side, so with a last-applied annotation) read as
the same; a field changed behind their back, a missing object and a kind no API serves read as drifted, each with why;
only reads and dry runs reach the API server (its audit log shows no write). A Helm release installed by the lab's
helm reads as the same with its values and chart, and as drifted with other values or another chart version. On a
cluster a round trip away (the lab behind lab.latency's forwarder) the objects are asked about together."""

from __future__ import annotations

import json
import subprocess

from ansible_run import fails_within_api_timeout, kubectl, run_module

from lab import kube
from lab.latency import LatencyProxy


def cm(namespace: str, name: str, **data) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


def writes(lab, namespace: str, since: int) -> list[str]:
    """The audit log's writes (not dry runs) in ``namespace``, from line ``since`` on."""
    out = []
    for line in (lab.logs / "audit.log").read_text(errors="replace").splitlines()[since:]:
        ev = json.loads(line)
        uri = ev.get("requestURI", "")
        if ev.get("verb") in ("create", "update", "patch", "delete") and f"/namespaces/{namespace}/" in uri:
            if ev.get("stage") == "ResponseComplete" and "dryRun" not in uri:
                out.append(f"{ev['verb']} {uri.split('?')[0]}")
    return out


def audit_lines(lab) -> int:
    return len((lab.logs / "audit.log").read_text(errors="replace").splitlines())


def test_objects_as_applied_then_changed_behind_their_back(lab, namespace):
    a, b = cm(namespace, "a", x="1"), cm(namespace, "b", k="2")
    kube.apply(lab, [a, b])  # kubectl apply: client-side, with the last-applied annotation
    mark = audit_lines(lab)
    res = run_module(lab, "drift", {"definition": [a, b], "last_applied": True})
    assert res.get("failed") is not True, res.get("msg")
    assert res["drifted"] == [] and res["same"] == [f"ConfigMap {namespace}/a", f"ConfigMap {namespace}/b"], res
    assert res["changed"] is False

    kubectl(lab, "-n", namespace, "patch", "configmap", "a", "--type=merge", "-p", '{"data":{"x":"changed"}}')
    gone = cm(namespace, "gone")
    unserved = {"apiVersion": "nothing.gangsched.test/v1", "kind": "Thing", "metadata": {"name": "t"}}
    res = run_module(lab, "drift", {"definition": [a, b, gone, unserved]}, check=True)
    assert res["drifted"] == [
        {"object": f"ConfigMap {namespace}/a", "why": "an apply would change it"},
        {"object": f"ConfigMap {namespace}/gone", "why": "not found"},
        {"object": "Thing t", "why": "kind Thing of nothing.gangsched.test/v1 is not served"},
    ], res["drifted"]
    assert res["same"] == [f"ConfigMap {namespace}/b"]
    assert "x: changed" in res["diff"]["before"] and "x: '1'" in res["diff"]["after"], res["diff"]

    # another definition than the one kubectl applied: the annotation tells, with last_applied only
    more = cm(namespace, "b", k="2", m="3")
    kubectl(lab, "-n", namespace, "patch", "configmap", "b", "--type=merge", "-p", '{"data":{"m":"3"}}')
    assert run_module(lab, "drift", {"definition": [more]})["drifted"] == []
    res = run_module(lab, "drift", {"definition": [more], "last_applied": True})
    assert res["drifted"] == [
        {"object": f"ConfigMap {namespace}/b", "why": "its last-applied configuration is not this definition"}
    ]
    # only the test's own two patches wrote: drift sent reads and dry runs
    assert writes(lab, namespace, mark) == [
        f"patch /api/v1/namespaces/{namespace}/configmaps/a",
        f"patch /api/v1/namespaces/{namespace}/configmaps/b",
    ]


def test_objects_are_asked_about_together_on_a_cluster_far_away(lab, namespace, tmp_path):
    """Through a forwarder that holds each chunk drift sends for 0.1 s: its reads and dry runs of 16 objects go out on
    several connections at once (one object at a time keeps one connection), and it says what it says without the
    forwarder, object by object in the order given."""
    objs = [cm(namespace, f"c{i:02d}", k=str(i)) for i in range(16)]
    kube.apply(lab, objs[:12])
    changed = cm(namespace, "c05", k="other")
    asked = [*objs[:5], changed, *objs[6:]]
    near = run_module(lab, "drift", {"definition": asked})
    assert near.get("failed") is not True, near.get("msg")
    assert [d["object"] for d in near["drifted"]] == [f"ConfigMap {namespace}/c{i:02d}" for i in (5, 12, 13, 14, 15)]
    with LatencyProxy(lab.state()["ports"]["apiserver"], 0.1) as far:
        res = run_module(lab, "drift", {"definition": asked, "kubeconfig": str(far.kubeconfig(lab, tmp_path / "far"))})
    assert res.get("failed") is not True, res.get("msg")
    assert (res["drifted"], res["same"], res["diff"]) == (near["drifted"], near["same"], near["diff"])
    assert far.most >= 4, f"at most {far.most} connection(s) open at once, of {far.accepted}"


def test_bad_input_fails_naming_it_before_any_request(lab, namespace):
    mark = audit_lines(lab)
    res = run_module(lab, "drift", {"definition": [{"kind": "ConfigMap", "metadata": {"namespace": namespace}}]})
    assert res.get("failed") is True
    assert res["msg"].startswith(f"definition[0] (ConfigMap {namespace}/None) has no apiVersion, metadata.name")
    assert "Traceback" not in res["msg"]
    # no request of the Python client (the module's); the controllers still fill the new namespace in (its default
    # ServiceAccount, kube-root-ca.crt), and their requests may be logged after the mark
    since = (lab.logs / "audit.log").read_text().splitlines()[mark:]
    assert not [line for line in since if namespace in line and '"userAgent":"OpenAPI-Generator' in line]
    res = run_module(lab, "drift", {})
    assert res.get("failed") is True and "one of the following is required: definition, helm_release" in res["msg"]


def test_a_helm_release_as_installed_and_after(lab, namespace, tmp_path):
    chart = tmp_path / "tiny"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: tiny\nversion: 0.1.0\nappVersion: '1.0'\n")
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tiny\ndata:\n  size: {{ .Values.size | quote }}\n"
    )
    facts = json.loads((lab.root / "inventory-facts.json").read_text())
    helm = [facts["helm"], "--kubeconfig", str(lab.kubeconfig), "-n", namespace]
    release = {"release_name": "tiny", "release_namespace": namespace, "chart_ref": str(chart)}

    res = run_module(lab, "drift", {"helm_release": {**release, "release_values": {"size": 1}}})
    assert res["drifted"] == [{"object": f"Helm release {namespace}/tiny", "why": "not installed"}], res
    subprocess.run([*helm, "install", "tiny", str(chart), "--set", "size=1"], check=True, capture_output=True)
    res = run_module(lab, "drift", {"helm_release": {**release, "release_values": {"size": 1}}})
    assert res.get("failed") is not True, res.get("msg")
    assert res["drifted"] == [] and res["same"] == [f"Helm release {namespace}/tiny"], res
    res = run_module(lab, "drift", {"helm_release": {**release, "release_values": {"size": 2}}})
    assert res["drifted"] == [{"object": f"Helm release {namespace}/tiny", "why": "its values are not release_values"}]
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: tiny\nversion: 0.2.0\nappVersion: '1.0'\n")
    res = run_module(lab, "drift", {"helm_release": {**release, "release_values": {"size": 1}}})
    assert res["drifted"][0]["why"] == "chart tiny-0.1.0 runs, not tiny-0.2.0", res


def test_a_silent_api_server_fails_within_api_timeout_naming_it(lab, silent_server):
    """A real listener that accepts connections and never answers a byte: drift fails within its api_timeout (3 s
    here), next to the same run's start-up cost measured now (a run refused before any request), with the message
    naming the server and the option, for objects and for a Helm release alike."""
    definition = [cm("default", "c", k="v")]
    release = {"release_name": "r", "release_namespace": "default", "chart_ref": "/nonexistent"}
    fails_within_api_timeout(
        lab, "drift", silent_server, {"definition": definition}, [{"definition": definition}, {"helm_release": release}]
    )
