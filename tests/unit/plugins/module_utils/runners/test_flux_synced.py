"""flux_synced's runner: synced only on the wanted commit applied and Ready; a failure at that commit ends the wait
at once and is named with Flux's message, the cause before the stages waiting on it."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import NotFound
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _flux_synced

SHA = "3f2c1a9d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39"
OLD = "0" * 40
KS = "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations"
GIT = "/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system/gitrepositories/flux-system"


def ks(name, applied=SHA, attempted=None, ready="True", reason="ReconciliationSucceeded", message="ok", gen=1, seen=1):
    return {
        "metadata": {"name": name, "generation": gen},
        "spec": {"sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
        "status": {
            "observedGeneration": seen,
            "lastAppliedRevision": f"main@sha1:{applied}" if applied else None,
            "lastAttemptedRevision": f"main@sha1:{attempted or applied}",
            "conditions": [{"type": "Ready", "status": ready, "reason": reason, "message": message}],
        },
    }


class Flux:
    """A list of Kustomizations per poll (the last one repeats), and the GitRepository."""

    def __init__(self, polls, source_revision=SHA, served=True):
        self.polls, self.lists, self.served, self.queries = list(polls), 0, served, []
        self.source = {
            "status": {
                "artifact": {"revision": f"main@sha1:{source_revision}"},
                "conditions": [{"type": "Ready", "status": "True", "message": "stored artifact"}],
            }
        }

    def list(self, path, what="", **query):
        assert path == KS
        if not self.served:
            raise NotFound("404")
        self.queries.append(query)
        items = self.polls[min(self.lists, len(self.polls) - 1)]
        self.lists += 1
        return items

    def get_or_none(self, path, what=""):
        assert path == GIT, path
        return self.source


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


def params(**over):
    return {
        "namespace": "flux-system",
        "kustomizations": ["flux-system", "gangsched-20-volcano-main"],
        "layout": "gangsched",
        "revision": SHA,
        "wait_timeout": 60,
        "poll_interval": 2,
        "fail_fast": True,
        **over,
    }


def run(cluster, **over):
    clock = Clock()
    return _flux_synced.run(cluster, params(**over), False, None, clock=clock, sleep=clock.sleep)


def test_synced_once_every_stage_applied_the_commit_and_is_ready():
    before = [ks("flux-system"), ks("gangsched-20-volcano-main", applied=OLD)]
    after = [ks("flux-system"), ks("gangsched-20-volcano-main")]
    got = run(Flux([before, before, after]))
    assert got["synced"] is True and "_failed" not in got, got
    assert got["polls"] == 3 and got["seconds"] == 4.0
    assert [k["synced"] for k in got["kustomizations"]] == [True, True]


def test_ready_on_an_older_spec_is_not_synced():
    stale = [ks("flux-system"), ks("gangsched-20-volcano-main", gen=2, seen=1)]
    got = run(Flux([stale]), wait_timeout=6)
    assert got["synced"] is False and "within 6 s" in got["_failed"], got


def test_a_failure_at_the_commit_ends_the_wait_and_names_the_object_cause_first():
    broken = "Deployment/volcano-system/volcano-scheduler dry-run failed: spec.replicas: Invalid value: -1"
    polls = [
        [
            ks("flux-system"),
            ks(
                "gangsched-20-volcano-main",
                applied=OLD,
                attempted=SHA,
                ready="False",
                reason="ReconciliationFailed",
                message=broken,
            ),
            ks(
                "gangsched-20-volcano-admitted",
                applied=OLD,
                ready="False",
                reason="DependencyNotReady",
                message="dependency not ready",
            ),
        ]
    ]
    got = run(Flux(polls), kustomizations=["flux-system", "gangsched-20-volcano-main", "gangsched-20-volcano-admitted"])
    assert got["polls"] == 1, got
    msg = got["_failed"]
    assert msg.startswith(f"Flux failed to apply revision {SHA}: Kustomization flux-system/gangsched-20-volcano-main")
    assert broken in msg and "waiting on those: gangsched-20-volcano-admitted" in msg
    assert msg.index("volcano-main") < msg.index("waiting on those")
    assert "Traceback" not in msg


def test_without_fail_fast_a_failure_waits_for_the_timeout():
    polls = [
        [
            ks(
                "flux-system",
                applied=OLD,
                attempted=SHA,
                ready="False",
                reason="BuildFailed",
                message="kustomize build failed",
            )
        ]
    ]
    got = run(Flux(polls), kustomizations=["flux-system"], fail_fast=False, wait_timeout=10)
    assert got["polls"] == 6 and "has not applied revision" in got["_failed"], got


def test_a_missing_stage_and_an_unfetched_commit_are_named():
    polls = [[ks("flux-system", applied=OLD)]]
    got = run(Flux(polls, source_revision=OLD), wait_timeout=4)
    msg = got["_failed"]
    assert (
        "Kustomization flux-system/gangsched-20-volcano-main (nothing applied yet): Ready=Unknown NotFound: not found"
        in msg
    )
    assert f"GitRepository flux-system/flux-system has fetched main@sha1:{OLD}" in msg
    assert "is the commit pushed to the branch it reads?" in msg


def test_suspended_is_a_failure():
    s = ks("flux-system", applied=OLD)
    s["spec"]["suspend"] = True
    got = run(Flux([[s]]), kustomizations=["flux-system"])
    assert got["polls"] == 1 and "Suspended" in got["_failed"] and "flux resume" in got["_failed"], got


def test_default_is_the_layouts_label():
    cluster = Flux([[ks("gangsched-10-gpu-device-plugin-main")]])
    got = run(cluster, kustomizations=[])
    assert got["synced"] is True and cluster.queries[0]["labelSelector"] == "gangsched.kubeflow/layout=gangsched"


def test_no_layout_found_is_named():
    got = run(Flux([[]]), kustomizations=[], wait_timeout=2)
    assert "no Flux Kustomization in flux-system carries gangsched.kubeflow/layout=gangsched" in got["_failed"]


def test_flux_not_installed():
    got = run(Flux([[]], served=False))
    assert "is not served: install Flux's kustomize-controller" in got["_failed"]


@pytest.mark.parametrize(
    ("revision", "sha"),
    [(SHA, SHA), (f"main@sha1:{SHA}", SHA), (SHA[:7].upper(), SHA[:7].lower()), ("main", None), ("abc", None)],
)
def test_revision_forms(revision, sha):
    assert _flux_synced.wanted_sha(revision) == sha


def test_an_abbreviated_commit_matches():
    got = run(Flux([[ks("flux-system")]]), kustomizations=["flux-system"], revision=SHA[:8])
    assert got["synced"] is True


def test_a_revision_that_names_no_commit_is_refused_before_any_read():
    cluster = Flux([[]])
    got = run(cluster, revision="main")
    assert "names no commit" in got["_failed"] and cluster.lists == 0
