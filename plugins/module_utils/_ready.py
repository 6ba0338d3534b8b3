# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what component_ready does — one read of each object a component
brings (CRDs, Deployments, DaemonSets, admission webhook configurations), then, for those not ready
yet, reads again once a second until they are or the timeout passes. Not a public API."""

from __future__ import annotations

import time

ADMISSION = "/apis/admissionregistration.k8s.io/v1"


def _condition(obj: dict, condition: str) -> bool:
    """``condition`` is True at the object's current generation (where its status reports one)."""
    md, st = obj.get("metadata") or {}, obj.get("status") or {}
    if "observedGeneration" in st and st["observedGeneration"] != md.get("generation"):
        return False
    return any(c.get("type") == condition and c.get("status") == "True" for c in st.get("conditions") or [])


def established(obj: dict) -> str | None:
    """None when ready, else what is missing."""
    return None if _condition(obj, "Established") else "not Established yet"


def available(obj: dict) -> str | None:
    if _condition(obj, "Available"):
        return None
    if (obj.get("status") or {}).get("observedGeneration", 0) < (obj.get("metadata") or {}).get("generation", 0):
        return "the controller has not seen its new generation yet"
    have, want = (obj.get("status") or {}).get("availableReplicas") or 0, (obj.get("spec") or {}).get("replicas", 1)
    return f"not Available yet ({have} of {want} replicas)"


def daemonset_ready(obj: dict) -> str | None:
    md, st = obj.get("metadata") or {}, obj.get("status") or {}
    if st.get("observedGeneration", 0) < md.get("generation", 0):
        return "the controller has not seen its new generation yet"
    want = st.get("desiredNumberScheduled", 0)
    ready, updated = st.get("numberReady", 0), st.get("updatedNumberScheduled", 0)
    if ready < want or updated < want:
        return f"{ready} of {want} pods ready, {updated} updated"
    return None


def ca_injected(obj: dict) -> str | None:
    hooks = obj.get("webhooks") or []
    without = [h.get("name") for h in hooks if not (h.get("clientConfig") or {}).get("caBundle")]
    if not hooks:
        return "no webhooks in it yet"
    return f"no caBundle yet in {', '.join(without)}" if without else None


# option: (kind, path of one object, readiness, namespaced)
KINDS = {
    "crds": ("CustomResourceDefinition", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}", established),
    "deployments": ("Deployment", "/apis/apps/v1/namespaces/{namespace}/deployments/{name}", available),
    "daemonsets": ("DaemonSet", "/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}", daemonset_ready),
    "mutating_webhook_configurations": (
        "MutatingWebhookConfiguration",
        ADMISSION + "/mutatingwebhookconfigurations/{name}",
        ca_injected,
    ),
    "validating_webhook_configurations": (
        "ValidatingWebhookConfiguration",
        ADMISSION + "/validatingwebhookconfigurations/{name}",
        ca_injected,
    ),
}
NAMESPACED = ("deployments", "daemonsets")


def targets(params: dict) -> list[tuple[str, str, object]]:
    """(``Kind namespace/name``, path, readiness) of every object the options name, in option order."""
    out = []
    for option, (kind, path, ready) in KINDS.items():
        for name in params.get(option) or []:
            if option in NAMESPACED:
                ns = params["namespace"]
                out.append((f"{kind} {ns}/{name}", path.format(namespace=ns, name=name), ready))
            else:
                out.append((f"{kind} {name}", path.format(name=name), ready))
    return out


def _read(client, todo):
    """(label, why not ready) of those in ``todo`` that are not ready now."""
    left = []
    for label, path, ready in todo:
        obj = client.get_or_none(path, label)
        why = "not found" if obj is None else ready(obj)
        if why:
            left.append(((label, path, ready), why))
    return left


def run(client, params: dict, check_mode: bool, warn, clock=time.monotonic, sleep=time.sleep) -> dict:
    todo = targets(params)
    if any(o in NAMESPACED and params.get(o) for o in KINDS) and not params.get("namespace"):
        return {"changed": False, "_failed": "namespace is required with deployments or daemonsets; set it to theirs"}
    t0 = clock()
    left = _read(client, todo)
    not_ready_at_first = [t[0] for t, _why in left]
    timeout = params["wait_timeout"]
    while left and params["wait"] and clock() - t0 < timeout:
        sleep(min(1.0, max(0.0, timeout - (clock() - t0))))
        left = _read(client, [t for t, _why in left])
    waiting = {t[0] for t, _why in left}
    result = {
        "changed": False,
        "ready": [label for label, _p, _r in todo if label not in waiting],
        "not_ready": [{"object": t[0], "why": why} for t, why in left],
        "waited_for": not_ready_at_first if params["wait"] else [],
        "seconds": round(clock() - t0, 2),
    }
    if left and params["wait"]:
        result["_failed"] = (
            f"Timed out after {timeout}s waiting for "
            + "; ".join(f"{t[0]}: {why}" for t, why in left)
            + ". Check those objects and their pods (kubectl describe), or raise wait_timeout"
        )
    return result
