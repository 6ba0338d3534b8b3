"""koord-scheduler (Koordinator) as a second scheduler, installed as a user would (its CRDs from the
built module, our own RBAC, a KubeSchedulerConfiguration in a ConfigMap, a Deployment of its image)
and run by the pod-process runner under its own ServiceAccount.

Gangs by the seed-003 labels alone (``pod-group.scheduling.sigs.k8s.io/name`` and ``.../min-available``),
no PodGroup object: 5 pods x 1 GPU with min-available 5 on 4 x 1-GPU nodes are held, none ever bound
(checked on every watch event), until a fifth GPU node comes, then all 5 run; with min-available 1 the
same pods start in part (4 Running on v1.6.1; on v1.8.0 1 to 4, see the test). RBAC never refuses
koord-scheduler a call.
"""

from __future__ import annotations

import time
import uuid

import pytest
from ansible_run import module
from kubernetes import client as k

from lab import build, kube, nodes, procs, scenarios
from lab import versions as V

NS = scenarios.KOORD_NS
USER = f"system:serviceaccount:{NS}:{scenarios.KOORD_NAME}"
# after koord-scheduler has tried and refused every pod of the gang: long enough for its retries
HOLD = 5.0


@pytest.fixture(scope="module")
def koord(lab):
    scenarios.install_koord_scheduler(lab)
    return lab


@pytest.fixture(scope="module")
def ns(koord, core):
    """One namespace for this file's pods, each test deleting its own: deleting a namespace takes the
    namespace controller about 5 s, and koord-scheduler's calls into a terminating one are refused."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    kube.ensure_namespace(core, name)
    yield name
    core.delete_namespace(name)


def _delete_pods(core, ns: str, selector: str) -> None:
    core.delete_collection_namespaced_pod(ns, label_selector=selector, grace_period_seconds=0)
    kube.wait_for(lambda: not core.list_namespaced_pod(ns, label_selector=selector).items, 30, f"pods {selector} gone")


def _podgroups(api, ns: str) -> list[str]:
    items = k.CustomObjectsApi(api).list_namespaced_custom_object("scheduling.sigs.k8s.io", "v1alpha1", ns, "podgroups")
    return [i["metadata"]["name"] for i in items["items"]]


def _refused(core, ns: str, selector: str) -> int:
    """Pods the scheduler has tried and left unscheduled (condition PodScheduled False)."""
    return sum(
        any(c.type == "PodScheduled" and c.status == "False" for c in p.status.conditions or [])
        for p in core.list_namespaced_pod(ns, label_selector=selector).items
    )


def _untried(core, ns: str, selector: str) -> list[str]:
    """Names of the unbound pods on which no scheduler wrote its PodScheduled condition (bound them, or said why)."""
    return sorted(
        p.metadata.name
        for p in core.list_namespaced_pod(ns, label_selector=selector).items
        if not p.spec.node_name and not any(c.type == "PodScheduled" for c in p.status.conditions or [])
    )


def _wait_refused(core, ns: str, selector: str, count: int) -> None:
    """Until ``count`` pods are refused by koord-scheduler. A pod that reaches its scheduling queue before its gang
    cache knows it is gated by Coscheduling's PreEnqueue ("not exists in gangCache") and, under load, may not be
    tried again for minutes; an update of the pod runs PreEnqueue again, so the unbound pods are annotated once,
    after a first wait, and must then be tried and refused by the scheduler itself."""
    try:
        kube.wait_for(lambda: _refused(core, ns, selector) == count, 20, f"{count} pod(s) refused")
        return
    except TimeoutError:
        pass
    for p in core.list_namespaced_pod(ns, label_selector=selector).items:
        if not p.spec.node_name:
            core.patch_namespaced_pod(p.metadata.name, ns, {"metadata": {"annotations": {"lab/requeue": "1"}}})
    kube.wait_for(lambda: _refused(core, ns, selector) == count, 30, f"{count} pod(s) refused after a requeue")


def test_koord_scheduler_runs_its_build_with_loopback_insecure_port(koord):
    pidfile = next(iter(sorted(koord.pods.glob(f"{NS}_{scenarios.KOORD_NAME}-*/{scenarios.KOORD_NAME}.pid"))), None)
    assert pidfile is not None, list(koord.pods.glob("*"))
    log = pidfile.with_suffix(".log").read_text(errors="replace")
    start = [line for line in log.splitlines() if line.startswith("=== ") and " start #" in line][-1]
    argv = start.split(": ", 1)[1].split()
    assert argv[0] == str(build.binary_path("koord-scheduler")), start
    assert "--config=/config/koord-scheduler.config" in argv, start
    # the deprecated insecure port obeys --address even with --config (its --help says otherwise)
    # the insecure port opens after the secure one (the Deployment's probe): on a busy machine, some seconds later
    pid, deadline = procs.read_pid(pidfile), time.monotonic() + 60
    listening = procs.listening(pid)
    while not any(p == 10251 for _a, p in listening) and time.monotonic() < deadline:
        time.sleep(0.5)
        listening = procs.listening(pid)
    assert ("127.0.0.1", 10251) in listening, listening
    assert not {a for a, p in listening if p == 10251} - {"127.0.0.1"}, listening


def test_seed003_gang_waits_for_the_fifth_gpu_then_all_run(koord, api, core, ns, added_nodes):
    try:
        with kube.PodWatcher(koord, ns, "app=gang") as w:
            kube.apply(koord, scenarios.koord_gang(ns, "gang", 5, min_available=5))
            _wait_refused(core, ns, "app=gang", 5)
            time.sleep(HOLD)
            s = w.snapshot()
            assert s.ever_bound() == set(), f"pods bound while the gang could not fit: {s.events}"
            assert len(s.pending()) == 5, s.latest
            # the labels alone make the gang: koord-scheduler creates no PodGroup object for it
            assert _podgroups(api, ns) == []
            added = nodes.add(api, gpus=1)
            added_nodes.append(added)
            nodes.wait_ready(api, names=[added])
            kube.wait_for(lambda: len(w.snapshot().running()) == 5, 30, "all 5 gang pods Running after a fifth GPU")
        assert _podgroups(api, ns) == []
    finally:
        _delete_pods(core, ns, "app=gang")


def test_min_available_1_starts_members_without_the_whole_gang(koord, core, ns):
    """With min-available 1 the gang may start in part: members bind although all 5 cannot fit 4 GPUs, where
    min-available 5 (above) binds none. How many bind depends on the release: v1.6.1 binds 4 and refuses the fifth;
    v1.8.0 tries one representative of the group at a time (Coscheduling's PreEnqueue refuses the others, "gangGroup
    ... is scheduling and this pod has not been attempted", "representative pod ... already exists") and, once the
    gang is satisfied, activates none of the members it refused that way: created at once, 1 to 4 bind (seen: 2, then
    3 left untried for good)."""
    try:
        with kube.PodWatcher(koord, ns, "app=loose") as w:
            kube.apply(koord, scenarios.koord_gang(ns, "loose", 5, min_available=1))
            if V.KOORDINATOR == "v1.6.1":
                kube.wait_for(lambda: len(w.snapshot().running()) == 4, 90, "4 pods Running")
                _wait_refused(core, ns, "app=loose", 1)
                time.sleep(2)
            else:
                kube.wait_for(lambda: w.snapshot().running(), 60, "a member Running")
                time.sleep(HOLD)
            s = w.snapshot()
        assert 1 <= len(s.running()) <= 4, s.latest
        assert len(s.running()) + len(s.pending()) == 5, s.latest
        assert len(s.ever_bound()) == len(s.running()), s.events
        if V.KOORDINATOR == "v1.6.1":
            assert len(s.running()) == 4, s.latest
        # gang_info names the members left untried (v1.8.0) from the pods alone, and calls the scheduler hung for none
        untried = _untried(core, ns, "app=loose")
        probs = module(koord, "gang_info", partial_threshold_seconds=1)["problems"]
        named = [p for p in probs if f"of gang {ns}/loose were never tried" in p["message"]]
        print(f"bound {sorted(s.running())}, untried {untried}, gang_info: {[p['object'] for p in named]}")
        assert not [p for p in probs if "makes no progress" in p["message"]], probs
        if V.KOORDINATOR != "v1.6.1" and untried:
            assert len(named) == 1, probs
            assert named[0]["object"].startswith(f"Pods {ns}/{untried[0]}"), named
            assert f"{len(untried)} member(s)" in named[0]["message"], named
        else:
            assert named == [], probs
    finally:
        _delete_pods(core, ns, "app=loose")


def test_no_call_of_koord_scheduler_is_refused(koord):
    """Runs after the tests above: covers every call koord-scheduler made for them."""
    events = koord.audit_events(user=USER)
    seen = {(e["verb"], e["objectRef"].get("resource")) for e in events if e.get("objectRef")}
    # its own token, not the lab's admin: the informers of its CRDs and the core ones list as this user
    for resource in ("pods", "nodes", "podgroups", "reservations", "devices"):
        # a list (v1.6.1), or a watch that sends the initial objects (v1.8.0: client-go's watch-list)
        assert ("list", resource) in seen or ("watch", resource) in seen, sorted(seen)
    denied = koord.rbac_refusals(USER)
    assert denied == [], [(e["verb"], e["requestURI"], e["responseStatus"].get("message")) for e in denied]
