#!/usr/bin/python
# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: read_files
short_description: Read several files of a host in one module run - each one's content, or why it could not be read
version_added: 0.1.0
description:
  - Reads each file of O(paths) on the host it runs on, changing nothing, and returns each one's content (base64, as
    M(ansible.builtin.slurp) returns one file's) or why it could not be read (missing, a directory, no permission).
  - One module run for several files - over SSH one round trip instead of one per file. The native_gang role reads each
    control-plane host's static pod manifests and their backups with it.
  - A file that cannot be read is not a failure - RV(files[].error) says why, and the play decides; the task fails only
    on bad options (a relative path), naming the path.
author:
  - gangsched.kubeflow maintainers (@gangsched)
extends_documentation_fragment:
  - gangsched.kubeflow._attributes
attributes:
  platform:
    description: Runs on the host whose files it reads (Linux), as a user who may read them (become for root's files).
    support: full
    platforms: posix
  check_mode:
    support: full
    details: Reads only; the same result in check mode.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: Changes nothing, RV(ignore:changed=false).
options:
  paths:
    description:
      - The files to read, each an absolute path, in the order RV(files) returns them.
      - A path named twice is read once and returned at each place.
    type: list
    elements: path
    required: true
  max_bytes:
    description: A file larger than this is not read (RV(files[].error) says so); the default is 16 MiB.
    type: int
    default: 16777216
seealso:
  - module: ansible.builtin.slurp
    description: One file per module run.
"""

EXAMPLES = r"""
- name: The static pod manifests of the control plane, and their backups where there are some
  gangsched.kubeflow.read_files:
    paths:
      - /etc/kubernetes/manifests/kube-apiserver.yaml
      - /etc/kubernetes/manifests/kube-scheduler.yaml
      - /var/lib/gangsched-kubeflow/native-gang/kube-apiserver.yaml
  become: true
  register: manifests

- name: The API server's manifest, decoded
  ansible.builtin.debug:
    msg: "{{ manifests.files[0].content | b64decode | from_yaml }}"
  when: manifests.files[0].content is defined
"""

RETURN = r"""
files:
  description: One entry per path of O(paths), in their order.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The path, as given.
      returned: always
      type: str
      sample: /etc/kubernetes/manifests/kube-apiserver.yaml
    content:
      description: The file's bytes in base64 (C(b64decode) gives them back).
      returned: when the file was read
      type: str
      sample: YXBpVmVyc2lvbjogdjEK
    missing:
      description: Whether nothing is at the path (or a file stands where a directory of it should be).
      returned: always
      type: bool
      sample: false
    error:
      description: Why the file was not read - no such file, a directory, permission denied, larger than O(max_bytes).
      returned: when the file was not read
      type: str
      sample: "/var/lib/gangsched-kubeflow/native-gang/kube-apiserver.yaml: no such file"
"""

import base64
import errno
import os

from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._module_main import execute


def read(path: str, max_bytes: int) -> dict:
    """One file's entry of RV(files)."""
    out = {"path": path, "missing": False}
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size > max_bytes:
                return {**out, "error": f"{path}: larger than max_bytes ({max_bytes}), not read"}
            data = f.read(max_bytes + 1)
    except OSError as e:
        why = {
            errno.ENOENT: "no such file",
            errno.EISDIR: "a directory, not a file",
            errno.EACCES: "permission denied (become, or a user who may read it)",
            errno.ENOTDIR: "a path through a file",
        }.get(e.errno, e.strerror or e.__class__.__name__)
        return {**out, "missing": e.errno in (errno.ENOENT, errno.ENOTDIR), "error": f"{path}: {why}"}
    if len(data) > max_bytes:
        return {**out, "error": f"{path}: larger than max_bytes ({max_bytes}), not read"}
    return {**out, "content": base64.b64encode(data).decode("ascii")}


def run(params: dict, check_mode: bool, diff: bool, name: str, warn) -> dict:
    paths, max_bytes = params["paths"], params["max_bytes"]
    bad = [p for p in paths if not os.path.isabs(p)]
    if bad:
        return {
            "failed": True,
            "changed": False,
            "msg": f"paths must be absolute; not: {', '.join(bad)}. Nothing was read",
        }
    if max_bytes < 1:
        return {
            "failed": True,
            "changed": False,
            "msg": f"max_bytes must be 1 or more (got {max_bytes}). Nothing was read",
        }
    seen: dict[str, dict] = {}
    for p in paths:
        if p not in seen:
            seen[p] = read(p, max_bytes)
    return {"changed": False, "files": [seen[p] for p in paths]}


def entry() -> dict:
    """The module's options and what it does, for main()."""
    return dict(
        argument_spec=dict(
            paths=dict(type="list", elements="path", required=True),
            max_bytes=dict(type="int", default=16 * 1024 * 1024),
        ),
        module_kwargs={},
        missing=lambda: None,
        run=run,
    )


def main() -> None:
    execute(entry())


if __name__ == "__main__":
    main()
