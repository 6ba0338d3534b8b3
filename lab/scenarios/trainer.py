"""Kubeflow Trainer v2 and JobSet on the lab (lab-only manifests; webhooks as upstream registers them)."""

from __future__ import annotations

from pathlib import Path

import jsonpatch
import yaml
from kubernetes import client as k

from .. import build, kube, yamlio
from .. import versions as V
from ..cluster import Lab
from ._common import SP_NAME, _crb, _deployment, _ns, _role, _sa, crds, wait_crds_established, wait_deployment

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
    return [d for d in yamlio.load_all(path.read_text()) if d]


def _json_patch(doc: dict, ops: list[dict]) -> None:
    """Apply upstream's kustomize JSON patch (RFC 6902) to ``doc`` in place."""
    jsonpatch.apply_patch(doc, ops, in_place=True)


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
    """JobSet's rights, ours: the calls of its v0.11 and v0.12 controllers and webhooks (its kubebuilder
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
        # controller-runtime v0.22's recorder writes core/v1 events (v0.11), v0.12's events.k8s.io/v1 events
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch", "update"]},
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch", "update"]},
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
