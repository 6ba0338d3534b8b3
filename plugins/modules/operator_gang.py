#!/usr/bin/python
# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: operator_gang
short_description: Ensure the gang-scheduling flag of a Kubeflow operator Deployment
version_added: 0.1.0
description:
  - Sets, changes or removes the gang-scheduling flag of training-operator (C(--gang-scheduler-name), in
    the container's C(command)), mpi-operator (C(--gang-scheduling), in C(args)) or the legacy tf-operator
    (C(--enable-gang-scheduling=true)).
  - The flag is found in C(command) B(or) C(args), as C(--flag=value), C(--flag value) or with one dash;
    it is replaced in place, duplicates are collapsed to one, and it is never appended twice.
  - The value is derived from the scheduler actually running unless O(scheduler_name) is given;
    C(volcano) for Volcano, or the profile name of the scheduler-plugins scheduler that runs
    Coscheduling (C(scheduler-plugins-scheduler) for a second scheduler, C(default-scheduler) when it
    replaced the default one).
  - Before any change it checks that the PodGroup CRD of the chosen scheduler is Established (the
    operator exits at start without it), that training-operator would not serve MPIJob next to
    mpi-operator's v2beta1 CRD, and warns when no running scheduler serves the name.
  - A concurrent edit of the Deployment is not lost; the patch is retried from a fresh read.
  - Before any API write it refuses, changing nothing, a container whose image is not the named operator
    (see O(expected_image)) and a container whose operator runs through a shell (C(sh -c), C(bash -lc),
    C(busybox sh -c), a script file, also behind C(tini), C(dumb-init), C(catatonit), s6-overlay's C(/init),
    C(env), C(gosu) or C(su-exec)), since the flag would land outside the script. A wrapper directly around
    the operator binary (C(tini -- /manager)) is fine; the flag goes after the binary.
author:
  - gangsched.kubeflow maintainers (@gangsched)
extends_documentation_fragment:
  - gangsched.kubeflow._k8s_auth
  - gangsched.kubeflow._api
  - gangsched.kubeflow._attributes
attributes:
  check_mode:
    support: full
    details: The patch is sent as a server-side dry run, so the returned command/args are the API server's.
  diff_mode:
    support: full
    details: The container's name, command and args before and after.
  idempotent:
    support: full
    details: A second run with the same options reports RV(ignore:changed=false).
options:
  operator:
    description: Which operator the Deployment runs.
    type: str
    required: true
    choices: [training_operator, mpi_operator, tf_operator]
  gang_scheduler:
    description:
      - The gang scheduler the operator should create PodGroups for.
      - V(none) removes the flag.
      - V(koordinator), or a O(scheduler_name) that a running koord-scheduler serves, is refused before any change, as
        the operators' PodGroups are of kinds koord-scheduler ignores, so a job would start partially. Koordinator
        gangs are formed by labels on the pod templates (filter P(gangsched.kubeflow.label_gang#filter)), with no
        operator flag.
      - V(native) (kube-scheduler's own gang, Workload and PodGroup of C(scheduling.k8s.io)) is refused before any
        change, as no Kubeflow operator can put its pods in one yet (filter P(gangsched.kubeflow.native_gang#filter) for
        pods and Jobs you submit yourself).
      - V(original) puts back the container's command and args as they were before this module first
        changed them (recorded then in the Deployment annotation C(gangsched.kubeflow/original-argv)) and
        drops the record; with nothing recorded, or no such Deployment (an uninstall where the operator
        never ran), it changes nothing and warns.
    type: str
    required: true
    choices: [volcano, scheduler_plugins, koordinator, native, none, original]
  scheduler_name:
    description:
      - The flag's value. Derived when not set (see description); must be V(volcano) or unset for Volcano.
    type: str
  namespace:
    description:
      - Namespace of the Deployment. Defaults to V(kubeflow) (training_operator, tf_operator) or V(mpi-operator).
      - Must be a valid namespace name (DNS-1123 label), checked before any API call.
    type: str
  name:
    description:
      - Name of the Deployment. Defaults to V(training-operator), V(mpi-operator) or V(tf-job-operator).
      - Must be a valid Deployment name (DNS-1123 subdomain), checked before any API call.
    type: str
  container:
    description:
      - Container to edit. Defaults to the operator's usual container name, or the only container.
      - Must be a valid container name (DNS-1123 label).
    type: str
  expected_image:
    description:
      - The image the container must run, for a build of the operator published under another name.
      - Compared on the last path components of the container's image; the registry host, any mirror path
        in front, the tag and the digest are ignored (V(mycorp/trainer) matches
        C(registry.example.com:5000/mirror/mycorp/trainer:v1@sha256:...)).
      - When not set, the image must be named after the operator, under any registry and path
        (C(training-operator) as in C(kubeflow/training-operator), C(mpi-operator) as in
        C(mpioperator/mpi-operator), C(tf-operator) or C(tf_operator)); any other image (for example
        C(volcanosh/vc-scheduler)) is refused before anything is changed.
      - Not checked for O(gang_scheduler=original), which only puts back what this module recorded.
    type: str
    version_added: 0.1.0
  wait:
    description: After a change, wait until the rollout is complete and the new pod is available.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait for the rollout; at least 1 when O(wait=true), checked before any change.
    type: int
    default: 120
seealso:
  - module: gangsched.kubeflow.gang_rbac
  - module: gangsched.kubeflow.gang_info
  - module: kubernetes.core.k8s
"""

EXAMPLES = r"""
---
- name: Point training-operator at Volcano
  gangsched.kubeflow.operator_gang:
    operator: training_operator
    gang_scheduler: volcano
    wait: true

- name: mpi-operator with the scheduler-plugins scheduler that is running (name derived)
  gangsched.kubeflow.operator_gang:
    operator: mpi_operator
    gang_scheduler: scheduler_plugins
    kubeconfig: ~/.kube/config
    context: gpu-cluster

- name: Remove the gang flag again
  gangsched.kubeflow.operator_gang:
    operator: training_operator
    gang_scheduler: none

- name: Put training-operator's command back as it was before the first change
  gangsched.kubeflow.operator_gang:
    operator: training_operator
    gang_scheduler: original
"""

RETURN = r"""
deployment:
  description: The Deployment edited, as namespace/name.
  returned: always
  type: str
  sample: kubeflow/training-operator
container:
  description: The container edited.
  returned: always
  type: str
  sample: training-operator
flag:
  description: The flag now in effect, or null when it was removed.
  returned: always
  type: str
  sample: --gang-scheduler-name=scheduler-plugins-scheduler
previous:
  description: The flag's value before the change (the last occurrence, as the operator reads it), or null.
  returned: always
  type: str
  sample: scheduler-plugins
occurrences_before:
  description: How many times the flag appeared before (more than one is collapsed to one).
  returned: always
  type: int
  sample: 2
conflicts_retried:
  description:
    - How many times the guarded write met a concurrent change (HTTP 409) and was redone from a fresh read.
    - The other writer's change is kept; after 6 conflicts in a row the task fails naming the Deployment.
  returned: always
  type: int
  sample: 0
scheduler_name:
  description: The scheduler name the flag carries (derived or given); null for O(gang_scheduler=none).
  returned: always
  type: str
  sample: volcano
command:
  description: The container's command after the change (as the API server returned it).
  returned: always
  type: list
  elements: str
  sample: [/manager, --gang-scheduler-name=volcano]
args:
  description: The container's args after the change.
  returned: always
  type: list
  elements: str
  sample: [--lock-namespace=mpi-operator, --gang-scheduling=volcano]
diff:
  description: Container name, command and args before and after.
  returned: when diff mode is on
  type: dict
  sample: {"before": {"args": null, "command": ["/manager"]}, "after": {"command": ["/manager", "--gang-scheduler-name=volcano"]}}
"""

from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._cluster_entry import cluster_entry, with_auth
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._module_main import execute
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths._registry import GANG_PATHS
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners._operator_gang import run


def argument_spec() -> dict:
    return with_auth(
        operator=dict(type="str", required=True, choices=["training_operator", "mpi_operator", "tf_operator"]),
        gang_scheduler=dict(type="str", required=True, choices=[*GANG_PATHS, "none", "original"]),
        scheduler_name=dict(type="str"),
        namespace=dict(type="str"),
        name=dict(type="str"),
        container=dict(type="str"),
        expected_image=dict(type="str"),
        wait=dict(type="bool", default=False),
        wait_timeout=dict(type="int", default=120),
    )


def entry() -> dict:
    """The module's options and runner, for main() and the in-process action plugin."""
    return cluster_entry(argument_spec(), run)


def main() -> None:
    execute(entry())


if __name__ == "__main__":
    main()
