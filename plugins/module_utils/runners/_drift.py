# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the runner of the drift module. Which of the given objects an apply would change,
asked of the API server as `kubectl diff` asks it: each object is read, then sent as a server-side apply in dry run
(conflicts forced, nothing stored), and the object the server would store is compared with the one it holds. With
``last_applied``, an object is also counted as drifted when its last-applied annotation is not the definition (what a
client-side apply compares to remove fields). A Helm release drifted when its last revision is not deployed, or is of
another chart name, version or appVersion, or other values: the check kubernetes.core.helm makes without the helm-diff
plugin, read from the release's Secret. Reads and dry runs only. The objects are asked about together (``_together``).
Not a public API."""

from __future__ import annotations

import base64
import binascii
import gzip
import json

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._charts import chart_meta
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import ApiError, GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _together

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# its own manager: a dry run stores nothing, and no field of a real apply is ever under this name
FIELD_MANAGER = "gangsched.kubeflow-drift"
# HTTP statuses of a dry run the server refused for the object's content (not for who asks, or how to reach it);
# kube-apiserver answers a field of the wrong type in an apply with 500 ("failed to create typed patch object")
REFUSED = (400, 409, 415, 422, 500)
# what the server changes on every write, whatever the content
_VOLATILE = ("managedFields", "resourceVersion", "generation")


def _label(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{obj.get('kind')} {ns}/{meta.get('name')}" if ns else f"{obj.get('kind')} {meta.get('name')}"


def check(definitions: list) -> str | None:
    """What is wrong with the definitions as input, or None."""
    for i, obj in enumerate(definitions):
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        missing = [k for k in ("apiVersion", "kind") if not isinstance(obj.get(k), str) or not obj.get(k)]
        if not isinstance(meta.get("name"), str) or not meta.get("name"):
            missing.append("metadata.name")
        if missing:
            return (
                f"definition[{i}] ({_label(obj)}) has no {', '.join(missing)}: "
                "give each object its apiVersion, kind and metadata.name"
            )
    return None


class Resources:
    """Each kind's API path and scope, from one discovery read per group version (memoized)."""

    def __init__(self, client):
        self.client, self.served = client, {}

    @staticmethod
    def read(api_version: str) -> tuple[str, str, None]:
        """The discovery read of ``api_version``: (path, what, query)."""
        return _api.group_path(api_version), f"the API group version {api_version}", None

    def _group_version(self, api_version: str) -> dict:
        if api_version not in self.served:
            path, what, _query = self.read(api_version)
            found = self.client.get_or_none(path, what)
            self.served[api_version] = {
                r["kind"]: r for r in (found or {}).get("resources") or [] if "/" not in r.get("name", "/")
            }
        return self.served[api_version]

    def path(self, obj: dict) -> tuple[str | None, str]:
        """(the object's API path, why not) — no path when its kind is not served (yet)."""
        api_version, kind, meta = obj["apiVersion"], obj["kind"], obj["metadata"]
        res = self._group_version(api_version).get(kind)
        if res is None:
            return None, f"kind {kind} of {api_version} is not served"
        base = _api.group_path(api_version)
        if not res.get("namespaced"):
            return f"{base}/{res['name']}/{meta['name']}", ""
        ns = meta.get("namespace")
        if not ns:
            return None, "namespaced, but no metadata.namespace given"
        return f"{base}/namespaces/{ns}/{res['name']}/{meta['name']}", ""


def _plain(obj: dict) -> dict:
    """The object without what every write changes (so that two reads of the same content compare equal)."""
    out = dict(obj)
    out["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _VOLATILE}
    return out


def _json(value):
    """The value as JSON carries it (a definition's tuples, as its annotation would hold them)."""
    return json.loads(json.dumps(value))


def _as_applied(obj):
    """A configuration as a client-side apply records it: without the last-applied annotation itself, nor an
    annotations map left empty by its removal (kubectl keeps one, kubernetes.core does not)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        return obj
    meta = dict(obj["metadata"])
    notes = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
    meta.pop("annotations", None)
    if notes:
        meta["annotations"] = notes
    return {**obj, "metadata": meta}


def _last_applied(live: dict):
    text = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    try:
        return _as_applied(json.loads(text)) if text else None
    except ValueError:
        return None


def why(client, resources: Resources, obj: dict, last_applied: bool) -> tuple[str, dict | None, dict | None]:
    """(why the object drifted, or "" when it has not; the object as held; as an apply would leave it)."""
    path, no_path = resources.path(obj)
    if path is None:
        return no_path, None, None
    live = client.get_or_none(path, _label(obj))
    if live is None:
        return "not found", None, None
    if last_applied and _last_applied(live) != _as_applied(_json(obj)):
        return "its last-applied configuration is not this definition", _plain(live), None
    try:
        after = client.apply(path, obj, FIELD_MANAGER, what=f"{_label(obj)} (dry run)", dry_run=True)
    except ApiError as e:
        if e.status not in REFUSED:
            raise
        # a server-side apply can be refused where a client-side one is not (a list item without its key): the apply
        # itself tells, so this counts as drift
        reason = (e.reason or "").strip().splitlines()[0][:200] if e.reason else ""
        return f"a server-side dry run was refused ({e.status}{': ' + reason if reason else ''})", _plain(live), None
    if _plain(after) != _plain(live):
        return "an apply would change it", _plain(live), _plain(after)
    return "", None, None


def _local_chart(ref: str) -> dict | None:
    """The Chart.yaml of a local chart directory or archive, or None when ``ref`` is not a local path."""
    try:
        return chart_meta(ref)
    except ValueError as e:
        raise GangError(f"chart_ref={ref}: {e}; point chart_ref at a chart") from None


def _release(client, name: str, namespace: str) -> dict | None:
    """The last revision of Helm release ``name`` as Helm stores it (a Secret per revision), or None."""
    secrets = client.list(
        _api.path("Secret", namespace),
        f"the Secrets of Helm release {namespace}/{name}",
        labelSelector=f"owner=helm,name={name}",
    )
    revisions = [s for s in secrets if str((s.get("metadata") or {}).get("labels", {}).get("version", "")).isdigit()]
    if not revisions:
        return None
    last = max(revisions, key=lambda s: int(s["metadata"]["labels"]["version"]))
    try:
        raw = base64.b64decode(base64.b64decode((last.get("data") or {}).get("release") or ""))
        return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    except (binascii.Error, OSError, ValueError):
        return {}  # not a release as Helm 3 writes it: counted as drifted, so Helm itself decides


def helm_why(client, release: dict) -> str:
    """Why kubernetes.core.helm would upgrade (or install) the release, or "" when it would leave it."""
    name, namespace = release["release_name"], release["release_namespace"]
    held = _release(client, name, namespace)
    if held is None:
        return "not installed"
    status = (held.get("info") or {}).get("status")
    if status != "deployed":
        return f"its last revision is {status or 'unreadable'}, not deployed"
    meta = (held.get("chart") or {}).get("metadata") or {}
    chart = None if release.get("chart_repo_url") else _local_chart(release["chart_ref"])
    if chart is None:  # a chart of a repository: its name and the version asked for (a version's appVersion is fixed)
        want = (release["chart_ref"].rstrip("/").split("/")[-1], release.get("chart_version"))
        app_same = True
    else:
        want = (chart.get("name"), str(chart.get("version")))
        app_same = chart.get("appVersion") == meta.get("appVersion") or (
            chart.get("appVersion") is None and not meta.get("appVersion")
        )
    if want != (meta.get("name"), meta.get("version")):
        return f"chart {meta.get('name')}-{meta.get('version')} runs, not {want[0]}-{want[1]}"
    if not app_same:
        return f"appVersion {meta.get('appVersion') or '(none)'} runs, not {chart.get('appVersion')}"
    if (held.get("config") or {}) != _json(release.get("release_values") or {}):
        return "its values are not release_values"
    return ""


def _yaml(obj) -> str:
    import yaml  # the module's requirement, imported where used

    return yaml.safe_dump(obj, sort_keys=True, default_flow_style=False) if obj is not None else ""


def run(client, params: dict, check_mode: bool, warn) -> dict:
    definitions = params["definition"] or []
    bad = check(definitions)
    if bad:
        return {"changed": False, "_failed": bad}
    resources = Resources(client)
    drifted, same, before, after = [], [], [], []
    release = params.get("helm_release")
    if release:
        label = f"Helm release {release['release_namespace']}/{release['release_name']}"
        reason = helm_why(client, release)
        (drifted.append({"object": label, "why": reason}) if reason else same.append(label))

    def named(obj, step):
        try:
            return step(obj)
        except GangError as e:
            e.msg = f"{_label(obj)}: {e.msg}"
            raise

    def ask(obj):
        return named(obj, lambda o: why(client, resources, o, params["last_applied"]))

    # each group version's discovery first, all asked for at once, each failure named after the first object that
    # needs it (as one object at a time would read it); the objects' threads then only read the memo
    versions = dict.fromkeys(obj["apiVersion"] for obj in definitions)
    with _together.ahead(client, [Resources.read(v) for v in versions]):
        for obj in definitions:
            named(obj, resources.path)
    answers = _together.each(client, ask, definitions)
    for obj, (reason, was, would) in zip(definitions, answers, strict=True):
        if reason:
            drifted.append({"object": _label(obj), "why": reason})
            before.append(f"# {_label(obj)}\n{_yaml(was)}")
            after.append(f"# {_label(obj)}\n{_yaml(would)}")
        else:
            same.append(_label(obj))
    return {
        "changed": False,
        "drifted": drifted,
        "same": same,
        "_diff": {"before": "".join(before), "after": "".join(after)},
    }
