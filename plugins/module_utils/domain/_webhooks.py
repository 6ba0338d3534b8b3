# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: a release's admission webhook configurations as its kustomization would
render them (its JSON patches, its name prefix, the namespace of its Service), from the files the
release publishes. The caBundle is left out: the component's own cert rotator writes it. Pure: no I/O.
Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._manifests import copy_plain

try:
    import jsonpatch
except ImportError:  # kubernetes.core's requirements include it
    jsonpatch = None

KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def render(
    docs: list,
    patches: dict | None,
    namespace: str,
    name_prefix: str = "",
    service_prefix: str = "",
) -> list[dict]:
    """The webhook configurations among ``docs`` with the JSON patch of their kind (``patches``: kind ->
    list of operations) applied, then ``name_prefix`` on their names, ``service_prefix`` on their
    Services' names and every Service in ``namespace``. Raises ValueError naming what is wrong."""
    if jsonpatch is None:
        raise ValueError("the Python package jsonpatch is missing on the controller: pip install jsonpatch")
    if not isinstance(docs, list):
        raise ValueError(f"needs a list of manifests, got {type(docs).__name__}")
    out = []
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict) or doc.get("kind") not in KINDS:
            continue
        name = (doc.get("metadata") or {}).get("name")
        if not name or not isinstance(doc.get("webhooks"), list) or not doc["webhooks"]:
            raise ValueError(f"manifest {i} ({doc.get('kind')} {name or '?'}) has no metadata.name or no webhooks")
        d = copy_plain(doc)
        ops = (patches or {}).get(d["kind"])
        if ops:
            try:
                d = jsonpatch.apply_patch(d, copy_plain(ops))
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError) as e:
                raise ValueError(f"the {d['kind']} patch does not apply to {name}: {e}") from e
        d["metadata"]["name"] = name_prefix + d["metadata"]["name"]
        for w in d["webhooks"]:
            svc = (w.get("clientConfig") or {}).get("service")
            if not svc or not svc.get("name"):
                raise ValueError(f"webhook {w.get('name')} of {d['metadata']['name']} has no clientConfig.service")
            svc["name"] = service_prefix + svc["name"]
            svc["namespace"] = namespace
            w["clientConfig"].pop("caBundle", None)
        out.append(d)
    if not out:
        raise ValueError("no MutatingWebhookConfiguration or ValidatingWebhookConfiguration among the manifests")
    return out
