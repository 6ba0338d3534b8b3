# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: turning kube-scheduler's own gang on in a control plane the collection manages
(kubeadm's static pod manifests): which Kubernetes releases it is done for, the flags each component gets, set in
place in a manifest, and the Jobs the Job integration would break. Pure: no I/O. Not a public API."""

from __future__ import annotations

import re

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _flags
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._manifests import copy_plain
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _native

# the order the components are restarted in: the API server first (the others list the new API at their start)
COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
# the Job integration's gate (alpha in 1.37), on kube-apiserver and kube-controller-manager
JOB_GATE = "WorkloadWithJob"
JOB_GATE_COMPONENTS = ("kube-apiserver", "kube-controller-manager")
# the newest 1.37 patch release checked to copy a system-* priority into a Job's PodGroup (refused by the API
# server, so the Job never starts): the Job integration is refused there while such Jobs exist
JOB_PRIORITY_BUG_UP_TO = (1, 37, 2)

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(version: str) -> tuple[int, int, int]:
    """``v1.37.2`` (or ``1.37.2-eks-1``) as (1, 37, 2). Raises ValueError on anything else.

    >>> parse_version("v1.37.2+k3s1")
    (1, 37, 2)
    """
    m = _VERSION.match(str(version or "").strip())
    if not m:
        raise ValueError(f"{version!r} is not a Kubernetes version such as v1.37.2")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def version_problem(version: str) -> str | None:
    """Why the collection does not turn the native gang on in a control plane of ``version``; None on the minor
    whose Workload API it creates and proves (1.37, scheduling.k8s.io/v1beta1).

    >>> version_problem("v1.37.2") is None
    True
    >>> version_problem("v1.36.3")[:60]
    'Kubernetes v1.36.3 serves the native gang at scheduling.k8s.'
    """
    major, minor, _patch = parse_version(version)
    if (major, minor) == (1, _native.SUPPORTED_MINOR):
        return None
    if major == 1 and minor in _native.VERSIONS:
        return (
            f"Kubernetes {version} serves the native gang at {_native.GROUP}/{_native.VERSIONS[minor]} (alpha), whose "
            f"Workload and PodGroup shapes differ from {_native.API_VERSION}, the version this collection creates and "
            f"proves: upgrade the control plane to 1.{_native.SUPPORTED_MINOR}, or use another gang scheduler "
            "(volcano, scheduler_plugins, koordinator); nothing was changed"
        )
    if (major, minor) < (1, min(_native.VERSIONS)):
        return (
            f"Kubernetes {version} has no native gang scheduling (it came in 1.{min(_native.VERSIONS)}, and the "
            f"collection turns it on from 1.{_native.SUPPORTED_MINOR}): use another gang scheduler (volcano, "
            "scheduler_plugins, koordinator), or upgrade the control plane; nothing was changed"
        )
    return (
        f"Kubernetes {version} is newer than 1.{_native.SUPPORTED_MINOR}, the last minor whose native gang flags this "
        "collection release was checked with (the gate and the API version change between minors): use a collection "
        "release that names it, or turn the gang on by hand and prove it with the smoke test (gang_scheduler=native); "
        "nothing was changed"
    )


def wanted_gates(component: str, job_integration: bool) -> dict[str, str]:
    """The feature gates ``component`` runs with for the native gang (and the Job integration).

    >>> wanted_gates("kube-controller-manager", True)
    {'GenericWorkload': 'true', 'WorkloadWithJob': 'true'}
    """
    gates = {g: "true" for g in _native.GATES[component]}
    if job_integration and component in JOB_GATE_COMPONENTS:
        gates[JOB_GATE] = "true"
    return gates


def _pairs(value: str | None) -> dict[str, str]:
    """``a=true,b=false`` as {a: 'true', b: 'false'}, in order; the last of a repeated key wins."""
    out: dict[str, str] = {}
    for pair in (value or "").split(","):
        key, _sep, val = pair.partition("=")
        if key.strip():
            out[key.strip()] = val.strip()
    return out


def _flag_value(container: dict, name: str) -> str:
    """Every occurrence of a map flag (--feature-gates, --runtime-config) joined: the component merges them in order."""
    return ",".join(h.value or "" for h in _flags.find(container.get("command"), container.get("args"), name))


def component_container(pod: dict, component: str, minor: int) -> dict:
    """The container of ``component`` in its static pod manifest ``pod``; raises ValueError when the manifest is not
    that component of Kubernetes 1.``minor`` (another image, such as scheduler-plugins' kube-scheduler, which
    knows no native gang)."""
    if not isinstance(pod, dict) or pod.get("kind") != "Pod":
        raise ValueError(f"the {component} manifest is not a Pod manifest")
    containers = (pod.get("spec") or {}).get("containers") or []
    named = [c for c in containers if c.get("name") == component] or containers[:1]
    if not named:
        raise ValueError(f"the {component} manifest has no container")
    c = named[0]
    image = str(c.get("image") or "")
    repo, _sep, tag = image.split("@", 1)[0].rpartition(":")
    if not repo or "/" in tag:
        repo, tag = image.split("@", 1)[0], ""
    if repo.rsplit("/", 1)[-1] != component or "scheduler-plugins" in repo:
        raise ValueError(
            f"the {component} manifest runs image {image!r}, not Kubernetes' {component}: the native gang is a feature "
            f"of Kubernetes' own {component} (a kube-scheduler replaced by scheduler-plugins' default mode has none; "
            "uninstall that first)"
        )
    if tag and not tag.lstrip("v").startswith(f"1.{minor}."):
        raise ValueError(
            f"the {component} manifest runs {image}, not Kubernetes 1.{minor} like the API server: finish the control "
            "plane's upgrade first"
        )
    if not c.get("command") and not c.get("args"):
        raise ValueError(f"the {component} manifest's container has neither command nor args to add flags to")
    return c


def with_gates(pod: dict, component: str, minor: int, job_integration: bool, original: dict | None = None) -> dict:
    """A copy of ``component``'s static pod manifest ``pod`` that runs the native gang: its feature gates (the others
    it has are kept), and for kube-apiserver the Workload API's version in --runtime-config. Without
    ``job_integration`` the Job integration's gate is as in ``original`` (the manifest before the collection changed
    it), so turning it off puts back what was there. Raises ValueError naming what is wrong."""
    out = copy_plain(pod)
    c = component_container(out, component, minor)
    gates = _pairs(_flag_value(c, "feature-gates"))
    gates.update(wanted_gates(component, job_integration))
    if not job_integration and component in JOB_GATE_COMPONENTS:
        before = (
            _pairs(_flag_value(component_container(original, component, minor), "feature-gates")) if original else {}
        )
        if JOB_GATE in before:
            gates[JOB_GATE] = before[JOB_GATE]
        else:
            gates.pop(JOB_GATE, None)
    flags = {"feature-gates": ",".join(f"{k}={v}" for k, v in gates.items())}
    if component == "kube-apiserver":
        runtime = _pairs(_flag_value(c, "runtime-config"))
        runtime[f"{_native.GROUP}/{_native.VERSIONS[minor]}"] = "true"
        flags["runtime-config"] = ",".join(f"{k}={v}" for k, v in runtime.items())
    for name, value in flags.items():
        try:
            surgery = _flags.set_flag(
                c.get("command"),
                c.get("args"),
                name,
                value,
                prefer="args" if c.get("args") else "command",
                what=f"the {component} manifest",
            )
        except GangError as e:
            raise ValueError(e.msg) from None
        for key, new in (("command", surgery.command), ("args", surgery.args)):
            if new is not None:
                c[key] = new
    return out


def _priority_class(template: dict) -> str:
    return str(((template or {}).get("spec") or {}).get("priorityClassName") or "")


def system_priority_jobs(jobs: list[dict], cronjobs: list[dict]) -> list[str]:
    """The unfinished root Jobs and the unsuspended CronJobs whose pods have a system-* priority class, as
    ``Job ns/name (class)``: with the Job integration on Kubernetes up to 1.37.2 their Jobs never start."""
    out = []
    for j in jobs:
        md, spec = j.get("metadata") or {}, j.get("spec") or {}
        done = any(
            c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
            for c in (j.get("status") or {}).get("conditions") or []
        )
        owned = any(o.get("controller") for o in md.get("ownerReferences") or [])
        cls = _priority_class(spec.get("template"))
        if cls.startswith(_native.SYSTEM_PRIORITY_CLASS_PREFIX) and not done and not owned:
            out.append(f"Job {md.get('namespace')}/{md.get('name')} ({cls})")
    for cj in cronjobs:
        md, spec = cj.get("metadata") or {}, cj.get("spec") or {}
        cls = _priority_class(((spec.get("jobTemplate") or {}).get("spec") or {}).get("template"))
        if cls.startswith(_native.SYSTEM_PRIORITY_CLASS_PREFIX) and not spec.get("suspend"):
            out.append(f"CronJob {md.get('namespace')}/{md.get('name')} ({cls})")
    return sorted(out)


def job_integration_problem(version: str, jobs: list[dict], cronjobs: list[dict]) -> str | None:
    """Why the Job integration is not turned on in a cluster of ``version`` with these Jobs and CronJobs; None when
    nothing known breaks."""
    if parse_version(version) > JOB_PRIORITY_BUG_UP_TO:
        return None
    hit = system_priority_jobs(jobs, cronjobs)
    if not hit:
        return None
    shown = ", ".join(hit[:5]) + (f" and {len(hit) - 5} more" if len(hit) > 5 else "")
    return (
        f"the Job integration ({JOB_GATE}) on Kubernetes {version} would stop these Jobs from ever starting: {shown}. "
        f"Its Job controller copies the pods' system-* priority into the Job's PodGroup, whose limit is "
        f"{_native.MAX_PRIORITY}, and the API server refuses it (a bug up to 1.37.2). Give those Jobs a priority class "
        "of at most that, or leave native_gang_job_integration false (pods and PodGroups made by hand, or by the "
        "gangsched.kubeflow.native_gang filter, still gang); nothing was changed"
    )
