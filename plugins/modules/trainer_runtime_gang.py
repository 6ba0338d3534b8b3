#!/usr/bin/python
# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: trainer_runtime_gang
short_description: Ensure a Kubeflow Trainer v2 runtime is gang-scheduled
version_added: 0.1.0
description:
  - Makes a Kubeflow Trainer v2 C(ClusterTrainingRuntime), or a namespaced C(TrainingRuntime), gang-scheduled in the
    cluster, so that each TrainJob on it runs all its pods together or none. Trainer v2 has no operator gang flag;
    the runtime decides.
  - Sets C(spec.podGroupPolicy) (C(coscheduling) for scheduler-plugins, C(volcano) for Volcano), so Trainer creates
    one PodGroup per TrainJob with every pod a member; sets C(schedulerName) in every replicated job's pod template
    (Trainer never sets it, and without it the pods go to the default scheduler, a silent partial start); adds a
    C(requests) entry for each resource a container sets only in C(limits) (the PodGroup's C(minResources) sums
    requests); with O(queue), sets the Volcano queue annotation. The same edit as the filter
    P(gangsched.kubeflow.trainer_runtime_gang#filter).
  - With O(jobset_defaults=true) (the default) it also spells out in the JobSet template what JobSet's mutating
    webhook would fill, only where unset, so the runtime works with or without that webhook.
  - Edits the runtime in place, or with O(gang_name) writes a gang-scheduled copy of it next to it and keeps that copy
    following the runtime on later runs.
  - The scheduler name is derived from the schedulers running, as for M(gangsched.kubeflow.operator_gang)
    (C(volcano) for Volcano; the Coscheduling profile of scheduler-plugins, C(scheduler-plugins-scheduler) as a second
    scheduler, C(default-scheduler) when it replaced the default one).
  - Before any change it checks that the runtime CRD (Trainer v2) and the PodGroup CRD of the chosen scheduler are
    Established, and that a scheduler serving the name runs; it warns when TrainJobs already use the edited runtime,
    since Trainer does not update their PodGroups.
  - The runtime is written whole (PUT) guarded by the resourceVersion it was read at; a concurrent edit is not lost,
    the write is redone from a fresh read.
author:
  - gangsched.kubeflow maintainers (@gangsched)
extends_documentation_fragment:
  - gangsched.kubeflow._k8s_auth
  - gangsched.kubeflow._api
  - gangsched.kubeflow._attributes
attributes:
  check_mode:
    support: full
    details: The write is sent as a server-side dry run, so the returned runtime is the API server's.
  diff_mode:
    support: full
    details: The runtime's labels, annotations and spec before and after (empty for a copy not yet made or deleted).
  idempotent:
    support: full
    details:
      - A second run with the same options reports RV(ignore:changed=false).
      - A copy made with O(gang_name) is written again only when the runtime it copies changed.
options:
  name:
    description:
      - The runtime to make gang-scheduled, as it is in the cluster (read from it).
      - Must be a valid name (DNS-1123 subdomain), checked before any API call.
    type: str
    required: true
  namespace:
    description:
      - Set, a namespaced C(TrainingRuntime) in this namespace; unset, a C(ClusterTrainingRuntime).
    type: str
  gang_name:
    description:
      - Write a gang-scheduled copy of O(name) under this name (same kind, same namespace) instead of editing O(name).
      - The copy carries the labels C(gangsched.kubeflow/gang-of=<name>) and
        C(app.kubernetes.io/managed-by=gangsched.kubeflow); a runtime of this name without the first (not made by
        this module), or made from another runtime, is refused.
      - The copy takes the runtime's spec, labels and annotations (not kubectl's last-applied configuration); a later
        run writes it again when the runtime changed.
    type: str
  gang_scheduler:
    description:
      - The gang scheduler of the TrainJobs.
      - V(koordinator) is refused before any API call. Koordinator forms a gang from labels on the pods, and its size
        would have to be each TrainJob's C(numNodes), which a runtime shared by TrainJobs of every size cannot hold;
        Trainer's podGroupPolicy has no Koordinator policy.
      - V(native) (kube-scheduler's own gang) is refused before any API call, as Trainer makes neither its Workload nor
        its PodGroup, nor sets C(spec.schedulingGroup) on the pods.
    type: str
    required: true
    choices: [volcano, scheduler_plugins, koordinator, native]
  scheduler_name:
    description:
      - The C(schedulerName) of the pods. Derived when not set (see description); must be V(volcano) or unset for
        Volcano.
      - A name that no running scheduler serves with Coscheduling is refused, as the pods would stay Pending forever.
      - With O(state=absent) and no O(gang_name), the name whose C(schedulerName) entries are removed; not checked
        against the running schedulers then.
    type: str
  schedule_timeout:
    description:
      - C(scheduleTimeoutSeconds) of the coscheduling policy (scheduler-plugins only); at least 1.
      - Default the runtime's own, else Trainer's 60. Ignored with a warning for Volcano.
    type: int
  queue:
    description:
      - The Volcano queue of the TrainJobs' PodGroups (the runtime annotation C(scheduling.volcano.sh/queue-name)).
      - Volcano only; refused with O(gang_scheduler=scheduler_plugins).
    type: str
  jobset_defaults:
    description:
      - Spell out in the written runtime's JobSet template what JobSet's mutating webhook would otherwise fill, only
        where unset. C(network) (C(enableDNSHostnames) and C(publishNotReadyAddresses) true), C(successPolicy)
        (operator C(All)), C(startupPolicy) (C(AnyOrder)), names of the failure policy's rules, the volume claim
        policies' C(retentionPolicy) (C(whenDeleted) C(Delete)), and for each replicated job the Job's
        C(completionMode) C(Indexed) and the pod's C(restartPolicy) C(OnFailure), as JobSet v0.11.1's webhook does.
      - Without the webhook the JobSet controller meets those fields unset and its Jobs are refused.
    type: bool
    default: true
  state:
    description:
      - V(present) makes the runtime (or its copy) gang-scheduled.
      - V(absent) with O(gang_name) deletes the copy (only one this module made of O(name); another is refused).
      - V(absent) without O(gang_name) takes the gang back from O(name) in place. It removes the
        C(podGroupPolicy) of O(gang_scheduler), and each pod template's C(schedulerName) where it is the
        scheduler name (O(scheduler_name), else derived); another policy is refused. Requests, the queue annotation and
        the JobSet fields stay, harmless without a gang. A runtime or CRD that is not there changes nothing.
    type: str
    choices: [present, absent]
    default: present
notes:
  - Trainer creates a TrainJob's PodGroup when the TrainJob starts and does not update it; a TrainJob already running
    keeps the gang (or none) it started with.
  - Trainer watches PodGroups only if their CRD existed when it started; restart its controller after installing a
    scheduler.
seealso:
  - module: gangsched.kubeflow.operator_gang
  - module: gangsched.kubeflow.gang_info
  - plugin: gangsched.kubeflow.trainer_runtime_gang
    plugin_type: filter
"""

EXAMPLES = r"""
---
- name: A gang-scheduled copy of the shipped torch runtime for the scheduler-plugins scheduler that runs
  gangsched.kubeflow.trainer_runtime_gang:
    name: torch-distributed
    gang_name: torch-distributed-gang
    gang_scheduler: scheduler_plugins
    schedule_timeout: 600

- name: A team's TrainingRuntime made gang-scheduled in place, for Volcano's queue research
  gangsched.kubeflow.trainer_runtime_gang:
    name: llm-finetune
    namespace: team-a
    gang_scheduler: volcano
    queue: research

- name: Remove the copy again
  gangsched.kubeflow.trainer_runtime_gang:
    name: torch-distributed
    gang_name: torch-distributed-gang
    gang_scheduler: scheduler_plugins
    state: absent
"""

RETURN = r"""
runtime:
  description:
    - The runtime (or copy) as written, or as it would be written in check mode (the API server's answer to a dry
      run), without C(metadata.managedFields); as it is when nothing changed.
    - Null when the copy was deleted or there is no such runtime.
  returned: always
  type: dict
  sample: {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
           "metadata": {"name": "torch-distributed-gang", "labels": {"gangsched.kubeflow/gang-of": "torch-distributed"}},
           "spec": {"podGroupPolicy": {"coscheduling": {"scheduleTimeoutSeconds": 600}}}}
changes:
  description:
    - What was changed (or would be, in check mode), in words; empty when nothing changed.
    - For a runtime edited in place or a new copy, the edits made to the runtime; for a copy written again, the
      fields of the copy that differ.
  returned: always
  type: list
  elements: str
  sample: ["podGroupPolicy coscheduling", "replicatedJob node: schedulerName scheduler-plugins-scheduler"]
gang_scheduler:
  description: The gang scheduler, as given.
  returned: always
  type: str
  sample: scheduler_plugins
scheduler_name:
  description:
    - The C(schedulerName) the runtime's pods carry (derived or given).
    - For O(state=absent) the name whose entries were removed; with O(gang_name), O(scheduler_name) as given.
  returned: always
  type: str
  sample: scheduler-plugins-scheduler
kind:
  description: The kind of the runtime, C(ClusterTrainingRuntime) or C(TrainingRuntime) (with O(namespace)).
  returned: always
  type: str
  sample: ClusterTrainingRuntime
diff:
  description: The runtime's labels, annotations and spec before and after; empty for a runtime that is not there.
  returned: when diff mode is on
  type: dict
  sample: {"before": {}, "after": {"metadata": {"labels": {}, "annotations": {}}, "spec": {}}}
"""

from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._cluster_entry import cluster_entry, with_auth
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._module_main import execute
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths._registry import GANG_PATHS
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners._trainer_runtime_gang import run


def argument_spec() -> dict:
    return with_auth(
        name=dict(type="str", required=True),
        namespace=dict(type="str"),
        gang_name=dict(type="str"),
        gang_scheduler=dict(type="str", required=True, choices=list(GANG_PATHS)),
        scheduler_name=dict(type="str"),
        schedule_timeout=dict(type="int"),
        queue=dict(type="str"),
        jobset_defaults=dict(type="bool", default=True),
        state=dict(type="str", default="present", choices=["present", "absent"]),
    )


def entry() -> dict:
    """The module's options and runner, for main() and the in-process action plugin."""
    return cluster_entry(argument_spec(), run)


def main() -> None:
    execute(entry())


if __name__ == "__main__":
    main()
