#!/usr/bin/python
# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gitops_layout
short_description: Lay out what render.yml wrote for a GitOps engine, in stages applied in order (Flux, Kustomize)
version_added: 0.1.0
description:
  - Reads the component directories that C(playbooks/render.yml) wrote under O(src) (C(10-gpu-device-plugin),
    C(20-volcano), ...) and writes them under O(dest) as stages a GitOps engine applies in order, each stage a
    Kustomize directory (C(<component>/<stage>/kustomization.yaml) naming its files) and one Flux
    C(kustomize.toolkit.fluxcd.io/v1) Kustomization per stage under C(dest/flux/).
  - "A component's stages, in order: C(hooks), the chart's pre-install hooks (the Volcano chart's admission-init Job,
    which makes the admission server's certificate, with its ServiceAccount and rights), with the component's
    Namespaces (Helm makes the namespace before the hooks); C(main), the component's objects; C(post), its
    post-install hooks; C(admitted), the objects the component's own admission webhooks admit (Volcano's default
    Queue), applied once the webhook's server is ready, as the role waits for it before it makes them. A stage with
    nothing in it is left out."
  - Each Flux Kustomization depends on the stage before it (C(dependsOn)) and waits for what it applies to be ready
    (C(wait), C(timeout)), so Flux applies the chain in the order C(site.yml) does. Within a stage Flux applies
    CustomResourceDefinitions and Namespaces first, by itself.
  - Hook objects carry C(kustomize.toolkit.fluxcd.io/force=enabled) (a patch in their stage's C(kustomization.yaml),
    the files stay as rendered), because a Job is immutable, and Flux creates it again when its rendered spec changes, as Helm
    runs a pre-upgrade hook again. Helm's test, delete and rollback hooks are left out and listed in RV(left_out).
    Unlike Helm, Flux keeps a hook Job once it has succeeded.
  - C(dest/kustomization.yaml) names C(flux/) only, so a Flux Kustomization (or the cluster's own Flux layout, such
    as C(flux bootstrap)'s C(clusters/<name>) directory) pointed at O(dest) applies the stages' Kustomizations and
    through them the chain. Each stage directory alone is a Kustomize directory, for C(kubectl apply -k) or another
    engine.
  - "Refuses, writing nothing: a C(host-files/) directory in O(src) (the control-plane hosts' static pod manifests of
    C(native_gang) or C(scheduler_plugins_mode: default), which no GitOps engine applies); a directory that is not a
    component of render.yml; a file that is not one Kubernetes object."
  - A file is written only when its text changes, atomically; every other C(*.yaml) file under O(dest) is removed
    (O(prune)), so a component or stage no longer rendered leaves no file behind, and Flux prunes its objects.
author:
  - gangsched.kubeflow maintainers (@gangsched)
extends_documentation_fragment:
  - gangsched.kubeflow._attributes
attributes:
  platform:
    description: Reads and writes files on the host the task runs on.
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
    details: A second run on the same O(src) writes nothing and reports RV(ignore:changed=false).
options:
  src:
    description: The directory C(playbooks/render.yml) wrote (its C(gangsched_render_dir)).
    type: path
    required: true
  dest:
    description:
      - The directory to write the layout to, in a checkout of the Git repository the engine reads; made when
        missing. The module owns it, and removes every C(*.yaml) file in it that the layout does not name.
    type: path
    required: true
  repo_path:
    description:
      - The path of O(dest) in the Git repository, as the engine's source sees it (C(./gangsched)). Default, the path
        of O(dest) below the top of the Git checkout it is in.
    type: str
  prefix:
    description: The start of every Flux Kustomization's name (C(<prefix>-<component>-<stage>)); also their label
      C(gangsched.kubeflow/layout).
    type: str
    default: gangsched
  namespace:
    description: The namespace of the Flux Kustomizations (Flux's own).
    type: str
    default: flux-system
  source_kind:
    description: The kind of Flux source the Kustomizations read.
    type: str
    choices: [GitRepository, OCIRepository, Bucket]
    default: GitRepository
  source_name:
    description: The name of that source (C(flux bootstrap) names it C(flux-system)).
    type: str
    default: flux-system
  source_namespace:
    description: The source's namespace, where it is not O(namespace).
    type: str
  interval:
    description: How often Flux applies each stage again, putting back what was changed by hand (a Flux duration).
    type: str
    default: 10m
  retry_interval:
    description:
      - How soon Flux tries a stage again after a failure.
      - A stage whose stage before is not ready yet is looked at again after kustomize-controller's
        C(--requeue-dependency) (30 s by default), whatever this says; a chain of stages applies faster with it
        shorter.
    type: str
    default: 30s
  stage_timeout:
    description: How long Flux waits for a stage's objects to be ready before it reports the stage failed.
    type: str
    default: 5m
  prune:
    description: Remove the C(*.yaml) files under O(dest) that the layout does not name.
    type: bool
    default: true
requirements:
  - PyYAML on the host the task runs on
seealso:
  - module: gangsched.kubeflow.flux_synced
  - module: gangsched.kubeflow.render_manifests
"""

EXAMPLES = r"""
- name: The rendered chain, laid out in the GitOps repository's checkout
  gangsched.kubeflow.gitops_layout:
    src: "{{ playbook_dir }}/rendered"
    dest: /builds/platform/gitops/clusters/prod/gangsched
  register: layout

- name: For a source other than flux bootstrap's, stages retried every 10 s
  gangsched.kubeflow.gitops_layout:
    src: rendered
    dest: checkout/gangsched
    repo_path: ./gangsched
    source_name: platform
    retry_interval: 10s
"""

RETURN = r"""
repo_path:
  description: The path of O(dest) in the Git repository, as the Kustomizations name it.
  returned: always
  type: str
  sample: ./gangsched
stages:
  description: The stages in the order they apply, each with its Flux Kustomization's name, its component, its
    stage, its path in the repository, its files and the stage it depends on (null for the first).
  returned: always
  type: list
  elements: dict
  sample:
    - {name: gangsched-20-volcano-hooks, component: 20-volcano, stage: hooks, path: ./gangsched/20-volcano/hooks,
       files: [job-volcano-system-volcano-admission-init.yaml], depends_on: gangsched-10-gpu-device-plugin-main}
kustomizations:
  description: The Flux Kustomizations' names, in order (what M(gangsched.kubeflow.flux_synced) waits for).
  returned: always
  type: list
  elements: str
  sample: [gangsched-10-gpu-device-plugin-main, gangsched-20-volcano-hooks, gangsched-20-volcano-main]
left_out:
  description: Rendered files left out, each with why (Helm test, delete or rollback hooks).
  returned: always
  type: list
  elements: dict
  sample: [{file: 20-volcano/pod-volcano-system-test.yaml, why: a Helm test hook (helm test runs it on demand)}]
written:
  description: The files written (or that would be, in check mode), relative to O(dest).
  returned: always
  type: list
  elements: str
  sample: [20-volcano/main/deployment-volcano-system-volcano-scheduler.yaml]
removed:
  description: The files removed (or that would be, in check mode), relative to O(dest).
  returned: always
  type: list
  elements: str
  sample: [30-kubeflow-gang/main/configmap-kubeflow-old.yaml]
diff:
  description: One entry per file written or removed, its text before and after (diff mode; empty otherwise).
  returned: always
  type: list
  elements: dict
  sample:
    - {before_header: gitops/gangsched/flux/kustomization.yaml, after_header: gitops/gangsched/flux/kustomization.yaml,
       before: "", after: "kind: Kustomization"}
"""
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._module_main import execute
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners._gitops_layout import layout, missing


def entry() -> dict:
    """The module's options and what it does, for main()."""
    return dict(
        argument_spec=dict(
            src=dict(type="path", required=True),
            dest=dict(type="path", required=True),
            repo_path=dict(type="str"),
            prefix=dict(type="str", default="gangsched"),
            namespace=dict(type="str", default="flux-system"),
            source_kind=dict(type="str", default="GitRepository", choices=["GitRepository", "OCIRepository", "Bucket"]),
            source_name=dict(type="str", default="flux-system"),
            source_namespace=dict(type="str"),
            interval=dict(type="str", default="10m"),
            retry_interval=dict(type="str", default="30s"),
            stage_timeout=dict(type="str", default="5m"),
            prune=dict(type="bool", default=True),
        ),
        module_kwargs={},
        missing=missing,
        run=layout,
    )


def main() -> None:
    execute(entry())


if __name__ == "__main__":
    main()
