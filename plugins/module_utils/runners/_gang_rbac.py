# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what gang_rbac does — a dedicated ClusterRole + ClusterRoleBinding per
component ServiceAccount, owned by the collection, verified with SubjectAccessReview. Not a public API."""

from __future__ import annotations

import time

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api, _operators, _rbac
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service, _together
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry

VERIFY_SECONDS = 15  # the authorizer's RBAC cache follows a change within a second or two


def object_name(component: str, ns: str, sa: str) -> str:
    return f"gangsched.kubeflow:{component}:{ns}:{sa}"


def resolve(params: dict) -> tuple[str, str, str, str]:
    """(component, gang scheduler, ServiceAccount namespace, name) with the table's defaults."""
    component = params["component"]
    d_ns, d_sa, schedulers = _rbac.COMPONENTS[component]
    gang = params.get("gang_scheduler")
    if not gang and component not in _rbac.PATH_FREE:
        if len(schedulers) > 1:
            raise GangError(f"gang_scheduler is required for component={component} (one of {', '.join(schedulers)})")
        gang = schedulers[0]
    # a path-free component (Kueue) is the same in front of any path: no path refuses it
    free = component in _rbac.PATH_FREE
    refusal = _registry.get(gang).rbac_refusal(component) if gang in _registry.PATHS and not free else None
    if refusal:
        raise GangError(refusal)
    sa_opt = params.get("service_account") or {}
    ns, sa = sa_opt.get("namespace") or d_ns, sa_opt.get("name") or d_sa
    _operators.check_name("service_account.namespace", ns, "namespace", label=True)
    _operators.check_name("service_account.name", sa, "ServiceAccount", label=False)
    return component, gang, ns, sa


def desired(component: str, gang: str, ns: str, sa: str, rules: list[dict]) -> tuple[dict, dict]:
    """The ClusterRole and ClusterRoleBinding this collection keeps for a component's ServiceAccount."""
    name = object_name(component, ns, sa)
    labels = {**_service.MANAGED_BY, "gangsched.kubeflow/component": component.replace("_", "-")}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels},
        "rules": rules,
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name, "labels": dict(labels)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
    }
    return role, binding


KUBE_SCHEDULER_OBJECT = "gangsched.kubeflow:kube-scheduler:coscheduling"


def kube_scheduler_objects(name: str = KUBE_SCHEDULER_OBJECT) -> tuple[dict, dict]:
    """The ClusterRole and ClusterRoleBinding (both called ``name``) that let the default kube-scheduler
    run Coscheduling: the plugin's PodGroup rules (``_rbac.coscheduling_rules``) for User
    system:kube-scheduler."""
    role, binding = desired("kube_scheduler", "scheduler_plugins", "", "", _rbac.coscheduling_rules())
    for obj in (role, binding):
        obj["metadata"]["name"] = name
    binding["roleRef"]["name"] = name
    binding["subjects"] = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": _rbac.KUBE_SCHEDULER_USER}]
    return role, binding


def _write(client, method: str, path: str, body: dict | None, what: str, check_mode: bool) -> dict:
    query = {"fieldManager": _service.FIELD_MANAGER} if method in ("POST", "PUT") else {}
    if check_mode:
        query["dryRun"] = "All"
    return client.request(method, path, body=body, query=query, what=what)


def run(client, params: dict, check_mode: bool, warn) -> dict:
    component, gang, ns, sa = resolve(params)
    required = _rbac.required_rules(component, gang)
    extra = params.get("extra_rules") or []
    _rbac.validate_extra(extra)
    wild = [r for r in extra if _rbac.has_wildcard(r)]
    if wild and not params.get("allow_wildcard"):
        raise GangError(
            f"extra_rules contains a wildcard rule {wild[0]!r} for ServiceAccount {ns}/{sa}: refused (any '*' in "
            "apiGroups, resources, verbs or nonResourceURLs, also inside an entry such as pods/* or /metrics/*). "
            "Name the apiGroups, resources and verbs it needs, or set allow_wildcard=true knowingly"
        )
    if wild:
        warn(f"ServiceAccount {ns}/{sa} gets a wildcard rule ({wild[0]!r}) because allow_wildcard=true")
    rules = required + extra
    name = object_name(component, ns, sa)
    want_role, want_binding = desired(component, gang, ns, sa, rules)
    labels = want_role["metadata"]["labels"]
    needed = _rbac.checks(required)
    state = params.get("state", "present")
    verify = params.get("verify", True)

    role_path, bind_path = _api.path("ClusterRole", name=name), _api.path("ClusterRoleBinding", name=name)
    reads = [
        (_api.path("ServiceAccount", ns, sa), f"ServiceAccount {ns}/{sa}", None),
        (role_path, f"ClusterRole {name}", None),
        (bind_path, f"ClusterRoleBinding {name}", None),
    ]
    # the three reads together, then the SubjectAccessReviews (the reads done: no more connections than the pool's)
    with _together.ahead(client, reads):
        if client.get_or_none(*reads[0][:2]) is None:
            msg = f"ServiceAccount {ns}/{sa} not found"
            if state == "present":
                raise GangError(
                    f"{msg}: install the component first, or set service_account to the one its pods run as"
                )
            warn(msg)
        role = client.get_or_none(*reads[1][:2])
        binding = client.get_or_none(*reads[2][:2])
    missing_before = _missing(client, ns, sa, needed) if verify else None
    subjects, role_ref = want_binding["subjects"], want_binding["roleRef"]
    before = {
        "rules": (role or {}).get("rules"),
        "subjects": (binding or {}).get("subjects"),
    }
    changed = False
    if state == "present":
        if role is None:
            _write(client, "POST", _api.path("ClusterRole"), want_role, f"ClusterRole {name}", check_mode)
            changed = True
        elif _rbac.normalize(role.get("rules") or []) != _rbac.normalize(rules) or any(
            (role["metadata"].get("labels") or {}).get(k) != v for k, v in labels.items()
        ):
            want_role["metadata"]["resourceVersion"] = role["metadata"]["resourceVersion"]
            _write(client, "PUT", role_path, want_role, f"ClusterRole {name}", check_mode)
            changed = True
        if binding is not None and binding.get("roleRef") != role_ref:
            _write(client, "DELETE", bind_path, None, f"ClusterRoleBinding {name}", check_mode)
            binding = None
        if binding is None:
            _write(
                client, "POST", _api.path("ClusterRoleBinding"), want_binding, f"ClusterRoleBinding {name}", check_mode
            )
            changed = True
        elif binding.get("subjects") != subjects:
            want_binding["metadata"]["resourceVersion"] = binding["metadata"]["resourceVersion"]
            _write(client, "PUT", bind_path, want_binding, f"ClusterRoleBinding {name}", check_mode)
            changed = True
        after = {"rules": rules, "subjects": subjects}
    else:
        if binding is not None:
            _write(client, "DELETE", bind_path, None, f"ClusterRoleBinding {name}", check_mode)
            changed = True
        if role is not None:
            _write(client, "DELETE", role_path, None, f"ClusterRole {name}", check_mode)
            changed = True
        after = {"rules": None, "subjects": None}

    missing_after = None
    if verify:
        if state == "present":
            if check_mode or not changed:
                missing_after = [c for c in missing_before if not _rbac.covers(rules, *c)]
            else:
                missing_after = _settle(client, ns, sa, needed, lambda m: not m)
            if missing_after:
                raise GangError(
                    f"ServiceAccount {ns}/{sa} still lacks {', '.join(map(_rbac.check_text, missing_after))} after "
                    f"ClusterRoleBinding {name} was applied; check for a deny webhook or an authorizer other than RBAC"
                )
        else:
            others = _service.rules_bound_elsewhere(client, ns, sa, name)
            predicted = [c for c in needed if not _rbac.covers(others, *c)]
            if check_mode or not changed:
                missing_after = predicted
            else:
                missing_after = _settle(client, ns, sa, needed, lambda m: set(m) >= set(predicted))
    return {
        "changed": changed,
        "cluster_role": name,
        "cluster_role_binding": name,
        "service_account": f"{ns}/{sa}",
        "gang_scheduler": gang,
        "rules": rules if state == "present" else [],
        "missing_before": None if missing_before is None else [_rbac.check_text(c) for c in missing_before],
        "missing_after": None if missing_after is None else [_rbac.check_text(c) for c in missing_after],
        "_diff": {"before": before, "after": after},
    }


def _missing(client, ns: str, sa: str, needed) -> list:
    """The checks of ``needed`` the ServiceAccount is not allowed, one SubjectAccessReview each, sent together."""
    allowed = _together.each(client, lambda c: _service.allowed(client, ns, sa, c), needed)
    return [c for c, ok in zip(needed, allowed, strict=True) if not ok]


def _settle(client, ns: str, sa: str, needed, done, clock=time.monotonic) -> list:
    """SubjectAccessReviews until ``done(missing)`` or VERIFY_SECONDS passed (RBAC cache lag)."""
    deadline = clock() + VERIFY_SECONDS
    while True:
        missing = _missing(client, ns, sa, needed)
        if done(missing) or clock() > deadline:
            return missing
        time.sleep(0.5)
