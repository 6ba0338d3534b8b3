#!/usr/bin/python
# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: drift
short_description: Tell which Kubernetes objects an apply would change (as kubectl diff does), or whether Helm would upgrade a release
version_added: 0.1.0
description:
  - Reads each object of O(definition), then sends it as a server-side apply in dry run (conflicts forced, field manager
    C(gangsched.kubeflow-drift); nothing is stored) and compares the object the API server would store with the one it
    holds, leaving out what every write changes (C(resourceVersion), C(generation), C(managedFields)). This is how
    C(kubectl diff) asks.
  - An object drifted when it is not found, when its kind is not served, when the dry run would change it or is refused
    for the object's content, or, with O(last_applied=true), when its C(kubectl.kubernetes.io/last-applied-configuration)
    annotation is not the definition. Any other failure (unreachable, forbidden) fails the task naming the object.
  - For O(helm_release), the release drifted when Helm holds no deployed last revision of it, or one of another chart
    name, version or appVersion, or of other values than O(helm_release.release_values). This is the check
    C(kubernetes.core.helm) makes before an upgrade when the helm-diff plugin is not installed, made here from the
    release's Secret (Helm's default storage) in one read. A release stored elsewhere counts as not installed.
  - Made to skip an apply that would change nothing, for example a C(kubernetes.core.k8s) task run only when RV(drifted)
    is not empty. The apply itself stays with that module.
  - The objects are asked about eight at a time (each a read and a dry run, each bounded by O(api_timeout)), so that
    on a cluster a round trip away N objects take about N / 8 pairs of round trips. The first failure in the order of
    O(definition) fails the task, and the objects not asked yet are not asked.
  - Reads and dry runs only; never changes anything, so C(changed) is always false.
author:
  - gangsched.kubeflow maintainers (@gangsched)
extends_documentation_fragment:
  - gangsched.kubeflow._k8s_auth
  - gangsched.kubeflow._api
  - gangsched.kubeflow._attributes
attributes:
  check_mode:
    support: full
    details: Reads and sends dry runs as in a normal run.
  diff_mode:
    support: full
    details: Each drifted object as the API server holds it and as an apply would leave it.
  idempotent:
    support: full
options:
  definition:
    description:
      - The objects, each with its C(apiVersion), C(kind), C(metadata.name) and, for a namespaced kind,
        C(metadata.namespace); as given to C(kubernetes.core.k8s).
      - At least one of O(definition) and O(helm_release) is required.
    type: list
    elements: dict
  helm_release:
    description: A Helm release, with the options of C(kubernetes.core.helm) that tell what it should be.
    type: dict
    suboptions:
      release_name:
        description: The release's name.
        type: str
        required: true
      release_namespace:
        description: Its namespace.
        type: str
        required: true
      chart_ref:
        description:
          - The chart, a local chart directory or archive (its C(Chart.yaml) is read) or, with O(helm_release.chart_repo_url),
            a chart's name in that repository.
        type: str
        required: true
      chart_repo_url:
        description: The chart repository; O(helm_release.chart_ref) is then a chart's name in it.
        type: str
      chart_version:
        description: The chart version wanted from the repository; required with O(helm_release.chart_repo_url).
        type: str
      release_values:
        description: The values the release should have been given.
        type: dict
        default: {}
  last_applied:
    description:
      - Also count an object as drifted when its C(kubectl.kubernetes.io/last-applied-configuration) annotation is not
        exactly the definition. Set it where the apply is client-side (C(kubernetes.core.k8s) with C(apply=true),
        C(kubectl apply)), which removes fields by that annotation.
    type: bool
    default: false
seealso:
  - module: kubernetes.core.k8s
  - module: kubernetes.core.helm
  - module: gangsched.kubeflow.component_ready
"""

EXAMPLES = r"""
---
- name: Which of the operator's objects an apply would change
  gangsched.kubeflow.drift:
    definition: "{{ lookup('ansible.builtin.template', 'operator.yaml.j2') | ansible.builtin.from_yaml_all | select | list }}"
    last_applied: true
  register: operator_drift

- name: Apply them, only when something drifted
  kubernetes.core.k8s:
    definition: "{{ lookup('ansible.builtin.template', 'operator.yaml.j2') | ansible.builtin.from_yaml_all | select | list }}"
    apply: true
  when: operator_drift.drifted | length > 0

- name: Does Helm have an upgrade to make?
  gangsched.kubeflow.drift:
    helm_release:
      release_name: volcano
      release_namespace: volcano-system
      chart_ref: volcano
      chart_repo_url: https://volcano-sh.github.io/helm-charts
      chart_version: 1.10.0
      release_values: {custom: {admission_enable: true}}
  register: volcano_drift
"""

RETURN = r"""
drifted:
  description: The objects an apply would change, in the order given, each with why.
  returned: always
  type: list
  elements: dict
  contains:
    object:
      description: The object, as C(Kind name) or C(Kind namespace/name).
      type: str
      returned: always
      sample: Queue default
    why:
      description:
        - C(not found), C(kind K of G/V is not served), C(namespaced, but no metadata.namespace given),
          C(its last-applied configuration is not this definition), C(an apply would change it), or
          C(a server-side dry run was refused) followed by the HTTP status and the server's reason in brackets (for
          the object's content, with 400, 409, 415, 422, or the 500 kube-apiserver answers a field of the wrong type
          with; the apply itself then tells).
        - For a Helm release (C(Helm release namespace/name)), C(not installed), C(its last revision is S, not deployed),
          C(chart N-V runs, not N-W), C(appVersion A runs, not B), or C(its values are not release_values).
      type: str
      returned: always
      sample: an apply would change it
  sample: [{"object": "Queue default", "why": "an apply would change it"}]
same:
  description: The objects an apply would leave as they are.
  returned: always
  type: list
  elements: str
  sample: ["ClusterRole training-operator", "Service kubeflow/training-operator"]
diff:
  description:
    - Each drifted object as held (empty when not found) and as the dry run would leave it, as YAML. A Helm release is
      not in it.
  returned: when diff mode is on
  type: dict
  sample: {"before": "# Queue default\nspec:\n  weight: 1\n", "after": "# Queue default\nspec:\n  weight: 2\n"}
"""

from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._cluster_entry import cluster_entry, with_auth
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._module_main import execute
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners._drift import run


def argument_spec() -> dict:
    return with_auth(
        definition=dict(type="list", elements="dict"),
        helm_release=dict(
            type="dict",
            options=dict(
                release_name=dict(type="str", required=True),
                release_namespace=dict(type="str", required=True),
                chart_ref=dict(type="str", required=True),
                chart_repo_url=dict(type="str"),
                chart_version=dict(type="str"),
                release_values=dict(type="dict", default={}),
            ),
            required_by={"chart_repo_url": "chart_version"},
        ),
        last_applied=dict(type="bool", default=False),
    )


def entry() -> dict:
    """The module's options and runner, for main() and the in-process action plugin."""
    return cluster_entry(argument_spec(), run, required_one_of=[("definition", "helm_release")])


def main() -> None:
    execute(entry())


if __name__ == "__main__":
    main()
