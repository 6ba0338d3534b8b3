#!/usr/bin/python
# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gang_smoke_test
short_description: Run a gang and return an all-or-nothing verdict
version_added: 0.1.0
description:
  - Creates a gang (plain pods with a PodGroup, a PyTorchJob, TFJob or MPIJob through the Kubeflow
    operators, or a Kubeflow Trainer v2 TrainJob on a gang runtime), watches its pods with the watch API and
    returns a verdict, then removes everything it created (also on failure, timeout or SIGTERM). Every
    object it creates carries the label C(gangsched.kubeflow/smoke-run=<run id>).
  - "O(workload=trainjob): a TrainJob of O(replicas) nodes. By default on a TrainingRuntime the run creates
    in O(namespace) (one replicated job, Trainer's trainer step, with O(resources) requested and limited
    per node, the fields JobSet's webhook would fill spelled out) and makes gang-scheduled as the
    P(gangsched.kubeflow.trainer_runtime_gang#filter) filter does (C(podGroupPolicy), the scheduler's name
    in the pod template). With O(trainer_runtime) it proves an existing ClusterTrainingRuntime instead. The
    verdict needs Trainer's own PodGroup, named after the TrainJob, owned by it and counting all its pods
    (C(minMember)); the pods are those of its JobSet (C(jobset.sigs.k8s.io/jobset-name=<TrainJob>)).
    Needs Kubeflow Trainer v2 and JobSet running, their CRDs Established, and Trainer started after the
    scheduler's PodGroup CRD was installed (it watches PodGroups only if their CRD existed at its start).
    Not with O(gang_scheduler=koordinator): a runtime cannot carry a label gang."
  - "Verdicts: V(gang_held_running) (every member Running), V(gang_held_pending) (no member ever bound,
    and the scheduler marked every member unschedulable after all were there, O(skew_seconds) ago, or a second
    ago where its word names the gang itself (the PodGroup's condition, Volcano's gang plugin, Coscheduling's
    or koord-scheduler's rejection of the gang): the scheduler's own rejection of this gang), V(partial) (some members bound while another stayed unbound
    longer than O(skew_seconds)), V(inconclusive) (no member bound, but the scheduler never rejected the
    whole gang either, until O(timeout): nothing proves that a scheduler held it), V(timeout), V(error)
    (with RV(cause): scheduler not running or not binding, name not served, no PodGroup created,
    forbidden ...)."
  - "Liveness proof: a gang that stays unbound looks the same under a scheduler that holds it and one that
    is frozen, hung, without its leader lease or serving another C(schedulerName) while its Deployment
    says Ready. So before the gang is created, a canary is run: a gang of one (its own PodGroup and one
    pod, no GPU, 10m CPU, labelled with the run id) for the gang's scheduler name. It must be bound within
    O(liveness_timeout) seconds, else the verdict is V(error) with a cause naming the scheduler, and no
    gang is run. A canary the scheduler refused (its PodScheduled condition False; a scheduler that looked before its
    cache held the new PodGroup refuses it, and unless an event moves it back, tries it again when it flushes
    unschedulable pods, after 5 minutes by default) is replaced once by a fresh one after 5 seconds, within the same
    O(liveness_timeout); when neither is bound, the cause gives what the scheduler said. When no member is bound for
    O(settle_seconds) and the scheduler has not rejected the whole gang, a second canary is run; if that one is not bound the verdict is V(error) naming the
    scheduler (it stopped scheduling), else the test waits for the rejection until O(timeout) and ends
    V(inconclusive) without it. RV(liveness) gives the canaries' times."
  - "Every input is checked before anything is created: O(namespace) is not a system namespace
    (C(kube-system), C(kube-public), C(kube-node-lease), C(volcano-system), C(volcano-monitoring),
    C(scheduler-plugins) or a namespace a gang scheduler runs in) unless O(allow_system_namespace);
    O(report_dir) is a writable directory (created when missing, not in check mode); O(run_id) is a
    valid label value that keeps object names within 63 characters; the durations are not negative; and
    O(expect=running) with more members than fit is refused (members are counted per node: a node with 3
    free GPUs holds one member of 2)."
  - The task fails when the verdict is not the expected one; the returned timeline says why.
  - With O(control=true) the same pods are then run without a gang on the default scheduler, to show
    the partial start gang scheduling prevents (its verdict is returned, not asserted). For
    O(workload=trainjob) the control is the same TrainJob on a second TrainingRuntime the run creates, the
    same runtime without C(podGroupPolicy) and C(schedulerName).
  - A run interrupted before its cleanup (SIGKILL, a cancelled pipeline) leaves labelled objects
    behind. The next run removes those in its O(namespace) before it measures capacity (RV(stale_removed));
    O(state=absent) removes them in all namespaces and runs no test. Run one smoke test at a time per namespace.
author:
  - gangsched.kubeflow maintainers (@gangsched)
extends_documentation_fragment:
  - gangsched.kubeflow._k8s_auth
  - gangsched.kubeflow._api
  - gangsched.kubeflow._attributes
attributes:
  check_mode:
    support: partial
    details: Runs the preflight (CRDs, scheduler, capacity, expected verdict) and creates nothing.
  diff_mode:
    support: none
    details: >-
      It leaves nothing behind to diff; RV(ignore:changed) is true only when leftovers of an earlier run
      were removed (RV(stale_removed)).
  idempotent:
    support: full
    details: Each run creates and removes its own objects.
options:
  state:
    description:
      - V(present) runs the test.
      - V(absent) runs no test and removes every object labelled C(gangsched.kubeflow/smoke-run) in all
        namespaces (jobs, TrainJobs and their TrainingRuntimes, PodGroups, pods, and namespaces a run created),
        as left by interrupted runs. A TrainJob is deleted before its runtime (Trainer's webhook refuses any
        change to a TrainJob whose runtime is gone) and the garbage collector removes its JobSet, Jobs, pods
        and PodGroup; the pods, the TrainJob and its runtime are waited for until gone. A namespace a run deleted and
        left terminating (O(wait_namespace_gone=false)) is waited for too, not deleted again nor counted in
        RV(stale_removed).
    type: str
    default: present
    choices: [present, absent]
  gang_scheduler:
    description:
      - The gang scheduler to test. Required with O(state=present).
      - V(koordinator) tests Koordinator's koord-scheduler the seed-003 way, by labels and no PodGroup object; the
        pods (or every member replica's pod template of a job) carry C(pod-group.scheduling.sigs.k8s.io/name),
        C(pod-group.scheduling.sigs.k8s.io/min-available) and the scheduler name (filter
        P(gangsched.kubeflow.label_gang#filter)); a job's operator must run without a gang flag.
      - V(native) tests kube-scheduler's own gang scheduling (Kubernetes 1.37, C(scheduling.k8s.io/v1beta1)) with a
        Workload and a PodGroup the pods join by C(spec.schedulingGroup), or with O(workload=job) the PodGroup the Job
        controller makes. The API must be served (refused before anything is created where it is not, or only at
        1.35's or 1.36's versions); the liveness canary must be bound and its PodGroup marked scheduled by
        kube-scheduler (C(PodGroupInitiallyScheduled)), so a kube-scheduler without the gang plugin is named, and both
        held verdicts need kube-scheduler's own decision on the gang's PodGroup. Only with O(workload=pods) or
        O(workload=job).
    type: str
    choices: [volcano, scheduler_plugins, koordinator, native]
  scheduler_name:
    description: The scheduler-plugins or koord-scheduler profile name; derived from the running scheduler when not set.
    type: str
  workload:
    description:
      - What to run. The Kubeflow jobs need the operator installed with its gang flag (with
        O(gang_scheduler=koordinator), without one).
      - V(trainjob) is a Kubeflow Trainer v2 TrainJob; Trainer has no gang flag, its runtime's
        C(podGroupPolicy) makes the gang (see the description and O(trainer_runtime)).
      - V(job) is an Indexed C(batch/v1) Job of O(replicas) pods run at once. With O(gang_scheduler=native) it carries
        C(spec.scheduling.schedulingPolicy.gang), which the Job controller makes one native gang of (the
        C(WorkloadWithJob) feature gate; without the Job integration the verdict is V(error) naming the gate); with
        O(gang_scheduler=koordinator) its pod template carries the label gang. Not with the other paths.
    type: str
    default: pods
    choices: [pods, job, pytorchjob, tfjob, mpijob, trainjob]
  trainer_runtime:
    description:
      - With O(workload=trainjob), the name of an existing ClusterTrainingRuntime to prove instead of a
        runtime the run creates. Nothing of it is changed and no runtime is created (the control, with
        O(control=true), runs on a TrainingRuntime the run creates from its spec without
        C(podGroupPolicy) and C(schedulerName)).
      - The TrainJob sets C(numNodes) to O(replicas) and, for the trainer step's C(node) container, the pause
        image and O(resources) per node; the runtime's other replicated jobs run as they are, and all its pods
        are members. Its JobSet, Jobs and pods get the run label through the TrainJob's C(runtimePatches)
        (Trainer v2.2 or later).
      - A runtime that is not gang-scheduled by O(gang_scheduler) under the scheduler name (no
        C(podGroupPolicy), another policy, a pod template naming another scheduler, or a replicated job with
        C(dependsOn)) is not run at all; the verdict is V(error) and RV(cause) says why and how to fix it
        (the P(gangsched.kubeflow.trainer_runtime_gang#filter) filter), since a TrainJob on it would start
        partially, or run whole without any gang.
    type: str
  replicas:
    description:
      - Members of the gang (PyTorchJob 1 Master + N-1 Workers, TFJob 1 PS + N-1 Workers, MPIJob N workers,
        TrainJob N nodes).
    type: int
    default: 2
  resources:
    description: Requests (and limits) of every member.
    type: dict
    default: {nvidia.com/gpu: 1}
  expect:
    description:
      - Expected outcome; V(auto) is V(running) when the gang fits the free capacity, else V(pending).
      - V(running) with more members than fit on the schedulable nodes (counted node by node) is refused
        before anything is created.
      - V(queued) (with O(cluster_queue)) expects Kueue to hold the whole gang for quota (V(kueue_held_quota)).
    type: str
    default: auto
    choices: [running, pending, auto, queued]
  cluster_queue:
    description:
      - Send the gang through Kueue to this ClusterQueue - the run creates a LocalQueue of its own
        (C(smoke-<run id>)) in O(namespace) pointing at it, and labels the job C(kueue.x-k8s.io/queue-name) with it.
        Kueue's webhook creates the job suspended; the gang goes to the scheduler only once Kueue admits the job's
        Workload, so the verdict needs Kueue's word first.
      - Admitted (its C(Admitted) condition) - the scheduler's verdict follows as without Kueue, its time counted from
        the admission. Held for quota (C(QuotaReserved) V(False), reason C(Pending), Kueue's message that the quota does
        not suffice), with the job still suspended and not one pod made - V(kueue_held_quota), the verdict of
        O(expect=queued). No Workload within 30 seconds (Kueue not running, or without the integration for the job's
        kind), or Kueue calling it inadmissible - V(error) naming Kueue and the fix.
      - Only with O(workload) V(pytorchjob), V(tfjob), V(mpijob), V(trainjob) or V(job), the kinds Kueue admits
        as a whole. The no-gang control (O(control)) is not sent through Kueue.
    type: str
  namespace:
    description:
      - Namespace to run in; created (and removed again) when missing.
      - A system namespace (Kubernetes' own, or one a gang scheduler runs in) is refused unless
        O(allow_system_namespace=true).
    type: str
    default: gangsched-smoke
  allow_system_namespace:
    description: Allow O(namespace) to be a system namespace.
    type: bool
    default: false
  timeout:
    description: Seconds to wait for a verdict (at least 1).
    type: int
    default: 180
  settle_seconds:
    description:
      - How long no member may be bound, without the scheduler's rejection of every member, before the
        scheduler's liveness is checked again with a second canary (not bound within O(liveness_timeout)
        gives V(error); bound, the test waits for the rejection until O(timeout), else V(inconclusive)).
        Never makes a verdict by itself. At least 0.
    type: int
    default: 20
  skew_seconds:
    description:
      - How long after the first bind the other members may still be unbound before it is a partial gang,
        and how long after the scheduler's rejection of every member the gang counts as held pending (at most one
        second where the scheduler's word names the gang itself). At least 0.
    type: int
    default: 5
  liveness_timeout:
    description:
      - Seconds the liveness canary (a pod of its own gang of one, no GPU, for the gang's scheduler name)
        may take to be bound; not bound in time is V(error) naming the scheduler. At least 1.
    type: int
    default: 30
  control:
    description: Also run the same pods without a gang on the default scheduler.
    type: bool
    default: false
  cleanup:
    description: Remove what the test created (always, also on failure, timeout or interrupt).
    type: bool
    default: true
  keep_namespace:
    description:
      - With O(cleanup), leave the namespace this run created, emptied (the run's objects removed and its pods
        gone), for a smoke run that follows in the same O(namespace), which takes it over, uses it as it is and
        removes it at its end. Saves the namespace's deletion (Kubernetes' namespace controller waits 5 seconds
        before it empties a deleted namespace) and the next run's wait for it to go.
      - Only when the verdict is the expected one; otherwise the namespace is removed as without this option.
      - A namespace kept and never taken over (the play stopped before the next run) is removed by the next
        smoke run in it or by O(state=absent).
    type: bool
    default: false
  wait_namespace_gone:
    description:
      - With O(cleanup), when the run removes the namespace it created, wait until the namespace is gone.
      - V(false) returns once the run's own objects are gone (its pods, jobs, runtimes and the Kueue Workloads of its
        jobs, which hold GPUs and quota) and the namespace is deleted, still terminating (RV(namespace_terminating)).
        Kubernetes' namespace controller empties a deleted namespace 5 seconds after the deletion, so that wait is
        most of a run's cleanup. A smoke run in the same namespace, and O(state=absent), wait for it to go first.
      - Only when the verdict is the expected one; otherwise the run waits as with V(true).
    type: bool
    default: true
  report_dir:
    description:
      - Directory for C(gang-smoke-<run id>.json), C(.xml) (JUnit) and C(.svg) (timeline).
      - Checked (and created when missing, except in check mode) before anything is created.
    type: path
  run_id:
    description:
      - Id for the labels and names; random when not set.
      - A label value usable in names, lower-case letters, digits and C(-), at most 63 characters and short
        enough that C(smoke-<run id>-control-worker-<replicas>) fits 63.
    type: str
seealso:
  - module: gangsched.kubeflow.gang_info
  - module: gangsched.kubeflow.operator_gang
"""

EXAMPLES = r"""
---
- name: A gang that fits must start as a whole
  gangsched.kubeflow.gang_smoke_test:
    gang_scheduler: volcano
    replicas: 4
    expect: running
    report_dir: reports/

- name: Prove kube-scheduler's own gang (Kubernetes 1.37 with the GenericWorkload gate) holds 5 pods on 4 GPUs
  gangsched.kubeflow.gang_smoke_test:
    gang_scheduler: native
    replicas: 5
    expect: pending

- name: Through Kueue, a PyTorchJob of 4 GPUs is admitted by ClusterQueue gpu-cluster-queue and runs as a whole
  gangsched.kubeflow.gang_smoke_test:
    gang_scheduler: volcano
    workload: pytorchjob
    cluster_queue: gpu-cluster-queue
    replicas: 4
    expect: running

- name: One of more GPUs than the ClusterQueue's quota is held by Kueue, suspended, not one pod made
  gangsched.kubeflow.gang_smoke_test:
    gang_scheduler: volcano
    workload: pytorchjob
    cluster_queue: gpu-cluster-queue
    replicas: 9
    expect: queued

- name: Remove what interrupted smoke runs left behind, in all namespaces
  gangsched.kubeflow.gang_smoke_test:
    state: absent

- name: One member more than the cluster has GPUs must stay entirely Pending, and show the control
  gangsched.kubeflow.gang_smoke_test:
    gang_scheduler: scheduler_plugins
    workload: pytorchjob
    replicas: 5
    expect: pending
    control: true

- name: A Kubeflow Trainer v2 TrainJob on a gang runtime the test makes runs as a whole
  gangsched.kubeflow.gang_smoke_test:
    gang_scheduler: volcano
    workload: trainjob
    replicas: 4
    expect: running

- name: Prove the ClusterTrainingRuntime the teams use holds an oversized TrainJob Pending
  gangsched.kubeflow.gang_smoke_test:
    gang_scheduler: scheduler_plugins
    workload: trainjob
    trainer_runtime: torch-distributed-gang
    replicas: 5
    expect: pending
"""

RETURN = r"""
verdict:
  description:
    - The verdict; null in check mode. One of V(gang_held_running), V(gang_held_pending), V(partial),
      V(inconclusive), V(timeout), V(error), V(kueue_held_quota) (with O(cluster_queue)).
  returned: always
  type: str
  sample: gang_held_pending
expected:
  description: The expected outcome (V(running), V(pending) or V(queued)), after resolving V(auto).
  returned: always
  type: str
  sample: pending
ok:
  description: Whether the verdict is the expected one; null in check mode.
  returned: always
  type: bool
  sample: true
cause:
  description:
    - Why the verdict is V(error), V(inconclusive), or an unexpected V(gang_held_pending) or V(timeout);
      it names the scheduler (its Deployment, or who runs instead when none serves the name).
  returned: when the verdict is error, inconclusive, or not the expected one
  type: str
  sample: "scheduler 'volcano' (Volcano Deployment volcano-system/vc-scheduler) did not bind the liveness canary ..."
liveness:
  description:
    - The liveness proof. C(canary_seconds) is how long the first canary took to be bound (null when it
      was not bound within C(timeout)). C(recheck_seconds) is the same for the second canary, run only when no
      member was bound or rejected for O(settle_seconds) (null when not run or not bound).
      C(recheck_error) is the API error of a re-check that could not be made (it is tried again later).
  returned: when the test ran
  type: dict
  sample: {"canary_seconds": 1.02, "recheck_seconds": null, "timeout": 30}
capacity:
  description: Free GPUs on schedulable nodes, whether the gang fits, and how many members would fit.
  returned: always
  type: dict
  sample: {"free_gpus": 4, "fits": false, "slots": 4}
scheduler_name:
  description: The scheduler name the members use.
  returned: always
  type: str
  sample: volcano
workload:
  description: What ran (O(workload)).
  returned: with O(state=present)
  type: str
  sample: pytorchjob
runtime:
  description:
    - The Trainer runtime the TrainJob ran on (C(kind), C(name), with the namespace for a TrainingRuntime) and
      whether the run created it (C(created)) or it is the user's O(trainer_runtime).
  returned: with O(workload=trainjob), once the preflight passed
  type: dict
  sample: {"kind": "TrainingRuntime", "name": "gangsched-smoke/smoke-3f2a9c1d-gang", "created": true}
gang_scheduler:
  description: The gang scheduler tested (O(gang_scheduler)).
  returned: with O(state=present)
  type: str
  sample: volcano
replicas:
  description: Members of the gang (O(replicas)).
  returned: with O(state=present)
  type: int
  sample: 4
namespace:
  description: The namespace the test ran in (O(namespace)).
  returned: with O(state=present)
  type: str
  sample: gangsched-smoke
skipped_reason:
  description: Why the test did not run (check mode creates no pods); RV(verdict) and RV(ok) are null then.
  returned: in check mode, when the preflight passed
  type: str
  sample: "check mode: the smoke test creates pods, so it did not run"
run_id:
  description: The run id in every created object's labels.
  returned: when the test ran
  type: str
  sample: 3f2a9c1d
gang:
  description:
    - What was seen of the gang — bound, running, unbound and ever-bound members, and the timeline.
    - C(held_pending_by) is C(rejected) for a V(gang_held_pending) verdict (the scheduler marked every member
      unschedulable after the whole gang existed, the only way to reach it); null otherwise.
    - C(not_rejected) lists the unbound members the scheduler did not mark unschedulable after the whole
      gang existed (what an V(inconclusive) verdict misses).
    - C(podgroup) (O(workload=trainjob)) is Trainer's PodGroup as the verdict relied on it (C(name),
      C(min_member), C(owners)); null when none was seen. With O(gang_scheduler=native) it is the gang's PodGroup
      (C(name), and C(scheduled), kube-scheduler's decision on it as last read, C(True), C(False) or null), and
      C(podgroup_scheduled) says whether kube-scheduler ever marked it scheduled, which V(gang_held_running) needs
      on that path.
    - C(kueue) (with O(cluster_queue)) is Kueue's part - C(cluster_queue), C(local_queue), C(workload) (the job's
      Workload), C(admitted), C(seconds) (when Kueue decided, from the job's creation), and for a gang held for quota
      C(held) (Kueue's message), C(suspended) and C(pods) (the evidence beside it).
    - C(decided_seconds) is when the scheduler decided (its last bind of a member, or its rejection of the whole
      gang), null when it never did; C(seconds) is when the verdict was reached; both in seconds from the start of
      the gang's creation.
  returned: when the test ran
  type: dict
  sample: {"verdict": "gang_held_pending", "bound": [], "held_pending_by": "rejected",
           "timeline": [{"t": 0.01, "pod": "smoke-x-gang-0", "state": "Unschedulable"}]}
control:
  description: The same for the no-gang control run.
  returned: when O(control=true)
  type: dict
  sample: {"verdict": "partial", "bound": ["smoke-x-control-0"]}
stale_removed:
  description:
    - Objects of earlier, interrupted runs removed before this run (or, with O(state=absent), by it).
    - In check mode, what would be removed.
  returned: always
  type: list
  elements: str
  sample: ["Pod gangsched-smoke/smoke-3f2a9c1d-gang-0"]
left_behind:
  description: Objects still present after cleanup (should be empty).
  returned: when the test ran, or with O(state=absent)
  type: list
  elements: str
  sample: []
namespace_kept:
  description:
    - Whether the run left the namespace it created for the next smoke run (O(keep_namespace) and the expected
      verdict). False when the namespace was there before the run (it is never removed then) or was removed.
  returned: when the test ran
  type: bool
  sample: true
namespace_terminating:
  description:
    - Whether the run deleted the namespace it created and returned without waiting for it to go
      (O(wait_namespace_gone=false) and the expected verdict). The run's pods, jobs and Workloads were gone by
      then; the namespace controller removes the rest within seconds.
  returned: when the test ran
  type: bool
  sample: false
reports:
  description: Paths of the JSON, JUnit and SVG reports.
  returned: when O(report_dir) is set
  type: dict
  sample: {"json": "reports/gang-smoke-3f2a9c1d.json"}
"""

from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._cluster_entry import cluster_entry, with_auth
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._module_main import execute
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths._registry import GANG_PATHS
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke._smoke import run


def argument_spec() -> dict:
    return with_auth(
        state=dict(type="str", default="present", choices=["present", "absent"]),
        gang_scheduler=dict(type="str", choices=list(GANG_PATHS)),
        scheduler_name=dict(type="str"),
        workload=dict(type="str", default="pods", choices=["pods", "job", "pytorchjob", "tfjob", "mpijob", "trainjob"]),
        trainer_runtime=dict(type="str"),
        replicas=dict(type="int", default=2),
        resources=dict(type="dict", default={"nvidia.com/gpu": 1}),
        expect=dict(type="str", default="auto", choices=["running", "pending", "auto", "queued"]),
        cluster_queue=dict(type="str"),
        namespace=dict(type="str", default="gangsched-smoke"),
        timeout=dict(type="int", default=180),
        settle_seconds=dict(type="int", default=20),
        skew_seconds=dict(type="int", default=5),
        liveness_timeout=dict(type="int", default=30),
        allow_system_namespace=dict(type="bool", default=False),
        control=dict(type="bool", default=False),
        cleanup=dict(type="bool", default=True),
        keep_namespace=dict(type="bool", default=False),
        wait_namespace_gone=dict(type="bool", default=True),
        report_dir=dict(type="path"),
        run_id=dict(type="str"),
    )


def entry() -> dict:
    """The module's options and runner, for main() and the in-process action plugin."""
    return cluster_entry(argument_spec(), run, required_if=[("state", "present", ["gang_scheduler"])])


def main() -> None:
    execute(entry())


if __name__ == "__main__":
    main()
