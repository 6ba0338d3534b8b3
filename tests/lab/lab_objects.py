"""Objects the lab tests create, and what of a smoke run is left."""

from __future__ import annotations

import time

from kubernetes import client as k

# Images named like the operators' (operator_gang checks the name) under a mirror path the runner does
# not run: KWOK fakes their pods.
TRAINING_OPERATOR_IMAGE = "example.invalid/mirror/kubeflow/training-operator:v1.8.1"
MPI_OPERATOR_IMAGE = "example.invalid/mirror/mpioperator/mpi-operator:0.6.0"


def operator_like(
    ns: str,
    name: str,
    command=None,
    args=None,
    containers: int = 1,
    node_selector: dict | None = None,
    image: str = TRAINING_OPERATOR_IMAGE,
) -> dict:
    """A Deployment shaped like an operator's; its image (training-operator's name unless ``image``) is
    not one the runner runs (KWOK fakes it). ``node_selector`` holds its pods back until a node carries
    those labels."""
    cs = []
    for i in range(containers):
        c = {"name": name if i == 0 else f"sidecar-{i}", "image": image if i == 0 else "example.invalid/sidecar:1"}
        if command is not None and i == 0:
            c["command"] = command
        if args is not None and i == 0:
            c["args"] = args
        cs.append(c)
    pod_spec: dict = {"containers": cs}
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
        },
    }


def crd(name: str, schema: bool = True) -> dict:
    """A namespaced CustomResourceDefinition ``<plural>.<group>`` of one version, v1, that keeps any field;
    ``schema=False`` leaves its schema out, which the API server refuses for apiextensions.k8s.io/v1."""
    plural, group = name.split(".", 1)
    version = {"name": "v1", "served": True, "storage": True}
    if schema:
        version["schema"] = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": group,
            "names": {
                "kind": plural[:-1].capitalize(),
                "plural": plural,
                "singular": plural[:-1],
                "listKind": plural[:-1].capitalize() + "List",
            },
            "scope": "Namespaced",
            "versions": [version],
        },
    }


SMOKE_RUN_LABEL = "gangsched.kubeflow/smoke-run"
TRAINER = ("trainer.kubeflow.org", "v1alpha1")
SP_PODGROUPS = ("scheduling.x-k8s.io", "v1alpha1", "podgroups")


def role_namespaces_gone(api, timeout: float = 60) -> list[str]:
    """Waits until the smoke namespaces that are terminating are gone, and returns their names. The role's last run
    returns with the namespace it deleted still terminating (``wait_namespace_gone: false``), and
    kube-controller-manager empties a deleted namespace 5 s after the deletion; a labelled namespace that is not
    terminating is a leftover, not waited for."""
    core = k.CoreV1Api(api)

    def going() -> list[str]:
        items = core.list_namespace(label_selector=SMOKE_RUN_LABEL).items
        return [n.metadata.name for n in items if n.metadata.deletion_timestamp]

    names = going()
    deadline = time.monotonic() + timeout
    while going():
        assert time.monotonic() < deadline, f"namespaces {going()} still terminating after {timeout}s"
        time.sleep(0.5)
    return names


def trainjob_leftovers(api, run_id: str, podgroups: tuple = SP_PODGROUPS) -> list[str]:
    """Everything of smoke run ``run_id`` still in the cluster: its labelled TrainJobs, runtimes, JobSets,
    Jobs, pods and namespaces, and the PodGroups named after its TrainJobs (Trainer's carry no label)."""
    sel = f"{SMOKE_RUN_LABEL}={run_id}"
    co, out = k.CustomObjectsApi(api), []
    for group, version, plural in (
        (*TRAINER, "trainjobs"),
        (*TRAINER, "trainingruntimes"),
        ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
    ):
        for o in co.list_cluster_custom_object(group, version, plural, label_selector=sel)["items"]:
            out.append(f"{plural} {o['metadata']['namespace']}/{o['metadata']['name']}")
    for o in co.list_cluster_custom_object(*podgroups)["items"]:
        if o["metadata"]["name"].startswith(f"smoke-{run_id}-"):
            out.append(f"podgroups {o['metadata']['namespace']}/{o['metadata']['name']}")
    out += [f"job {j.metadata.name}" for j in k.BatchV1Api(api).list_job_for_all_namespaces(label_selector=sel).items]
    core = k.CoreV1Api(api)
    out += [f"pod {p.metadata.name}" for p in core.list_pod_for_all_namespaces(label_selector=sel).items]
    out += [f"namespace {n.metadata.name}" for n in core.list_namespace(label_selector=sel).items]
    return out
