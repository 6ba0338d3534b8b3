# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: which Kubernetes minors each release of the chain's components is supported on, as its
upstream says (each row names where), and how a cluster's minor stands against it. Pure: no I/O. Not a public API."""

from __future__ import annotations

import re

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _images

# component -> rows of (release line "vX.Y", oldest minor, newest minor or None, STATED or BUILT_ON, where it says so).
# STATED: upstream states the range (a newest of None: no upper bound), or the release is a kube-scheduler build,
# bound by Kubernetes' version-skew policy (at most one minor older than the API server, never newer). BUILT_ON:
# upstream states no range; the row gives the minor the release is built on (its go.mod's k8s.io/api).
STATED, BUILT_ON = "stated", "built on"
SUPPORT = {
    "volcano": (
        ("v1.10", 21, 30, STATED, "Volcano v1.10.0 README, 'Kubernetes compatibility' table"),
        ("v1.15", 23, 35, STATED, "Volcano v1.15.1 README, 'Kubernetes compatibility' table"),
    ),
    "scheduler_plugins": (
        ("v0.33", 33, 34, STATED, "built on Kubernetes 1.33 (go.mod k8s.io/api v0.33.5); version-skew policy"),
        ("v0.34", 34, 35, STATED, "built on Kubernetes 1.34; kube-scheduler version-skew policy"),
    ),
    "koordinator": (
        ("v1.6", 28, 29, STATED, "built on Kubernetes 1.28 (go.mod k8s.io/api v0.28.7); version-skew policy"),
        ("v1.8", 35, 36, STATED, "built on Kubernetes 1.35; kube-scheduler version-skew policy"),
    ),
    "training_operator": (("v1.8", 25, None, STATED, "training-operator v1.8.1 README: 'Version >= 1.25'"),),
    "mpi_operator": (
        ("v0.6", 31, 31, BUILT_ON, "no range stated upstream; go.mod k8s.io/api v0.31.1"),
        ("v0.8", 35, 35, BUILT_ON, "no range stated upstream; go.mod k8s.io/api v0.35.1"),
    ),
    "trainer": (
        ("v2.2", 35, 35, BUILT_ON, "no range stated upstream; go.mod k8s.io/api v0.35.2"),
        ("v2.3", 36, 36, BUILT_ON, "no range stated upstream; built on Kubernetes 1.36"),
    ),
}


# Published security advisories by component: (the releases affected, the advisory, what it is, the release that fixes
# it). A release named here is reported with its advisory whatever the cluster's minor.
ADVISORIES = {
    "volcano": (
        (
            ("v1.15.0", "v1.15.1"),
            "GHSA-j38h-7pfq-cxmw",
            "DRA capacity accounting can stall the scheduler",
            "v1.15.2",
        ),
    ),
}


def advisories(component: str, version: str | None) -> list[str]:
    """The published advisories of a component's release, each as one line with the release that fixes it.

    >>> advisories("volcano", "v1.15.1")
    ['GHSA-j38h-7pfq-cxmw (DRA capacity accounting can stall the scheduler; fixed in v1.15.2)']
    >>> advisories("volcano", "1.15.1"), advisories("volcano", "v1.10.0")
    (['GHSA-j38h-7pfq-cxmw (DRA capacity accounting can stall the scheduler; fixed in v1.15.2)'], [])
    """
    tag = f"v{(version or '').lstrip('v')}"
    return [
        f"{ghsa} ({what}; fixed in {fixed})" for hit, ghsa, what, fixed in ADVISORIES.get(component, ()) if tag in hit
    ]


def minor(version: str | None) -> int | None:
    """The minor of a Kubernetes version ('v1.37.2' -> 37), None when it is not one."""
    m = re.match(r"v?1\.(\d+)", version or "")
    return int(m.group(1)) if m else None


def release_line(version: str | None) -> tuple[int, int] | None:
    """(major, minor) of a release or image tag, None when it is none.

    >>> release_line("v1.15.1"), release_line("0.8.0"), release_line("latest")
    ((1, 15), (0, 8), None)
    """
    m = re.match(r"v?(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def row(component: str, version: str | None) -> tuple | None:
    """The SUPPORT row of a component's release (its image tag), None when the table has none."""
    line = release_line(version)
    if line is None:
        return None
    return next((r for r in SUPPORT.get(component, ()) if r[0] == f"v{line[0]}.{line[1]}"), None)


def standing(component: str, where: str, version: str | None, kube_version: str | None) -> dict:
    """How a component's release stands on the cluster's minor: ``within`` True or False where upstream states a range
    (or the release is a kube-scheduler build, bound by the skew policy), None where nothing is known (no row, or
    upstream states none and only the minor it is built on is known: ``built_on``)."""
    r, k = row(component, version), minor(kube_version)
    out = {
        "component": component,
        "where": where,
        "version": version,
        "cluster": kube_version,
        "advisories": advisories(component, version),
    }
    if r is None or k is None:
        return {**out, "supported": None, "within": None, "source": None}
    _line, low, high, kind, source = r
    supported = f"1.{low}+" if high is None else f"1.{low}" if low == high else f"1.{low}-1.{high}"
    stated = kind == STATED
    within = (low <= k and (high is None or k <= high)) if stated else None
    out = {
        **out,
        "supported": supported if stated else None,
        "built_on": None if stated else f"1.{low}",
        "within": within,
        "source": source,
    }
    if within is False:
        out["fix"] = (
            f"run a {component} release whose upstream supports Kubernetes 1.{k} (this one: {supported}, per "
            f"{source}), or a Kubernetes minor within {supported}; until then upstream does not test this pairing"
        )
    return out


def line(s: dict) -> str:
    """One line for a report: the component, its release, what upstream supports and the cluster's minor."""
    name = f"{s['component']} {s['version'] or '(no tag)'}"
    if s["within"] is None:
        known = f"built on Kubernetes {s['built_on']}, upstream states no range" if s.get("built_on") else "not known"
        return f"{name}: {known}; the cluster runs {s['cluster']}" + _advised(s)
    verdict = "within" if s["within"] else "OUTSIDE"
    text = f"{name}: upstream supports Kubernetes {s['supported']}, the cluster runs {s['cluster']} ({verdict})"
    return text + (f". Fix: {s['fix']}" if s.get("fix") else "") + _advised(s)


def _advised(s: dict) -> str:
    found = s.get("advisories") or []
    return f"; published advisory: {'; '.join(found)}" if found else ""


def of_cluster(schedulers: list[dict], ops: list[dict], trainers: list[dict], kube_version: str | None) -> list[dict]:
    """``standing`` of each gang scheduler, operator and Trainer controller gang_info found (its image tag is its
    release)."""
    out = [
        standing(s["kind"], f"{s['source']} {s['namespace']}/{s['name']}", s.get("version"), kube_version)
        for s in schedulers
        if s["kind"] in SUPPORT
    ]
    for o in ops:
        tag = _images.image_repo(o.get("image") or "")[1]
        out.append(standing(o["operator"], f"Deployment {o['deployment']}", tag, kube_version))
    return out + [
        standing("trainer", f"Deployment {c['deployment']}", c.get("version"), kube_version) for c in trainers
    ]


def _release(version: str | None) -> tuple[int, ...] | None:
    m = re.match(r"v?(\d+)\.(\d+)\.(\d+)$", version or "")
    return tuple(int(g) for g in m.groups()) if m else None


def newer_running(support: list[dict], component: str, wanted: str) -> list[dict]:
    """The entries of gang_info's ``support`` for ``component`` whose running release (an X.Y.Z tag) is newer than
    ``wanted``: what installing ``wanted`` would downgrade, each with a ``text`` naming it and where it runs.

    >>> running = [{"component": "trainer", "version": "v2.3.0", "where": "Deployment kubeflow-system/t"}]
    >>> [e["text"] for e in newer_running(running, "trainer", "2.2.0")]
    ['trainer v2.3.0 (Deployment kubeflow-system/t)']
    >>> newer_running(running, "trainer", "v2.3.0"), newer_running(running, "volcano", "1.0.0")
    ([], [])
    """
    want = _release(wanted)
    if want is None:
        return []
    return [
        {"version": s["version"], "where": s["where"], "text": f"{component} {s['version']} ({s['where']})"}
        for s in support or ()
        if s.get("component") == component and (_release(s.get("version")) or ()) > want
    ]
