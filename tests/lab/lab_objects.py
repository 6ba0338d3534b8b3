"""Objects the lab tests create."""

from __future__ import annotations


def operator_like(
    ns: str, name: str, command=None, args=None, containers: int = 1, node_selector: dict | None = None
) -> dict:
    """A Deployment shaped like an operator's; its image is not one the runner runs (KWOK fakes it).
    ``node_selector`` holds its pods back until a node carries those labels."""
    cs = []
    for i in range(containers):
        c = {"name": name if i == 0 else f"sidecar-{i}", "image": "example.invalid/operator:1"}
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
