"""Objects the lab tests create."""

from __future__ import annotations

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
