# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the PodGroup kind of each gang scheduler — its API group and version,
plural, CustomResourceDefinition name, and how a pod names the group it belongs to — looked up from
the scheduler or from the CRD. Pure: no I/O. Not a public API."""

from __future__ import annotations

# scheduler kind -> its PodGroup; ``member``: where a pod names its PodGroup (annotation or label, key)
PODGROUPS = {
    "volcano": {
        "group": "scheduling.volcano.sh",
        "version": "v1beta1",
        "plural": "podgroups",
        "kind": "PodGroup",
        "member": ("annotation", "scheduling.k8s.io/group-name"),
    },
    "scheduler_plugins": {
        "group": "scheduling.x-k8s.io",
        "version": "v1alpha1",
        "plural": "podgroups",
        "kind": "PodGroup",
        "member": ("label", "scheduling.x-k8s.io/pod-group"),
    },
    # recognised (gang_info reports their CRDs and gangs), never created by the modules
    "kube_batch": {
        "group": "scheduling.incubator.k8s.io",
        "version": "v1alpha1",
        "plural": "podgroups",
        "kind": "PodGroup",
        "member": ("annotation", "scheduling.k8s.io/group-name"),
    },
    "koordinator": {
        "group": "scheduling.sigs.k8s.io",
        "version": "v1alpha1",
        "plural": "podgroups",
        "kind": "PodGroup",
        "member": ("label", "pod-group.scheduling.sigs.k8s.io/name"),
    },
}

# the PodGroup kinds the Kubeflow components (training-operator, mpi-operator, Trainer, JobSet) make or read
OPERATOR_KINDS = ("volcano", "scheduler_plugins")


def crd_name(scheduler: str) -> str:
    """The PodGroup CRD of a scheduler: volcano -> podgroups.scheduling.volcano.sh."""
    pg = PODGROUPS[scheduler]
    return f"{pg['plural']}.{pg['group']}"


def group(scheduler: str) -> str:
    return PODGROUPS[scheduler]["group"]


def api(scheduler: str) -> tuple[str, str]:
    """(API group, version) of a scheduler's PodGroups."""
    pg = PODGROUPS[scheduler]
    return pg["group"], pg["version"]


def api_version(scheduler: str) -> str:
    """The apiVersion of a scheduler's PodGroups: volcano -> scheduling.volcano.sh/v1beta1."""
    return "/".join(api(scheduler))


def member_key(scheduler: str) -> tuple[str, str]:
    """Where a pod names its PodGroup for a scheduler: ("annotation" or "label", key)."""
    return PODGROUPS[scheduler]["member"]


# CRD name -> scheduler kind (the same table, the other way)
CRDS = {crd_name(s): s for s in PODGROUPS}


def scheduler_of_crd(name: str) -> str | None:
    """The scheduler whose PodGroup CRD is ``name`` (None for any other CRD)."""
    return CRDS.get(name)


def scheduler_of_api_version(value: str) -> str | None:
    """The scheduler whose PodGroups have apiVersion ``value`` (None for any other)."""
    for s in PODGROUPS:
        if api_version(s) == value:
            return s
    return None


def member_keys() -> list[tuple[str, str]]:
    """Every (annotation or label, key) by which a pod names its PodGroup, each once, in table order."""
    out: list[tuple[str, str]] = []
    for pg in PODGROUPS.values():
        if pg["member"] not in out:
            out.append(pg["member"])
    return out
