# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the runner of the crds module. One list of the owner's CRDs; the files whose
stamp is not among theirs are parsed, sent as a server-side dry run all of them first (so a CRD the API server
refuses changes nothing), then applied, then waited for until Established. Not a public API."""

from __future__ import annotations

import json
import time

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api, _crd_stamps
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service

PATH = _api.path("CustomResourceDefinition")


def _apply(client, crd: dict, dry_run: bool) -> None:
    name = crd["metadata"]["name"]
    what = f"CustomResourceDefinition {name}"
    client.apply(f"{PATH}/{name}", crd, _service.FIELD_MANAGER, what=what, dry_run=dry_run)


def _wait(client, names: list[str], timeout: int, clock, sleep) -> list[str]:
    """Reads each CRD until Established, once a second, for ``timeout`` s; those that are not at the end."""
    deadline = clock() + timeout
    left = list(names)
    while True:
        left = [n for n in left if not _service.crd_established(_service.crd(client, n))]
        if not left or clock() >= deadline:
            return left
        sleep(min(1.0, max(0.0, deadline - clock())))


def _with_conversion(files: dict[str, str], conversion: dict) -> dict[str, str]:
    """Each file's text, with the ``spec.conversion`` its CRDs get noted in a trailing YAML comment (so the stamp
    covers the conversion too, and a changed Service or path applies the CRD again)."""
    if not conversion:
        return files
    out = {}
    for f, text in files.items():
        mine = {
            c["metadata"]["name"]: conversion[c["metadata"]["name"]]
            for c in _crd_stamps.crds_of(f, text)
            if c["metadata"]["name"] in conversion
        }
        out[f] = f"{text}\n# gangsched.kubeflow spec.conversion: {json.dumps(mine, sort_keys=True)}\n" if mine else text
    return out


def run(client, params: dict, check_mode: bool, warn, clock=time.monotonic, sleep=time.sleep) -> dict:
    owner, conversion = params["owner"], params.get("conversion") or {}
    files = _with_conversion(params["files"], conversion)
    live = client.list(
        PATH, f"CustomResourceDefinitions of {owner}", labelSelector=f"{_crd_stamps.OWNER_LABEL}={owner}"
    )
    todo = _crd_stamps.pending(files, _crd_stamps.applied_stamps(live), params["force"])
    crds = [
        _crd_stamps.stamped(c, owner, _crd_stamps.stamp(files[f]))
        for f in todo
        for c in _crd_stamps.crds_of(f, files[f])
    ]
    for c in crds:
        if c["metadata"]["name"] in conversion:
            c["spec"]["conversion"] = conversion[c["metadata"]["name"]]
    names = [c["metadata"]["name"] for c in crds]
    # a CRD that drops a version its objects are stored as is refused before any is sent; one read each of those
    # not among the owner's (a CRD another installer made)
    by_name = {o["metadata"]["name"]: o for o in live}
    for c in crds:
        name = c["metadata"]["name"]
        current = by_name[name] if name in by_name else client.get_or_none(f"{PATH}/{name}", f"CRD {name}")
        dropped = _crd_stamps.dropped_versions(current, c)
        if dropped:
            return {
                "changed": False,
                "applied": [],
                "files_applied": [],
                "files_unchanged": sorted(files),
                "_failed": _crd_stamps.dropped_problem(current, c, dropped),
            }
    for c in crds:  # every one first as a dry run: a refused CRD leaves the cluster as it was
        _apply(client, c, dry_run=True)
    if not check_mode:
        for c in crds:
            _apply(client, c, dry_run=False)
    was = {o["metadata"]["name"]: (o["metadata"].get("annotations") or {}).get(_crd_stamps.STAMP) for o in live}
    now = {c["metadata"]["name"]: c["metadata"]["annotations"][_crd_stamps.STAMP] for c in crds}
    result = {
        "changed": bool(crds),
        "applied": names,
        "files_applied": todo,
        "files_unchanged": sorted(set(files) - set(todo)),
        "_diff": {
            "before": "".join(f"{n}: {was.get(n) or '(none)'}\n" for n in names),
            "after": "".join(f"{n}: {now[n]}\n" for n in names),
        },
    }
    if check_mode or not names or params["wait_timeout"] == 0:
        return result
    late = _wait(client, names, params["wait_timeout"], clock, sleep)
    if late:
        result["_failed"] = (
            f"applied, but not Established within wait_timeout={params['wait_timeout']}s: "
            + ", ".join(f"CustomResourceDefinition {n}" for n in late)
            + "; read their status.conditions (kubectl get crd NAME -o yaml) for why, or raise wait_timeout"
        )
    return result
