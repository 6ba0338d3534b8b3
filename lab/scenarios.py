"""Gang scheduling scenarios on the lab, with the real schedulers and no collection code.

Used by the lab's own tests and by ``python -m lab gang-demo``. The component manifests here are
the lab's own minimal ones (the collection's roles install the upstream charts); the images name
upstream repositories so the pod-process runner runs the matching binary from the Deployment.
"""

from __future__ import annotations

import time
from pathlib import Path

import yaml
from kubernetes import client as k

from . import build, kube
from . import versions as V
from .cluster import Lab

SP_NS = "scheduler-plugins"
SP_NAME = "scheduler-plugins-scheduler"
VC_NS = "volcano-system"
KOORD_NS = "koordinator-system"
KOORD_NAME = "koord-scheduler"
# the CRDs koord-scheduler needs at start, whatever its profiles enable: it starts informers for them
KOORD_CRDS = (
    "podgroups.scheduling.sigs.k8s.io",
    "reservations.scheduling.koordinator.sh",
    "devices.scheduling.koordinator.sh",
)
# the gang labels koord-scheduler reads (seed 003, Alibaba ACK): no PodGroup object needed
KOORD_GANG_NAME = "pod-group.scheduling.sigs.k8s.io/name"
KOORD_GANG_MIN = "pod-group.scheduling.sigs.k8s.io/min-available"


def crds(unit: str, sub: str) -> list[dict]:
    docs = []
    root = build.artifact_path(unit, sub)
    files = [root] if root.is_file() else sorted(Path(root).rglob("*.yaml"))
    for f in files:
        docs += [d for d in yaml.safe_load_all(f.read_text()) if d and d.get("kind") == "CustomResourceDefinition"]
    return docs


def wait_crds_established(lab: Lab, names: list[str], timeout: float = 60) -> None:
    ext = k.ApiextensionsV1Api(kube.api(lab))

    def ok() -> bool:
        for n in names:
            try:
                crd = ext.read_custom_resource_definition(n)
            except k.ApiException:
                return False
            if not any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or []):
                return False
        return True

    kube.wait_for(ok, timeout, f"CRDs {names} established")


def _sa(ns: str, name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}}


def _crb(name: str, role: str, ns: str, sa: str) -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
    }


def _deployment(
    ns: str, name: str, sa: str, image: str, args: list[str], config: str | None = None, mount: str = "/etc/config"
) -> dict:
    c = {"name": name, "image": image, "args": args, "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
    pod_spec: dict = {"serviceAccountName": sa, "containers": [c]}
    if config:
        c["volumeMounts"] = [{"name": "config", "mountPath": mount}]
        pod_spec["volumes"] = [{"name": "config", "configMap": {"name": config}}]
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


def _ns(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


# ---- scheduler-plugins as a second scheduler ------------------------------------------------------
def sp_rbac() -> list[dict]:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "lab-sp-scheduler-extra"},
        "rules": [
            {
                "apiGroups": ["scheduling.x-k8s.io"],
                "resources": ["podgroups", "elasticquotas"],
                "verbs": ["get", "list", "watch", "update", "patch"],
            },
            {
                "apiGroups": ["scheduling.x-k8s.io"],
                "resources": ["podgroups/status", "elasticquotas/status"],
                "verbs": ["get", "update", "patch"],
            },
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
            {
                "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"],
                "verbs": ["create", "get", "list", "update", "watch"],
            },
        ],
    }
    return [
        role,
        _crb("lab-sp-scheduler-kube-scheduler", "system:kube-scheduler", SP_NS, SP_NAME),
        _crb("lab-sp-scheduler-volume-scheduler", "system:volume-scheduler", SP_NS, SP_NAME),
        _crb("lab-sp-scheduler-extra", "lab-sp-scheduler-extra", SP_NS, SP_NAME),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "lab-sp-scheduler-auth-reader", "namespace": "kube-system"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "extension-apiserver-authentication-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": SP_NAME, "namespace": SP_NS}],
        },
    ]


def sp_second_scheduler(permit_wait: int = 60) -> list[dict]:
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [
            {
                "schedulerName": SP_NAME,
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
                },
                "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": permit_wait}}],
            }
        ],
    }
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "scheduler-config", "namespace": SP_NS},
        "data": {"scheduler-config.yaml": yaml.safe_dump(cfg, sort_keys=False)},
    }
    dep = _deployment(
        SP_NS,
        SP_NAME,
        SP_NAME,
        f"registry.k8s.io/scheduler-plugins/kube-scheduler:{V.SCHEDULER_PLUGINS}",
        # Coscheduling registers no Node events: a rejected gang is retried only after this
        # (upstream default 5m); the lab retries within seconds of "add a GPU node"
        ["--config=/etc/kubernetes/scheduler-config.yaml", "--pod-max-in-unschedulable-pods-duration=10s", "--v=2"],
        config="scheduler-config",
        mount="/etc/kubernetes",
    )
    return [_ns(SP_NS), _sa(SP_NS, SP_NAME), cm, dep]


def install_scheduler_plugins(lab: Lab) -> None:
    docs = crds("scheduler-plugins", "coscheduling")
    kube.apply(lab, docs, server_side=True)
    wait_crds_established(lab, [d["metadata"]["name"] for d in docs])
    kube.apply(lab, sp_second_scheduler() + sp_rbac())
    wait_deployment(lab, SP_NS, SP_NAME)


def sp_default_scheduler(lab: Lab, permit_wait: int = 60) -> Path:
    """Switch the lab's static kube-scheduler to the scheduler-plugins build with Coscheduling in the
    ``default-scheduler`` profile, kubeadm-style: a KubeSchedulerConfiguration next to the manifest and
    the manifest's image, command and volumes rewritten. Also binds system:kube-scheduler to the
    PodGroup rights Coscheduling needs. Returns the manifest path; undo with restore_default_scheduler."""
    conf = lab.etc / "scheduler.conf"
    cfg_path = lab.etc / "scheduler-config.yaml"
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(conf)},
        "leaderElection": {"leaderElect": True},
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
                },
                "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": permit_wait}}],
            }
        ],
    }
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    kube.apply(lab, _clusterrole_for_user("lab:scheduler-plugins-default", "system:kube-scheduler"))
    path = lab.manifests / "kube-scheduler.yaml"
    pod = yaml.safe_load(path.read_text())
    c = pod["spec"]["containers"][0]
    c["image"] = f"registry.k8s.io/scheduler-plugins/kube-scheduler:{V.SCHEDULER_PLUGINS}"
    c["command"] = [
        "kube-scheduler",
        f"--config={cfg_path}",
        f"--authentication-kubeconfig={conf}",
        f"--authorization-kubeconfig={conf}",
        "--bind-address=127.0.0.1",
        "--pod-max-in-unschedulable-pods-duration=10s",
    ]
    c["volumeMounts"].append({"name": "config", "mountPath": str(cfg_path), "readOnly": True})
    pod["spec"]["volumes"].append({"name": "config", "hostPath": {"path": str(cfg_path), "type": "File"}})
    path.write_text(yaml.safe_dump(pod, sort_keys=False))
    return path


def _clusterrole_for_user(name: str, user: str) -> list[dict]:
    rules = [
        {
            "apiGroups": ["scheduling.x-k8s.io"],
            "resources": ["podgroups", "elasticquotas"],
            "verbs": ["get", "list", "watch"],
        },
        {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups/status"], "verbs": ["get", "update", "patch"]},
    ]
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
    ]


def scheduler_lease_holder(lab: Lab) -> str | None:
    from kubernetes import client as k

    try:
        lease = k.CoordinationV1Api(kube.api(lab)).read_namespaced_lease("kube-scheduler", "kube-system")
        return lease.spec.holder_identity or None
    except k.ApiException:
        return None


def restore_default_scheduler(lab: Lab) -> None:
    lab.write_scheduler_manifest()
    (lab.etc / "scheduler-config.yaml").unlink(missing_ok=True)


# ---- Volcano --------------------------------------------------------------------------------------
VC_CONF = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def vc_scheduler_rbac() -> list[dict]:
    ro = ["get", "list", "watch"]
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "lab-vc-scheduler"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ro + ["update", "patch", "delete"]},
            {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["update", "patch"]},
            {"apiGroups": [""], "resources": ["pods/binding", "bindings"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "list", "watch", "update", "patch"]},
            {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "update", "patch"]},
            {
                "apiGroups": [""],
                "resources": [
                    "nodes",
                    "namespaces",
                    "resourcequotas",
                    "persistentvolumes",
                    "persistentvolumeclaims",
                    "configmaps",
                    "services",
                    "replicationcontrollers",
                ],
                "verbs": ro,
            },
            {"apiGroups": ["apps"], "resources": ["replicasets", "statefulsets"], "verbs": ro},
            {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ro},
            {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ro},
            {
                "apiGroups": ["storage.k8s.io"],
                "resources": ["storageclasses", "csinodes", "csidrivers", "csistoragecapacities", "volumeattachments"],
                "verbs": ro,
            },
            {"apiGroups": ["resource.k8s.io"], "resources": ["*"], "verbs": ro},
            {
                "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"],
                "verbs": ["create", "get", "list", "update", "watch"],
            },
            {
                "apiGroups": ["scheduling.volcano.sh"],
                "resources": ["podgroups", "queues"],
                "verbs": ro + ["create", "update", "patch", "delete"],
            },
            {
                "apiGroups": ["scheduling.volcano.sh"],
                "resources": ["podgroups/status", "queues/status"],
                "verbs": ["update", "patch"],
            },
            {"apiGroups": ["batch.volcano.sh"], "resources": ["jobs"], "verbs": ro},
            {"apiGroups": ["nodeinfo.volcano.sh"], "resources": ["numatopologies"], "verbs": ro},
        ],
    }
    return [role, _crb("lab-vc-scheduler", "lab-vc-scheduler", VC_NS, "vc-scheduler")]


def vc_scheduler() -> list[dict]:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "vc-scheduler-config", "namespace": VC_NS},
        "data": {"volcano-scheduler.conf": VC_CONF},
    }
    dep = _deployment(
        VC_NS,
        "vc-scheduler",
        "vc-scheduler",
        f"volcanosh/vc-scheduler:{V.VOLCANO}",
        [
            "--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf",
            "--leader-elect=false",
            "--logtostderr",
            "--enable-healthz=false",
            "--enable-metrics=false",
            "-v=3",
        ],
        config="vc-scheduler-config",
        mount="/volcano.scheduler",
    )
    return [_ns(VC_NS), _sa(VC_NS, "vc-scheduler"), cm, dep]


def install_volcano_crds(lab: Lab) -> None:
    docs = crds("volcano", "crds")
    kube.apply(lab, docs, server_side=True)
    wait_crds_established(lab, [d["metadata"]["name"] for d in docs])


def install_volcano(lab: Lab, rbac: bool = True) -> None:
    install_volcano_crds(lab)
    kube.apply(lab, vc_scheduler() + (vc_scheduler_rbac() if rbac else []))
    wait_deployment(lab, VC_NS, "vc-scheduler")


# ---- Koordinator koord-scheduler as a second scheduler ---------------------------------------------
def koord_rbac() -> list[dict]:
    """koord-scheduler's RBAC for a gang-only profile: system:kube-scheduler, system:volume-scheduler,
    extension-apiserver-authentication-reader, and a role of our own in place of upstream's
    config/rbac/scheduler_role.yaml (all verbs on all resources of five API groups, and CRDs):
    the informers' reads of the three CRDs it needs, and the patch its PodGroup controller makes to
    the status of a PodGroup object (the old group's, when a user creates one). No wildcard."""
    ro = ["get", "list", "watch"]
    role = _role(
        "lab-koord-scheduler",
        [
            {"apiGroups": ["scheduling.sigs.k8s.io"], "resources": ["podgroups"], "verbs": ro + ["patch"]},
            {"apiGroups": ["scheduling.koordinator.sh"], "resources": ["reservations", "devices"], "verbs": ro},
        ],
    )
    return [
        role,
        _crb("lab-koord-scheduler", "lab-koord-scheduler", KOORD_NS, KOORD_NAME),
        _crb("lab-koord-scheduler-kube-scheduler", "system:kube-scheduler", KOORD_NS, KOORD_NAME),
        _crb("lab-koord-scheduler-volume-scheduler", "system:volume-scheduler", KOORD_NS, KOORD_NAME),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "lab-koord-scheduler-auth-reader", "namespace": "kube-system"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "extension-apiserver-authentication-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": KOORD_NAME, "namespace": KOORD_NS}],
        },
    ]


def koord_scheduler() -> list[dict]:
    """Namespace, ServiceAccount, configuration and Deployment of koord-scheduler as a second
    scheduler: one profile ``koord-scheduler`` with Coscheduling on every extension point it has
    (PreEnqueue, PreFilter, PostFilter, Reserve, Permit, PostBind), leader election off."""
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": KOORD_NAME, "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]}}}],
    }
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "koord-scheduler-config", "namespace": KOORD_NS},
        "data": {"koord-scheduler-config": yaml.safe_dump(cfg, sort_keys=False)},
    }
    dep = _deployment(
        KOORD_NS,
        KOORD_NAME,
        KOORD_NAME,
        f"registry.cn-beijing.aliyuncs.com/koordinator-sh/koord-scheduler:{V.KOORDINATOR}",
        [
            "--config=/config/koord-scheduler.config",
            # its deprecated insecure port (10251) listens on every address without this, --config or
            # not. No port flag beyond it: a lab pod has a network namespace of its own, so the secure
            # port (10259) clashes with no other scheduler, as in a cluster
            "--address=127.0.0.1",
            "--v=2",
        ],
        config="koord-scheduler-config",
        mount="/config",
    )
    dep["spec"]["template"]["spec"]["volumes"][0]["configMap"]["items"] = [
        {"key": "koord-scheduler-config", "path": "koord-scheduler.config"}
    ]
    return [_ns(KOORD_NS), _sa(KOORD_NS, KOORD_NAME), cm, dep]


def install_koord_scheduler(lab: Lab) -> None:
    """The three CRDs koord-scheduler needs (from the built module), its RBAC, configuration and
    Deployment; returns once its pod runs."""
    docs = [d for d in crds("koordinator", "crds") if d["metadata"]["name"] in KOORD_CRDS]
    kube.apply(lab, docs, server_side=True)
    wait_crds_established(lab, list(KOORD_CRDS))
    kube.apply(lab, koord_scheduler() + koord_rbac())
    wait_deployment(lab, KOORD_NS, KOORD_NAME)


def koord_gang(ns: str, name: str, size: int, min_available: int, gpus: int = 1) -> list[dict]:
    """``size`` pods of ``gpus`` GPUs each for koord-scheduler, in a gang by the seed-003 labels."""
    labels = {"app": name, KOORD_GANG_NAME: name, KOORD_GANG_MIN: str(min_available)}
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{name}-{i}", "namespace": ns, "labels": labels},
            "spec": {
                "schedulerName": KOORD_NAME,
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {"name": "worker", "image": "busybox:1.36", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
                ],
            },
        }
        for i in range(size)
    ]


def wait_deployment(lab: Lab, ns: str, name: str, timeout: float = 60) -> None:
    core = k.CoreV1Api(kube.api(lab))

    def ready() -> bool:
        pods = core.list_namespaced_pod(ns, label_selector=f"app={name}").items
        return any(
            p.status.phase == "Running"
            and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
            for p in pods
        )

    kube.wait_for(ready, timeout, f"{ns}/{name} to run")


# ---- gangs ----------------------------------------------------------------------------------------
def gang(
    ns: str,
    name: str,
    size: int,
    scheduler: str,
    gpus: int = 1,
    min_member: int | None = None,
    scheduler_name: str | None = None,
) -> list[dict]:
    """A PodGroup (for the given scheduler) and ``size`` pods of ``gpus`` GPUs each that join it.

    ``scheduler_name`` overrides the pods' schedulerName (scheduler-plugins as the default scheduler).
    """
    min_member = size if min_member is None else min_member
    docs: list[dict] = []
    labels = {"app": name}
    annotations: dict = {}
    sched_name = "default-scheduler"
    if scheduler == "scheduler-plugins":
        sched_name = scheduler_name or SP_NAME
        docs.append(
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"minMember": min_member, "scheduleTimeoutSeconds": 600},
            }
        )
        labels["scheduling.x-k8s.io/pod-group"] = name
    elif scheduler == "volcano":
        sched_name = "volcano"
        docs.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"minMember": min_member, "queue": "default"},
            }
        )
        annotations["scheduling.k8s.io/group-name"] = name
    for i in range(size):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{name}-{i}", "namespace": ns, "labels": labels, "annotations": annotations},
                "spec": {
                    "schedulerName": sched_name,
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "worker",
                            "image": "busybox:1.36",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                        }
                    ],
                },
            }
        )
    return docs


def observe_gang(
    lab: Lab,
    ns: str,
    name: str,
    size: int,
    scheduler: str,
    hold: float = 20.0,
    add_gpus: int = 0,
    scheduler_name: str | None = None,
) -> dict:
    """Create a gang, watch it ``hold`` seconds, optionally add a GPU node and watch it start.

    Returns what was seen: bound pods during the hold, Running/Pending at the end of the hold, and
    (after adding GPUs) how long until all ran.
    """
    from . import nodes

    out: dict = {"scheduler": scheduler, "size": size}
    added = None
    with kube.PodWatcher(lab, ns, f"app={name}") as w:
        kube.apply(lab, gang(ns, name, size, scheduler, scheduler_name=scheduler_name))
        t0 = time.monotonic()
        time.sleep(hold)
        s = w.snapshot()
        out["bound_during_hold"] = sorted(s.ever_bound())
        out["running_after_hold"] = sorted(s.running())
        out["pending_after_hold"] = sorted(s.pending())
        out["hold_seconds"] = round(time.monotonic() - t0, 1)
        if add_gpus:
            api = nodes.client(lab.kubeconfig)
            added = nodes.add(api, gpus=add_gpus)
            nodes.wait_ready(api, names=[added])
            t1 = time.monotonic()
            try:
                kube.wait_for(lambda: len(w.snapshot().running()) == size, 60, f"all {size} pods Running")
                out["all_running_after_s"] = round(time.monotonic() - t1, 1)
            except TimeoutError:
                out["all_running_after_s"] = None
            s = w.snapshot()
            out["running_final"] = sorted(s.running())
            out["pending_final"] = sorted(s.pending())
    out["added_node"] = added
    return out


# ---- Kubeflow operators (lab-only minimal manifests; the collection installs the upstream ones) -----
TO_NS = "kubeflow"
MPI_NS = "mpi-operator"


def _role(name: str, rules: list[dict]) -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": rules,
    }


_ALL = ["get", "list", "watch", "create", "update", "patch", "delete"]


def training_operator(
    gang_flag: str | None = "--gang-scheduler-name=volcano",
    podgroup_rights: bool = True,
    schemes: tuple[str, ...] = ("pytorchjob",),
) -> list[dict]:
    rules = [
        {
            "apiGroups": ["kubeflow.org"],
            "resources": [f"{s}s{sub}" for s in schemes for sub in ("", "/status", "/finalizers")],
            "verbs": _ALL,
        },
        {"apiGroups": [""], "resources": ["pods", "services", "events", "configmaps"], "verbs": _ALL},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch", "update"]},
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["validatingwebhookconfigurations"],
            "verbs": ["get", "list", "watch", "update"],
        },
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": _ALL},
    ]
    if podgroup_rights:
        rules += [
            {"apiGroups": ["scheduling.volcano.sh"], "resources": ["podgroups"], "verbs": _ALL},
            {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups"], "verbs": _ALL},
        ]
    command = ["/manager", *(f"--enable-scheme={s}" for s in schemes)] + ([gang_flag] if gang_flag else [])
    dep = _deployment(TO_NS, "training-operator", "training-operator", "kubeflow/training-operator:v1-855e096", [])
    c = dep["spec"]["template"]["spec"]["containers"][0]
    c.pop("args")
    c["command"] = command
    c["env"] = [{"name": "MY_POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}]
    c["volumeMounts"] = [{"name": "cert", "mountPath": "/tmp/k8s-webhook-server/serving-certs", "readOnly": True}]
    dep["spec"]["template"]["spec"]["volumes"] = [
        {"name": "cert", "secret": {"secretName": "training-operator-webhook-cert", "defaultMode": 420}}
    ]
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": "training-operator-webhook-cert", "namespace": TO_NS},
    }
    # the operator's cert rotator waits for this object before it starts its controllers. The lab's own
    # minimal manifest lists no webhooks, so a test may remove the operator without leaving a
    # failurePolicy: Fail webhook behind; the collection's role installs upstream's webhooks
    vwc = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "validator.training-operator.kubeflow.org"},
        "webhooks": [],
    }
    return [
        _ns(TO_NS),
        _sa(TO_NS, "training-operator"),
        secret,
        vwc,
        _role("lab-training-operator", rules),
        _crb("lab-training-operator", "lab-training-operator", TO_NS, "training-operator"),
        dep,
    ]


def install_training_operator(
    lab: Lab,
    gang_flag: str | None = "--gang-scheduler-name=volcano",
    podgroup_rights: bool = True,
    schemes: tuple[str, ...] = ("pytorchjob",),
) -> None:
    names = {f"{s}s.kubeflow.org" for s in schemes}
    docs = [d for d in crds("training-operator", "crds") if d["metadata"]["name"] in names]
    kube.apply(lab, docs, server_side=True)
    wait_crds_established(lab, [d["metadata"]["name"] for d in docs])
    kube.apply(lab, training_operator(gang_flag, podgroup_rights, schemes))
    wait_deployment(lab, TO_NS, "training-operator")


def mpi_operator(gang_flag: str | None = "--gang-scheduling=volcano") -> list[dict]:
    rules = [
        {
            "apiGroups": ["kubeflow.org"],
            "resources": ["mpijobs", "mpijobs/status", "mpijobs/finalizers"],
            "verbs": _ALL,
        },
        {"apiGroups": [""], "resources": ["pods", "services", "events", "configmaps", "secrets"], "verbs": _ALL},
        {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]},
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": _ALL},
        {"apiGroups": ["scheduling.volcano.sh"], "resources": ["podgroups", "queues"], "verbs": _ALL},
        {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups"], "verbs": _ALL},
        {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": _ALL},
    ]
    args = ["-alsologtostderr", "--lock-namespace=mpi-operator"] + ([gang_flag] if gang_flag else [])
    dep = _deployment(MPI_NS, "mpi-operator", "mpi-operator", "mpioperator/mpi-operator:0.6.0", args)
    return [
        _ns(MPI_NS),
        _sa(MPI_NS, "mpi-operator"),
        _role("lab-mpi-operator", rules),
        _crb("lab-mpi-operator", "lab-mpi-operator", MPI_NS, "mpi-operator"),
        dep,
    ]


def install_mpi_operator(lab: Lab, gang_flag: str | None = "--gang-scheduling=volcano") -> None:
    docs = crds("mpi-operator", "manifests")
    kube.apply(lab, docs, server_side=True)
    wait_crds_established(lab, [d["metadata"]["name"] for d in docs])
    kube.apply(lab, mpi_operator(gang_flag))
    wait_deployment(lab, MPI_NS, "mpi-operator")


def pytorchjob(ns: str, name: str, workers: int, gpus: int = 1) -> dict:
    def replica(n: int) -> dict:
        return {
            "replicas": n,
            "restartPolicy": "OnFailure",
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "pytorch",
                            "image": "pytorch/pytorch:2.3.0",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                        }
                    ]
                }
            },
        }

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(workers)}},
    }


def mpijob(ns: str, name: str, workers: int, gpus: int = 1) -> dict:
    def replica(n: int, res: dict) -> dict:
        return {
            "replicas": n,
            "template": {
                "spec": {
                    "containers": [{"name": "mpi", "image": "mpioperator/mpi-pi:openmpi", "resources": {"limits": res}}]
                }
            },
        }

    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "Running"},
            "mpiReplicaSpecs": {
                "Launcher": replica(1, {"cpu": "1"}),
                "Worker": replica(workers, {"nvidia.com/gpu": str(gpus)}),
            },
        },
    }


def tfjob(ns: str, name: str, workers: int, worker_gpus: int = 1, ps_gpus: int = 0) -> dict:
    """A TFJob of 1 PS and ``workers`` Workers, as in the seed guides: the workers take GPUs, the PS
    (by default) only CPU."""

    def replica(n: int, res: dict) -> dict:
        return {
            "replicas": n,
            "restartPolicy": "OnFailure",
            "template": {
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {"name": "tensorflow", "image": "tensorflow/tensorflow:2.15.0", "resources": {"limits": res}}
                    ],
                }
            },
        }

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "tfReplicaSpecs": {
                "PS": replica(1, {"nvidia.com/gpu": str(ps_gpus)} if ps_gpus else {"cpu": "1"}),
                "Worker": replica(workers, {"nvidia.com/gpu": str(worker_gpus)}),
            }
        },
    }


# ---- Kubeflow Trainer v2 and JobSet (lab-only manifests; webhooks as upstream registers them) -----
JOBSET_NS = "jobset-system"
# upstream's kustomize names (namePrefix ``jobset-``); the Service and Secret names are also the
# defaults of JobSet's internalCertManagement, and its cert rotator patches the two webhook
# configurations by these names
JOBSET_NAME = "jobset-controller-manager"
JOBSET_SERVICE = "jobset-webhook-service"
JOBSET_SECRET = "jobset-webhook-server-cert"
JOBSET_WEBHOOKS = ("jobset-mutating-webhook-configuration", "jobset-validating-webhook-configuration")
TRAINER_NS = "kubeflow-system"
TRAINER_NAME = "kubeflow-trainer-controller-manager"
TRAINER_SECRET = "kubeflow-trainer-webhook-cert"
# the names trainer-controller-manager's cert rotator patches (upstream manifests/base/webhook patches)
TRAINER_WEBHOOKS = ("defaulter.trainer.kubeflow.org", "validator.trainer.kubeflow.org")
TRAINER_CRDS = (
    "trainjobs.trainer.kubeflow.org",
    "trainingruntimes.trainer.kubeflow.org",
    "clustertrainingruntimes.trainer.kubeflow.org",
)
# where controller-runtime's webhook server (and both cert rotators) keep the serving certificate
WEBHOOK_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"
WEBHOOK_PORT = 9443
HEALTH_PORT = 8081


def _yaml_docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _json_patch(doc: dict, ops: list[dict]) -> None:
    """Apply the ``replace`` operations of a JSON patch (all that upstream's webhook patches use)."""
    for op in ops:
        if op["op"] != "replace":
            raise ValueError(f"JSON patch op {op['op']} not handled")
        *parents, last = op["path"].lstrip("/").split("/")
        target = doc
        for p in parents:
            target = target[int(p)] if isinstance(target, list) else target[p]
        if isinstance(target, list):
            target[int(last)] = op["value"]
        else:
            target[last] = op["value"]


def _webhook_service(ns: str, name: str, app: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "selector": {"app": app},
            "ports": [{"name": "webhook-server", "port": 443, "protocol": "TCP", "targetPort": WEBHOOK_PORT}],
        },
    }


def wait_service_endpoints(lab: Lab, ns: str, name: str, timeout: float = 30) -> None:
    """Until the Service's Endpoints list a ready address: the apiserver calls a webhook there (the lab
    routes to endpoints), so a webhook is callable only once the endpoints controller has caught up
    with the pod's readiness."""
    core = k.CoreV1Api(kube.api(lab))

    def ready() -> bool:
        try:
            ep = core.read_namespaced_endpoints(name, ns)
        except k.ApiException:
            return False
        return any(s.addresses for s in ep.subsets or [])

    kube.wait_for(ready, timeout, f"endpoints of {ns}/{name}")


def _empty_secret(ns: str, name: str) -> dict:
    """The Secret a cert rotator fills (upstream ships it empty, as a secretGenerator or secret.yaml)."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {"name": name, "namespace": ns}}


def _controller_manager(ns: str, name: str, image: str, config: str, cert_secret: str) -> dict:
    """A controller-runtime manager as upstream deploys it: ``--config`` from a ConfigMap, the webhook
    serving certificate Secret at controller-runtime's default directory, ready on ``/readyz`` (both
    managers report ready only once their certificates are in place and the webhook server serves)."""
    dep = _deployment(
        ns, name, name, image, ["--config=/etc/manager/controller_manager_config.yaml", "--zap-log-level=2"]
    )
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    c["name"] = "manager"
    c["ports"] = [
        {"name": "health", "containerPort": HEALTH_PORT, "protocol": "TCP"},
        {"name": "webhook-server", "containerPort": WEBHOOK_PORT, "protocol": "TCP"},
    ]
    # upstream mounts the config file by subPath at /controller_manager_config.yaml; the lab mounts
    # the ConfigMap's directory (same file, no file created at the host's root)
    c["volumeMounts"] = [
        {"name": "manager-config", "mountPath": "/etc/manager", "readOnly": True},
        {"name": "cert", "mountPath": WEBHOOK_CERT_DIR, "readOnly": True},
    ]
    c["readinessProbe"] = {"httpGet": {"path": "/readyz", "port": HEALTH_PORT}, "periodSeconds": 1}
    pod["volumes"] = [
        {"name": "manager-config", "configMap": {"name": config}},
        {"name": "cert", "secret": {"secretName": cert_secret, "defaultMode": 420}},
    ]
    pod["terminationGracePeriodSeconds"] = 10
    return dep


def _config_map(ns: str, name: str, cfg: dict) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": {"controller_manager_config.yaml": yaml.safe_dump(cfg, sort_keys=False)},
    }


def _secret_rotator_role(ns: str, name: str, secret: str) -> list[dict]:
    """The cert rotator's rights on its own Secret: read (its informer lists and watches secrets of
    the namespace) and update of that one Secret."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": f"lab-{name}-cert", "namespace": ns},
        "rules": [
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [secret], "verbs": ["update"]},
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": f"lab-{name}-cert", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"lab-{name}-cert"},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
    }
    return [role, binding]


def _webhook_rules(names: tuple[str, ...]) -> list[dict]:
    """A cert rotator's rights on the webhook configurations: its informers read them all, it writes
    the caBundle of its own two only."""
    group = ["admissionregistration.k8s.io"]
    res = ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"]
    return [
        {"apiGroups": group, "resources": res, "verbs": ["get", "list", "watch"]},
        {"apiGroups": group, "resources": res, "resourceNames": list(names), "verbs": ["update"]},
    ]


def jobset_webhooks() -> list[dict]:
    """JobSet's webhook configurations from the built module (config/components/webhook), as its
    kustomization renders them: the pod webhooks' patches (only pods of a JobSet), the ``jobset-``
    name prefix, the Service in ``jobset-system``. The caBundle is left to JobSet's cert rotator."""
    root = build.artifact_path("jobset", "webhook")
    patches = {
        "MutatingWebhookConfiguration": "patches/mutating-patch.yaml",
        "ValidatingWebhookConfiguration": "patches/validating-patch.yaml",
    }
    docs = _yaml_docs(root / "manifests.yaml")
    for d in docs:
        _json_patch(d, yaml.safe_load((root / patches[d["kind"]]).read_text()))
        d["metadata"]["name"] = "jobset-" + d["metadata"]["name"]
        for w in d["webhooks"]:
            svc = w["clientConfig"]["service"]
            svc["name"], svc["namespace"] = "jobset-" + svc["name"], JOBSET_NS
    assert sorted(d["metadata"]["name"] for d in docs) == sorted(JOBSET_WEBHOOKS), docs
    return docs


def jobset_rbac() -> list[dict]:
    """JobSet's rights, ours: the calls of its v0.11.1 controllers and webhooks (its kubebuilder
    markers narrowed to the verbs the code calls; leader election off, so no leases or configmaps).
    Besides upstream's role: pods/status update, which the pod controller makes (a DisruptionTarget
    condition) before deleting a pod that violates exclusive placement. No wildcard."""
    ro = ["get", "list", "watch"]
    rules = [
        # JobSets: status updates; delete by the TTL-after-finished controller
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ro + ["delete"]},
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["get", "update"]},
        # owner references with blockOwnerDeletion on the Jobs and Services it creates
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/finalizers"], "verbs": ["update"]},
        # child Jobs: created, suspended/resumed (update), deleted on restart
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ro + ["create", "update", "delete"]},
        {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["update"]},
        # the headless Service of a JobSet's network (pod host names)
        {"apiGroups": [""], "resources": ["services"], "verbs": ro + ["create"]},
        # exclusive placement: pods of a violating Job marked and deleted; the leader pod's node read
        {"apiGroups": [""], "resources": ["pods"], "verbs": ro + ["delete"]},
        {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["update"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ro},
        # volumeClaimPolicies: PVCs created from a JobSet's templates (the webhook reads existing ones)
        {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ro + ["create"]},
        # controller-runtime v0.22's recorder writes core/v1 events
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch", "update"]},
        *_webhook_rules(JOBSET_WEBHOOKS),
    ]
    return [
        _role("lab-jobset", rules),
        _crb("lab-jobset", "lab-jobset", JOBSET_NS, JOBSET_NAME),
        *_secret_rotator_role(JOBSET_NS, JOBSET_NAME, JOBSET_SECRET),
    ]


def jobset_controller() -> list[dict]:
    """JobSet in ``jobset-system`` (namespace not included): ServiceAccount, Configuration (leader
    election and metrics off, its internal cert management on, as upstream), the empty Secret its
    rotator fills, the webhook Service and configurations, the Deployment."""
    cfg = {
        "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        # "0": no metrics server (its secure serving would want a certificate directory of its own)
        "metrics": {"bindAddress": "0"},
        "health": {"healthProbeBindAddress": f":{HEALTH_PORT}"},
        "webhook": {"port": WEBHOOK_PORT},
        "internalCertManagement": {
            "enable": True,
            "webhookServiceName": JOBSET_SERVICE,
            "webhookSecretName": JOBSET_SECRET,
        },
    }
    return [
        _sa(JOBSET_NS, JOBSET_NAME),
        _config_map(JOBSET_NS, "jobset-manager-config", cfg),
        _empty_secret(JOBSET_NS, JOBSET_SECRET),
        _webhook_service(JOBSET_NS, JOBSET_SERVICE, JOBSET_NAME),
        *jobset_webhooks(),
        _controller_manager(
            JOBSET_NS, JOBSET_NAME, f"registry.k8s.io/jobset/jobset:{V.JOBSET}", "jobset-manager-config", JOBSET_SECRET
        ),
    ]


def install_jobset(lab: Lab) -> None:
    """JobSet's CRD (from the built module), its RBAC, Configuration, webhooks and Deployment; returns
    once its pod is ready (certificates made, caBundles injected, webhook server serving) and its
    webhook Service has the pod's address."""
    docs = crds("jobset", "crds")
    kube.apply(lab, docs, server_side=True)
    wait_crds_established(lab, [d["metadata"]["name"] for d in docs])
    # namespace and RBAC before the Deployment: no call of its pod is refused while its rights are made
    kube.apply(lab, [_ns(JOBSET_NS)] + jobset_rbac() + jobset_controller())
    wait_deployment(lab, JOBSET_NS, JOBSET_NAME, timeout=90)
    wait_service_endpoints(lab, JOBSET_NS, JOBSET_SERVICE)


def trainer_webhooks() -> list[dict]:
    """Trainer's webhook configurations from the built module (manifests/base/webhook) with its
    kustomize patches (names, Service) and the Service's namespace; the cert rotator adds the CA."""
    root = build.artifact_path("trainer", "webhook")
    patches = {
        "MutatingWebhookConfiguration": "patch_mutating.yaml",
        "ValidatingWebhookConfiguration": "patch_validating.yaml",
    }
    docs = _yaml_docs(root / "manifests.yaml")
    for d in docs:
        _json_patch(d, yaml.safe_load((root / patches[d["kind"]]).read_text()))
        for w in d["webhooks"]:
            w["clientConfig"]["service"]["namespace"] = TRAINER_NS
    assert sorted(d["metadata"]["name"] for d in docs) == sorted(TRAINER_WEBHOOKS), docs
    assert {w["clientConfig"]["service"]["name"] for d in docs for w in d["webhooks"]} == {TRAINER_NAME}, docs
    return docs


def trainer_rbac() -> list[dict]:
    """trainer-controller-manager's rights, ours (upstream's manifests/base/rbac narrowed: leader
    election off, no delete). ConfigMaps and
    Secrets cluster-wide: its MPI plugin watches them and creates them in a TrainJob's namespace (which
    also covers its cert rotator's Secret). No wildcard."""
    ro = ["get", "list", "watch"]
    tr = "trainer.kubeflow.org"
    rules = [
        {
            "apiGroups": [tr],
            "resources": ["trainjobs", "trainingruntimes", "clustertrainingruntimes"],
            "verbs": ro + ["update", "patch"],
        },
        {
            "apiGroups": [tr],
            "resources": [
                "trainjobs/status",
                "trainjobs/finalizers",
                "trainingruntimes/finalizers",
                "clustertrainingruntimes/finalizers",
            ],
            "verbs": ["get", "update", "patch"],
        },
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ro + ["create", "update", "patch"]},
        # the PodGroups of both schedulers, as upstream's role: Trainer watches every kind whose CRD exists at its start
        {
            "apiGroups": ["scheduling.x-k8s.io", "scheduling.volcano.sh"],
            "resources": ["podgroups"],
            "verbs": ro + ["create", "update", "patch"],
        },
        {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ro + ["create", "update", "patch"]},
        # pod overhead and defaults that count towards a PodGroup's minResources
        {"apiGroups": [""], "resources": ["limitranges"], "verbs": ro},
        {"apiGroups": ["node.k8s.io"], "resources": ["runtimeclasses"], "verbs": ro},
        # controller-runtime v0.23's recorder (GetEventRecorder) writes events.k8s.io/v1 events
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch", "update"]},
        *_webhook_rules(TRAINER_WEBHOOKS),
    ]
    return [
        _role("lab-trainer", rules),
        _crb("lab-trainer", "lab-trainer", TRAINER_NS, TRAINER_NAME),
    ]


def trainer_controller() -> list[dict]:
    """Trainer in ``kubeflow-system`` (namespace not included), as jobset_controller for JobSet."""
    cfg = {
        "apiVersion": "config.trainer.kubeflow.org/v1alpha1",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": f":{HEALTH_PORT}", "readinessEndpointName": "readyz"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"port": WEBHOOK_PORT},
        "leaderElection": {"leaderElect": False},
        "certManagement": {"enable": True, "webhookServiceName": TRAINER_NAME, "webhookSecretName": TRAINER_SECRET},
    }
    return [
        _sa(TRAINER_NS, TRAINER_NAME),
        _config_map(TRAINER_NS, "kubeflow-trainer-config", cfg),
        _empty_secret(TRAINER_NS, TRAINER_SECRET),
        _webhook_service(TRAINER_NS, TRAINER_NAME, TRAINER_NAME),
        *trainer_webhooks(),
        _controller_manager(
            TRAINER_NS,
            TRAINER_NAME,
            f"ghcr.io/kubeflow/trainer/trainer-controller-manager:{V.TRAINER}",
            "kubeflow-trainer-config",
            TRAINER_SECRET,
        ),
    ]


def install_trainer(lab: Lab) -> None:
    """Trainer's CRDs (from the built module), RBAC, Configuration, webhooks and Deployment; returns once
    its pod is ready. Install JobSet first, and any scheduler whose PodGroup CRD the runtimes name:
    Trainer watches PodGroups only if their CRD exists when it starts."""
    docs = crds("trainer", "crds")
    kube.apply(lab, docs, server_side=True)
    wait_crds_established(lab, list(TRAINER_CRDS))
    kube.apply(lab, [_ns(TRAINER_NS)] + trainer_rbac() + trainer_controller())
    wait_deployment(lab, TRAINER_NS, TRAINER_NAME, timeout=90)
    wait_service_endpoints(lab, TRAINER_NS, TRAINER_NAME)


def training_runtime(name: str, scheduler_name: str = SP_NAME, gpus: int = 1, schedule_timeout: int = 600) -> dict:
    """A ClusterTrainingRuntime (torch, one replicated job ``node``) gang-scheduled by scheduler-plugins'
    Coscheduling: ``podGroupPolicy.coscheduling`` and the scheduler's name in the pod template (Trainer
    never sets it), ``gpus`` GPUs requested per node."""
    res = {"nvidia.com/gpu": str(gpus)}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "podGroupPolicy": {"coscheduling": {"scheduleTimeoutSeconds": schedule_timeout}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "schedulerName": scheduler_name,
                                            "terminationGracePeriodSeconds": 0,
                                            "containers": [
                                                {
                                                    "name": "node",
                                                    "image": "pytorch/pytorch:2.10.0-cuda12.8-cudnn9-runtime",
                                                    "resources": {"requests": res, "limits": res},
                                                }
                                            ],
                                        }
                                    }
                                },
                            },
                        }
                    ]
                }
            },
        },
    }


def stock_training_runtime(name: str) -> dict:
    """A runtime shaped like those Trainer ships: no podGroupPolicy, no schedulerName, GPUs in limits only,
    none of JobSet's defaults (``training_runtime`` without its gang)."""
    rt = training_runtime(name)
    rt["spec"].pop("podGroupPolicy")
    pod = rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod.pop("schedulerName")
    pod["containers"][0]["resources"].pop("requests")
    return rt


def trainjob(ns: str, name: str, runtime: str, num_nodes: int) -> dict:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime", "name": runtime},
            "trainer": {"numNodes": num_nodes},
        },
    }
