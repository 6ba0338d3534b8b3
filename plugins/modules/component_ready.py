#!/usr/bin/python
# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: component_ready
short_description: Wait in one task until a component's CRDs, workloads and admission webhooks are ready
version_added: 0.1.0
description:
  - Reads each named object once; those not ready yet are read again once a second until they are, or until
    O(wait_timeout) has passed. One task for what would otherwise be a C(kubernetes.core.k8s_info) wait per object.
  - Ready means, per kind, a CustomResourceDefinition C(Established); a Deployment rolled out as C(kubectl rollout status)
    has it (every replica of its current spec updated and available, no old one left); a DaemonSet with every desired pod
    ready and updated; a Service with a ready endpoint in its EndpointSlices (where the API server calls a webhook); an
    admission webhook configuration whose every webhook carries a C(caBundle) (the CA its server injects at start); a
    namespace, a ServiceAccount or a Secret once it exists (the objects a component's apply depends on, read before it).
    Status counts only once the controller has seen the object's current generation.
  - Reads only; never changes anything, so C(changed) is always false.
author:
  - gangsched.kubeflow maintainers (@gangsched)
extends_documentation_fragment:
  - gangsched.kubeflow._k8s_auth
  - gangsched.kubeflow._api
  - gangsched.kubeflow._attributes
attributes:
  check_mode:
    support: full
    details: Reads and waits as in a normal run.
  diff_mode:
    support: none
  idempotent:
    support: full
options:
  crds:
    description: Names of CustomResourceDefinitions that must be Established.
    type: list
    elements: str
    default: []
  namespace:
    description:
      - The namespace of O(deployments), O(daemonsets), O(daemonset_selector), O(services), O(service_accounts) and
        O(secrets). Required with any of them.
    type: str
  deployments:
    description: Names of Deployments in O(namespace) that must be rolled out.
    type: list
    elements: str
    default: []
  daemonsets:
    description: Names of DaemonSets in O(namespace) whose every desired pod must be ready and updated.
    type: list
    elements: str
    default: []
  daemonset_selector:
    description:
      - A label selector (C(app.kubernetes.io/instance=gpu)) of DaemonSets in O(namespace); at least one must have
        it, and every one that has it must be ready as those of O(daemonsets) are. For DaemonSets whose names a chart
        chooses.
    type: str
  allocatable:
    description:
      - Resources (C(nvidia.com/gpu)) whose allocatable amounts over all nodes must add up to at least the given
        number, for example once a device plugin has registered its devices.
      - The nodes are listed again at most once every C(nodes / 100) seconds (once a second up to 100 nodes).
    type: dict
    default: {}
  services:
    description: Names of Services in O(namespace) that must have a ready endpoint.
    type: list
    elements: str
    default: []
  mutating_webhook_configurations:
    description: Names of MutatingWebhookConfigurations whose every webhook must carry a C(caBundle).
    type: list
    elements: str
    default: []
  validating_webhook_configurations:
    description: Names of ValidatingWebhookConfigurations whose every webhook must carry a C(caBundle).
    type: list
    elements: str
    default: []
  namespaces:
    description: Names of namespaces that must exist.
    type: list
    elements: str
    default: []
  service_accounts:
    description: Names of ServiceAccounts in O(namespace) that must exist.
    type: list
    elements: str
    default: []
  secrets:
    description:
      - Names of Secrets in O(namespace) that must exist. In RV(objects) a Secret comes without its C(data) and
        C(stringData).
    type: list
    elements: str
    default: []
  wait:
    description:
      - Wait for what is not ready. With V(false), one read, reported in RV(not_ready), and the task does not fail.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait, in all; when it has passed and something is not ready, the task fails naming it.
    type: int
    default: 300
  return_objects:
    description:
      - Also return the objects as last read, in RV(objects), so that a play needs no second read of them (for
        example to see a Deployment's image or conditions). Services are not among them (their readiness is read from
        their EndpointSlices).
    type: bool
    default: false
seealso:
  - module: kubernetes.core.k8s_info
"""

EXAMPLES = r"""
---
- name: Volcano ready (CRDs, Deployments, webhooks with their CA)
  gangsched.kubeflow.component_ready:
    crds: [podgroups.scheduling.volcano.sh, queues.scheduling.volcano.sh]
    namespace: volcano-system
    deployments: [volcano-scheduler, volcano-controllers, volcano-admission]
    mutating_webhook_configurations: [volcano-admission-service-pods-mutate]
    validating_webhook_configurations: [volcano-admission-service-pods-validate]
    wait_timeout: 300

- name: A chart's DaemonSets (found by their label) ready, and the GPUs they advertise allocatable
  gangsched.kubeflow.component_ready:
    namespace: nvidia-device-plugin
    daemonset_selector: app.kubernetes.io/instance=nvidia-device-plugin
    allocatable:
      nvidia.com/gpu: 8
    wait_timeout: 300

- name: What is not ready now, without waiting
  gangsched.kubeflow.component_ready:
    namespace: nvidia-device-plugin
    daemonsets: [nvidia-device-plugin]
    wait: false
  register: gpu_plugin_now
- name: A Deployment as it runs now (its image, its conditions), in the same read
  gangsched.kubeflow.component_ready:
    namespace: kubeflow
    deployments: [training-operator]
    wait: false
    return_objects: true
  register: operator_now
"""

RETURN = r"""
ready:
  description:
    - The named objects that are ready, as C(Kind name) or C(Kind namespace/name); C(DaemonSets namespace -l selector)
      for O(daemonset_selector), C(Nodes' allocatable resource) for each of O(allocatable).
  returned: always
  type: list
  elements: str
  sample: ["CustomResourceDefinition podgroups.scheduling.volcano.sh", "Deployment volcano-system/volcano-scheduler"]
not_ready:
  description: Those that are not ready at the end, each with why; empty after a successful wait.
  returned: always
  type: list
  elements: dict
  contains:
    object:
      description: The object, as C(Kind name) or C(Kind namespace/name).
      type: str
      returned: always
      sample: Deployment volcano-system/volcano-admission
    why:
      description: What it still lacks (C(not found), C(not Established yet), C(0 of 1 updated replicas available) ...).
      type: str
      returned: always
      sample: 0 of 1 updated replicas available
  sample: []
waited_for:
  description: The objects that were not ready at the first read, so waited for (empty with O(wait=false)).
  returned: always
  type: list
  elements: str
  sample: []
objects:
  description:
    - With O(return_objects=true), the named objects that were found, each as last read, in the order of the options;
      those not found are not in the list. Services are not in it; Secrets are, without their data; the DaemonSets of
      O(daemonset_selector) are, as one C(DaemonSetList); the nodes are not.
  returned: when O(return_objects=true)
  type: list
  elements: dict
  sample: [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "training-operator", "namespace": "kubeflow"}}]
seconds:
  description: Seconds from the first read to the last.
  returned: always
  type: float
  sample: 0.08
"""

from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._cluster_entry import cluster_entry, with_auth
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._module_main import execute
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners._component_ready import run


def argument_spec() -> dict:
    names = dict(type="list", elements="str", default=[])
    return with_auth(
        crds=dict(names),
        namespace=dict(type="str"),
        deployments=dict(names),
        daemonsets=dict(names),
        daemonset_selector=dict(type="str"),
        allocatable=dict(type="dict", default={}),
        services=dict(names),
        mutating_webhook_configurations=dict(names),
        validating_webhook_configurations=dict(names),
        namespaces=dict(names),
        service_accounts=dict(names),
        # the Secrets' names, not their content (which the module never returns)
        secrets=dict(names, no_log=False),
        wait=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=300),
        return_objects=dict(type="bool", default=False),
    )


def entry() -> dict:
    """The module's options and runner, for main() and the in-process action plugin."""
    return cluster_entry(argument_spec(), run, minimums={"wait_timeout": 0})


def main() -> None:
    execute(entry())


if __name__ == "__main__":
    main()
