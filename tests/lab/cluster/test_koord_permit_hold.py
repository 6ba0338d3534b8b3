"""koord-scheduler's Coscheduling holds a gang's members at Permit with their resources assumed in its cache,
even for a gang that can never fit. Observation test, 4 x 1-GPU nodes, label gangs (seed-003 labels):

- a running gang of 2 (min-available 2) binds; a held gang of 3 (min-available 3) then never binds (2 GPUs free);
- the held gang is retried continuously, and in each try its first members fit, are assumed and wait at Permit
  until the member that does not fit rejects the whole gang: koord-scheduler's own cache (its debug service
  ``/apis/v1/nodes/<node>`` on the loopback insecure port, read from inside its pod's network namespace) shows
  a held member on a GPU node while the API shows none bound. Nothing in the API shows it: no PodGroup object,
  no nominatedNodeName, only PodScheduled=False conditions and FailedScheduling events;
- a new gang of 2 (min-available 2) that fits the 2 free GPUs is still bound, both members; on the lab it took
  0.4-10 s (19 tries, 6 of them with both cores kept busy by other processes), and in about half the tries it was
  first refused, while a held member held a GPU in the cache, with "0/6 nodes are available: 1 node(s) had
  untolerated taint(s), 5 Insufficient nvidia.com/gpu" and "alreadyWaitForBound: 1" (its other member waiting at
  Permit): the message an upgrade test's smoke gang once failed with. Once, in CI on a loaded 2-core machine,
  it was not bound within 60 s. That refusal is a race, so it is not asserted; the cache and the eventual binding
  are, bounded by the scheduling queue's flush of pods left unschedulable (5 minutes, kube-scheduler's
  podMaxInUnschedulablePodsDuration, which koord-scheduler keeps), and the fitting pods' scheduler events are
  in the failure's message.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from lab import kube, procs, scenarios

NS_ = scenarios.KOORD_NS
GPU_NODES = [f"gpu-node-{i}" for i in range(4)]
# kube-scheduler's podMaxInUnschedulablePodsDuration (koord-scheduler keeps the default): a pod turned away is
# retried at the latest after this long, whatever event it waits for
UNSCHEDULABLE_FLUSH_S = 300

# run in a child process that joins koord-scheduler's network namespace (setns, as lab.podexec does) and
# samples its cache: [[node, [pod names with a GPU limit]], ...] per sample, as JSON on stdout
_SAMPLER = r"""
import ctypes, json, os, sys, time, urllib.request
pid, seconds, nodes = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3].split(",")
fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
if ctypes.CDLL(None, use_errno=True).setns(fd, 0x40000000) != 0:
    raise OSError(ctypes.get_errno(), "setns")
out, end = [], time.monotonic() + seconds
while time.monotonic() < end:
    sample = []
    for n in nodes:
        with urllib.request.urlopen(f"http://127.0.0.1:10251/apis/v1/nodes/{n}", timeout=3) as r:
            d = json.load(r)
        sample.append([n, sorted(
            p["Pod"]["metadata"]["namespace"] + "/" + p["Pod"]["metadata"]["name"]
            for p in d.get("pods") or []
            if any((c.get("resources", {}).get("limits") or {}).get("nvidia.com/gpu")
                   for c in p["Pod"]["spec"]["containers"])
        )])
    out.append(sample)
    time.sleep(0.02)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def koord(lab):
    scenarios.install_koord_scheduler(lab)
    return lab


def _koord_pid(lab) -> int | None:
    pidfile = next(iter(sorted(lab.pods.glob(f"{NS_}_{scenarios.KOORD_NAME}-*/{scenarios.KOORD_NAME}.pid"))))
    return procs.read_pid(pidfile)


def _sample_cache(lab, seconds: float) -> list[list]:
    r = subprocess.run(
        [sys.executable, "-c", _SAMPLER, str(_koord_pid(lab)), str(seconds), ",".join(GPU_NODES)],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
        check=True,
    )
    return json.loads(r.stdout)


def _scheduler_events(core, ns: str, prefix: str) -> list[str]:
    evs = core.list_namespaced_event(ns).items
    return [
        f"{e.involved_object.name}: {e.reason} x{e.count or 1}: {e.message}"
        for e in sorted(evs, key=lambda e: (e.involved_object.name, str(e.last_timestamp or e.event_time)))
        if e.involved_object.name.startswith(prefix)
    ]


def _bound(w: kube.PodWatcher, prefix: str) -> set[str]:
    return {n for n in w.snapshot().ever_bound() if n.startswith(prefix)}


def test_held_gang_members_sit_in_the_cache_yet_a_fitting_gang_binds(koord, core, namespace):
    ns = namespace
    with kube.PodWatcher(koord, ns) as w:
        kube.apply(koord, scenarios.koord_gang(ns, "run", 2, min_available=2))
        kube.wait_for(lambda: len(_bound(w, "run-")) == 2, 60, "the running gang bound")
        kube.apply(koord, scenarios.koord_gang(ns, "held", 3, min_available=3))
        samples = _sample_cache(koord, 10)
        held_in_cache = [s for s in samples if any(p.startswith(f"{ns}/held-") for _n, pods in s for p in pods)]
        assert _bound(w, "held-") == set(), w.snapshot().events
        # on the lab about a third of the samples (20 a second) showed one or two held members on a GPU node
        assert held_in_cache, f"no held member in koord-scheduler's cache in {len(samples)} samples: {samples[-1]}"

        t0 = time.monotonic()
        kube.apply(koord, scenarios.koord_gang(ns, "fit", 2, min_available=2))
        try:
            kube.wait_for(lambda: len(_bound(w, "fit-")) == 2, UNSCHEDULABLE_FLUSH_S + 45, "both fitting members bound")
        except TimeoutError as e:
            pytest.fail(f"{e}; the fitting pods' events: {_scheduler_events(core, ns, 'fit-')}", pytrace=False)
        took = time.monotonic() - t0
        assert _bound(w, "held-") == set(), w.snapshot().events
    print(f"fitting gang bound in {took:.1f}s; held members in cache in {len(held_in_cache)}/{len(samples)} samples")
