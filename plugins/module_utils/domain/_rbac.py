# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the gang rights each component needs (component x PodGroup kind), rule
coverage maths. Pure: no I/O (the SubjectAccessReview is the service's). Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _podgroups
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError

RW = ["create", "get", "list", "watch", "update", "patch", "delete"]
RO = ["get", "list", "watch"]
VC, SP, KOORD = (_podgroups.group(s) for s in ("volcano", "scheduler_plugins", "koordinator"))  # PodGroup groups
OPS = _podgroups.OPERATOR_KINDS

# component -> (default namespace, default ServiceAccount, the PodGroup kinds it may be used with)
COMPONENTS = {
    "training_operator": ("kubeflow", "training-operator", OPS),
    "mpi_operator": ("mpi-operator", "mpi-operator", OPS),
    "volcano_scheduler": ("volcano-system", "volcano-scheduler", ("volcano",)),
    "volcano_controllers": ("volcano-system", "volcano-controllers", ("volcano",)),
    "scheduler_plugins_scheduler": ("scheduler-plugins", "scheduler-plugins-scheduler", ("scheduler_plugins",)),
    "scheduler_plugins_controller": ("scheduler-plugins", "scheduler-plugins-controller", ("scheduler_plugins",)),
    "koord_scheduler": ("koordinator-system", "koord-scheduler", ("koordinator",)),
    "trainer": ("kubeflow-system", "kubeflow-trainer-controller-manager", OPS),
    "jobset": ("jobset-system", "jobset-controller-manager", OPS),
    # Kueue admits jobs in front of every gang path: its rights do not depend on the gang path (PATH_FREE), and no
    # path is named for it (an empty tuple: any, or none given)
    "kueue": ("kueue-system", "kueue-controller-manager", ()),
}


def _r(group: str, resources: list[str], verbs: list[str]) -> dict:
    return {"apiGroups": [group], "resources": resources, "verbs": verbs}


# The gang-specific rights (on top of what a component's own install grants): what upstream's
# troubleshooting shows failing, never a wildcard.
RULES: dict[tuple[str, str], list[dict]] = {
    # training-operator v1.8 watches both PodGroup kinds whose CRDs exist, whichever it creates
    ("training_operator", "volcano"): [_r(VC, ["podgroups"], RW), _r(SP, ["podgroups"], RO)],
    ("training_operator", "scheduler_plugins"): [_r(SP, ["podgroups"], RW), _r(VC, ["podgroups"], RO)],
    ("mpi_operator", "volcano"): [
        _r(VC, ["podgroups"], RW),
        _r(VC, ["queues"], RO),
        _r("scheduling.k8s.io", ["priorityclasses"], RO),
    ],
    ("mpi_operator", "scheduler_plugins"): [
        _r(SP, ["podgroups"], RW),
        _r("scheduling.k8s.io", ["priorityclasses"], RO),
    ],
    ("volcano_scheduler", "volcano"): [
        _r(VC, ["podgroups"], RO + ["update", "patch"]),
        _r(VC, ["podgroups/status"], ["update", "patch"]),
        _r(VC, ["queues"], RO + ["create", "update", "patch"]),
        _r(VC, ["queues/status"], ["update", "patch"]),
        _r("nodeinfo.volcano.sh", ["numatopologies"], RO),
        _r("", ["pods"], RO + ["update", "patch", "delete"]),
        _r("", ["pods/status"], ["update", "patch"]),
        _r("", ["pods/binding", "bindings"], ["create"]),
        _r("", ["events"], ["create", "list", "watch", "update", "patch"]),
        _r(
            "",
            [
                "nodes",
                "namespaces",
                "resourcequotas",
                "persistentvolumes",
                "persistentvolumeclaims",
                "configmaps",
                "services",
                "replicationcontrollers",
            ],
            RO,
        ),
        _r("apps", ["replicasets", "statefulsets"], RO),
        _r("policy", ["poddisruptionbudgets"], RO),
        _r("scheduling.k8s.io", ["priorityclasses"], RO),
        _r(
            "storage.k8s.io",
            ["storageclasses", "csinodes", "csidrivers", "csistoragecapacities", "volumeattachments"],
            RO,
        ),
        _r("coordination.k8s.io", ["leases"], ["create", "get", "list", "watch", "update"]),
    ],
    ("volcano_controllers", "volcano"): [
        _r("batch.volcano.sh", ["jobs"], RW),
        _r("batch.volcano.sh", ["jobs/status", "jobs/finalizers"], ["update", "patch"]),
        _r("bus.volcano.sh", ["commands"], RO + ["delete"]),
        _r(VC, ["podgroups"], RW),
        _r(VC, ["podgroups/status"], ["update", "patch"]),
        _r(VC, ["queues"], RW),
        _r(VC, ["queues/status"], ["update", "patch"]),
        _r("", ["pods"], RW),
        _r("", ["services", "configmaps", "secrets", "persistentvolumeclaims"], RW),
        _r("", ["events"], ["create", "list", "watch", "update", "patch"]),
        _r("networking.k8s.io", ["networkpolicies"], RW),
        _r("apps", ["daemonsets", "replicasets", "statefulsets", "deployments"], RO),
        _r("batch", ["jobs"], RO),
        _r("scheduling.k8s.io", ["priorityclasses"], RO),
        _r("coordination.k8s.io", ["leases"], ["create", "get", "list", "watch", "update"]),
    ],
    ("scheduler_plugins_scheduler", "scheduler_plugins"): [
        _r(SP, ["podgroups", "elasticquotas"], RO),
        _r(SP, ["podgroups/status", "elasticquotas/status"], ["update", "patch"]),
        _r(
            "storage.k8s.io",
            ["csinodes", "csidrivers", "csistoragecapacities", "storageclasses", "volumeattachments"],
            RO,
        ),
        _r("", ["configmaps"], RO),
        _r("coordination.k8s.io", ["leases"], ["create", "get", "list", "watch", "update"]),
    ],
    ("scheduler_plugins_controller", "scheduler_plugins"): [
        _r(SP, ["podgroups", "elasticquotas"], RO + ["update", "patch"]),
        _r(SP, ["podgroups/status", "elasticquotas/status"], ["update", "patch"]),
        _r("", ["pods"], RO),
        _r("", ["events"], ["create", "patch", "update"]),
        _r("coordination.k8s.io", ["leases"], ["create", "get", "list", "watch", "update"]),
    ],
    # koord-scheduler with a gang-only profile, on top of system:kube-scheduler, system:volume-scheduler and
    # extension-apiserver-authentication-reader (its install binds those): the informers of the three CRDs
    # it needs at start, the status patch its PodGroup controller makes, and (v1.8) the pod patch its DefaultPreBind
    # applies for Coscheduling before binding (checked on the lab: every call its ServiceAccount made, 0 denials)
    ("koord_scheduler", "koordinator"): [
        _r(KOORD, ["podgroups"], RO + ["patch"]),
        _r("scheduling.koordinator.sh", ["reservations", "devices"], RO),
        _r("", ["pods"], ["patch"]),
    ],
}


def _trainer(gang: str) -> list[dict]:
    """Kubeflow Trainer v2.2's controller manager (leader election off, no delete): its TrainJobs and runtimes,
    the JobSets it creates, the PodGroups of the scheduler its runtimes name (read-only in the other group:
    it watches the PodGroups of every kind whose CRD exists at its start), MPI's ConfigMaps and Secrets in the
    TrainJobs' namespaces (its cert rotator's Secret among them), and what counts towards a PodGroup's
    minResources (LimitRanges, RuntimeClasses). Its webhook configurations' caBundle is written under rights
    limited to their names, which a cluster-wide table cannot hold: its install grants them."""
    mine = _podgroups.group(gang)
    (other,) = (_podgroups.group(k) for k in OPS if k != gang)
    tr = "trainer.kubeflow.org"
    return [
        _r(tr, ["trainjobs", "trainingruntimes", "clustertrainingruntimes"], RO + ["update", "patch"]),
        _r(
            tr,
            [
                "trainjobs/status",
                "trainjobs/finalizers",
                "trainingruntimes/finalizers",
                "clustertrainingruntimes/finalizers",
            ],
            ["get", "update", "patch"],
        ),
        _r("jobset.x-k8s.io", ["jobsets"], RO + ["create", "update", "patch"]),
        _r(mine, ["podgroups"], RO + ["create", "update", "patch"]),
        _r(other, ["podgroups"], RO),
        _r("", ["configmaps", "secrets"], RO + ["create", "update", "patch"]),
        _r("", ["limitranges"], RO),
        _r("node.k8s.io", ["runtimeclasses"], RO),
        _r("events.k8s.io", ["events"], ["create", "patch", "update"]),
    ]


# JobSet v0.11's and v0.12's controllers and webhooks, whichever scheduler the pods name (leader election off): status
# and TTL deletes of JobSets, their Jobs and headless Services, exclusive placement (pods marked and deleted, the
# leader's node read), PVCs from volumeClaimPolicies, events (v0.11 through the core API, v0.12 through
# events.k8s.io). Its cert rotator's Secret and webhook configurations are name-limited rights its install grants.
_JOBSET = [
    _r("jobset.x-k8s.io", ["jobsets"], RO + ["delete"]),
    _r("jobset.x-k8s.io", ["jobsets/status"], ["get", "update"]),
    _r("jobset.x-k8s.io", ["jobsets/finalizers"], ["update"]),
    _r("batch", ["jobs"], RO + ["create", "update", "delete"]),
    _r("batch", ["jobs/status"], ["update"]),
    _r("", ["services"], RO + ["create"]),
    _r("", ["pods"], RO + ["delete"]),
    _r("", ["pods/status"], ["update"]),
    _r("", ["nodes"], RO),
    _r("", ["persistentvolumeclaims"], RO + ["create"]),
    _r("", ["events"], ["create", "patch", "update"]),
    _r("events.k8s.io", ["events"], ["create", "patch", "update"]),
]
for _gang in OPS:
    RULES[("trainer", _gang)] = _trainer(_gang)
    RULES[("jobset", _gang)] = [dict(r) for r in _JOBSET]

# Kueue v0.17's controller manager with the integrations the collection runs (batch Jobs, Kubeflow v1 jobs and MPIJobs,
# JobSets, TrainJobs), leader election off, the visibility server off: its own objects, each integration's jobs
# (suspend, status, finalizers), the pods it reads and finalizes, what counts towards a workload's requests
# (LimitRanges, RuntimeClasses, PriorityClasses), nodes and namespaces (flavors, namespace selectors), pod templates
# it keeps for workloads, events. Its certificate rotator's Secret, webhook configurations and conversion CRDs are
# name-limited rights its install grants.
_KQ = "kueue.x-k8s.io"
_KUEUE = [
    _r(_KQ, ["clusterqueues", "localqueues", "workloads", "cohorts", "admissionchecks"], RW),
    _r(_KQ, ["resourceflavors"], RO + ["update", "delete"]),
    _r(_KQ, ["topologies"], RO + ["update"]),
    _r(_KQ, ["multikueueclusters", "multikueueconfigs", "provisioningrequestconfigs", "workloadpriorityclasses"], RO),
    _r(
        _KQ,
        [
            "clusterqueues/status",
            "localqueues/status",
            "workloads/status",
            "cohorts/status",
            "admissionchecks/status",
            "multikueueclusters/status",
        ],
        ["get", "update", "patch"],
    ),
    _r(
        _KQ,
        [
            "clusterqueues/finalizers",
            "localqueues/finalizers",
            "workloads/finalizers",
            "resourceflavors/finalizers",
            "admissionchecks/finalizers",
            "topologies/finalizers",
        ],
        ["update"],
    ),
    _r("batch", ["jobs"], RO + ["update", "patch", "delete"]),
    _r("batch", ["jobs/status", "jobs/finalizers"], ["get", "update", "patch"]),
    _r(
        "kubeflow.org",
        ["pytorchjobs", "tfjobs", "xgboostjobs", "paddlejobs", "jaxjobs", "mpijobs"],
        RO + ["update", "patch", "delete"],
    ),
    _r(
        "kubeflow.org",
        [
            f"{k}/{s}"
            for k in ("pytorchjobs", "tfjobs", "xgboostjobs", "paddlejobs", "jaxjobs", "mpijobs")
            for s in ("status", "finalizers")
        ],
        ["get", "update", "patch"],
    ),
    _r("jobset.x-k8s.io", ["jobsets"], RO + ["update", "patch", "delete"]),
    _r("jobset.x-k8s.io", ["jobsets/status", "jobsets/finalizers"], ["get", "update", "patch"]),
    _r("trainer.kubeflow.org", ["trainjobs"], RO + ["update", "patch"]),
    _r("trainer.kubeflow.org", ["trainjobs/status", "trainjobs/finalizers"], ["get", "update", "patch"]),
    _r("trainer.kubeflow.org", ["trainingruntimes", "clustertrainingruntimes"], RO),
    _r("", ["pods"], RO + ["update", "patch", "delete"]),
    _r("", ["pods/status"], ["get", "patch"]),
    _r("", ["pods/finalizers"], ["get", "update"]),
    _r("", ["podtemplates"], RO + ["create", "update", "delete"]),
    _r("", ["limitranges", "namespaces", "nodes"], RO),
    _r("", ["events"], ["create", "patch", "update", "watch"]),
    _r("node.k8s.io", ["runtimeclasses"], RO),
    _r("scheduling.k8s.io", ["priorityclasses"], RO),
    _r("apps", ["deployments", "replicasets", "statefulsets"], RO),
]
# the components whose rights are the same whatever the gang path
PATH_FREE = {"kueue": _KUEUE}


# Coscheduling inside the default kube-scheduler (scheduler-plugins mode=default): kube-scheduler runs
# as this user and holds its own rights already (system:kube-scheduler, system:volume-scheduler); the
# plugin adds only the PodGroup rights, the scheduler-plugins group's rules of the second scheduler.
KUBE_SCHEDULER_USER = "system:kube-scheduler"


def coscheduling_rules() -> list[dict]:
    """What the Coscheduling plugin reads and writes, from the second scheduler's rules (one source)."""
    return [dict(r) for r in RULES[("scheduler_plugins_scheduler", "scheduler_plugins")] if r["apiGroups"] == [SP]]


def required_rules(component: str, gang_scheduler: str | None) -> list[dict]:
    """The gang rights of ``component`` with the PodGroups of ``gang_scheduler`` (refused where it has none); a
    component of PATH_FREE has the same whatever the path (``gang_scheduler`` may be None)."""
    if component in PATH_FREE:
        return [dict(r) for r in PATH_FREE[component]]
    allowed = COMPONENTS[component][2]
    if gang_scheduler not in allowed:
        raise GangError(
            f"component={component} works with gang_scheduler {' or '.join(allowed)}, not {gang_scheduler}; "
            "fix component or gang_scheduler"
        )
    return [dict(r) for r in RULES[(component, gang_scheduler)]]


def checks(rules: list[dict]) -> list[tuple[str, str, str]]:
    """Every (verb, group, resource) a rule set grants, in a stable order (subresources kept as 'a/b')."""
    out = []
    for r in rules:
        for g in r.get("apiGroups") or [""]:
            for res in r.get("resources") or []:
                for v in r.get("verbs") or []:
                    out.append((v, g, res))
    return sorted(set(out), key=lambda t: (t[1], t[2], t[0]))


# The PolicyRule fields where the authorizer reads "*": alone (every group, resource, verb, URL), as
# "pods/*" / "*/scale" (every subresource, the subresource of every resource) and in a nonResourceURL
# ("/metrics/*", a prefix). Any "*" in them is a wildcard. resourceNames are compared literally.
WILDCARD_FIELDS = ("apiGroups", "resources", "verbs", "nonResourceURLs")
RULE_FIELDS = ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs")


def has_wildcard(rule: dict) -> bool:
    return any(isinstance(x, str) and "*" in x for k in WILDCARD_FIELDS for x in rule.get(k) or [])


def covers(rules: list[dict], verb: str, group: str, resource: str) -> bool:
    """Whether a (cluster-scoped, no resourceNames) rule set grants one check."""
    for r in rules:
        if r.get("resourceNames") or r.get("nonResourceURLs"):
            continue
        if verb not in r.get("verbs", []) and "*" not in r.get("verbs", []):
            continue
        if group not in r.get("apiGroups", []) and "*" not in r.get("apiGroups", []):
            continue
        res = r.get("resources", [])
        top = resource.split("/", 1)[0]
        if resource in res or "*" in res or (resource != top and f"{top}/*" in res):
            return True
    return False


def normalize(rules: list[dict]) -> list[dict]:
    """A canonical form for comparing rule lists (sorted members, empty fields dropped)."""
    out = []
    for r in rules:
        keys = ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs")
        out.append({k: sorted(r[k]) for k in keys if r.get(k)})
    return sorted(out, key=lambda r: repr(sorted(r.items())))


def validate_extra(rules: list[dict]) -> None:
    """GangError naming the rule and field unless every rule is one the API server accepts in a
    ClusterRole (the same checks as its validation), before anything is written."""
    for i, r in enumerate(rules):
        if not isinstance(r, dict) or not r.get("verbs") or not (r.get("resources") or r.get("nonResourceURLs")):
            raise GangError(
                f"extra_rules[{i}] is not a valid PolicyRule (needs verbs and resources, plus apiGroups): {r!r}"
            )
        unknown = sorted(set(r) - set(RULE_FIELDS))
        if unknown:
            raise GangError(
                f"extra_rules[{i}] has unknown field(s) {', '.join(unknown)} (a PolicyRule has "
                f"{', '.join(RULE_FIELDS)}): {r!r}"
            )
        for k in RULE_FIELDS:
            if k in r and not (isinstance(r[k], list) and all(isinstance(x, str) for x in r[k])):
                raise GangError(f"extra_rules[{i}].{k} must be a list of strings, got {r[k]!r}")
            blank = [x for x in r.get(k) or [] if x != x.strip() or (not x and k != "apiGroups")]
            if blank:
                raise GangError(
                    f"extra_rules[{i}].{k} has an empty or space-padded entry {blank[0]!r} ('' is only the core API "
                    "group, in apiGroups)"
                )
        if r.get("nonResourceURLs"):
            if r.get("apiGroups") or r.get("resources") or r.get("resourceNames"):
                raise GangError(
                    f"extra_rules[{i}] mixes nonResourceURLs with apiGroups/resources/resourceNames: a rule applies "
                    "to resources or to non-resource URLs, not both; split it in two"
                )
            bad = [u for u in r["nonResourceURLs"] if not u.startswith("/") and u != "*"]
            if bad:
                raise GangError(
                    f"extra_rules[{i}].nonResourceURLs entry {bad[0]!r} must be a path starting with / (or *)"
                )
        elif not r.get("apiGroups"):
            raise GangError(
                f"extra_rules[{i}].apiGroups is missing or empty: a resource rule needs at least one API group "
                "('' for the core group, as in apiGroups: [''])"
            )


def check_text(c: tuple[str, str, str]) -> str:
    verb, group, resource = c
    return f"{verb} {group or 'core'}/{resource}"


def sa_user(ns: str, name: str) -> tuple[str, list[str]]:
    return f"system:serviceaccount:{ns}:{name}", [
        "system:serviceaccounts",
        f"system:serviceaccounts:{ns}",
        "system:authenticated",
    ]
