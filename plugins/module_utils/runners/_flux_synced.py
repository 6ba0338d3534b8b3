# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what flux_synced does — reads Flux's Kustomizations (one list call a poll) until each
named one has applied the wanted Git revision and is Ready, or one has failed at that revision, or the timeout
passes; then says which, with Flux's own message. Reads only. Not a public API."""

from __future__ import annotations

import re
import time

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import NotFound

# Ready=False reasons that a retry at the same revision does not mend: the build, an apply, the health check after
# the Kustomization's own timeout; and a source Flux cannot read
FAILED = {"BuildFailed", "ReconciliationFailed", "HealthCheckFailed", "ArtifactFailed", "PruneFailed"}
WAITING = "DependencyNotReady"
LAYOUT_LABEL = "gangsched.kubeflow/layout"
_SHA = re.compile(r"^[0-9a-f]{7,64}$")


def wanted_sha(revision: str) -> str | None:
    """The commit of ``revision`` (``<sha>``, ``<branch>@sha1:<sha>``, ``sha1:<sha>``), lower case; None when it
    names none."""
    sha = revision.strip().rsplit(":", 1)[-1].lower()
    return sha if _SHA.match(sha) else None


def at(revision: str | None, sha: str) -> bool:
    """Whether a Flux revision (``main@sha1:<sha>``) is the commit ``sha`` (full or abbreviated)."""
    return bool(revision) and wanted_sha(revision or "") is not None and wanted_sha(revision).startswith(sha)


def _ready(obj: dict) -> dict:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c
    return {}


def state(name: str, obj: dict | None, sha: str) -> dict:
    """One Kustomization's state against ``sha``: ``synced`` (applied, Ready, its current spec seen), ``failed`` (at
    that revision, with a reason a retry does not mend, or suspended), and what Flux says."""
    if obj is None:
        return {"name": name, "synced": False, "failed": False, "reason": "NotFound", "message": "not found"}
    status = obj.get("status") or {}
    ready = _ready(obj)
    current = status.get("observedGeneration") == (obj.get("metadata") or {}).get("generation")
    applied, attempted = status.get("lastAppliedRevision"), status.get("lastAttemptedRevision")
    out = {
        "name": name,
        "applied_revision": applied,
        "attempted_revision": attempted,
        "ready": ready.get("status", "Unknown"),
        "reason": ready.get("reason", ""),
        "message": ready.get("message", ""),
        "source": (obj.get("spec") or {}).get("sourceRef") or {},
    }
    out["synced"] = current and at(applied, sha) and ready.get("status") == "True"
    suspended = bool((obj.get("spec") or {}).get("suspend"))
    failed_here = current and at(attempted, sha) and ready.get("status") == "False" and ready.get("reason") in FAILED
    out["failed"] = suspended or failed_here
    if suspended:
        out["reason"], out["message"] = "Suspended", "suspended (spec.suspend); resume it: flux resume kustomization"
    return out


def _source(client, namespace: str, ref: dict) -> dict | None:
    kind = ref.get("kind") or "GitRepository"
    if kind not in _api.KINDS or not ref.get("name"):
        return None
    ns = ref.get("namespace") or namespace
    obj = client.get_or_none(_api.path(kind, ns, ref["name"]), f"{kind} {ns}/{ref['name']}")
    if obj is None:
        return {"name": f"{kind} {ns}/{ref['name']}", "revision": None, "message": "not found"}
    ready = _ready(obj)
    artifact = (obj.get("status") or {}).get("artifact") or {}
    return {
        "name": f"{kind} {ns}/{ref['name']}",
        "revision": artifact.get("revision"),
        "ready": ready.get("status", "Unknown"),
        "message": ready.get("message", ""),
    }


def _line(namespace: str, s: dict) -> str:
    where = f"at {s.get('applied_revision')}" if s.get("applied_revision") else "nothing applied yet"
    said = f"{s['reason']}: {s['message']}" if s.get("reason") else s.get("message") or "no Ready condition yet"
    return f"Kustomization {namespace}/{s['name']} ({where}): Ready={s.get('ready', 'Unknown')} {said}"


def explain(namespace: str, states: list[dict], source: dict | None, sha: str, seconds: float, failed: bool) -> str:
    """The task's message: what failed (or is not synced), the cause first (a stage waiting on another comes after
    it), the source when it has not fetched the commit, and the fix."""
    left = [s for s in states if not s["synced"]]
    causes = [s for s in left if s.get("reason") != WAITING]
    waiting = [s["name"] for s in left if s.get("reason") == WAITING]
    head = (
        f"Flux failed to apply revision {sha}"
        if failed
        else f"Flux has not applied revision {sha} within {round(seconds)} s"
    )
    parts = [_line(namespace, s) for s in causes]
    if waiting:
        parts.append("waiting on those: " + ", ".join(waiting))
    if source and not at(source.get("revision"), sha):
        parts.append(
            f"{source['name']} has fetched {source.get('revision') or 'nothing'} "
            f"(Ready={source.get('ready', 'Unknown')} {source.get('message', '')}".rstrip()
            + "): is the commit pushed to the branch it reads?"
        )
    fix = (
        "Fix what Flux names and commit again (flux get kustomizations; kubectl describe the object)"
        if failed
        else "Check what Flux names (flux get kustomizations), or raise wait_timeout"
    )
    return f"{head}: " + "; ".join(parts) + f". {fix}"


def run(client, params: dict, check_mode: bool, warn, clock=time.monotonic, sleep=time.sleep) -> dict:
    namespace, names = params["namespace"], list(params.get("kustomizations") or [])
    sha = wanted_sha(params["revision"])
    if sha is None:
        return {
            "changed": False,
            "_failed": f"revision={params['revision']!r} names no commit; set it to the commit's SHA (git rev-parse "
            "HEAD) or to Flux's form main@sha1:<sha>",
        }
    selector = None if names else f"{LAYOUT_LABEL}={params['layout']}"
    path = _api.path("Kustomization", namespace)
    t0 = clock()
    polls = 0
    while True:
        try:
            items = client.list(path, f"Flux Kustomizations in {namespace}", labelSelector=selector)
        except NotFound:
            return {
                "changed": False,
                "_failed": "Flux's Kustomization API (kustomize.toolkit.fluxcd.io/v1) is not served: install Flux's "
                "kustomize-controller (flux install), then run again",
            }
        polls += 1
        found = {o["metadata"]["name"]: o for o in items}
        wanted = names or sorted(found)
        states = [state(n, found.get(n), sha) for n in wanted]
        failed = params["fail_fast"] and any(s["failed"] for s in states)
        synced = bool(states) and all(s["synced"] for s in states)
        seconds = clock() - t0
        if synced or failed or seconds >= params["wait_timeout"]:
            break
        sleep(min(params["poll_interval"], max(0.0, params["wait_timeout"] - seconds)))
    ref = next((s["source"] for s in states if s.get("source")), {})
    source = _source(client, namespace, ref) if ref else None
    result = {
        "changed": False,
        "revision": sha,
        "synced": synced,
        "kustomizations": [{k: v for k, v in s.items() if k not in ("source", "failed")} for s in states],
        "source": source,
        "seconds": round(clock() - t0, 2),
        "polls": polls,
    }
    if not states:
        result["_failed"] = (
            f"no Flux Kustomization in {namespace} carries {LAYOUT_LABEL}={params['layout']} after "
            f"{round(seconds)} s: has the layout (gitops_layout) been committed where the cluster's Flux reads it? "
            "Name them in kustomizations, or check layout and namespace"
        )
    elif not synced:
        result["_failed"] = explain(namespace, states, source, sha, seconds, failed)
    return result
