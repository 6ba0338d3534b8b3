# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the smoke test's "why" — the scheduler behind a name, why it is not
running, why an operator made no PodGroup (a SubjectAccessReview as its ServiceAccount) and why a
verdict other than the expected one came about. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _podgroups, _schedulers, _workloads
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import ApiError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _verdict


def _where(s: dict) -> str:
    return f"{_schedulers.label(s['kind'])} {s['source']} {s['namespace']}/{s['name']}"


def describe_scheduler(schedulers: list[dict], gang: str, sname: str) -> str:
    """The scheduler behind ``sname``, named for a message: where it runs, or who runs instead."""
    path = _registry.get(gang)
    if path.describe(sname):
        return path.describe(sname)
    mine = [s for s in schedulers if path.serves(s, sname)]
    if mine:
        return f"scheduler {sname!r} ({', '.join(_where(s) for s in mine)})"
    kind = path.scheduler_kind
    others = [s for s in schedulers if s["kind"] == kind]
    if others:
        found = "; ".join(
            f"{_where(s)} serves {', '.join(map(repr, s.get('scheduler_names') or [])) or 'nothing'}" for s in others
        )
        return f"scheduler {sname!r} (served by no scheduler: {found})"
    return f"scheduler {sname!r} (no {kind.replace('_', '-')} scheduler found)"


def not_running_cause(schedulers: list[dict], gang: str, sname: str) -> str:
    path = _registry.get(gang)
    mine = [s for s in schedulers if path.serves(s, sname)]
    if mine:
        return (
            f"scheduler not running: {', '.join(_where(s) for s in mine)} serves {sname!r} but has no ready "
            "replica (scaled to 0, or its pod does not start); scale it up and check its pods"
        )
    hint = path.not_served_hint(schedulers, sname)
    if hint:
        return hint
    return f"scheduler not running: no ready scheduler serves {sname!r}"


def forbidden_podgroup_create(
    client, workload: str, gang_scheduler: str, ns: str, deployments: list[dict] | None = None
) -> str | None:
    """The forbidden call, named, when the workload's operator may not create PodGroups in ``ns``
    (a SubjectAccessReview as its ServiceAccount); None when it may, or when that cannot be asked.
    ``deployments``: the operator's Deployments when already found (Trainer's, for a TrainJob)."""
    operator = _workloads.JOB_CRDS[workload][1]
    group = _podgroups.group(_registry.get(gang_scheduler).podgroup_kind)
    try:
        if deployments is None:
            deployments = [o["deployment"] for o in _service.find_operators(client) if o["operator"] == operator]
        for dep in deployments:
            dns = dep["metadata"]["namespace"]
            sa = dep["spec"]["template"]["spec"].get("serviceAccountName") or "default"
            if not _service.allowed(client, dns, sa, ("create", group, "podgroups"), namespace=ns):
                return (
                    f"Forbidden: ServiceAccount {dns}/{sa} of Deployment {dns}/{dep['metadata']['name']} may not "
                    f"create {group}/podgroups in namespace {ns}; grant it with gangsched.kubeflow.gang_rbac "
                    f"(component={operator}, gang_scheduler={gang_scheduler})"
                )
    except ApiError:
        return None  # not allowed to look: the caller gives the general advice
    return None


def gang_cause(
    verdict: str, g: _verdict.Gang, expect: str, who: str, timeout: int, liveness: dict, path=None
) -> str | None:
    """Why a verdict other than the expected one came about, naming the scheduler (``who``: as
    describe_scheduler names it; ``timeout``: the test's; ``path``: the gang path, where the scheduler decides on
    the gang's PodGroup)."""
    live = f"it bound the liveness canary in {liveness['before']}s before the test" if liveness.get("before") else ""
    if liveness.get("during") is not None:
        live += f" and again in {liveness['during']}s during it"
    if verdict == _verdict.INCONCLUSIVE and g.decide is not None and len(g.running()) >= g.size:
        return path.undecided_gang(who, timeout)
    if verdict == _verdict.INCONCLUSIVE:
        missing = ", ".join(g.not_rejected()) or "none"
        return (
            f"no member was bound in {timeout}s, yet {who} never rejected the whole gang (members not marked "
            f"unschedulable after all {g.size} existed: {missing}); {live or 'its liveness was not proven'}. "
            "An unbound gang without the scheduler's rejection proves nothing: check that the pods' schedulerName "
            "is the one it serves and read its log"
        )
    if verdict == _verdict.GANG_HELD_PENDING and expect == "running":
        msgs = sorted({m for m in g.summary()["unschedulable"].values() if m})
        return f"{who} rejected every member of a gang that was expected to fit: {msgs[0] if msgs else ''}"
    if verdict == _verdict.TIMEOUT and expect == "running" and not g.ever_bound():
        return f"{who} bound no member in {timeout}s ({len(g.live())}/{g.size} members created); {live}"
    return None
