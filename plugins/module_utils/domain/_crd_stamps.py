# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the CRDs the roles apply from files, without I/O. Each CRD carries its owner
(a label) and the sha256 of the file it came from (an annotation), so a file whose stamp is on the cluster is
not sent again. Not a public API."""

from __future__ import annotations

import hashlib

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _manifests
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._manifests import copy_plain

OWNER_LABEL = "gangsched.kubeflow/crds-of"
STAMP = "gangsched.kubeflow/source-sha256"
API_VERSION = "apiextensions.k8s.io/v1"


def stamp(text: str) -> str:
    """The sha256 of a file's text, as the hash filter gives it for the same text (its UTF-8 bytes)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def applied_stamps(live: list[dict]) -> set[str]:
    """The file stamps the owner's CRDs on the cluster carry."""
    return {((o.get("metadata") or {}).get("annotations") or {}).get(STAMP) for o in live} - {None}


def pending(files: dict[str, str], applied: set[str], force: bool) -> list[str]:
    """The files to apply, sorted: each whose stamp is on no CRD of the owner (every file with ``force``)."""
    return sorted(name for name, text in files.items() if force or stamp(text) not in applied)


def crds_of(name: str, text: str) -> list[dict]:
    """The CustomResourceDefinitions of one file (empty documents skipped); GangError naming the file and the
    fix when it is not YAML, holds something else, or none at all."""
    try:
        docs = _manifests.load_all(text)
    except ValueError as e:
        raise GangError(f"{name} {e}; point the CRD source at CRD files", file=name) from None
    for i, d in enumerate(docs):
        if not isinstance(d, dict) or d.get("kind") != "CustomResourceDefinition" or d.get("apiVersion") != API_VERSION:
            what = d.get("kind") if isinstance(d, dict) else type(d).__name__
            raise GangError(
                f"{name}: document {i + 1} is {what or 'no Kubernetes object'}, not a CustomResourceDefinition "
                f"({API_VERSION}); leave it out of the CRD source (its excludes) or point the source at CRD files only",
                file=name,
            )
        if not (d.get("metadata") or {}).get("name"):
            raise GangError(f"{name}: document {i + 1}, a CustomResourceDefinition, has no metadata.name", file=name)
    if not docs:
        raise GangError(f"{name} holds no CustomResourceDefinition: point the CRD source at CRD files", file=name)
    return docs


def stamped(crd: dict, owner: str, sha: str) -> dict:
    """The CRD with its owner label and its file's stamp (a copy)."""
    out = copy_plain(crd)
    meta = out.setdefault("metadata", {})
    meta.setdefault("labels", {})[OWNER_LABEL] = owner
    meta.setdefault("annotations", {})[STAMP] = sha
    return out


def dropped_versions(live: dict | None, new: dict) -> list[str]:
    """The versions a CRD's objects are stored as (the live CRD's ``status.storedVersions``) that the new CRD no
    longer lists in ``spec.versions``: the API server refuses such an update, and the objects would be unreadable.

    >>> dropped_versions({"status": {"storedVersions": ["v1alpha1", "v1"]}}, {"spec": {"versions": [{"name": "v1"}]}})
    ['v1alpha1']
    """
    stored = ((live or {}).get("status") or {}).get("storedVersions") or []
    listed = {v.get("name") for v in (new.get("spec") or {}).get("versions") or []}
    return [v for v in stored if v not in listed]


def dropped_problem(live: dict, new: dict, dropped: list[str]) -> str:
    """What to do before a CRD that drops stored versions can be applied (Kubernetes' storage-version migration)."""
    name = new["metadata"]["name"]
    plural = (new.get("spec") or {}).get("names", {}).get("plural") or name.split(".", 1)[0]
    storage = next((v.get("name") for v in new["spec"].get("versions") or [] if v.get("storage")), None)
    stored = live["status"]["storedVersions"]
    return (
        f"CustomResourceDefinition {name}: the new file no longer lists version(s) {', '.join(dropped)}, as which "
        f"objects are stored (status.storedVersions: {', '.join(stored)}); applied, they could no longer be read, so "
        f"no CRD was applied. Migrate them first: with the CRD that serves both, write every {plural} object back "
        f"(kubectl get {name} -A -o json | kubectl replace -f -) so it is stored as {storage}, then remove "
        f"{', '.join(dropped)} from the CRD's status.storedVersions (its status subresource), then run again"
    )
