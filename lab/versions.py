"""Pinned versions of every upstream piece the lab builds or reads.

This is the one place versions are set. The build cache is keyed by these values, so a bump here
rebuilds exactly the components it touches.
"""

import os

# The Kubernetes releases the lab runs, by minor: the newest (what users run today; the default) and the oldest
# minor the collection still proves (managed clouds' extended support). GANGSCHED_LAB_KUBERNETES picks one, by
# minor (1.33) or release (v1.33.5); each has its own build of the control plane in the cache.
KUBERNETES_RELEASES = {"1.37": "v1.37.2", "1.33": "v1.33.5"}
DEFAULT_KUBERNETES_MINOR = "1.37"


def kubernetes_release(wanted: str | None) -> str:
    """The release the lab runs for ``wanted`` (a minor, a release, or empty for the default).

    >>> kubernetes_release("1.33"), kubernetes_release("v1.37.2"), kubernetes_release(None)
    ('v1.33.5', 'v1.37.2', 'v1.37.2')
    """
    if not wanted:
        return KUBERNETES_RELEASES[DEFAULT_KUBERNETES_MINOR]
    v = wanted.strip().lstrip("v")
    minor = ".".join(v.split(".")[:2])
    release = KUBERNETES_RELEASES.get(minor)
    if release is None or (v.count(".") == 2 and release != f"v{v}"):
        known = ", ".join(f"{m} ({r})" for m, r in KUBERNETES_RELEASES.items())
        raise ValueError(f"GANGSCHED_LAB_KUBERNETES={wanted}: the lab runs Kubernetes {known}; set one of those")
    return release


KUBERNETES = kubernetes_release(os.environ.get("GANGSCHED_LAB_KUBERNETES"))
KUBERNETES_MINOR = int(KUBERNETES.split(".")[1])
ETCD = "v3.5.21"
# scheduler-plugins, by the Kubernetes release the lab runs: the newest release the Go module proxy serves, v0.34.7
# (built on 1.34; none built on 1.35 or later is served), on 1.37 (there outside the version-skew policy, accepted as a
# user would: scheduler_plugins_accept_skew); on 1.33, where a scheduler built on 1.34 would be newer than the API
# server, v0.33.5, the release the role picks for 1.33 too. SCHEDULER_PLUGINS_BUILT_ON: the Kubernetes release each
# one's go.mod builds on (the version it reports).
SCHEDULER_PLUGINS_BY_KUBERNETES = {"v1.37.2": "v0.34.7", "v1.33.5": "v0.33.5"}
SCHEDULER_PLUGINS = SCHEDULER_PLUGINS_BY_KUBERNETES[KUBERNETES]
SCHEDULER_PLUGINS_BUILT_ON = {"v0.34.7": "v1.34.7", "v0.33.5": "v1.33.5"}
SCHEDULER_PLUGINS_KUBERNETES = SCHEDULER_PLUGINS_BUILT_ON[SCHEDULER_PLUGINS]
KWOK = "v0.7.0"
# Volcano v1.15.1, the newest release the Go module proxy serves (v1.11 to v1.14 and v1.15.2 are refused there; built
# on Kubernetes 1.35, its compatibility table lists 1.23 to 1.35); v1.10.0 before it (PREVIOUS), which the upgrade
# test installs first.
VOLCANO = "v1.15.1"
# v1.15.1 requires volcano.sh/apis v1.15.1, a module of its own repository's staging directory that the Go module proxy
# refuses (v1.14.0 is the newest it serves). The lab builds v1.15.1 against v1.14.0 plus the one name v1.15.1's code
# uses that v1.14.0 lacks: the key of the queue-allocation scheduling gate (behind the alpha feature gate
# SchedulingGatesQueueAdmission, off by default; its value as v1.15.1's design document gives it). By Volcano release:
# (module, the version built against, {file in that module: its text}), written into a copy of the module in the build
# cache.
VOLCANO_APIS_STAND_IN = {
    "v1.15.1": (
        "volcano.sh/apis",
        "v1.14.0",
        {
            "pkg/apis/scheduling/v1beta1/zz_gangsched_lab.go": (
                "// Written by the gangsched.kubeflow lab's build: a name volcano.sh/apis v1.15.1 has, v1.14.0 not.\n"
                "\npackage v1beta1\n\n"
                "// QueueAllocationGateKey is the scheduling gate Volcano's admission adds to a pod that asks to wait\n"
                "// for its queue's allocation.\n"
                'const QueueAllocationGateKey = GroupName + "/queue-allocation-gate"\n'
            )
        },
    ),
}
TRAINING_OPERATOR = "v1.8.1"
# mpi-operator: v0.8.0, the newest the Go module proxy serves (built on Kubernetes 1.35; the same --gang-scheduling
# flag, MPIJob kubeflow.org/v2beta1 and rights as v0.6.0, which it replaces)
MPI_OPERATOR = "v0.8.0"
HELM = "v3.18.6"
# Helm 4, the current major (Helm 3 gets security fixes only): the newest release the Go module proxy serves
HELM4 = "v4.3.2"
# the device plugin: v0.19.0, the newest the Go module proxy serves (v0.18.1 fails its checksum); v0.17.3 before, the
# release that met a real H100 on the GPU-node harness
NVIDIA_DEVICE_PLUGIN = "v0.19.0"
# The GPU-node harness (python -m lab gpu-node): a real kubelet (of KUBERNETES) on containerd and runc, the
# device plugin above registering with it
CONTAINERD = "v2.1.4"
RUNC = "v1.3.3"
# koord-scheduler, by the Kubernetes release the lab runs: v1.8.0 (built on 1.35; the newest the Go module proxy
# serves) where it runs, on 1.34 and later (it needs resource.k8s.io/v1 and waits forever without it); v1.6.1 on 1.33,
# the release the role picks there too. Not v1.7.0: its Coscheduling preBind writes an invalid label value
# (``.../bind-gang-group-id=<ns>/<name>``), so no gang member is ever bound (v1.7.1 and v1.7.2 are refused by the Go
# module proxy). v1.8.0 applies Coscheduling's pod patch in its DefaultPreBind (its role may patch pods), and of a gang
# with fewer members than min-available it tries its gang group's representative only (Coscheduling's PreEnqueue holds
# the others), so the refusal is written on that one.
KOORDINATOR_BY_KUBERNETES = {"v1.37.2": "v1.8.0", "v1.33.5": "v1.6.1"}
KOORDINATOR = KOORDINATOR_BY_KUBERNETES[KUBERNETES]
# Kubeflow Trainer v2 (TrainJob, (Cluster)TrainingRuntime) and the JobSet controller it creates
# JobSets for (Trainer v2.3.0's go.mod requires this JobSet release; both built on Kubernetes 1.36).
TRAINER = "v2.3.0"
JOBSET = "v0.12.0"
# Kueue (job queueing and quota in front of the gang schedulers): v0.17.0, the newest the Go module proxy serves (built
# on Kubernetes 1.35; its go.mod takes training-operator v1.9.3, Trainer v2.2.0, JobSet v0.11.1, mpi-operator v0.8.0)
KUEUE = "v0.17.0"
# The pins before these, by lab unit: what a role installed before its bump to the pins above, and what the upgrade
# tests install first (`make build` builds them too). None where this Kubernetes release runs that pin already
# (scheduler-plugins and Koordinator on 1.33).
PREVIOUS = {
    "volcano": "v1.10.0",
    "volcano-webhook": "v1.10.0",
    "scheduler-plugins": "v0.33.5",
    "mpi-operator": "v0.6.0",
    "nvidia-device-plugin": "v0.17.3",
    "koordinator": "v1.6.1",
    "trainer": "v2.2.0",
    "jobset": "v0.11.1",
}
# Flux's source-controller and kustomize-controller (python -m lab flux), released together. v1.10.x do not build
# with the lab's Go; source-controller v1.9.6 asks for github.com/fluxcd/pkg/artifact v0.18.3, which the module
# proxy refuses, so v0.18.1 (FLUX_OVERRIDES) stands in.
FLUX_SOURCE_CONTROLLER = "v1.9.6"
FLUX_KUSTOMIZE_CONTROLLER = "v1.9.6"
FLUX_OVERRIDES = (("github.com/fluxcd/pkg/artifact", "v0.18.1"),)

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
    # registry.k8s.io/kueue/kueue (releases)
    "kueue/kueue": "kueue",
}

# Shell scripts some of those images run instead of their binary (a chart's hook Job), each done by
# a lab module that does what the script does, run by the runner in the pod the same way (the pod's
# own ServiceAccount token, env and namespaces): image repository -> script name -> module.
SCRIPTS = {
    # the Volcano chart's admission-init hook Job: a CA and a serving certificate for the admission
    # Service, stored in the Secret the vc-webhook-manager Deployment mounts
    "volcanosh/vc-webhook-manager": {"gen-admission-secret.sh": "lab.certgen"},
}

# Staging modules of a Kubernetes release that the Go module proxy refuses to serve; the newest patch release of
# theirs it does serve is used instead (binaries still report the release). 1.37.2's are all served.
KUBERNETES_OVERRIDES = {
    # scheduler-plugins v0.34.7's
    "v1.34.7": tuple(
        (f"k8s.io/{m}", "v0.34.5")
        for m in (
            "cri-api",
            "cri-client",
            "csi-translation-lib",
            "endpointslice",
            "externaljwt",
            "kube-aggregator",
            "kube-controller-manager",
            "kube-proxy",
            "pod-security-admission",
        )
    ),
    "v1.33.5": (
        ("k8s.io/cri-client", "v0.33.4"),
        ("k8s.io/endpointslice", "v0.33.4"),
        ("k8s.io/externaljwt", "v0.33.4"),
        ("k8s.io/kube-controller-manager", "v0.33.4"),
    ),
}
