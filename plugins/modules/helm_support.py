#!/usr/bin/python
# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: helm_support
short_description: Tell whether kubernetes.core's Helm modules can drive a helm binary, before anything changes
version_added: 0.1.0
description:
  - Runs C(helm version) of O(binary_path) on the host, where C(kubernetes.core.helm) runs it, and compares its major
    version with what the installed kubernetes.core drives - Helm 3, or Helm 4 from kubernetes.core 6.4.0 on
    (earlier releases pass Helm 3's flags, which Helm 4 refuses, for example C(helm list --all), or refuse Helm 4
    outright).
  - Changes nothing, so C(changed) is always false. A binary that cannot be run or is not supported is no failure -
    RV(problem) says why and what to do, and the play decides; the roles that install a chart assert on it in their
    preflight, so that an unsupported helm stops a run before its first change instead of at its first Helm task.
  - Only C(kubernetes.core.helm) depends on the major version. The roles' render-only mode renders charts with
    C(helm template), the same with Helm 3 and Helm 4, and does not run this module.
author:
  - gangsched.kubeflow maintainers (@gangsched)
extends_documentation_fragment:
  - gangsched.kubeflow._attributes
attributes:
  platform:
    description: Runs on the host that runs C(kubernetes.core.helm), usually the controller.
    support: full
    platforms: posix
  check_mode:
    support: full
    details: Runs C(helm version) in check mode too; it changes nothing.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: Changes nothing, RV(ignore:changed=false).
options:
  binary_path:
    description: The helm binary, a path or a name looked up on the PATH, as C(kubernetes.core.helm)'s O(kubernetes.core.helm#module:binary_path).
    type: path
    default: helm
  kubernetes_core_version:
    description:
      - The version of kubernetes.core whose Helm modules would drive the binary.
      - Left out, the action plugin reads it from the kubernetes.core that Ansible loads on the controller (its
        C(MANIFEST.json), or C(galaxy.yml) in a source checkout), which is the one whose modules run.
      - When it cannot be read, Helm 3 is taken as supported and Helm 4 as not known (a warning, no RV(problem)).
    type: str
  timeout:
    description: Seconds C(helm version) may take.
    type: int
    default: 30
seealso:
  - module: kubernetes.core.helm
"""

EXAMPLES = r"""
- name: The helm binary kubernetes.core would run
  gangsched.kubeflow.helm_support:
    binary_path: /usr/local/bin/helm
  register: helm

- name: Stop before the first change when kubernetes.core cannot drive it
  ansible.builtin.assert:
    that: helm.problem | length == 0
    fail_msg: "{{ helm.problem }}"
"""

RETURN = r"""
path:
  description: The binary that was run, found on the PATH when O(binary_path) is a name.
  returned: when the binary was found
  type: str
  sample: /usr/local/bin/helm
version:
  description: Its version, without the leading C(v); empty when it could not be read.
  returned: always
  type: str
  sample: 4.3.2
kubernetes_core_version:
  description: The kubernetes.core version compared with, as given or as the action plugin read it; empty when unknown.
  returned: always
  type: str
  sample: 6.6.0
problem:
  description:
    - Empty when kubernetes.core drives this binary; else why not and what to do, naming the binary and both versions.
  returned: always
  type: str
  sample: >-
    helm v4.3.2 (/usr/local/bin/helm) is Helm 4, which kubernetes.core 6.2.0's helm module does not drive (it passes
    Helm 3's flags, e.g. helm list --all, which Helm 4 refuses); kubernetes.core drives Helm 4 from 6.4.0 on.
    Upgrade kubernetes.core (ansible-galaxy collection install 'kubernetes.core>=6.4.0,<7.0.0'), or point binary_path
    at a Helm 3 binary
"""

import os
import re
import shutil
import subprocess

from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._module_main import execute

# the first kubernetes.core release whose Helm modules drive Helm 4 (its changelog: "Helm v4 compatibility across the
# Helm modules"); earlier ones pass Helm 3's flags, or (6.3.0, and 5.x with its backport) refuse any helm from 4.0.0 on
HELM4_FROM = (6, 4, 0)
UPGRADE = "ansible-galaxy collection install 'kubernetes.core>=6.4.0,<7.0.0'"


def _numbers(version: str) -> tuple[int, ...] | None:
    m = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", version or "")
    return tuple(int(x) for x in m.groups()) if m else None


def problem(helm_version: str, core_version: str, where: str) -> tuple[str, str]:
    """(problem, warning) for helm ``helm_version`` (run as ``where``) driven by kubernetes.core ``core_version``
    ('' when unknown)."""
    helm = _numbers(helm_version)
    if helm is None:
        return f"{where}: its version could not be read (helm version printed {helm_version!r})", ""
    shown = f"helm v{'.'.join(map(str, helm))} ({where})"
    if helm[0] == 3:
        return "", ""
    if helm[0] != 4:
        return (
            f"{shown} is Helm {helm[0]}, which kubernetes.core's helm module does not drive: it drives Helm 3, and Helm 4 "
            f"from kubernetes.core 6.4.0 on. Point binary_path at a Helm 4 or Helm 3 binary",
            "",
        )
    core = _numbers(core_version)
    if core is None:
        return "", (
            f"{shown} is Helm 4, which kubernetes.core drives from 6.4.0 on; the version of the kubernetes.core "
            "Ansible loads could not be read, so it is not known whether this one does"
        )
    if core >= HELM4_FROM:
        return "", ""
    return (
        f"{shown} is Helm 4, which kubernetes.core {core_version}'s helm module does not drive (it passes Helm 3's "
        f"flags, e.g. helm list --all, which Helm 4 refuses, or refuses Helm 4 outright); kubernetes.core drives Helm 4 "
        f"from 6.4.0 on. Upgrade kubernetes.core ({UPGRADE}), or point binary_path at a Helm 3 "
        "binary",
        "",
    )


def _result(core: str, problem: str, path: str = "", version: str = "") -> dict:
    out = {"changed": False, "version": version, "kubernetes_core_version": core, "problem": problem}
    if path:
        out["path"] = path
    return out


def run(params: dict, check_mode: bool, diff: bool, name: str, warn) -> dict:
    binary, timeout = params["binary_path"], params["timeout"]
    core = params.get("kubernetes_core_version") or ""
    if timeout < 1:
        return {
            "failed": True,
            "changed": False,
            "msg": f"timeout must be 1 s or more (got {timeout}). Nothing was run",
        }
    path = binary if os.sep in binary else shutil.which(binary)
    if not path or not os.path.isfile(path):
        where = f"{binary} (not on the PATH)" if os.sep not in binary else f"{binary} (no such file)"
        return _result(core, f"the helm binary {where} was not found: install Helm, or point binary_path at it")
    try:
        p = subprocess.run(
            [path, "version", "--template", "{{.Version}}"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return _result(
            core, f"{path}: helm version took more than {timeout} s; check the binary, or raise timeout", path
        )
    except OSError as e:
        why = e.strerror or e.__class__.__name__
        return _result(core, f"{path} cannot be run ({why}): point binary_path at an executable helm", path)
    printed = p.stdout.strip()
    if p.returncode != 0:
        why = (p.stderr.strip() or printed or f"exit {p.returncode}").splitlines()[-1][:300]
        return _result(core, f"{path}: helm version failed ({why}); point binary_path at a working helm", path)
    found, warning = problem(printed, core, path)
    if warning:
        warn(warning)
    version = _numbers(printed)
    return _result(core, found, path, ".".join(map(str, version)) if version else "")


def entry() -> dict:
    """The module's options and what it does, for main()."""
    return dict(
        argument_spec=dict(
            binary_path=dict(type="path", default="helm"),
            kubernetes_core_version=dict(type="str"),
            timeout=dict(type="int", default=30),
        ),
        module_kwargs={},
        missing=lambda: None,
        run=run,
    )


def main() -> None:
    execute(entry())


if __name__ == "__main__":
    main()
