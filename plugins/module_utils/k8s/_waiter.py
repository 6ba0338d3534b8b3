# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: list-then-watch with re-list on a broken or expired watch (an API
server restart, 410 Gone), and the predicates the modules wait on. Not a public API."""

from __future__ import annotations

import time

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import ApiError, GangError

# the longest a watch round of wait_pod_bound lasts: its between() and give_up() are asked at least this often
ROUND = 2.0


class WaitTimeout(GangError):
    pass


class Watcher:
    """Keeps ``store`` (name -> object) current for a list path; calls ``on_event(kind, obj, store)``
    for every change (kind ADDED/MODIFIED/DELETED; after a re-list, SYNC for every object and DELETED
    for those gone) and stops when it returns True or the deadline passes."""

    def __init__(self, client, path: str, what: str, clock=time.monotonic, sleep=time.sleep, **query):
        self.client, self.path, self.what, self.query = client, path, what, query
        self.clock, self.sleep = clock, sleep
        self.store: dict[str, dict] = {}
        self.relists = 0
        self.errors: list[str] = []
        self.rv: str | None = None  # kept across run() calls: a later call resumes the watch

    def _relist(self, on_event) -> tuple[str, bool]:
        # no retry inside the call: this loop retries, within its own deadline
        query = {k: v for k, v in self.query.items() if v is not None}
        data = self.client.get(self.path, self.what, query, retry_for=0)
        items = {o["metadata"]["name"]: o for o in data.get("items") or []}
        done = False
        for name in list(self.store):
            if name not in items:
                obj = self.store.pop(name)
                done = on_event("DELETED", obj, self.store) or done
        for name, obj in items.items():
            self.store[name] = obj
            done = on_event("SYNC", obj, self.store) or done
        self.relists += 1
        return data.get("metadata", {}).get("resourceVersion", ""), done

    def run(self, on_event, timeout: float) -> bool:
        """True when on_event said done; False on timeout. Connection errors are retried until then."""
        deadline = self.clock() + timeout
        return self._run(on_event, deadline, self.rv)

    def _run(self, on_event, deadline: float, rv: str | None) -> bool:
        while self.clock() < deadline:
            try:
                if rv is None:
                    rv, done = self._relist(on_event)
                    self.rv = rv
                    if done:
                        return True
                left = deadline - self.clock()
                if left <= 0:
                    break
                for ev in self.client.watch(self.path, min(left, 300), self.what, resourceVersion=rv, **self.query):
                    kind, obj = ev.get("type"), ev.get("object") or {}
                    if kind == "ERROR":  # 410 Gone and friends: start over from a list
                        rv = self.rv = None
                        break
                    rv = self.rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if kind == "BOOKMARK":
                        continue
                    name = obj["metadata"]["name"]
                    if kind == "DELETED":
                        self.store.pop(name, None)
                    else:
                        self.store[name] = obj
                    if on_event(kind, obj, self.store):
                        return True
                    if self.clock() >= deadline:
                        return False
            except ApiError as e:
                if e.status in (401, 403, 404):
                    raise
                self.errors.append(str(e))
                rv = self.rv = None
                self.sleep(min(1.0, max(0.0, deadline - self.clock())))
        return False


def wait_pod_bound(
    client, ns: str, pod: dict, timeout: float, clock=time.monotonic, between=None, seen=None, give_up=None
) -> bool:
    """True once Pod ``pod`` (as the API server returned it on create) has a node, False after ``timeout``
    (or when it is deleted): a watch of that name from the object's resourceVersion, in short rounds (ROUND seconds)
    with ``between()`` called before each (it may raise to stop), instead of polling the pod. ``seen``: a dict that
    keeps the pod as last seen (``seen["pod"]``); ``give_up(pod)``, asked on each change of the pod and before each
    round (None before any change): True ends the wait, False returned."""
    name = pod["metadata"]["name"]
    if (pod.get("spec") or {}).get("nodeName"):
        return True
    w = Watcher(client, _api.path("Pod", ns), f"Pod {ns}/{name}", clock=clock, fieldSelector=f"metadata.name={name}")
    w.rv = pod["metadata"].get("resourceVersion") or None
    state: dict = {"gone": False, "pod": None, "gave_up": False}

    def on_event(kind, obj, _store):
        state["gone"], state["pod"] = kind == "DELETED", obj
        if seen is not None:
            seen["pod"] = obj
        if state["gone"] or (obj.get("spec") or {}).get("nodeName"):
            return True
        state["gave_up"] = give_up is not None and give_up(obj)
        return state["gave_up"]

    deadline = clock() + timeout
    while clock() < deadline:
        if between is not None:
            between()
        if give_up is not None and give_up(state["pod"]):
            return False
        if w.run(on_event, min(ROUND, deadline - clock())):
            return not state["gone"] and not state["gave_up"]
    return False


def refusal(pod: dict | None) -> str | None:
    """What the scheduler said of a pod it did not bind: its PodScheduled condition when False ('reason: message'),
    else None (no scheduler has written one)."""
    for c in ((pod or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return ": ".join(str(x) for x in (c.get("reason"), c.get("message")) if x) or "PodScheduled False"
    return None


def rollout_complete(dep: dict) -> tuple[bool, str]:
    """Like `kubectl rollout status`: (done, what is still missing)."""
    meta, spec, st = dep.get("metadata", {}), dep.get("spec", {}), dep.get("status") or {}
    want = spec.get("replicas", 1)
    if st.get("observedGeneration", 0) < meta.get("generation", 0):
        return False, "the controller has not seen the new generation yet"
    updated = st.get("updatedReplicas", 0)
    if updated < want:
        return False, f"{updated} of {want} replicas updated"
    if st.get("replicas", 0) > updated:
        return False, f"{st.get('replicas', 0) - updated} old replica(s) still terminating"
    if st.get("availableReplicas", 0) < updated:
        return False, f"{st.get('availableReplicas', 0)} of {updated} updated replicas available"
    return True, "rolled out"


def wait_rollout(client, ns: str, name: str, timeout: float) -> dict:
    w = Watcher(
        client,
        _api.path("Deployment", ns),
        f"Deployment {ns}/{name}",
        fieldSelector=f"metadata.name={name}",
    )
    state = {"why": "not seen yet"}

    def on_event(kind, obj, store):
        if kind == "DELETED":
            raise GangError(f"Deployment {ns}/{name} was deleted while waiting for its rollout")
        done, state["why"] = rollout_complete(obj)
        return done

    if not w.run(on_event, timeout):
        raise WaitTimeout(
            f"Timed out after {timeout:.0f}s waiting for the rollout of Deployment {ns}/{name}: {state['why']}"
            + (f" (API errors meanwhile: {w.errors[-1]})" if w.errors else "")
            + f"; check its pods (kubectl -n {ns} describe deployment {name}) or raise wait_timeout"
        )
    return w.store.get(name, {})
