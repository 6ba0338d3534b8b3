# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: which Deployments are gang schedulers, which are Kubeflow operators and
which run Kubeflow Trainer v2's controller, classified from one list of Deployments already read (and
the kube-scheduler static pods, the KubeSchedulerConfigurations the schedulers read, and the pods that
tell when Trainer started). Pure: the service layer does the reads (``_service.find_schedulers``). Not
a public API."""

from __future__ import annotations

import posixpath

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _flags, _images, _operators, _schedulers


def ready(dep: dict) -> bool:
    st = dep.get("status") or {}
    return (st.get("readyReplicas") or 0) > 0


def config_path(container: dict, flag: str = "config") -> str | None:
    """The file a scheduler container reads its configuration from (a kube-scheduler's --config, vc-scheduler's
    --scheduler-conf)."""
    for h in _flags.find(container.get("command"), container.get("args"), flag):
        return h.value
    return None


def config_ref(dep: dict, container: dict, flag: str = "config") -> tuple[str, str, str] | None:
    """(namespace, ConfigMap name, key) that holds the file of ``config_path`` when it comes from a
    ConfigMap volume mounted in the container; None otherwise."""
    path = config_path(container, flag)
    if not path:
        return None
    pod_spec = dep["spec"]["template"]["spec"]
    for m in container.get("volumeMounts") or []:
        mp = m["mountPath"].rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            key = m.get("subPath") or posixpath.relpath(path, mp)
            for v in pod_spec.get("volumes") or []:
                if v["name"] == m["name"] and "configMap" in v:
                    for item in v["configMap"].get("items") or []:
                        if item.get("path") == key:
                            key = item["key"]
                    return dep["metadata"]["namespace"], v["configMap"]["name"], key
    return None


def scheduler_containers(deployments: list[dict]) -> list[tuple[dict, dict, str]]:
    """(Deployment, container, scheduler kind) of every container that runs a gang scheduler's image."""
    out = []
    for dep in deployments:
        for c in dep["spec"]["template"]["spec"].get("containers") or []:
            kind = _images.image_kind(c.get("image", ""), _schedulers.SCHEDULER_IMAGES)
            if kind:
                out.append((dep, c, kind))
    return out


def config_refs(deployments: list[dict]) -> list[tuple[str, str, str]]:
    """The ConfigMap entries (see ``config_ref``) to read for ``schedulers``, each once, in order."""
    out: list[tuple[str, str, str]] = []
    for dep, c, kind in scheduler_containers(deployments):
        flag = _conf_flag(kind)
        ref = config_ref(dep, c, flag) if flag else None
        if ref and ref not in out:
            out.append(ref)
    return out


def _conf_flag(kind: str) -> str | None:
    """The flag naming the configuration file a scheduler kind reads, where gang_info reads it."""
    spec = _schedulers.SCHEDULERS[kind]
    return "config" if spec["names_from"] == "config" else spec.get("conf_flag")


def schedulers(deployments: list[dict], configs: dict | None = None) -> list[dict]:
    """Gang schedulers running as Deployments. ``configs``: ConfigMap entry (``config_refs``) -> its
    text (None when missing); a scheduler whose configuration was not read serves no name known here."""
    configs = configs or {}
    found = []
    for dep, c, kind in scheduler_containers(deployments):
        ns, name = dep["metadata"]["namespace"], dep["metadata"]["name"]
        flag = _conf_flag(kind)
        ref = config_ref(dep, c, flag) if flag else None
        text = configs.get(ref) if ref else None
        names, gang = _schedulers.served_names(kind, c, text if flag == "config" else None)
        extra = {}
        if _schedulers.SCHEDULERS[kind].get("prebind"):
            extra["coscheduling_prebind"] = _schedulers.coscheduling_prebind(text)
        if _schedulers.SCHEDULERS[kind].get("permit_wait"):
            extra["permit_waits"] = _schedulers.permit_waits(text)
        if _schedulers.SCHEDULERS[kind].get("conf_flag"):
            extra["conf"] = _schedulers.volcano_conf(text)
        found.append(
            {
                **extra,
                "kind": kind,
                "namespace": ns,
                "name": name,
                "source": "Deployment",
                "image": c["image"],
                "version": _images.image_repo(c["image"])[1],
                "ready": ready(dep),
                "scheduler_names": names,
                "gang_profiles": gang,
                "mode": _schedulers.mode(kind, names),
            }
        )
    return found


def static_pod_schedulers(pods: list[dict]) -> list[dict]:
    """Gang schedulers running as the default scheduler's static pod (its mirror pods in kube-system)."""
    found = []
    for pod in pods:
        for c in pod["spec"].get("containers") or []:
            kind = _images.image_kind(c.get("image", ""), _schedulers.SCHEDULER_IMAGES)
            names = _schedulers.SCHEDULERS[kind].get("static_pod_names") if kind else None
            if not names:
                continue
            found.append(
                {
                    "kind": kind,
                    "namespace": "kube-system",
                    "name": pod["metadata"]["name"],
                    "source": "static pod",
                    "image": c["image"],
                    "version": _images.image_repo(c["image"])[1],
                    "ready": (pod.get("status") or {}).get("phase") == "Running",
                    "scheduler_names": list(names),
                    "gang_profiles": list(names),
                    "mode": "default",
                }
            )
    return found


def operators(deployments: list[dict]) -> list[dict]:
    """Kubeflow operators running as Deployments: {operator, deployment, container} for each container
    that runs an operator's image."""
    out = []
    for dep in deployments:
        for c in dep["spec"]["template"]["spec"].get("containers") or []:
            kind = _images.image_kind(c.get("image", ""), _operators.OPERATOR_IMAGES)
            if kind:
                out.append({"operator": kind, "deployment": dep, "container": c})
    return out


# ---- Kubeflow Trainer v2: its controller, and when its pods started ----------------------------------
# image name (last path components) -> what runs it; a mirror under any registry matches
TRAINER_IMAGES = {"trainer-controller-manager": "trainer"}


def trainers(deployments: list[dict]) -> list[dict]:
    """Kubeflow Trainer v2 controllers running as Deployments: {deployment, container} for each container
    that runs trainer-controller-manager's image (whatever the Deployment is called)."""
    out = []
    for dep in deployments:
        for c in dep["spec"]["template"]["spec"].get("containers") or []:
            if _images.image_kind(c.get("image", ""), TRAINER_IMAGES):
                out.append({"deployment": dep, "container": c})
    return out


def selects(selector: dict | None, labels: dict) -> bool:
    """Whether a label selector (matchLabels and matchExpressions) selects ``labels``. A missing selector
    selects nothing; an empty one selects everything, as in Kubernetes."""
    if selector is None:
        return False
    labels = labels or {}
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def pod_started(pod: dict, container: str) -> str | None:
    """When ``container`` of a pod last started (its running state's startedAt: a restarted container
    starts its process again), else when the pod started if it runs; None for a pod not running or
    being deleted."""
    md, st = pod.get("metadata") or {}, pod.get("status") or {}
    if md.get("deletionTimestamp"):
        return None
    for cs in st.get("containerStatuses") or []:
        if cs.get("name") == container:
            running = (cs.get("state") or {}).get("running")
            return (running or {}).get("startedAt")
    return st.get("startTime") if st.get("phase") == "Running" else None


def deployment_started(dep: dict, container: str, pods: list[dict]) -> str | None:
    """The earliest start (``pod_started``) of the Deployment's running pods: those in its namespace its
    selector selects. None when none runs."""
    ns, sel = dep["metadata"]["namespace"], (dep.get("spec") or {}).get("selector")
    times = [
        t
        for p in pods
        if (p.get("metadata") or {}).get("namespace") == ns and selects(sel, (p.get("metadata") or {}).get("labels"))
        for t in [pod_started(p, container)]
        if t
    ]
    return min(times) if times else None
