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
