# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: reads and writes of the objects the modules work on, and the reads
behind discovery of the gang schedulers and Kubeflow operators running in a cluster (the classifying
is ``_component_discovery``'s), and the two RBAC reads as a ServiceAccount (a SubjectAccessReview; the rules bound
to it elsewhere). Raises, never fails a module. Not a public API."""

from __future__ import annotations

import time

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import (
    _api,
    _component_discovery,
    _operators,
    _rbac,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError, NotFound

FIELD_MANAGER = "gangsched.kubeflow"
# a write refused with Conflict (someone else wrote in between) is redone on a fresh read this many times in all
CONFLICT_RETRIES = 6
CONFLICT_BACKOFF = 0.2  # seconds before the second attempt; doubles each time, at most 2 s
MANAGED_BY = {"app.kubernetes.io/managed-by": "gangsched.kubeflow"}


def conflict_attempts(what: str, advice: str = ""):
    """The attempts of a read-modify-write that a Conflict redoes: ``for attempt in conflict_attempts(what):`` read
    (again when ``attempt``), write and ``break``; on Conflict go round again. Backs off before each attempt after
    the first; after CONFLICT_RETRIES attempts without a ``break``, raises GangError naming ``what`` (and ``advice``).
    """
    for attempt in range(CONFLICT_RETRIES):
        if attempt:
            time.sleep(min(2.0, CONFLICT_BACKOFF * 2 ** (attempt - 1)))
        yield attempt
    raise GangError(
        f"Failed to write {what}: it kept changing under us ({CONFLICT_RETRIES} conflicts in a row){advice}"
    )


# ---- objects ----------------------------------------------------------------------------------------
def deployment_read(ns: str, name: str) -> tuple[str, str, None]:
    """The read of Deployment ``ns/name``: (path, what, query), as ``get_deployment`` makes it."""
    return _api.path("Deployment", ns, name), f"Deployment {ns}/{name}", None


def get_deployment(client, ns: str, name: str, hint: str = "") -> dict:
    path, what, _query = deployment_read(ns, name)
    try:
        return client.get(path, what=what)
    except NotFound as e:
        raise GangError(f"Deployment {ns}/{name} not found{hint}") from e


def patch_deployment_container(
    client, dep: dict, container: str, command, args, dry_run: bool, unset: tuple = (), annotations: dict | None = None
) -> dict:
    """Strategic-merge patch of one container's command/args, guarded by the resourceVersion read
    (a concurrent edit gives Conflict, and the caller retries from a fresh read). ``unset`` names the
    fields ("command", "args") to remove; ``annotations`` are merged into the Deployment's (None deletes)."""
    ns, name = dep["metadata"]["namespace"], dep["metadata"]["name"]
    c: dict = {"name": container}
    if command is not None:
        c["command"] = command
    if args is not None:
        c["args"] = args
    for f in unset:
        c[f] = None
    meta: dict = {"resourceVersion": dep["metadata"]["resourceVersion"]}
    if annotations:
        meta["annotations"] = annotations
    patch = {"metadata": meta, "spec": {"template": {"spec": {"containers": [c]}}}}
    query = {"fieldManager": FIELD_MANAGER}
    if dry_run:
        query["dryRun"] = "All"
    return client.request(
        "PATCH",
        _api.path("Deployment", ns, name),
        body=patch,
        query=query,
        content_type="application/strategic-merge-patch+json",
        what=f"Deployment {ns}/{name}",
    )


def crd_read(name: str) -> tuple[str, str, None]:
    """The read of CRD ``name``: (path, what, query), as ``crd`` makes it and ``_together.ahead`` asks for it."""
    return _api.path("CustomResourceDefinition", name=name), f"CustomResourceDefinition {name}", None


def crd(client, name: str) -> dict | None:
    path, what, _query = crd_read(name)
    return client.get_or_none(path, what=what)


def crd_established(obj: dict | None) -> bool:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Established":
            return cond.get("status") == "True"
    return False


def group_read(group: str) -> tuple[str, str, None]:
    """The read of API group ``group``'s discovery: (path, what, query), as ``served_versions`` makes it."""
    return f"/apis/{group}", f"the API group {group}", None


def served_versions(client, group: str, resources: tuple = ()) -> list[str]:
    """The versions of API ``group`` the API server serves (discovery, open to every user), each only when it
    serves all of ``resources``; [] when the group is not served."""
    try:
        found = client.get(*group_read(group)[:2]) or {}
    except NotFound:
        return []
    out = []
    for v in found.get("versions") or []:
        version = v.get("version")
        if not version:
            continue
        if resources:
            try:
                listed = client.get(_api.group_path(f"{group}/{version}"), what=f"the API {group}/{version}") or {}
            except NotFound:
                continue
            if not set(resources) <= {r.get("name") for r in listed.get("resources") or []}:
                continue
        out.append(version)
    return out


def container_of(dep: dict, name: str | None, default: str) -> dict:
    """The container ``name`` (or the default one, or the only one) of a Deployment."""
    containers = dep["spec"]["template"]["spec"].get("containers") or []
    names = [c["name"] for c in containers]
    ns, dname = dep["metadata"]["namespace"], dep["metadata"]["name"]
    wanted = name or default
    for c in containers:
        if c["name"] == wanted:
            return c
    if name is None and len(containers) == 1:
        return containers[0]
    raise GangError(
        f"Container {wanted!r} not found in Deployment {ns}/{dname} (containers: {', '.join(names) or 'none'}); "
        "set container to one of them"
    )


def configmap_read(ns: str, name: str) -> tuple:
    """The read of a ConfigMap, as (path, what, query)."""
    return _api.path("ConfigMap", ns, name), f"ConfigMap {ns}/{name}", None


def configmap_value(client, ns: str, name: str, key: str) -> str | None:
    """One entry of a ConfigMap (None when the ConfigMap or the key is missing)."""
    path, what, _query = configmap_read(ns, name)
    cm = client.get_or_none(path, what=what)
    return ((cm or {}).get("data") or {}).get(key)


def mpijob_clash(client, operator: str, container: dict) -> str | None:
    """``_operators.mpijob_clash``, with the MPIJob CRD read only when the operator would serve MPIJob."""
    if not _operators.serves_mpijob(operator, container):
        return None
    return _operators.mpijob_clash(operator, container, crd(client, _operators.MPIJOB_CRD))


# ---- discovery: the reads; _component_discovery classifies -------------------------------------------------------
# every Deployment's list: (path, what)
DEPLOYMENTS = (_api.path("Deployment"), "Deployments (all namespaces)")
# the kube-scheduler static pods' list (mirror pods in kube-system): (path, what, query)
STATIC_SCHEDULERS = (
    _api.path("Pod", "kube-system"),
    "Pods in kube-system",
    {"labelSelector": "component=kube-scheduler"},
)


def early_lists() -> list[tuple]:
    """The lists ``find_schedulers`` makes on any cluster, as (path, what, query) for ``_together.ahead``."""
    path, what, query = STATIC_SCHEDULERS
    return [(*DEPLOYMENTS, _api.list_query()), (path, what, _api.list_query(**query))]


def list_deployments(client) -> list[dict]:
    """Every Deployment in the cluster: the one list discovery classifies."""
    return client.list(*DEPLOYMENTS)


def find_schedulers(client, deployments: list[dict] | None = None) -> list[dict]:
    """Gang schedulers running as Deployments (``deployments``: the list already read, else listed
    here), or as the kube-scheduler static pod (default mode)."""
    if deployments is None:
        deployments = list_deployments(client)
    configs = {ref: configmap_value(client, *ref) for ref in _component_discovery.config_refs(deployments)}
    found = _component_discovery.schedulers(deployments, configs)
    # the default scheduler's static pod (mirror pods in kube-system)
    path, what, query = STATIC_SCHEDULERS
    static = client.list(path, what, **query)
    return found + _component_discovery.static_pod_schedulers(static)


def find_operators(client, deployments: list[dict] | None = None) -> list[dict]:
    """Kubeflow operators running as Deployments (``deployments``: the list already read, else listed here)."""
    return _component_discovery.operators(list_deployments(client) if deployments is None else deployments)


def allowed(client, ns: str, sa: str, c: tuple[str, str, str], namespace: str | None = None) -> bool:
    """SubjectAccessReview of one check as the ServiceAccount: cluster-wide, or in ``namespace``."""
    user, groups = _rbac.sa_user(ns, sa)
    verb, group, resource = c
    res, _sep, sub = resource.partition("/")
    attrs = {"verb": verb, "group": group, "resource": res}
    if namespace:
        attrs["namespace"] = namespace
    if sub:
        attrs["subresource"] = sub
    review = client.request(
        "POST",
        _api.path("SubjectAccessReview"),
        body={
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": groups, "resourceAttributes": attrs},
        },
        what=f"SubjectAccessReview for {user}",
    )
    return bool((review.get("status") or {}).get("allowed"))


def rules_bound_elsewhere(client, ns: str, sa: str, exclude_binding: str) -> list[dict]:
    """Rules of every ClusterRole bound cluster-wide to the ServiceAccount (or its groups), except ours."""
    user, groups = _rbac.sa_user(ns, sa)
    out: list[dict] = []
    for b in client.list(_api.path("ClusterRoleBinding"), what="ClusterRoleBindings"):
        if b["metadata"]["name"] == exclude_binding:
            continue
        for s in b.get("subjects") or []:
            hit = (
                (s.get("kind") == "ServiceAccount" and s.get("name") == sa and s.get("namespace") == ns)
                or (s.get("kind") == "Group" and s.get("name") in groups)
                or (s.get("kind") == "User" and s.get("name") == user)
            )
            if hit and b["roleRef"]["kind"] == "ClusterRole":
                role = client.get_or_none(
                    _api.path("ClusterRole", name=b["roleRef"]["name"]),
                    what=f"ClusterRole {b['roleRef']['name']}",
                )
                out.extend((role or {}).get("rules") or [])
                break
    return out


def scan_or_empty(client, path: str, what: str, keep) -> list:
    """``client.scan``, or nothing where the kind is not served."""
    try:
        return client.scan(path, what=what, keep=keep)
    except NotFound:  # the kind is not served (its CRD is not installed)
        return []
