"""Pinned versions of every upstream piece the lab builds or reads.

This is the one place versions are set. The build cache is keyed by these values, so a bump here
rebuilds exactly the components it touches.
"""

KUBERNETES = "v1.33.5"
ETCD = "v3.5.21"
SCHEDULER_PLUGINS = "v0.33.5"
KWOK = "v0.7.0"
# v1.10.0 is the newest Volcano release the Go module proxy serves (v1.11+ are refused there).
VOLCANO = "v1.10.0"
TRAINING_OPERATOR = "v1.8.1"
MPI_OPERATOR = "v0.6.0"
HELM = "v3.18.6"
NVIDIA_DEVICE_PLUGIN = "v0.17.3"
# koord-scheduler. Not v1.7.0: its Coscheduling preBind writes an invalid label value
# (``.../bind-gang-group-id=<ns>/<name>``), so no gang member is ever bound (v1.7.1 and v1.7.2 are
# refused by the Go module proxy). Not v1.8.0: it needs resource.k8s.io/v1 (Kubernetes >= 1.34) and
# waits forever on this 1.33 lab.
KOORDINATOR = "v1.6.1"
# Kubeflow Trainer v2 (TrainJob, (Cluster)TrainingRuntime) and the JobSet controller it creates
# JobSets for (Trainer v2.2.0's go.mod requires this JobSet release).
TRAINER = "v2.2.0"
JOBSET = "v0.11.1"

# Upstream image repositories (path without registry host; any tag or digest) whose pods the lab's
# pod-process runner runs as real processes, and the lab binary each one maps to.
IMAGES = {
    "kube-scheduler": "kube-scheduler",
    "scheduler-plugins/kube-scheduler": "sp-scheduler",
    "scheduler-plugins/controller": "sp-controller",
    "volcanosh/vc-scheduler": "vc-scheduler",
    "volcanosh/vc-controller-manager": "vc-controller-manager",
    "volcanosh/vc-webhook-manager": "vc-webhook-manager",
    "kubeflow/training-operator": "training-operator",
    "mpioperator/mpi-operator": "mpi-operator",
    "koordinator-sh/koord-scheduler": "koord-scheduler",
    # ghcr.io/kubeflow/trainer/trainer-controller-manager (chart values, manifests/base/manager)
    "kubeflow/trainer/trainer-controller-manager": "trainer-controller-manager",
    # registry.k8s.io/jobset/jobset (releases); the kustomize manifests name the staging registry's
    # us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset
    "jobset/jobset": "jobset-controller",
    "k8s-staging-images/jobset/jobset": "jobset-controller",
}

# Shell scripts some of those images run instead of their binary (a chart's hook Job), each done by
# a lab module that does what the script does, run by the runner in the pod the same way (the pod's
# own ServiceAccount token, env and namespaces): image repository -> script name -> module.
SCRIPTS = {
    # the Volcano chart's admission-init hook Job: a CA and a serving certificate for the admission
    # Service, stored in the Secret the vc-webhook-manager Deployment mounts
    "volcanosh/vc-webhook-manager": {"gen-admission-secret.sh": "lab.certgen"},
}

# Staging modules of this Kubernetes release that the Go module proxy refuses to serve; the previous
# patch release, which it does serve, is used instead (binaries still report v1.33.5).
KUBERNETES_OVERRIDES = (
    ("k8s.io/cri-client", "v0.33.4"),
    ("k8s.io/endpointslice", "v0.33.4"),
    ("k8s.io/externaljwt", "v0.33.4"),
    ("k8s.io/kube-controller-manager", "v0.33.4"),
)
