#!/usr/bin/python
# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: crds
short_description: Apply CustomResourceDefinitions from files, each only when its file changed, and wait until Established
version_added: 0.1.0
description:
  - Applies the CustomResourceDefinitions in O(files) by server-side apply (field manager C(gangsched.kubeflow), conflicts
    forced), each labelled C(gangsched.kubeflow/crds-of=<owner>) and annotated C(gangsched.kubeflow/source-sha256) with
    the sha256 of the file it came from.
  - One list of the owner's CRDs tells which files are on the cluster already; only the others are parsed and sent, so a
    converged run sends nothing. The stamp is the one C(ansible.builtin.hash('sha256')) gives for the file's text.
  - A CRD whose new file no longer lists a version its objects are stored as (the live CRD's C(status.storedVersions),
    as an upgrade that drops an old version would) fails the task before anything is sent, naming the versions and
    the migration to make first (write the objects back as the storage version, then trim C(status.storedVersions)).
    One read each of the CRDs to apply that are not among the owner's.
  - The CRDs to apply are first sent as a server-side dry run, all of them; a CRD the API server refuses fails the task
    before anything changed. Then they are applied and waited for until C(Established).
  - A file that is not YAML, or holds anything but C(apiextensions.k8s.io/v1) CustomResourceDefinitions, fails the task
    naming the file, before any request that changes anything.
author:
  - gangsched.kubeflow maintainers (@gangsched)
extends_documentation_fragment:
  - gangsched.kubeflow._k8s_auth
  - gangsched.kubeflow._api
  - gangsched.kubeflow._attributes
attributes:
  check_mode:
    support: full
    details: Sends the changed files' CRDs as a server-side dry run only, and reports them.
  diff_mode:
    support: full
    details: Each applied CRD's file stamp before and after.
  idempotent:
    support: full
options:
  owner:
    description: Who the CRDs belong to (the component's name); the value of their C(gangsched.kubeflow/crds-of) label.
    type: str
    required: true
  files:
    description:
      - The CRD files, each its name (for messages, e.g. its path) and its whole text, as C(ansible.builtin.file) with
        C(rstrip=false) reads it.
      - The result's C(invocation) gives each text's size, not the text.
    type: dict
    required: true
  conversion:
    description:
      - The C(spec.conversion) of some of the CRDs, by CRD name, set before they are applied (as a release's kustomize
        patch would, e.g. a conversion webhook at the component's Service). The stamp covers it, so a changed
        conversion applies the CRD again.
      - A CRD named here but in none of O(files) is ignored.
    type: dict
    default: {}
  force:
    description: Apply every file, whatever the stamps on the cluster say.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait for the applied CRDs to be Established; V(0) does not wait.
    type: int
    default: 120
seealso:
  - module: gangsched.kubeflow.component_ready
  - module: kubernetes.core.k8s
"""

EXAMPLES = r"""
---
- name: The operator's CRDs, sent only when a file changed
  gangsched.kubeflow.crds:
    owner: training-operator
    files: "{{ dict(paths | zip(query('ansible.builtin.file', *paths, rstrip=False))) }}"
    wait_timeout: 120
  vars:
    paths: "{{ query('gangsched.kubeflow.crd_files', '/opt/crds/training-operator/') }}"
"""

RETURN = r"""
applied:
  description: The CRDs applied (in check mode, those that would be), by name; empty when every file's stamp was there.
  returned: always
  type: list
  elements: str
  sample: [pytorchjobs.kubeflow.org]
files_applied:
  description: The files whose CRDs were applied.
  returned: always
  type: list
  elements: str
  sample: [/opt/crds/training-operator/kubeflow.org_pytorchjobs.yaml]
files_unchanged:
  description: The files whose stamp the owner's CRDs carry already, so not sent.
  returned: always
  type: list
  elements: str
  sample: [/opt/crds/training-operator/kubeflow.org_tfjobs.yaml]
diff:
  description: Each applied CRD's file stamp before (C((none)) for a new one) and after, one line each, its name and the stamp.
  returned: when diff mode is on
  type: dict
  sample: {"before": "pytorchjobs.kubeflow.org: (none)\n", "after": "pytorchjobs.kubeflow.org: 3f1a...\n"}
"""

from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._cluster_entry import cluster_entry, with_auth
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._module_main import execute
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners._crds import run


def argument_spec() -> dict:
    return with_auth(
        owner=dict(type="str", required=True),
        files=dict(type="dict", required=True),
        conversion=dict(type="dict", default={}),
        force=dict(type="bool", default=False),
        wait_timeout=dict(type="int", default=120),
    )


def entry() -> dict:
    """The module's options and runner, for main() and the in-process action plugin."""
    return cluster_entry(argument_spec(), run, {"wait_timeout": 0})


def main() -> None:
    execute(entry())


if __name__ == "__main__":
    main()
