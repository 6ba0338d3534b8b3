"""Flux on the lab (``python -m lab flux up``): source-controller and kustomize-controller of the built release, each
as its own ServiceAccount, bootstrapped on the lab's Git server (smart HTTP) as ``flux bootstrap`` would be.

A commit under clusters/lab is applied and reported (``lastAppliedRevision`` ``main@sha1:<sha>``, Ready); a hand edit
is put back on the next reconcile; a file removed is pruned; a broken object makes the Kustomization not Ready with a
message naming it, and the next good commit is applied; every write is made by the controllers' ServiceAccounts, and
RBAC never refuses them; ``flux down`` stops Flux and keeps what it applied.
"""

from __future__ import annotations

import pytest
from kubernetes import client as k

from lab import flux, kube, procs

SOURCE_USER = f"system:serviceaccount:{flux.NS}:{flux.SOURCE}"
KUSTOMIZE_USER = f"system:serviceaccount:{flux.NS}:{flux.KUSTOMIZE}"
CM = "gitops-probe"


def _configmap(data: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CM, "namespace": "default"}, "data": data}


@pytest.fixture(scope="module")
def fx(lab):
    return flux.up(lab, interval="10s", kustomization_interval="30s", log=lambda *_: None)


def test_flux_runs_as_lab_components_bootstrapped_on_the_labs_repository(fx, lab):
    status = lab.status()
    for name in flux.PROCESSES:
        assert status[name]["up"], (name, status[name])
    assert fx.url.startswith("http://127.0.0.1:") and fx.url.endswith("/gitops.git")
    rev = flux.revision(fx.head())
    assert fx.git_repository()["status"]["artifact"]["revision"] == rev
    ks = fx.kustomization()
    assert ks["spec"]["path"] == "./clusters/lab" and ks["spec"]["prune"] is True
    assert ks["status"]["lastAppliedRevision"] == rev
    assert lab.log_path(flux.KUSTOMIZE).read_text().strip()


def test_a_commit_is_applied_and_reported(fx, core):
    sha = fx.commit({f"clusters/lab/{CM}.yaml": _configmap({"stage": "one"})}, "a probe ConfigMap")
    assert fx.head() == sha
    fx.reconcile()
    st = fx.wait_applied(sha, timeout=60)
    assert st["lastAppliedRevision"] == f"main@sha1:{sha}"
    assert next(c for c in st["conditions"] if c["type"] == "Ready")["status"] == "True"
    cm = core.read_namespaced_config_map(CM, "default")
    assert cm.data == {"stage": "one"}
    assert cm.metadata.labels["kustomize.toolkit.fluxcd.io/name"] == flux.NAME
    assert f"default_{CM}__ConfigMap" in [e["id"] for e in st["inventory"]["entries"]]


def test_a_hand_edit_is_put_back_on_the_next_reconcile(fx, core):
    core.patch_namespaced_config_map(CM, "default", {"data": {"stage": "edited by hand"}})
    assert core.read_namespaced_config_map(CM, "default").data["stage"] == "edited by hand"
    fx.wait_handled(fx.reconcile(with_source=False), timeout=60)
    assert core.read_namespaced_config_map(CM, "default").data == {"stage": "one"}


def test_a_file_removed_is_pruned(fx, core):
    sha = fx.commit({f"clusters/lab/{CM}.yaml": None}, "the probe removed")
    fx.reconcile()
    fx.wait_applied(sha, timeout=60)

    def gone() -> bool:
        try:
            core.read_namespaced_config_map(CM, "default")
            return False
        except k.ApiException as e:
            return e.status == 404

    kube.wait_for(gone, 30, f"ConfigMap {CM} pruned")


def test_a_broken_object_makes_the_kustomization_not_ready_naming_it(fx, core):
    good = fx.head()
    broken = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "broken", "namespace": "default"},
        "spec": {
            "replicas": -1,
            "selector": {"matchLabels": {"app": "broken"}},
            "template": {
                "metadata": {"labels": {"app": "broken"}},
                "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
            },
        },
    }
    sha = fx.commit({"clusters/lab/broken.yaml": broken, f"clusters/lab/{CM}.yaml": _configmap({"stage": "two"})}, "b")
    fx.reconcile()
    with pytest.raises(flux.FluxError, match="Deployment/default/broken"):
        fx.wait_applied(sha, timeout=60)
    st = fx.wait_attempted(sha, timeout=5)
    ready = next(c for c in st["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False" and "Deployment/default/broken" in ready["message"], ready
    assert st["lastAppliedRevision"] == f"main@sha1:{good}"
    # nothing of the refused revision is applied, the good object beside it included
    with pytest.raises(k.ApiException):
        core.read_namespaced_config_map(CM, "default")

    fixed = fx.commit({"clusters/lab/broken.yaml": None}, "the broken Deployment removed")
    fx.reconcile()
    st = fx.wait_applied(fixed, timeout=60)
    assert st["lastAppliedRevision"] == f"main@sha1:{fixed}"
    assert core.read_namespaced_config_map(CM, "default").data == {"stage": "two"}


def test_the_controllers_act_as_their_own_service_accounts(fx, lab):
    # the probe ConfigMap server-side applied (a patch) and pruned by kustomize-controller's ServiceAccount
    cm_calls = {
        e["verb"] for e in lab.audit_events(user=KUSTOMIZE_USER) if (e.get("objectRef") or {}).get("name") == CM
    }
    assert {"patch", "delete"} <= cm_calls, cm_calls
    # the GitRepository's status written by source-controller's
    assert any(
        (e.get("objectRef") or {}).get("resource") == "gitrepositories"
        and (e.get("objectRef") or {}).get("subresource") == "status"
        and e["verb"] in ("patch", "update")
        for e in lab.audit_events(user=SOURCE_USER)
    )
    for user in (SOURCE_USER, KUSTOMIZE_USER):
        refused = [(e["verb"], e.get("objectRef")) for e in lab.rbac_refusals(user)]
        assert refused == [], (user, refused)


def test_down_stops_flux_and_keeps_what_it_applied(fx, lab, core):
    pids = [lab.pid(p) for p in flux.PROCESSES]
    fx.down(log=lambda *_: None)
    assert not any(procs.alive(p) for p in pids)
    assert lab.addons() == []
    assert core.read_namespaced_config_map(CM, "default").data == {"stage": "two"}
    assert (
        k.CustomObjectsApi(kube.api(lab)).list_cluster_custom_object(flux.KUSTOMIZE_GROUP, "v1", "kustomizations")[
            "items"
        ]
        == []
    )
