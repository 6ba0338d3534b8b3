#!/usr/bin/python
# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: render_manifests
short_description: Write Kubernetes objects to a directory, one YAML file each, in one step
version_added: 0.1.0
description:
  - Writes each object of O(objects), of O(documents) and of the output of O(chart) to O(path) as
    C(<kind>-<namespace>-<name>.yaml) (cluster-scoped objects C(<kind>-<name>.yaml)), lower case, the name the
    filter P(gangsched.kubeflow.manifest_filename#filter) gives.
  - A file is written only when its text changes, atomically (a temporary file in the same directory, then a
    rename), so a GitOps repository sees only real changes.
  - With O(prune=true), every other C(*.yaml) file in O(path) is removed, so an object no longer rendered leaves
    no file behind. Other files are left alone.
  - Every object is checked before anything is written; an entry without a kind or a name, or two different objects
    that would share a file, fail the task naming the entry and write nothing (the same object twice is written once).
  - The roles' render-only mode writes through it, one task per component instead of one per object.
  - With O(chart), the module runs C(helm template) itself, on the host the task runs on, and writes the chart's
    objects as it writes the others, in the same task. It is what M(kubernetes.core.helm_template) runs for the
    same options (no hooks left out, no CRDs of the chart's C(crds/) directory added), without that module's
    own process and without the chart's output going through Ansible's variables; but the values reach Helm as
    JSON, where a string stays a string (Helm reads a values file as YAML 1.1, where an unquoted C(y) is true).
  - An object of O(objects) is written as YAML with sorted keys, an indent of 2 and no folding of long strings,
    which the C and the pure-Python emitters of PyYAML write alike (the C one is used when present).
  - A document of O(documents) or of the chart's output is written as it came, its own lines (comments between
    them included; a comment before it, such as the Source line Helm writes, left out; the blank lines that end it
    left out too, which Helm 4's C(helm template) keeps and Helm 3's trimmed, so that either writes the same files,
    unless its last value is a block scalar that keeps them, C(|+) or C(>+)). A CRD file's document is
    upstream's text, and a review of a new version sees upstream's own diff. A document that does not stand alone
    as it came (a flow mapping, a root that does not start its line, a text with C(%) directives) is written as an
    object is. The same object given twice is written once, as given first.
author:
  - gangsched.kubeflow maintainers (@gangsched)
extends_documentation_fragment:
  - gangsched.kubeflow._attributes
attributes:
  platform:
    description: Writes files on the host the task runs on.
    support: full
    platforms: posix
  check_mode:
    support: full
    details: Reports the files that would be written or removed and writes nothing.
  diff_mode:
    support: full
    details: The text of each file written or removed, before and after.
  idempotent:
    support: full
    details: A second run with the same objects writes nothing and reports RV(ignore:changed=false).
options:
  path:
    description: The directory (created, with its parents, when missing).
    type: path
    required: true
  objects:
    description: The Kubernetes objects, each with C(kind) and C(metadata.name).
    type: list
    elements: dict
    default: []
  documents:
    description:
      - YAML texts of Kubernetes objects, one or more documents each (a chart's C(helm template) output, a CRD file's
        text), parsed on the host; empty documents are skipped. Their objects follow those of O(objects).
      - Large objects (CRDs) are much cheaper to pass this way than parsed into O(objects), which Ansible templates
        and checks entry by entry. The result's C(invocation) gives each text's size, not the text.
    type: list
    elements: str
    default: []
    version_added: 0.1.0
  chart:
    description:
      - A Helm chart whose C(helm template) output is written too, after O(objects) and O(documents).
      - The chart is rendered even in check mode (C(helm template) changes nothing but Helm's own cache of a
        repository's charts).
    type: dict
    version_added: 0.1.0
    suboptions:
      chart_ref:
        description: A local chart directory or C(.tgz) (C(~) is expanded, as in
          M(kubernetes.core.helm_template)), or the chart's name in O(chart.chart_repo_url).
        type: path
        required: true
      chart_repo_url:
        description: The chart repository's URL (C(helm template --repo)); none for a local chart.
        type: str
      chart_version:
        description: The chart version to fetch from O(chart.chart_repo_url) (C(helm template --version)).
        type: str
      release_name:
        description: The release name the chart is rendered for.
        type: str
        required: true
      release_namespace:
        description: The namespace the chart is rendered for (C(helm template --namespace)).
        type: str
        required: true
      release_values:
        description: The chart's values, passed to C(helm template) as a values file.
        type: dict
        default: {}
      binary_path:
        description: The C(helm) binary; the one on the C(PATH) when not set.
        type: path
  timeout:
    description: Seconds C(helm template) may take (O(chart)), more than 0; past them the task fails and nothing is
      written.
    type: int
    default: 120
    version_added: 0.1.0
  prune:
    description: Remove the C(*.yaml) files in O(path) that are not among the objects' files.
    type: bool
    default: true
  remove_dirs:
    description:
      - Names of directories in O(path) whose C(*.yaml) files go (those of their subdirectories too), each directory
        with its last file; other files stay, and so does their directory.
      - For what an earlier render left beside this one's. C(render.yml) passes the collection's component
        directories of the roles its run does not render (another gang path's, say C(20-volcano) once
        C(koordinator) is chosen), with O(path) its C(gangsched_render_dir), no objects and O(prune=false).
      - Each a name, not a path (no C(/)). A name that is no directory, or is a link, is left as it is.
    type: list
    elements: str
    default: []
    version_added: 0.1.0
requirements:
  - PyYAML on the host the task runs on
  - Helm 3 on the host the task runs on, for O(chart)
"""

EXAMPLES = r"""
- name: What the Volcano role would apply, for a GitOps repository
  gangsched.kubeflow.render_manifests:
    path: rendered/20-volcano
    objects: "{{ lookup('ansible.builtin.template', 'volcano.yaml.j2') | ansible.builtin.from_yaml_all | select | list }}"

- name: A CRD file, parsed by the module
  gangsched.kubeflow.render_manifests:
    path: rendered/20-volcano
    documents:
      - "{{ lookup('ansible.builtin.file', 'crds/queues.yaml') }}"

- name: What an earlier render of another gang path left beside this one, removed
  gangsched.kubeflow.render_manifests:
    path: rendered
    prune: false
    remove_dirs: [20-volcano, 30-kubeflow-gang]

- name: A namespace and what a chart of a repository renders in it
  gangsched.kubeflow.render_manifests:
    path: rendered/10-gpu-device-plugin
    objects: [{apiVersion: v1, kind: Namespace, metadata: {name: nvidia-device-plugin}}]
    chart:
      chart_ref: nvidia-device-plugin
      chart_repo_url: https://nvidia.github.io/k8s-device-plugin
      chart_version: 0.19.0
      release_name: nvidia-device-plugin
      release_namespace: nvidia-device-plugin
      release_values:
        nodeSelector:
          nvidia.com/gpu.present: "true"
"""

RETURN = r"""
path:
  description: The directory, as given.
  returned: always
  type: str
  sample: rendered/20-volcano
files:
  description: The file names of all the objects, in the order of O(objects), then of O(documents), then of O(chart).
  returned: always
  type: list
  elements: str
  sample: [namespace-volcano-system.yaml, deployment-volcano-system-volcano-scheduler.yaml]
written:
  description: The files written (or that would be, in check mode) because they were new or their text changed.
  returned: always
  type: list
  elements: str
  sample: [deployment-volcano-system-volcano-scheduler.yaml]
removed:
  description: The files removed by O(prune) and O(remove_dirs) (or that would be, in check mode), relative to O(path).
  returned: always
  type: list
  elements: str
  sample: [configmap-volcano-system-old.yaml]
diff:
  description: One entry per file written or removed, its text before and after (diff mode; empty otherwise).
  returned: always
  type: list
  elements: dict
  sample: [{before_header: rendered/ns.yaml, after_header: rendered/ns.yaml, before: "", after: "kind: Namespace"}]
"""
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._module_main import execute
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners._render_manifests import missing, render


def entry() -> dict:
    """The module's options and what it does, for main() and the in-process action plugin."""
    return dict(
        argument_spec=dict(
            path=dict(type="path", required=True),
            objects=dict(type="list", elements="dict", default=[]),
            documents=dict(type="list", elements="str", default=[]),
            chart=dict(
                type="dict",
                options=dict(
                    chart_ref=dict(type="path", required=True),
                    chart_repo_url=dict(type="str"),
                    chart_version=dict(type="str"),
                    release_name=dict(type="str", required=True),
                    release_namespace=dict(type="str", required=True),
                    release_values=dict(type="dict", default={}),
                    binary_path=dict(type="path"),
                ),
            ),
            timeout=dict(type="int", default=120),
            prune=dict(type="bool", default=True),
            remove_dirs=dict(type="list", elements="str", default=[]),
        ),
        module_kwargs={},
        missing=missing,
        run=render,
    )


def main() -> None:
    execute(entry())


if __name__ == "__main__":
    main()
