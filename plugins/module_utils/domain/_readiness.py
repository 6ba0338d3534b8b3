# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: when an object a component brings is ready — pure functions of the object
(or of a Service's EndpointSlices), each None when ready, else what it still lacks. No I/O. Not a public API."""

from __future__ import annotations


def condition_true(obj: dict, condition: str) -> bool:
    """``condition`` is True at the object's current generation (where its status reports one)."""
    md, st = obj.get("metadata") or {}, obj.get("status") or {}
    if "observedGeneration" in st and st["observedGeneration"] != md.get("generation"):
        return False
    return any(c.get("type") == condition and c.get("status") == "True" for c in st.get("conditions") or [])


def established(obj: dict) -> str | None:
    """A CustomResourceDefinition the API server serves."""
    return None if condition_true(obj, "Established") else "not Established yet"


def daemonset_ready(obj: dict) -> str | None:
    """Every desired pod of the current spec ready and updated."""
    md, st = obj.get("metadata") or {}, obj.get("status") or {}
    if st.get("observedGeneration", 0) < md.get("generation", 0):
        return "the controller has not seen its new generation yet"
    want = st.get("desiredNumberScheduled", 0)
    ready, updated = st.get("numberReady", 0), st.get("updatedNumberScheduled", 0)
    if ready < want or updated < want:
        return f"{ready} of {want} pods ready, {updated} updated"
    return None


def ca_injected(obj: dict) -> str | None:
    """An admission webhook configuration whose every webhook carries a caBundle."""
    hooks = obj.get("webhooks") or []
    without = [h.get("name") or "(unnamed)" for h in hooks if not (h.get("clientConfig") or {}).get("caBundle")]
    if not hooks:
        return "no webhooks in it yet"
    return f"no caBundle yet in {', '.join(without)}" if without else None


def endpoint_ready(slices: list[dict]) -> str | None:
    """A Service's EndpointSlices hold a ready address (what the API server calls a webhook at)."""
    for sl in slices:
        for e in sl.get("endpoints") or []:
            if e.get("addresses") and (e.get("conditions") or {}).get("ready") is not False:
                return None
    return "no ready endpoint yet"
