"""What an inventory of the lab needs, written for ``inventories/lab`` by ``python -m lab up``: the kubeconfig, helm
and kubectl, the upstream charts, CRDs and webhooks built for the lab, its static pod manifest dir, the versions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from . import build
from . import versions as V

if TYPE_CHECKING:
    from .cluster import Lab


def write_facts(lab: Lab) -> Path:
    """Where ``lab`` keeps what an inventory needs (kubeconfig, helm, the upstream charts and CRDs
    built for it, the static pod manifest dir), in ``lab.inventory_facts``: ``inventories/lab`` reads it."""

    def art(unit: str, sub: str) -> str:
        # a path not built yet (`python -m lab build --for <path>` builds only what one path needs) is where
        # its build puts it, so a lab brought up first serves that path once it is built
        if not build.built(build.unit_by_name(unit)):
            return str(build.artifacts_dir(build.unit_by_name(unit)) / sub)
        return str(build.artifact_path(unit, sub))

    def previous(unit: str) -> dict:
        """The role variables' values for a previous pin (versions.PREVIOUS): what an upgrade starts from."""
        u = build.unit_by_name(unit)
        name = unit.split("@")[0].replace("-", "_")
        out = {"version": u.version}
        if name == "scheduler_plugins":
            out |= {"chart": art(unit, "chart"), "crds": art(unit, "coscheduling/crd.yaml")}
        if name in ("nvidia_device_plugin", "volcano"):
            out |= {"chart": art(unit, "chart")}
        if name == "mpi_operator":
            out |= {"crds": art(unit, "manifests/kubeflow.org_mpijobs.yaml")}
        if name == "koordinator":
            out |= {"crds": art(unit, "crds")}
        if name in ("trainer", "jobset"):
            out |= {"crds": art(unit, "crds"), "webhook": art(unit, "webhook")}
        return out

    facts = {
        "kubeconfig": str(lab.kubeconfig),
        "helm": str(build.binary_where("helm")),
        "kubectl": str(build.binary_where("kubectl")),
        "manifests_dir": str(lab.manifests),
        "etc_dir": str(lab.etc),
        "state_dir": str(lab.root),
        "charts": {
            "volcano": art("volcano", "chart"),
            "scheduler_plugins": art("scheduler-plugins", "chart"),
            "nvidia_device_plugin": art("nvidia-device-plugin", "chart"),
        },
        "crds": {
            "volcano": art("volcano", "chart/crd/bases"),
            "scheduler_plugins": art("scheduler-plugins", "coscheduling/crd.yaml"),
            "training_operator": art("training-operator", "crds"),
            "mpi_operator": art("mpi-operator", "manifests/kubeflow.org_mpijobs.yaml"),
            "koordinator": art("koordinator", "crds"),
            "trainer": art("trainer", "crds"),
            "jobset": art("jobset", "crds"),
            "kueue": art("kueue", "crds"),
        },
        # the releases' webhook configurations and their kustomize patches
        "webhooks": {
            "trainer": art("trainer", "webhook"),
            "jobset": art("jobset", "webhook"),
            "kueue": art("kueue", "webhook"),
        },
        "versions": {
            "kubernetes": V.KUBERNETES,
            "volcano": V.VOLCANO,
            "scheduler_plugins": V.SCHEDULER_PLUGINS,
            "nvidia_device_plugin": V.NVIDIA_DEVICE_PLUGIN,
            "training_operator": V.TRAINING_OPERATOR,
            "mpi_operator": V.MPI_OPERATOR,
            "koordinator": V.KOORDINATOR,
            "trainer": V.TRAINER,
            "jobset": V.JOBSET,
            "kueue": V.KUEUE,
        },
        # what the upgrade tests install first: the previous pins, where this Kubernetes release's lab has one
        "previous": {u.name.replace("-", "_"): previous(build.label(u)) for u in build.PREVIOUS_UNITS},
    }
    lab.inventory_facts.write_text(json.dumps(facts, indent=2) + "\n")
    return lab.inventory_facts
