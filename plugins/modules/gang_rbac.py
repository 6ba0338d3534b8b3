#!/usr/bin/python
# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gang_rbac
short_description: Give a gang component's ServiceAccount the rights its gang scheduler needs, and no more
version_added: 0.1.0
description:
  - Applies a dedicated ClusterRole and ClusterRoleBinding, owned by this collection (label
    C(app.kubernetes.io/managed-by=gangsched.kubeflow)), named C(gangsched.kubeflow:<component>:<namespace>:<serviceaccount>),
    so an operator upgrade that rewrites its own ClusterRole does not drop them.
  - The rules come from a table per component and gang scheduler (PodGroups in the scheduler's API group,
    C(podgroups/status), queues, csinodes, volumeattachments and so on), never C('*'/'*'/'*').
  - With O(verify=true), every required (verb, API group, resource) is checked with a SubjectAccessReview
    as the ServiceAccount before and after, returned as RV(missing_before) and RV(missing_after). The reviews are sent
    eight at a time, each bounded by O(api_timeout).
  - A wildcard in O(extra_rules) is refused unless O(allow_wildcard=true), and then warned about.
author:
  - gangsched.kubeflow maintainers (@gangsched)
extends_documentation_fragment:
  - gangsched.kubeflow._k8s_auth
  - gangsched.kubeflow._api
  - gangsched.kubeflow._attributes
attributes:
  check_mode:
    support: full
    details: Writes are server-side dry runs; RV(missing_after) is predicted from the rules.
  diff_mode:
    support: full
    details: The ClusterRole's rules and the binding's subjects before and after.
  idempotent:
    support: full
options:
  component:
    description: The component whose ServiceAccount gets the rights.
    type: str
    required: true
    choices:
      - training_operator
      - mpi_operator
      - volcano_scheduler
      - volcano_controllers
      - scheduler_plugins_scheduler
      - scheduler_plugins_controller
      - koord_scheduler
      - trainer
      - jobset
      - kueue
  gang_scheduler:
    description:
      - The gang scheduler in use. Required for the operators and for Kubeflow Trainer v2 (V(trainer), V(jobset));
        the schedulers' own components imply it.
      - For V(trainer), the PodGroups of that scheduler's group are writable and the other group's readable (Trainer
        watches the PodGroups of every kind whose CRD exists when it starts). V(jobset) has the same rights for both.
      - V(native) (kube-scheduler's own gang) is refused before any change, as no Kubeflow component writes its Workloads
        and PodGroups, and kube-scheduler's own rights on them are Kubernetes' bootstrap RBAC.
      - V(kueue) needs none, and takes any - its rights (its queues, the jobs it admits) are the same in front of every
        gang path.
    type: str
    choices: [volcano, scheduler_plugins, koordinator, native]
  service_account:
    description:
      - The ServiceAccount the component's pods run as. Defaults per component (for example C(kubeflow/training-operator)).
      - Its namespace must be a DNS-1123 label and its name a DNS-1123 subdomain, checked before any API call.
    type: dict
    suboptions:
      namespace:
        description: Its namespace.
        type: str
      name:
        description: Its name.
        type: str
  state:
    description: V(absent) removes the ClusterRole and ClusterRoleBinding this module made.
    type: str
    default: present
    choices: [present, absent]
  extra_rules:
    description:
      - More PolicyRules to add to the ClusterRole (C(apiGroups), C(resources), C(verbs), C(resourceNames), or
        C(nonResourceURLs) and C(verbs)).
      - Each rule is checked as the API server would before anything is written; an unknown field, an entry
        that is not a string, an empty entry, a resource rule without C(apiGroups) (V('') is the core group) or
        a rule mixing C(nonResourceURLs) with resources fails the task naming the rule.
    type: list
    elements: dict
    default: []
  allow_wildcard:
    description:
      - Accept a wildcard in O(extra_rules), and warn about it.
      - A wildcard is any C(*) in C(apiGroups), C(resources), C(verbs) or C(nonResourceURLs), alone or inside
        an entry (C(pods/*) grants every subresource of pods, C(*/scale) the scale subresource of every
        resource, C(/metrics/*) every URL under it). C(resourceNames) are compared literally by the API server
        and are not wildcards.
    type: bool
    default: false
  verify:
    description: Check the required rights with SubjectAccessReview before and after (needs C(create) on subjectaccessreviews).
    type: bool
    default: true
notes:
  - Granting rights to an operator that was already refused does not restart the jobs it was refused on;
    training-operator v1.8.1 does not retry a job whose PodGroup it could not read, so such a job waits for
    its next change. Resubmit those jobs or change them (an annotation is enough), or restart the operator.
    The C(gangsched.kubeflow.kubeflow_gang) role grants the rights before it sets the gang flag, so the
    operator never runs gang-enabled without them.
seealso:
  - module: gangsched.kubeflow.operator_gang
  - module: kubernetes.core.k8s
"""

EXAMPLES = r"""
---
- name: training-operator may manage Volcano PodGroups
  gangsched.kubeflow.gang_rbac:
    component: training_operator
    gang_scheduler: volcano

- name: The second scheduler's rights, its ServiceAccount named explicitly
  gangsched.kubeflow.gang_rbac:
    component: scheduler_plugins_scheduler
    service_account:
      namespace: scheduler-plugins
      name: scheduler-plugins-scheduler

- name: Remove what the collection granted
  gangsched.kubeflow.gang_rbac:
    component: mpi_operator
    gang_scheduler: volcano
    state: absent
"""

RETURN = r"""
cluster_role:
  description: Name of the ClusterRole (and of the ClusterRoleBinding).
  returned: always
  type: str
  sample: gangsched.kubeflow:training_operator:kubeflow:training-operator
cluster_role_binding:
  description: Name of the ClusterRoleBinding.
  returned: always
  type: str
  sample: gangsched.kubeflow:training_operator:kubeflow:training-operator
service_account:
  description: The ServiceAccount, as namespace/name.
  returned: always
  type: str
  sample: kubeflow/training-operator
gang_scheduler:
  description: The gang scheduler the rules are for.
  returned: always
  type: str
  sample: volcano
rules:
  description: The ClusterRole's rules (empty for O(state=absent)).
  returned: always
  type: list
  elements: dict
  sample: [{"apiGroups": ["scheduling.volcano.sh"], "resources": ["podgroups"], "verbs": ["create", "get"]}]
missing_before:
  description: Required rights the ServiceAccount lacked before, as C(verb group/resource); null without O(verify).
  returned: always
  type: list
  elements: str
  sample: ["create scheduling.volcano.sh/podgroups"]
missing_after:
  description: Required rights it lacks afterwards (empty for O(state=present)); null without O(verify).
  returned: always
  type: list
  elements: str
  sample: []
diff:
  description: Rules and subjects before and after.
  returned: when diff mode is on
  type: dict
  sample: {"before": {"rules": null, "subjects": null}, "after": {"rules": [], "subjects": []}}
"""

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._rbac import COMPONENTS
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._cluster_entry import cluster_entry, with_auth
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._module_main import execute
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths._registry import GANG_PATHS
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners._gang_rbac import run


def argument_spec() -> dict:
    return with_auth(
        component=dict(type="str", required=True, choices=list(COMPONENTS)),
        gang_scheduler=dict(type="str", choices=list(GANG_PATHS)),
        service_account=dict(type="dict", options=dict(namespace=dict(type="str"), name=dict(type="str"))),
        state=dict(type="str", default="present", choices=["present", "absent"]),
        extra_rules=dict(type="list", elements="dict", default=[]),
        allow_wildcard=dict(type="bool", default=False),
        verify=dict(type="bool", default=True),
    )


def entry() -> dict:
    """The module's options and runner, for main() and the in-process action plugin."""
    return cluster_entry(argument_spec(), run)


def main() -> None:
    execute(entry())


if __name__ == "__main__":
    main()
