# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what the collection knows about the Kubeflow operators — where each
runs, its gang flag and how it is written, its images; the record of a container's original
command/args; the MPIJob clash between training-operator and mpi-operator; the Kubernetes name check
for the options that name objects. Pure: no I/O (the reads are the service's). Not a public API."""

from __future__ import annotations

import json
import re

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _flags
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError

# operator -> its Deployment and container by default, its gang flag (``prefer``: command or args for a
# new flag; ``boolean``: the flag takes no scheduler name), its name in messages, the image names it is
# published under (the last path components are matched, so a mirror under any registry matches) and
# where upstream publishes them (for the messages)
OPERATORS = {
    "training_operator": {
        "namespace": "kubeflow",
        "name": "training-operator",
        "container": "training-operator",
        "flag": "gang-scheduler-name",
        "prefer": "command",
        "boolean": False,
        "label": "training-operator",
        "images": ("training-operator",),
        "upstream": "kubeflow/training-operator",
    },
    "mpi_operator": {
        "namespace": "mpi-operator",
        "name": "mpi-operator",
        "container": "mpi-operator",
        "flag": "gang-scheduling",
        "prefer": "args",
        "boolean": False,
        "label": "mpi-operator",
        "images": ("mpi-operator",),
        "upstream": "mpioperator/mpi-operator",
    },
    "tf_operator": {
        "namespace": "kubeflow",
        "name": "tf-job-operator",
        "container": "tf-job-operator",
        "flag": "enable-gang-scheduling",
        "prefer": "command",
        "boolean": True,
        "label": "tf-operator (legacy)",
        "images": ("tf-operator", "tf_operator"),
        "upstream": "kubeflow/tf-operator (gcr.io/kubeflow-images-public/tf_operator)",
    },
    # Kubeflow Trainer v2 (TrainJob, trainer.kubeflow.org) goes here when it is supported. Its controller
    # has no gang flag: a TrainJob is gang-scheduled through its runtime's spec.podGroupPolicy
    # (coscheduling or volcano in a ClusterTrainingRuntime / TrainingRuntime), so its entry will carry
    # the runtime field to set instead of "flag"/"prefer"/"boolean", and operator_gang will patch runtimes
    # rather than the controller's command line.
}

# image name (last path components) -> operator, for discovery
OPERATOR_IMAGES = {image: op for op, spec in OPERATORS.items() for image in spec["images"]}

# The container's command/args as they were before this collection first changed them, as JSON
# {container: {"command": [...] | null, "args": [...] | null}}; gang_scheduler=original puts them back.
ORIGINAL_ANNOTATION = "gangsched.kubeflow/original-argv"

MPIJOB_CRD = "mpijobs.kubeflow.org"

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def check_name(option: str, value, kind: str, label: bool) -> None:
    """GangError naming ``option`` unless ``value`` is a valid Kubernetes name (DNS-1123 label or
    subdomain)."""
    if value is None:
        return
    pattern, limit = (DNS1123_LABEL, 63) if label else (DNS1123_SUBDOMAIN, 253)
    if not isinstance(value, str) or not value or len(value) > limit or not pattern.match(value):
        rule = "a DNS-1123 label" if label else "a DNS-1123 subdomain"
        raise GangError(
            f"{option}={value!r} is not a valid {kind} name: it must be {rule} (lower-case letters, digits and "
            f"'-'{'' if label else ' or .'}, at most {limit} characters, starting and ending with a letter or "
            "digit); nothing was changed"
        )


# ---- the original command/args ---------------------------------------------------------------------
def recorded(dep: dict) -> dict:
    """The original command/args recorded on a Deployment, by container ({} when none or unreadable)."""
    text = ((dep.get("metadata") or {}).get("annotations") or {}).get(ORIGINAL_ANNOTATION)
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def record_update(dep: dict, container: dict, restoring: bool) -> dict | None:
    """The annotation change that goes with a patch: record the original argv on the first change,
    drop the record when it is put back."""
    rec = recorded(dep)
    name = container["name"]
    if restoring:
        if name not in rec:
            return None
        rec.pop(name)
    else:
        if name in rec:
            return None
        rec[name] = {"command": container.get("command"), "args": container.get("args")}
    return {ORIGINAL_ANNOTATION: json.dumps(rec, sort_keys=True) if rec else None}


# ---- MPIJob: training-operator beside mpi-operator ---------------------------------------------------
def enabled_schemes(container: dict) -> list[str] | None:
    """The job kinds training-operator's --enable-scheme turns on (lower case); None: all of them."""
    hits = _flags.find(container.get("command"), container.get("args"), "enable-scheme")
    if not hits:
        return None  # all schemes
    return [s.strip().lower() for h in hits if h.value for s in h.value.split(",")]


def serves_mpijob(operator: str, container: dict) -> bool:
    """Whether the operator's container serves MPIJob as training-operator does (the clash needs the
    MPIJob CRD only then)."""
    if operator != "training_operator":
        return False
    schemes = enabled_schemes(container)
    return schemes is None or "mpijob" in schemes


# the gang flag value the Kubeflow operators treat as Volcano's; any other value names a scheduler-plugins profile
VOLCANO_FLAG_VALUE = "volcano"


def podgroup_scheduler(gang_value: str) -> str:
    """The gang scheduler whose PodGroups an operator makes for its gang flag's value: Volcano's for
    ``volcano``, scheduler-plugins' (scheduling.x-k8s.io) for any other name.

    >>> podgroup_scheduler("volcano"), podgroup_scheduler("scheduler-plugins-scheduler")
    ('volcano', 'scheduler_plugins')
    """
    return "volcano" if gang_value == VOLCANO_FLAG_VALUE else "scheduler_plugins"


def mpijob_clash(operator: str, container: dict, mpijob_crd: dict | None) -> str | None:
    """A message when training-operator would serve MPIJob next to mpi-operator's v2beta1 CRD
    (``mpijob_crd``: the CustomResourceDefinition MPIJOB_CRD as read, None when missing)."""
    if not serves_mpijob(operator, container):
        return None
    versions = [v.get("name") for v in ((mpijob_crd or {}).get("spec") or {}).get("versions") or []]
    if "v2beta1" not in versions:
        return None
    return (
        "training-operator serves MPIJob (no --enable-scheme without mpijob) while the MPIJob CRD is mpi-operator's "
        "v2beta1: the two clash. Add --enable-scheme for each job kind except mpijob to the training-operator "
        "container, then re-run"
    )


# ---- a gang's minimum as each operator sets it ------------------------------------------------------------------
MINIMUM_KINDS = ("MPIJob", "PyTorchJob")  # the job kinds minimum_problem knows a trap of


def _replicas(spec: dict, key: str, role: str) -> int:
    return int(((spec.get(key) or {}).get(role) or {}).get("replicas", 1) or 0)


def minimum_problem(job: dict, min_member: int | None) -> tuple[str, str] | None:
    """(message, fix) where an operator set a gang's minimum (``min_member``, its PodGroup's) that the job can never
    meet or that defeats it: an MPIJob whose launcher is counted while launcherCreationPolicy WaitForWorkersReady holds
    the launcher back until the workers run (the gang never has its minimum), an elastic PyTorchJob whose minimum is
    its maximum because runPolicy.schedulingPolicy.minAvailable is unset. None when neither applies."""
    if not isinstance(min_member, int):
        return None
    kind, spec = job.get("kind"), job.get("spec") or {}
    chosen = ((spec.get("runPolicy") or {}).get("schedulingPolicy") or {}).get("minAvailable")
    if kind == "MPIJob" and spec.get("launcherCreationPolicy") == "WaitForWorkersReady":
        workers = _replicas(spec, "mpiReplicaSpecs", "Worker")
        if min_member > workers:
            return (
                f"its gang's minimum is {min_member}, the launcher counted with its {workers} worker(s), while "
                "launcherCreationPolicy WaitForWorkersReady creates the launcher only once the workers run: the "
                f"workers wait for a gang of {min_member}, the launcher for the workers, and nothing starts",
                f"set runPolicy.schedulingPolicy.minAvailable to {workers} (the workers), or launcherCreationPolicy "
                "AtStartup",
            )
    elastic = spec.get("elasticPolicy")
    if kind == "PyTorchJob" and elastic and chosen is None:
        least = elastic.get("minReplicas")
        if isinstance(least, int) and min_member > least:
            return (
                f"an elastic PyTorchJob (minReplicas {least}, maxReplicas {elastic.get('maxReplicas')}) whose gang's "
                f"minimum is {min_member}, all its replicas: runPolicy.schedulingPolicy.minAvailable is unset, so it "
                f"waits for the most it may use instead of starting with {least}",
                f"set runPolicy.schedulingPolicy.minAvailable to {least} (elasticPolicy.minReplicas)",
            )
    return None
