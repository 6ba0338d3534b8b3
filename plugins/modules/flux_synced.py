#!/usr/bin/python
# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: flux_synced
short_description: Wait until Flux has applied a Git revision and every stage is Ready, or say what is not
version_added: 0.1.0
description:
  - Waits until each Flux Kustomization named in O(kustomizations) (default, those of the layout
    M(gangsched.kubeflow.gitops_layout) wrote, by their label) has applied the commit O(revision)
    (C(status.lastAppliedRevision)), is C(Ready=True), and has seen its current spec (C(observedGeneration)). Flux
    sets C(Ready=True) only once the objects a stage applies are ready (C(wait)), so a synced result is positive
    evidence that the chain at that commit is in place.
  - With O(fail_fast=true), ends as soon as a Kustomization reports a failure at that revision that a retry does not
    mend (a build error, an object the API server refuses, a health check past the stage's timeout, a suspended
    Kustomization); otherwise waits until O(wait_timeout).
  - A failure names each Kustomization not synced with Flux's own reason and message (which names the object, such
    as C(Deployment/volcano-system/volcano-scheduler dry-run failed)), the cause first and the stages waiting on it
    after, and the source's fetched revision when it is not the commit.
  - One list call a poll (every O(poll_interval) seconds) and one read of the source at the end. Reads only; never
    asks Flux to reconcile (its own intervals and the source's watch do).
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
  revision:
    description: The commit that must be applied, as C(git rev-parse HEAD) prints it (or abbreviated, 7 characters or
      more), or in Flux's form C(main@sha1:<sha>).
    type: str
    required: true
  namespace:
    description: The namespace of the Kustomizations.
    type: str
    default: flux-system
  kustomizations:
    description:
      - The Kustomizations to wait for, by name (the root one that applies the layout, such as C(flux-system), and
        RV(gangsched.kubeflow.gitops_layout#module:kustomizations)).
      - Default, every Kustomization in O(namespace) labelled C(gangsched.kubeflow/layout=<layout>).
    type: list
    elements: str
    default: []
  layout:
    description: The layout's prefix (M(gangsched.kubeflow.gitops_layout)'s C(prefix)), when O(kustomizations) is empty.
    type: str
    default: gangsched
  wait_timeout:
    description: Seconds to wait in all.
    type: int
    default: 600
  poll_interval:
    description: Seconds between two reads.
    type: int
    default: 2
  fail_fast:
    description: End at the first failure at O(revision) that a retry does not mend, instead of at O(wait_timeout).
    type: bool
    default: true
seealso:
  - module: gangsched.kubeflow.gitops_layout
"""

EXAMPLES = r"""
- name: The pipeline's commit applied by Flux, every stage Ready
  gangsched.kubeflow.flux_synced:
    revision: "{{ lookup('ansible.builtin.pipe', 'git -C checkout rev-parse HEAD') }}"
    kustomizations: "{{ ['flux-system'] + layout.kustomizations }}"
    wait_timeout: 900
"""

RETURN = r"""
revision:
  description: The commit waited for.
  returned: always
  type: str
  sample: 3f2c1a9d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39
synced:
  description: Whether every Kustomization has applied the revision and is Ready.
  returned: always
  type: bool
  sample: true
kustomizations:
  description: Each Kustomization's state at the last read, in order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Its name.
      type: str
    synced:
      description: Applied the revision, Ready, its current spec seen.
      type: bool
    applied_revision:
      description: C(status.lastAppliedRevision).
      type: str
    attempted_revision:
      description: C(status.lastAttemptedRevision).
      type: str
    ready:
      description: Its C(Ready) condition's status (True, False, Unknown).
      type: str
    reason:
      description: Its C(Ready) condition's reason (NotFound when there is no such Kustomization).
      type: str
    message:
      description: Flux's message.
      type: str
  sample:
    - {name: gangsched-20-volcano-main, synced: true, applied_revision: "main@sha1:3f2c1a9d", ready: "True",
       attempted_revision: "main@sha1:3f2c1a9d", reason: ReconciliationSucceeded, message: "Applied revision: main@sha1:3f2c1a9d"}
source:
  description: The source of the first Kustomization (name, fetched revision, Ready status and message); null when
    none could be named.
  returned: always
  type: dict
  sample: {name: GitRepository flux-system/flux-system, revision: "main@sha1:3f2c1a9d", ready: "True", message: stored artifact}
seconds:
  description: Seconds from the first read to the last.
  returned: always
  type: float
  sample: 41.2
polls:
  description: How many times the Kustomizations were listed.
  returned: always
  type: int
  sample: 21
"""

from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._cluster_entry import cluster_entry, with_auth
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._module_main import execute
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners._flux_synced import run


def argument_spec() -> dict:
    return with_auth(
        revision=dict(type="str", required=True),
        namespace=dict(type="str", default="flux-system"),
        kustomizations=dict(type="list", elements="str", default=[]),
        layout=dict(type="str", default="gangsched"),
        wait_timeout=dict(type="int", default=600),
        poll_interval=dict(type="int", default=2),
        fail_fast=dict(type="bool", default=True),
    )


def entry() -> dict:
    """The module's options and runner, for main()."""
    return cluster_entry(argument_spec(), run, minimums={"wait_timeout": 0, "poll_interval": 1})


def main() -> None:
    execute(entry())


if __name__ == "__main__":
    main()
