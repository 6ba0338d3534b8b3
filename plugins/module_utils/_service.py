# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: reads and writes of the objects the modules work on, and discovery of
the gang schedulers and Kubeflow operators running in a cluster. Raises, never fails a module.
Not a public API."""

from __future__ import annotations

import posixpath

from ansible_collections.gangsched.kubeflow.plugins.module_utils import _flags
from ansible_collections.gangsched.kubeflow.plugins.module_utils._exceptions import GangError, NotFound

FIELD_MANAGER = "gangsched.kubeflow"
MANAGED_BY = {"app.kubernetes.io/managed-by": "gangsched.kubeflow"}

PODGROUP_CRDS = {
    "volcano": "podgroups.scheduling.volcano.sh",
    "scheduler_plugins": "podgroups.scheduling.x-k8s.io",
}
PODGROUP_API = {
    "volcano": ("scheduling.volcano.sh", "v1beta1"),
    "scheduler_plugins": ("scheduling.x-k8s.io", "v1alpha1"),
}

# image repository (registry and tag stripped) -> scheduler kind
SCHEDULER_IMAGES = {
    "scheduler-plugins/kube-scheduler": "scheduler_plugins",
    "vc-scheduler": "volcano",
    "kube-batch": "kube_batch",
    "koord-scheduler": "koordinator",
}
OPERATOR_IMAGES = {
    "training-operator": "training_operator",
    "mpi-operator": "mpi_operator",
    "tf_operator": "tf_operator",
    "tf-operator": "tf_operator",
}


def image_repo(image: str) -> tuple[str, str]:
    """Repository without registry, and tag: registry.k8s.io/a/b:v1 -> ('a/b', 'v1')."""
    name, _at, digest = image.partition("@")
    tag = ""
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name, tag = name.rsplit(":", 1)
    parts = name.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]
    return "/".join(parts), tag or digest


def image_kind(image: str, table: dict) -> str | None:
    repo = image_repo(image)[0]
    for suffix, kind in table.items():
        if repo == suffix or repo.endswith("/" + suffix):
            return kind
    return None


# ---- objects ----------------------------------------------------------------------------------------
def deployment_path(ns: str, name: str) -> str:
    return f"/apis/apps/v1/namespaces/{ns}/deployments/{name}"


def get_deployment(client, ns: str, name: str, hint: str = "") -> dict:
    try:
        return client.get(deployment_path(ns, name), what=f"Deployment {ns}/{name}")
    except NotFound as e:
        raise GangError(f"Deployment {ns}/{name} not found{hint}") from e


def patch_deployment_container(
    client, dep: dict, container: str, command, args, dry_run: bool, unset: tuple = (), annotations: dict | None = None
) -> dict:
    """Strategic-merge patch of one container's command/args, guarded by the resourceVersion read
    (a concurrent edit gives Conflict, and the caller retries from a fresh read). ``unset`` names the
    fields ("command", "args") to remove; ``annotations`` are merged into the Deployment's (None deletes)."""
    ns, name = dep["metadata"]["namespace"], dep["metadata"]["name"]
    c: dict = {"name": container}
    if command is not None:
        c["command"] = command
    if args is not None:
        c["args"] = args
    for f in unset:
        c[f] = None
    meta: dict = {"resourceVersion": dep["metadata"]["resourceVersion"]}
    if annotations:
        meta["annotations"] = annotations
    patch = {"metadata": meta, "spec": {"template": {"spec": {"containers": [c]}}}}
    query = {"fieldManager": FIELD_MANAGER}
    if dry_run:
        query["dryRun"] = "All"
    return client.request(
        "PATCH",
        deployment_path(ns, name),
        body=patch,
        query=query,
        content_type="application/strategic-merge-patch+json",
        what=f"Deployment {ns}/{name}",
    )


def crd(client, name: str) -> dict | None:
    return client.get_or_none(
        f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}", what=f"CustomResourceDefinition {name}"
    )


def crd_established(obj: dict | None) -> bool:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Established":
            return cond.get("status") == "True"
    return False


def container_of(dep: dict, name: str | None, default: str) -> dict:
    """The container ``name`` (or the default one, or the only one) of a Deployment."""
    containers = dep["spec"]["template"]["spec"].get("containers") or []
    names = [c["name"] for c in containers]
    ns, dname = dep["metadata"]["namespace"], dep["metadata"]["name"]
    wanted = name or default
    for c in containers:
        if c["name"] == wanted:
            return c
    if name is None and len(containers) == 1:
        return containers[0]
    raise GangError(
        f"Container {wanted!r} not found in Deployment {ns}/{dname} (containers: {', '.join(names) or 'none'}); "
        "set container to one of them"
    )


# ---- discovery --------------------------------------------------------------------------------------
def _config_path(container: dict) -> str | None:
    for h in _flags.find(container.get("command"), container.get("args"), "config"):
        return h.value
    return None


def _configmap_file(client, pod_spec: dict, container: dict, path: str, ns: str) -> str | None:
    """Content of ``path`` when it comes from a ConfigMap volume mounted in the container."""
    for m in container.get("volumeMounts") or []:
        mp = m["mountPath"].rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            key = m.get("subPath") or posixpath.relpath(path, mp)
            for v in pod_spec.get("volumes") or []:
                if v["name"] == m["name"] and "configMap" in v:
                    cm = client.get_or_none(
                        f"/api/v1/namespaces/{ns}/configmaps/{v['configMap']['name']}",
                        what=f"ConfigMap {ns}/{v['configMap']['name']}",
                    )
                    for item in v["configMap"].get("items") or []:
                        if item.get("path") == key:
                            key = item["key"]
                    return ((cm or {}).get("data") or {}).get(key)
    return None


def coscheduling_profiles(config_text: str) -> tuple[list[str], list[str]]:
    """(all profile names, names of profiles with Coscheduling enabled) of a KubeSchedulerConfiguration."""
    import yaml

    try:
        cfg = yaml.safe_load(config_text) or {}
    except yaml.YAMLError:
        return [], []
    names, cosched = [], []
    for p in cfg.get("profiles") or [{}]:
        pname = p.get("schedulerName") or "default-scheduler"
        names.append(pname)
        plugins = p.get("plugins") or {}
        for point in ("multiPoint", "queueSort", "permit", "preFilter"):
            enabled = ((plugins.get(point) or {}).get("enabled")) or []
            if any(e.get("name") == "Coscheduling" for e in enabled):
                cosched.append(pname)
                break
    return names, cosched


def _ready(dep: dict) -> bool:
    st = dep.get("status") or {}
    return (st.get("readyReplicas") or 0) > 0


def find_schedulers(client) -> list[dict]:
    """Gang schedulers running as Deployments, or as the kube-scheduler static pod (default mode)."""
    found = []
    for dep in client.list("/apis/apps/v1/deployments", what="Deployments (all namespaces)"):
        spec = dep["spec"]["template"]["spec"]
        for c in spec.get("containers") or []:
            kind = image_kind(c.get("image", ""), SCHEDULER_IMAGES)
            if not kind:
                continue
            ns, name = dep["metadata"]["namespace"], dep["metadata"]["name"]
            entry = {
                "kind": kind,
                "namespace": ns,
                "name": name,
                "source": "Deployment",
                "image": c["image"],
                "version": image_repo(c["image"])[1],
                "ready": _ready(dep),
                "scheduler_names": [],
                "gang_profiles": [],
                "mode": "second",
            }
            if kind == "volcano":
                names = [h.value for h in _flags.find(c.get("command"), c.get("args"), "scheduler-name") if h.value]
                entry["scheduler_names"] = entry["gang_profiles"] = names or ["volcano"]
            elif kind in ("scheduler_plugins", "koordinator"):
                path = _config_path(c)
                text = _configmap_file(client, spec, c, path, ns) if path else None
                if text:
                    entry["scheduler_names"], entry["gang_profiles"] = coscheduling_profiles(text)
                if "default-scheduler" in entry["scheduler_names"]:
                    entry["mode"] = "default"
            elif kind == "kube_batch":
                entry["scheduler_names"] = entry["gang_profiles"] = ["kube-batch"]
            found.append(entry)
    # the default scheduler's static pod (mirror pods in kube-system)
    for pod in client.list(
        "/api/v1/namespaces/kube-system/pods", what="Pods in kube-system", labelSelector="component=kube-scheduler"
    ):
        for c in pod["spec"].get("containers") or []:
            kind = image_kind(c.get("image", ""), SCHEDULER_IMAGES)
            if kind != "scheduler_plugins":
                continue
            found.append(
                {
                    "kind": kind,
                    "namespace": "kube-system",
                    "name": pod["metadata"]["name"],
                    "source": "static pod",
                    "image": c["image"],
                    "version": image_repo(c["image"])[1],
                    "ready": (pod.get("status") or {}).get("phase") == "Running",
                    # the config file lives on the control-plane host; kubeadm-style installs run
                    # Coscheduling in the default profile
                    "scheduler_names": ["default-scheduler"],
                    "gang_profiles": ["default-scheduler"],
                    "mode": "default",
                }
            )
    return found


def find_operators(client) -> list[dict]:
    out = []
    for dep in client.list("/apis/apps/v1/deployments", what="Deployments (all namespaces)"):
        for c in dep["spec"]["template"]["spec"].get("containers") or []:
            kind = image_kind(c.get("image", ""), OPERATOR_IMAGES)
            if kind:
                out.append({"operator": kind, "deployment": dep, "container": c})
    return out
