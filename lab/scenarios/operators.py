"""The Kubeflow operators on the lab (minimal manifests; the collection installs the upstream ones), and jobs."""

from __future__ import annotations

from .. import kube
from .. import versions as V
from ..cluster import Lab
from ._common import _ALL, _crb, _deployment, _ns, _role, _sa, crds, wait_crds_established, wait_deployment

# ---- Kubeflow operators (lab-only minimal manifests; the collection installs the upstream ones) -----
TO_NS = "kubeflow"
MPI_NS = "mpi-operator"


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
    image = f"mpioperator/mpi-operator:{V.MPI_OPERATOR.lstrip('v')}"
    dep = _deployment(MPI_NS, "mpi-operator", "mpi-operator", image, args)
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
