#!/usr/bin/python
# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gang_info
short_description: Facts about gang scheduling in a cluster, and what is wrong with it
version_added: 0.1.0
description:
  - Read-only. Reports the Kubernetes version; per node GPU capacity, allocatable, requested and free;
    the gang schedulers found (Volcano, scheduler-plugins as a second or the default scheduler,
    kube-batch, Koordinator) with versions and profile names; PodGroup CRDs; Kubeflow operators and
    the gang flag in effect; GPU device plugins; Kubeflow Trainer v2 (its controller, version and start,
    and each TrainingRuntime and ClusterTrainingRuntime with its gang policy and scheduler names).
  - RV(problems) lists what breaks gangs, each with a fix, for example a flag naming a scheduler that
    is not running, the C(--gang-scheduler-name=scheduler-plugins) trap, a missing PodGroup CRD, the
    MPIJob CRD clash, two GPU device plugins, a Volcano scheduler whose C(--scheduler-name) does not serve
    the name the operators point at, and a gang scheduler that is Ready but makes no progress (Pending
    pods with its scheduler name that it neither bound nor rejected, no C(PodScheduled) condition, for
    O(partial_threshold_seconds) or more; frozen, hung, or without its leader lease; members of a Koordinator
    label gang whose min-available, below its member count, is met are named instead as left untried by
    koord-scheduler v1.8), or Pending pods naming a gang scheduler that nobody serves; a scheduler-plugins
    release outside Kubernetes' version-skew policy for the cluster (its kube-scheduler more than one minor older than the API server, or newer); and,
    where kube-scheduler's own Workload API is served (C(scheduling.k8s.io/v1beta1)), a Job its controller
    made a Workload for but no PodGroup for O(partial_threshold_seconds) or more because its pods' priority
    class is a C(system-*) one (Kubernetes 1.37.2 with the C(WorkloadWithJob) gate; the API server refuses the
    PodGroup, and the Job never creates a pod).
  - For Kubeflow Trainer v2, RV(problems) also lists a runtime with a C(podGroupPolicy) whose replicated
    jobs set no C(schedulerName) (Trainer never sets one, so the pods go to the default scheduler, which
    ignores their PodGroup, and a TrainJob that does not fit starts partially) or name different
    schedulers; a runtime whose C(schedulerName) no running scheduler serves for its policy (for example
    C(coscheduling) with C(volcano), or no scheduler for the policy running at all); the PodGroup CRD of a
    policy in use missing, or created after Trainer's pod started (Trainer watches PodGroups only when their
    CRD exists at its start; the fix is a rollout restart of its Deployment); containers of a gang runtime
    with limits but no requests (the PodGroup's minResources comes out empty); a TrainJob and a Kubeflow v1
    job (PyTorchJob, TFJob, MPIJob, ...) of the same name in one namespace both gang-scheduled by the same
    scheduler, Volcano or scheduler-plugins (each controller names its PodGroup after its job, so they share
    one, whose minMember each controller overwrites); and Trainer
    v2.1.x with a TrainJob that sets C(trainer.resourcesPerNode), which that version leaves out of the
    PodGroup's minResources.
  - Trainer's runtimes and TrainJobs are read only when its CRD C(trainjobs.trainer.kubeflow.org) exists
    (one list per runtime kind and one of TrainJobs); the Kubeflow v1 jobs only when a TrainJob on a
    C(coscheduling) runtime could clash with them (one list per job kind an operator gangs on
    scheduler-plugins).
  - Where Kueue's CRD C(clusterqueues.kueue.x-k8s.io) is Established, RV(kueue) reports its controllers, the
    integrations and C(waitForPodsReady) of their Configuration, its ClusterQueues, LocalQueues and Workloads (one list
    of each, one of ResourceFlavors, and one list per job kind served of the jobs that carry the
    C(kueue.x-k8s.io/queue-name) label); elsewhere it is null after that one CRD read. RV(problems) then also lists a
    job sent to a LocalQueue its namespace does not have; an admitted Workload whose pods are bound in part, the others
    unbound for O(partial_threshold_seconds) or more (Kueue admits by quota, not by what the nodes can place); a
    Workload evicted by C(waitForPodsReady) and requeued again and again, with whether the job asks for more GPUs than
    the schedulable nodes hold or its ClusterQueue's C(nvidia.com/gpu) quota is more than they hold; jobs sent to a
    queue of a kind whose integration Kueue does not run (it makes no Workload for them); and a ClusterQueue that is not
    Active, with Kueue's reason (for example a ResourceFlavor it names missing).
  - RV(problems) also names, on every gang path, a gang that can never fit from what it declares, before any of its
    pods exists (its PodGroup's C(minResources) asks for more GPUs than all schedulable nodes have; a member of its
    job asks for more than any node has), as once its pods exist; a job whose members a controller could not create,
    from each controller's own event reason (the Job controller's C(FailedCreate), training-operator's
    C(FailedCreatePod), mpi-operator's C(MPIJobFailed), JobSet's C(JobCreationFailed), Trainer's
    C(TrainJobResourcesCreationFailed); one list of events a reason), with what refused it (a ResourceQuota, an
    admission webhook, a LimitRange, a PodSecurity admission, another refusal of the API server); and a stale gang
    object, whether its owner reference names an owner that is gone or it has no owner left and no workload of its
    name exists in its namespace (a job deleted with C(--cascade=orphan)), with the pods that job left behind;
    PodGroups that wait with nothing written on them while no scheduler of their API group runs; and an operator
    whose gang flag points at a PodGroup path, or a gang scheduler running as a Deployment, whose ServiceAccount lacks
    the gang rights on its PodGroups (or a scheduler the binding of pods), asked with SubjectAccessReviews as that
    ServiceAccount (which change nothing; one each, sent together).
  - RV(partial_gangs) lists PodGroups and Kubeflow jobs with some members bound and others Pending
    longer than O(partial_threshold_seconds), with the GPUs they hold; this is the deadlock the
    all-or-nothing rule prevents.
author:
  - gangsched.kubeflow maintainers (@gangsched)
extends_documentation_fragment:
  - gangsched.kubeflow._k8s_auth
  - gangsched.kubeflow._api
  - gangsched.kubeflow._attributes
attributes:
  check_mode:
    support: full
    details: Read-only; runs the same in check mode.
  diff_mode:
    support: none
    details: Changes nothing.
  idempotent:
    support: full
options:
  partial_threshold_seconds:
    description:
      - How long a member must be Pending beside bound members before its gang counts as partial.
      - Also how long a Pending pod may wait without any scheduler looking at it (no C(PodScheduled)
        condition) before its scheduler counts as making no progress.
    type: int
    default: 60
  gpu_nodes:
    description:
      - What M(gangsched.kubeflow.gpu_node_info) returned on GPU nodes, keyed by each node's name as the cluster
        knows it (the results a play registered on the GPU node hosts; the README shows the play).
      - Each node's GPUs as NVML sees them are compared with the C(nvidia.com/gpu) its kubelet advertises (times
        GPU Feature Discovery's C(nvidia.com/gpu.replicas) label of a shared GPU); a difference is a problem naming
        both numbers and the likely cause (the device plugin not registered, GPUs found unhealthy, shared GPUs
        without the label), as is a name the cluster has no node of.
      - On a node without that label, the advertised count over the GPUs NVML sees (a whole multiple above 1) is
        taken as the ways each GPU is shared, so that a gang whose members share GPUs there is named too.
    type: dict
    default: {}
  job:
    description:
      - One job to explain end to end, in RV(job) - why it is Pending, partial or running, and what to do.
      - Its namespace's pods of the job, ResourceQuotas and Events are read besides the cluster-wide reads.
    type: dict
    suboptions:
      kind:
        description:
          - The job's kind - C(PyTorchJob), C(TFJob), C(MPIJob), C(XGBoostJob), C(PaddleJob), C(JAXJob), C(TrainJob),
            a C(JobSet), a batch C(Job), or C(PodGroup) for the pods of one PodGroup, or of a gang formed from its pods'
            labels with no PodGroup object (a Koordinator label gang, by its gang name).
          - A job that is gone while its PodGroup remains is explained from the PodGroup (and the pods it left).
          - C(Workload) is a Kueue Workload (where Kueue runs), explained as the job it admits - the result is that
            job's (its kind, name and chain), the why naming the Workload first.
        type: str
        required: true
      namespace:
        description: The job's namespace.
        type: str
        required: true
      name:
        description: The job's name.
        type: str
        required: true
seealso:
  - module: gangsched.kubeflow.gang_smoke_test
  - module: gangsched.kubeflow.operator_gang
"""

EXAMPLES = r"""
---
- name: Gather gang facts
  gangsched.kubeflow.gang_info:
  register: gang

- name: Why is my job Pending?
  gangsched.kubeflow.gang_info:
    job:
      kind: PyTorchJob
      namespace: team-a
      name: resnet
  register: why

- name: Say why
  ansible.builtin.debug:
    msg: "{{ why.job.why }}"

- name: Fail on any problem
  ansible.builtin.assert:
    that: gang.problems | length == 0
    fail_msg: "{{ gang.problems | map(attribute='message') | list }}"
"""

RETURN = r"""
kubernetes_version:
  description: The API server's version.
  returned: always
  type: str
  sample: v1.33.5
nodes:
  description: Per node GPU capacity, allocatable, requested (by bound pods), free, whether it is schedulable, and its labels.
  returned: always
  type: list
  elements: dict
  sample: [{"name": "gpu-node-0", "capacity": 1, "allocatable": 1, "requested": 0, "free": 1, "schedulable": true,
            "labels": {"nvidia.com/gpu.present": "true"}}]
gpus:
  description: GPU totals over all nodes (free counts schedulable nodes only).
  returned: always
  type: dict
  sample: {"nodes": 4, "capacity": 4, "allocatable": 4, "requested": 1, "free": 3}
schedulers:
  description:
    - Gang schedulers found, with kind, where, image, version, profile names, readiness and mode.
    - A koord-scheduler's entry also has C(coscheduling_prebind), whether a gang profile keeps Coscheduling's preBind
      on (null when its configuration could not be read); on v1.7.0 that binds no gang member and is a problem.
    - A Volcano scheduler's entry has C(conf), the actions and the plugins of its C(--scheduler-conf) (null when it
      could not be read).
    - A scheduler-plugins scheduler's entry has C(permit_waits), each gang profile's Coscheduling
      C(permitWaitingTimeSeconds) (60 where unset; null when its configuration could not be read).
  returned: always
  type: list
  elements: dict
  sample: [{"kind": "volcano", "namespace": "volcano-system", "name": "volcano-scheduler", "gang_profiles": ["volcano"]}]
podgroup_crds:
  description:
    - PodGroup CRDs present, by name, with the scheduler they belong to, whether they are Established, their
      served versions and when they were created (C(created), their C(creationTimestamp)).
  returned: always
  type: dict
  sample: {"podgroups.scheduling.volcano.sh": {"scheduler": "volcano", "established": true, "versions": ["v1beta1"],
           "created": "2025-06-01T10:00:00Z"}}
operators:
  description: Kubeflow operator Deployments with their gang flag and its value.
  returned: always
  type: list
  elements: dict
  sample: [{"operator": "training_operator", "deployment": "kubeflow/training-operator", "gang_value": "volcano"}]
device_plugins:
  description: GPU device plugin DaemonSets (standalone or the GPU Operator's) with desired and ready counts.
  returned: always
  type: list
  elements: dict
  sample: []
native_gang:
  description:
    - kube-scheduler's own gang scheduling (Workload and PodGroup of C(scheduling.k8s.io)), off by default. Read from the
      API group's discovery; the Workloads and PodGroups only where this collection's version (C(v1beta1), Kubernetes
      1.37) is served, and the control plane's gates only where its static pods are seen (kubeadm's mirror pods in
      C(kube-system)); on a managed control plane those are null.
    - RV(problems) names a kube-scheduler or kube-controller-manager seen without the C(GenericWorkload) gate while
      the API is served, and a Job the Job controller cannot give its PodGroup (Kubernetes 1.37.2 with a C(system-*)
      priority class); a native gang bound in part is among RV(partial_gangs).
  returned: always
  type: dict
  contains:
    served_versions:
      description: The Workload API versions served (C(v1alpha1) 1.35, C(v1alpha2) 1.36, C(v1beta1) 1.37); empty when off.
      returned: always
      type: list
      elements: str
      sample: ["v1beta1"]
    version:
      description: C(v1beta1) when it is served with its Workloads and PodGroups, else null.
      returned: always
      type: str
      sample: v1beta1
    supported:
      description: Whether this collection can prove the native gang here (M(gangsched.kubeflow.gang_smoke_test)
        with O(gangsched.kubeflow.gang_smoke_test#module:gang_scheduler=native)).
      returned: always
      type: bool
      sample: true
    unsupported_reason:
      description: Why not, with what to turn on; null when supported.
      returned: always
      type: str
      sample: null
    kube_scheduler_gate:
      description: Whether kube-scheduler's static pod runs with C(GenericWorkload=true); null where it is not seen.
      returned: always
      type: bool
      sample: true
    job_integration:
      description: Whether the Job controller gangs Jobs (C(WorkloadWithJob) on kube-controller-manager, or a Workload
        it made); null where neither is seen.
      returned: always
      type: bool
      sample: null
    podgroups:
      description: How many native PodGroups exist; null where the API is not served.
      returned: always
      type: int
      sample: 2
    held_podgroups:
      description: The native PodGroups kube-scheduler refuses for now (a gang waiting for room), with its reason.
      returned: always
      type: list
      elements: dict
      sample: [{"podgroup": "ml/train", "message": "minCount (5) cannot be satisfied: 4 scheduled, 0 remaining"}]
trainer:
  description: Kubeflow Trainer v2 (TrainJob, TrainingRuntime, ClusterTrainingRuntime).
  returned: always
  type: dict
  contains:
    installed:
      description: Whether its CRD C(trainjobs.trainer.kubeflow.org) exists and is Established; the runtimes are read only then.
      returned: always
      type: bool
      sample: true
    controllers:
      description:
        - Deployments running C(trainer-controller-manager)'s image (whatever their name and namespace).
        - C(version) is the image tag; C(started) is when the oldest of its running pods started (its container's
          last start, else the pod's C(startTime)), null when none runs.
      returned: always
      type: list
      elements: dict
      sample: [{"deployment": "kubeflow-system/kubeflow-trainer-controller-manager", "container": "manager",
                "image": "ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.2.0", "version": "v2.2.0",
                "ready": true, "started": "2025-06-01T10:02:00Z"}]
    runtimes:
      description:
        - Every ClusterTrainingRuntime and TrainingRuntime (C(namespace) null for a ClusterTrainingRuntime).
        - C(gang_policy) is the key of its C(spec.podGroupPolicy) (C(coscheduling), C(volcano)), null without one.
        - C(scheduler_names) maps each replicated job to the C(schedulerName) of its pod template (null where unset).
        - C(gang_ready) is true when it has a podGroupPolicy, Trainer watches the PodGroups of that policy (their CRD
          existed when Trainer started), and RV(problems) lists nothing against it.
      returned: always
      type: list
      elements: dict
      sample: [{"kind": "ClusterTrainingRuntime", "namespace": null, "name": "torch-distributed",
                "gang_policy": "coscheduling", "scheduler_names": {"node": "scheduler-plugins-scheduler"},
                "gang_ready": true}]
kueue:
  description:
    - Kueue, where its ClusterQueue CRD C(clusterqueues.kueue.x-k8s.io) is Established (its C(v1beta2) API, else
      C(v1beta1)); null elsewhere.
  returned: always
  type: dict
  contains:
    controllers:
      description:
        - Deployments running Kueue's image (C(kueue/kueue), whatever their name and namespace); C(version) is the
          image tag; C(configuration) is the ConfigMap (C(namespace/name)) its C(--config) file is mounted from, null
          where it has none.
      returned: always
      type: list
      elements: dict
      sample: [{"deployment": "kueue-system/kueue-controller-manager", "container": "manager",
                "image": "registry.k8s.io/kueue/kueue:v0.17.0", "version": "v0.17.0", "ready": true,
                "configuration": "kueue-system/kueue-manager-config"}]
    integrations:
      description: The job frameworks Kueue integrates (C(integrations.frameworks) of its Configuration, C(batch/job)
        where unset); null when no controller runs or its Configuration could not be read.
      returned: always
      type: list
      elements: str
      sample: ["batch/job", "kubeflow.org/pytorchjob"]
    wait_for_pods_ready:
      description: The C(waitForPodsReady) section of its Configuration as written; null where it is off or not read.
      returned: always
      type: dict
      sample: {"timeout": "5m", "blockAdmission": false, "requeuingStrategy": {"backoffBaseSeconds": 60}}
    cluster_queues:
      description:
        - Each ClusterQueue with C(quota) (per resource, C(nominalQuota) summed over its flavors), C(used) (per
          resource, its C(status.flavorsReservation), else C(flavorsUsage)), its pending and admitted workloads and
          C(active) (its C(Active) condition; null without one).
      returned: always
      type: list
      elements: dict
      sample: [{"name": "gpu-cluster-queue", "quota": {"cpu": 64, "memory": 274877906944, "nvidia.com/gpu": 8},
                "used": {"nvidia.com/gpu": 4}, "pending_workloads": 1, "admitted_workloads": 1, "active": true}]
    local_queues:
      description: Each LocalQueue with the ClusterQueue it sends to.
      returned: always
      type: list
      elements: dict
      sample: [{"namespace": "team-a", "name": "gpu", "cluster_queue": "gpu-cluster-queue"}]
    workloads:
      description:
        - Each of Kueue's Workloads with its job (C(owner), C(Kind/name)), its LocalQueue, whether it is admitted and
          holds quota, the reason it is evicted (null when it is not), how many times C(waitForPodsReady) requeued it
          (C(status.requeueState.count)), C(pods_ready) (its C(PodsReady) condition; null without one) and C(said)
          (Kueue's message while it holds no quota for it, why it waits; null once it holds quota).
      returned: always
      type: list
      elements: dict
      sample: [{"namespace": "team-a", "name": "pytorchjob-resnet-3b1c2", "owner": "PyTorchJob/resnet", "queue": "gpu",
                "admitted": true, "quota_reserved": true, "evicted": null, "requeue_count": 0, "pods_ready": true,
                "said": null}]
problems:
  description: What breaks gang scheduling, each with the object, a message and a fix.
  returned: always
  type: list
  elements: dict
  sample: [{"object": "Deployment kubeflow/training-operator", "message": "...", "fix": "..."}]
support:
  description:
    - Each gang scheduler, operator and Trainer controller found, with its release (its image tag) against the
      Kubernetes minors its upstream supports, and the source of that range.
    - C(within) is true or false where upstream states a range (or the release is a kube-scheduler build, bound by
      the version-skew policy), null where it states none (C(built_on) then gives the minor the release is built on)
      or the release is not in the collection's table. Where C(within) is false, C(fix) says what to run instead.
      Reported, not a problem; the report prints the entries not within, with their fix.
    - C(advisories) lists the published security advisories of that release (for example Volcano v1.15.0 and v1.15.1,
      GHSA-j38h-7pfq-cxmw, fixed in v1.15.2), each with the release that fixes it; empty where none is known.
  returned: always
  type: list
  elements: dict
  sample: [{"component": "volcano", "where": "Deployment volcano-system/volcano-scheduler", "version": "v1.15.1",
            "cluster": "v1.37.2", "supported": "1.23-1.35", "within": false,
            "source": "Volcano v1.15.1 README, 'Kubernetes compatibility' table",
            "advisories": ["GHSA-j38h-7pfq-cxmw (DRA capacity accounting can stall the scheduler; fixed in v1.15.2)"]}]
in_use:
  description:
    - Per gang path (V(volcano), V(scheduler_plugins), V(koordinator), V(native)) and for Kubeflow Trainer
      (V(trainer)), the users' objects that need its scheduler, controllers or API - what an uninstall of it would
      leave unserved - for those that have any.
    - Its PodGroups neither finished nor being deleted, its live gang pods under a scheduler name it serves (one entry
      a name, with the count), Volcano's queues (but C(default) and C(root)), the native gang's Workloads and
      PodGroups, the TrainJobs neither finished nor being deleted.
    - C(count) is the number of entries, C(objects) the first 20. The roles' uninstall refuses while its path has
      any, unless asked to go on.
  returned: always
  type: dict
  sample: {"native": {"count": 2, "objects": ["Workload team-a/train", "PodGroup team-a/train-workers"]}}
partial_gangs:
  description: Gangs with members bound and members Pending longer than the threshold, and the GPUs held.
  returned: always
  type: list
  elements: dict
  sample: [{"gang": "team-a/job-1", "bound": ["job-1-worker-0"], "pending": ["job-1-worker-1"], "gpus_held": 1}]
job:
  description: The chain of the job O(job) names, and why it is where it is.
  returned: when O(job) is given
  type: dict
  contains:
    kind:
      description: The job's kind.
      type: str
    namespace:
      description: The job's namespace.
      type: str
    name:
      description: The job's name.
      type: str
    found:
      description: Whether the job (or the PodGroup, or a label gang's pods) exists.
      type: bool
    gang:
      description: Its gang object (a PodGroup named after the job), the path it belongs to, its C(minMember) and what
        the scheduler last said on it (its phase and newest condition); null when none was found.
      type: dict
    queue:
      description: The Volcano queue its PodGroup names, with the queue's spec and status; null off Volcano.
      type: dict
    kueue:
      description:
        - Where the job is sent to a Kueue queue (its C(kueue.x-k8s.io/queue-name) label) - C(local_queue), whether that
          LocalQueue exists and the ClusterQueue it sends to, and the job's Workload as RV(kueue.workloads) gives it
          (null when Kueue made none). Null when the job names no queue.
      type: dict
    quotas:
      description: The ResourceQuotas of its namespace, each with C(hard) and C(used).
      type: list
      elements: dict
    pods:
      description: Its pods, each with C(name), C(phase), C(node), C(scheduler_name) and, while unbound, what the
        scheduler said (the pod's C(PodScheduled) condition).
      type: list
      elements: dict
    events:
      description: The newest events of the job, its gang object and its pods, oldest first.
      type: list
      elements: str
    operator_flag:
      description: The gang flag of the operator that runs the job kind (C(deployment), C(flag), C(value)); null when
        none runs.
      type: dict
    problems:
      description: The entries of RV(problems) that name the job, its gang object or its pods.
      type: list
      elements: dict
    why:
      description: One line - why the job is Pending, partial or running, and what to do.
      type: str
    summary:
      description: The explanation as lines to read - RV(job.why) first, then the gang object, the queue, the
        quotas, the pods, the operator's flag, the events and the problems (what C(playbooks/why.yml) prints).
      type: list
      elements: str
  sample:
    kind: PyTorchJob
    namespace: team-a
    name: resnet
    found: true
    gang: {"path": "volcano", "name": "resnet", "min_member": 5, "scheduler_said": "phase Pending"}
    queue: {"name": "team-a", "found": true, "spec": {"capability": {"nvidia.com/gpu": "4"}}, "status": {"state": "Open"}}
    quotas: []
    pods: []
    events: []
    operator_flag: {"deployment": "kubeflow/training-operator", "flag": "gang-scheduler-name", "value": "volcano"}
    problems: []
    why: "no pod yet: its gang object resnet is at phase Pending; the operator creates the pods once the gang
      scheduler lets the gang in"
    summary: ["PyTorchJob team-a/resnet: no pod yet: its gang object resnet is at phase Pending; the operator creates
        the pods once the gang scheduler lets the gang in", "gang: volcano PodGroup resnet, minMember 5: phase
        Pending", "queue: team-a (Open)"]
"""

import time

from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._cluster_entry import cluster_entry, with_auth
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._module_main import execute
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners._gang_info import gather


def run(client, params: dict, check_mode: bool, warn) -> dict:
    return dict(changed=False, **gather(client, params, time.time()))


def entry() -> dict:
    """The module's options and runner, for main() and the in-process action plugin."""
    return cluster_entry(
        with_auth(
            partial_threshold_seconds=dict(type="int", default=60),
            gpu_nodes=dict(type="dict", default={}),
            job=dict(
                type="dict",
                options=dict(
                    kind=dict(type="str", required=True),
                    namespace=dict(type="str", required=True),
                    name=dict(type="str", required=True),
                ),
            ),
        ),
        run,
        {"partial_threshold_seconds": 0},
    )


def main() -> None:
    execute(entry())


if __name__ == "__main__":
    main()
