# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: gang_info's check of the gang rights of the components that run — each Kubeflow
operator whose gang flag points at a path with PodGroups, and each gang scheduler that runs as a Deployment — asked
as their own ServiceAccount with SubjectAccessReviews (the rights on their PodGroups' API group of the collection's
rule table, _rbac.RULES, and a scheduler's binding of pods), sent together. What the smoke test finds only when an
operator makes no PodGroup, found here on every read. A SubjectAccessReview changes nothing. Part of gang_info's
runner (``_gang_info``), imported by it only. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _podgroups, _rbac
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import ApiError, Forbidden
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service, _together
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry

# what a gang scheduler needs besides its PodGroups' rights: to bind the pods it places
BINDING = ("create", "", "pods/binding")
# The rights an operator makes its PodGroups with, of those the rule table grants on their group: no more than the
# operators' own installs grant, so that a healthy installation is named nothing. A scheduler's are its gang path's
# (GangPath.scheduler_rights, GangPath.release_rights).
OPERATOR_RIGHTS = {"podgroups": ("create", "list", "watch")}


def _essential(need: dict, checks: list) -> list:
    return [c for c in checks if c[0] in need.get(c[2], ())]


def _scheduler_path(kind: str):
    """The gang path whose scheduler is of ``kind`` and runs as a component of the rule table, or None."""
    return next((p for p in _registry.PATHS.values() if p.scheduler_kind == kind and p.rights_component), None)


# what each kind of component fails at without its rights
EFFECT = {
    "operator": "it cannot make or follow its jobs' PodGroups, so their gangs never form (training-operator v1.8 may "
    "even create the pods with no gang at all) and a job it was refused is not retried once the rights are back",
    "scheduler": "it cannot follow its gangs' PodGroups, or bind their pods, so the gangs it serves stay Pending",
}


def _service_account(deployments: list[dict], ns: str, name: str) -> str | None:
    for d in deployments:
        md = d.get("metadata") or {}
        if (md.get("namespace"), md.get("name")) == (ns, name):
            spec = ((d.get("spec") or {}).get("template") or {}).get("spec") or {}
            return spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    return None


def subjects(ops: list[dict], schedulers: list[dict], deployments: list[dict]) -> list[dict]:
    """The components whose gang rights are checked: {component, kind ('operator' or 'scheduler'), deployment
    ('namespace/name'), namespace, service_account, checks ((verb, group, resource), ...), path (the PodGroup kind,
    gang_rbac's gang_scheduler)}."""
    out = []
    for o in ops:
        value = o.get("gang_value")
        if o["operator"] not in _rbac.COMPONENTS or value in (None, "true", "false"):
            continue
        kind = _registry.flag_path(value, schedulers).podgroup_kind
        if kind not in _rbac.COMPONENTS[o["operator"]][2]:
            continue
        group = _podgroups.group(kind)
        checks = _essential(
            OPERATOR_RIGHTS, [c for c in _rbac.checks(_rbac.RULES[(o["operator"], kind)]) if c[1] == group]
        )
        out.append(_subject(o["operator"], "operator", o["deployment"], deployments, checks, kind))
    for s in schedulers:
        p = _scheduler_path(s["kind"])
        # kube-scheduler's static pod runs as a user of its own, not a ServiceAccount
        if p is None or s.get("source") != "Deployment" or not s.get("ready"):
            continue
        component = p.rights_component
        kind = _rbac.COMPONENTS[component][2][0]
        group = _podgroups.group(kind)
        checks = _essential(
            p.scheduler_rights, [c for c in _rbac.checks(_rbac.RULES[(component, kind)]) if c[1] == group]
        )
        checks += [BINDING, *p.release_rights(s.get("version"))]
        where = f"{s['namespace']}/{s['name']}"
        out.append(_subject(component, "scheduler", where, deployments, checks, kind))
    return [s for s in out if s["service_account"]]


def _subject(component: str, kind: str, deployment: str, deployments: list[dict], checks: list, path: str) -> dict:
    ns, _sep, name = deployment.partition("/")
    return {
        "component": component,
        "path": path,
        "kind": kind,
        "deployment": deployment,
        "namespace": ns,
        "service_account": _service_account(deployments, ns, name),
        "checks": checks,
    }


def rights_problems(client, ops: list[dict], schedulers: list[dict], deployments: list[dict]) -> list[dict]:
    """The components that lack gang rights, one problem each, naming the rights and the fix."""
    found = subjects(ops, schedulers, deployments)
    asks = [(s, c) for s in found for c in s["checks"]]
    if not asks:
        return []

    def ask(item):
        s, c = item
        return _service.allowed(client, s["namespace"], s["service_account"], c)

    try:
        allowed = _together.each(client, ask, asks)
    except Forbidden as e:
        return [
            {
                "object": "SubjectAccessReviews",
                "message": f"gang_info may not create SubjectAccessReviews ({e.msg}): the gang rights of the operators "
                "and schedulers are not checked",
                "fix": "grant create on subjectaccessreviews (docs/automation-user-rbac.yml in the collection's "
                "repository)",
            }
        ]
    except ApiError:
        return []  # the review API broken: no evidence either way
    missing: dict[str, list] = {}
    for (s, c), ok in zip(asks, allowed, strict=True):
        if not ok:
            missing.setdefault(s["deployment"], []).append(c)
    out = []
    for s in found:
        lacks = missing.get(s["deployment"])
        if not lacks:
            continue
        sa = f"{s['namespace']}/{s['service_account']}"
        rights = ", ".join(_rbac.check_text(c) for c in lacks)
        gang_arg = f" gang_scheduler: {s['path']}"
        out.append(
            {
                "object": f"Deployment {s['deployment']}",
                "message": f"its ServiceAccount {sa} may not {rights} (SubjectAccessReview as that ServiceAccount): "
                + EFFECT[s["kind"]],
                "fix": f"grant them with gangsched.kubeflow.gang_rbac (component: {s['component']},{gang_arg} "
                f"service_account: {{namespace: {s['namespace']}, name: {s['service_account']}}}), then restart "
                "the Deployment",
            }
        )
    return out
