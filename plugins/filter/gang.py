# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters the roles use to render what they would apply (GitOps) and to edit a kube-scheduler static
pod manifest. Each is documented in the YAML file of the same name next to this one."""

from __future__ import annotations

import hashlib
import json
import os

from ansible.errors import AnsibleFilterError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import (
    _capacity,
    _flags,
    _kueue,
    _manifests,
    _operators,
    _rbac,
    _readiness,
    _support,
    _trainer_runtimes,
    _webhooks,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import (
    _koordinator,
    _native,
    _native_control_plane,
    _registry,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _gang_rbac

CONFIG_VOLUME = "gangsched-scheduler-config"
CONFIG_HASH_ANNOTATION = "gangsched.kubeflow/scheduler-config-hash"


def _fail(e: Exception):
    raise AnsibleFilterError(str(getattr(e, "msg", e))) from e


def newer_running(support: list, component: str, wanted: str) -> list:
    """What installing ``wanted`` of ``component`` would downgrade, from gang_info's ``support``."""
    if not isinstance(support, list) or not isinstance(component, str) or not isinstance(wanted, str):
        raise AnsibleFilterError("newer_running takes gang_info's support (a list), a component and a release")
    return _support.newer_running(support, component, wanted)


def manifest_filename(obj: dict) -> str:
    """``<kind>-<namespace>-<name>.yaml`` (cluster-scoped: ``<kind>-<name>.yaml``), lower case, safe."""
    try:
        return _manifests.filename(obj)
    except ValueError as e:
        raise AnsibleFilterError(f"manifest_filename {e}") from e


def gang_rbac_objects(component: str, gang_scheduler: str | None = None, service_account: dict | None = None):
    """The ClusterRole and ClusterRoleBinding gang_rbac would write (no wildcard, no cluster access)."""
    try:
        comp, gang, ns, sa = _gang_rbac.resolve(
            {"component": component, "gang_scheduler": gang_scheduler, "service_account": service_account}
        )
        if comp not in _rbac.COMPONENTS:
            raise GangError(f"component={comp!r} is not one of {', '.join(sorted(_rbac.COMPONENTS))}")
        return list(_gang_rbac.desired(comp, gang, ns, sa, _rbac.required_rules(comp, gang)))
    except (GangError, KeyError) as e:
        _fail(e)


def kube_scheduler_rbac_objects(name: str):
    """The ClusterRole and ClusterRoleBinding, both called ``name``, that give the default kube-scheduler
    Coscheduling's rights (the rule table's, as gang_rbac's)."""
    if not isinstance(name, str) or not name:
        raise AnsibleFilterError(f"kube_scheduler_rbac_objects needs the objects' name, got {name!r}")
    return list(_gang_rbac.kube_scheduler_objects(name))


def label_gang(doc, scheduler_name: str = "koord-scheduler", min_available=None, name: str | None = None):
    """A Pod or Kubeflow job whose pods form a label gang (seed 003, Koordinator)."""
    if not isinstance(scheduler_name, str) or not scheduler_name:
        raise AnsibleFilterError(f"label_gang: scheduler_name must be a scheduler name, got {scheduler_name!r}")
    if isinstance(min_available, str) and min_available.isdigit():
        min_available = int(min_available)
    try:
        return _koordinator.label_gang(doc, scheduler_name, min_available, name)
    except ValueError as e:
        raise AnsibleFilterError(f"label_gang: {e}") from None


def native_gang(docs, name: str | None = None, min_count=None):
    """Pods, or a batch/v1 Job, as one gang of kube-scheduler's own (Workload and PodGroup, scheduling.k8s.io)."""
    if isinstance(min_count, str) and min_count.isdigit():
        min_count = int(min_count)
    try:
        return _native.gang_pods(docs, name, min_count)
    except ValueError as e:
        raise AnsibleFilterError(f"native_gang: {e}") from None


def native_gang_static_pod(pod, component: str, version: str, job_integration=False, original=None):
    """A control-plane component's static pod manifest with the native gang's flags set in place."""
    if component not in _native_control_plane.COMPONENTS:
        raise AnsibleFilterError(
            f"native_gang_static_pod: component must be one of {', '.join(_native_control_plane.COMPONENTS)}, "
            f"got {component!r}"
        )
    try:
        minor = _native_control_plane.parse_version(version)[1]
        return _native_control_plane.with_gates(pod, component, minor, bool(job_integration), original or None)
    except ValueError as e:
        raise AnsibleFilterError(f"native_gang_static_pod: {e}") from None


def native_gang_manifest_problem(pod, component: str, version: str) -> str:
    """Why a static pod manifest is not Kubernetes' own ``component`` at ``version``'s minor; empty when it is."""
    try:
        _native_control_plane.component_container(pod, component, _native_control_plane.parse_version(version)[1])
    except ValueError as e:
        return str(e)
    return ""


def native_gang_version_problem(version: str) -> str:
    """Why the collection does not turn the native gang on at this Kubernetes version; empty when it does."""
    try:
        return _native_control_plane.version_problem(version) or ""
    except ValueError as e:
        raise AnsibleFilterError(f"native_gang_version_problem: {e}") from None


def native_gang_job_problem(version: str, jobs=None, cronjobs=None) -> str:
    """Why the Job integration is not turned on with these Jobs and CronJobs; empty when nothing known breaks."""
    try:
        return _native_control_plane.job_integration_problem(version, list(jobs or []), list(cronjobs or [])) or ""
    except ValueError as e:
        raise AnsibleFilterError(f"native_gang_job_problem: {e}") from None


def trainer_runtime_gang(runtime, gang_scheduler, scheduler_name=None, schedule_timeout=None, queue=None):
    """A Kubeflow Trainer v2 runtime gang-scheduled: podGroupPolicy, schedulerName, requests (and queue)."""
    path = _registry.PATHS.get(gang_scheduler)
    # the scheduler name of the path, else the scheduler_plugins role's default second scheduler
    default = path and (path.fixed_scheduler_name or path.default_scheduler_name)
    if isinstance(schedule_timeout, str) and schedule_timeout.isdigit():
        schedule_timeout = int(schedule_timeout)
    try:
        out, _changes = _trainer_runtimes.gang_runtime(
            runtime, gang_scheduler, scheduler_name or default, schedule_timeout, queue or None
        )
    except ValueError as e:
        raise AnsibleFilterError(f"trainer_runtime_gang: {e}") from None
    return out


def operator_gang_patch(
    deployment: dict, operator: str, scheduler_name: str | None, container: str | None = None, partial: bool = True
):
    """A partial Deployment (server-side apply configuration) that sets the operator's gang flag in
    place, as operator_gang would; ``scheduler_name`` none/empty removes the flag. ``partial=False``
    returns the whole Deployment with the flag set instead (for manifests the collection installs)."""
    try:
        spec = _operators.OPERATORS[operator]
    except KeyError:
        raise AnsibleFilterError(f"operator={operator!r} is not one of {', '.join(_operators.OPERATORS)}") from None
    md = deployment.get("metadata") or {}
    containers = ((((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or []
    want = container or spec["container"]
    match = [c for c in containers if c.get("name") == want] or (containers if len(containers) == 1 else [])
    if not match:
        raise AnsibleFilterError(
            f"Deployment {md.get('namespace')}/{md.get('name')} has no container {want!r}; set the container"
        )
    c = match[0]
    what = f"Deployment {md.get('namespace')}/{md.get('name')} container {c['name']}"
    try:
        if scheduler_name:
            value = "true" if spec["boolean"] else scheduler_name
            surgery = _flags.set_flag(
                c.get("command"), c.get("args"), spec["flag"], value, spec["prefer"], spec["boolean"], what
            )
        else:
            surgery = _flags.remove_flag(c.get("command"), c.get("args"), spec["flag"], spec["boolean"], what)
    except GangError as e:
        _fail(e)
    out_c: dict = {"name": c["name"]}
    if surgery.command is not None:
        out_c["command"] = surgery.command
    if surgery.args is not None:
        out_c["args"] = surgery.args
    record = _operators.record_update(deployment, c, restoring=False) if surgery.changed else None
    if not partial:
        whole = json.loads(json.dumps(deployment))
        for wc in whole["spec"]["template"]["spec"]["containers"]:
            if wc.get("name") == c["name"]:
                wc.pop("command", None)
                wc.pop("args", None)
                wc.update({k: v for k, v in out_c.items() if k != "name"})
        if record:
            whole["metadata"].setdefault("annotations", {}).update(record)
        return whole
    meta = {"name": md.get("name"), "namespace": md.get("namespace")}
    if record:
        meta["annotations"] = record
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {"template": {"spec": {"containers": [out_c]}}},
    }


def coscheduling_static_pod(
    pod: dict, image: str, config_path: str, config_text: str, extra_args: list | None = None
) -> dict:
    """The kube-scheduler static pod manifest switched to the scheduler-plugins image, reading the
    KubeSchedulerConfiguration at ``config_path`` (hostPath-mounted), with a hash of that config as an
    annotation so a config change restarts the pod. Idempotent: applying it twice gives the same pod."""
    if not isinstance(pod, dict) or pod.get("kind") != "Pod":
        raise AnsibleFilterError("coscheduling_static_pod needs the kube-scheduler static Pod manifest (kind: Pod)")
    pod = json.loads(json.dumps(pod))
    spec = pod.setdefault("spec", {})
    containers = spec.get("containers") or []
    match = [c for c in containers if c.get("name") == "kube-scheduler"] or containers[:1]
    if not match:
        raise AnsibleFilterError("the kube-scheduler static pod manifest has no container")
    c = match[0]
    c["image"] = image
    what = "the kube-scheduler static pod"
    try:
        s = _flags.set_flag(c.get("command"), c.get("args"), "config", config_path, "command", False, what)
        for arg in extra_args or []:
            name, sep, value = str(arg).lstrip("-").partition("=")
            if not sep:
                raise AnsibleFilterError(f"extra arg {arg!r} must be --name=value")
            s = _flags.set_flag(s.command, s.args, name, value, "command", False, what)
    except GangError as e:
        _fail(e)
    for f in ("command", "args"):
        if getattr(s, f) is None:
            c.pop(f, None)
        else:
            c[f] = getattr(s, f)
    mounts = [m for m in c.get("volumeMounts") or [] if m.get("name") != CONFIG_VOLUME]
    mounts.append({"name": CONFIG_VOLUME, "mountPath": config_path, "readOnly": True})
    c["volumeMounts"] = mounts
    vols = [v for v in spec.get("volumes") or [] if v.get("name") != CONFIG_VOLUME]
    vols.append({"name": CONFIG_VOLUME, "hostPath": {"path": config_path, "type": "File"}})
    spec["volumes"] = vols
    md = pod.setdefault("metadata", {})
    md.setdefault("annotations", {})[CONFIG_HASH_ANNOTATION] = hashlib.sha256(config_text.encode()).hexdigest()[:16]
    return pod


def static_pod_flag(pod: dict, name: str) -> str | None:
    """The last value of flag ``name`` in the static pod's first container (None when absent)."""
    containers = ((pod or {}).get("spec") or {}).get("containers") or []
    if not containers:
        return None
    hits = _flags.find(containers[0].get("command"), containers[0].get("args"), name)
    return hits[-1].value if hits else None


def report_line(item: dict, kind: str) -> str:
    """One line of the readable report for an entry of gang_info's result (``device_plugin``,
    ``scheduler``, ``operator``, ``problem``, ``support``) or of the fact gang_smoke_test_results (``smoke``)."""
    if not isinstance(item, dict):
        raise AnsibleFilterError(f"report_line needs a dict, got {item!r}")
    g = item.get
    try:
        if kind == "device_plugin":
            return (
                f"device plugin: {g('kind')} DaemonSet {g('daemonset')} ({g('image')}), "
                f"{g('ready')}/{g('desired')} pod(s) ready"
            )
        if kind == "scheduler":
            state = "ready" if g("ready") else "NOT ready"
            profiles = ", ".join(g("gang_profiles") or []) or "none"
            return (
                f"gang scheduler: {g('kind')} {g('version') or ''} ({g('mode')} mode, {g('source')} "
                f"{g('namespace')}/{g('name')}), gang profile(s) {profiles}, {state}"
            )
        if kind == "operator":
            flag = f"--{g('gang_flag')}={g('gang_value')}" if g("gang_value") is not None else "no gang flag"
            times = f" ({g('flag_occurrences')} times)" if (g("flag_occurrences") or 0) > 1 else ""
            return f"operator: {g('deployment')} {flag}{times}, {'ready' if g('ready') else 'NOT ready'}"
        if kind == "smoke":
            paths = sorted((g("reports") or {}).items())
            where = ", ".join(f"{k} {os.path.normpath(v)}" for k, v in paths) or "no report written"
            mark = "as expected" if g("ok") else f"EXPECTED {g('expected')}"
            cause = f" ({g('cause')})" if g("cause") and not g("ok") else ""
            control = g("control") or {}
            nogang = (
                f"; the same pods without a gang: {control.get('verdict')} ({len(control.get('bound') or [])} bound)"
                if control
                else ""
            )
            return f"smoke test: {g('verdict')} {mark}{cause}{nogang}; reports: {where}"
        if kind == "problem":
            return f"PROBLEM {g('object')}: {g('message')} Fix: {g('fix')}"
        if kind == "support":
            return f"support: {_support.line(item)}"
    except (TypeError, AttributeError, KeyError) as e:
        raise AnsibleFilterError(f"report_line: {kind} entry {item!r}: {e}") from e
    raise AnsibleFilterError(
        f"report_line: kind={kind!r} is not one of device_plugin, scheduler, operator, smoke, problem, support"
    )


def release_webhooks(docs, patches=None, namespace="default", name_prefix="", service_prefix=""):
    """A release's webhook configurations as its kustomization renders them (``_webhooks.render``)."""
    try:
        return _webhooks.render(docs, patches, namespace, name_prefix, service_prefix)
    except ValueError as e:
        _fail(e)


def kueue_webhooks(docs, frameworks, namespace: str = "kueue-system"):
    """Kueue's webhook configurations cut to its own kinds and ``frameworks`` (``_kueue.webhooks``)."""
    if not isinstance(docs, list) or not isinstance(frameworks, list):
        raise AnsibleFilterError("kueue_webhooks needs the release's manifests (a list) and the frameworks (a list)")
    try:
        return _kueue.webhooks(docs, [str(f) for f in frameworks], namespace)
    except ValueError as e:
        _fail(e)


def _name(obj) -> str | None:
    return ((obj or {}).get("metadata") or {}).get("name")


def ca_injected(configurations) -> list[str]:
    """Names of the admission webhook configurations whose every webhook carries a caBundle."""
    if not isinstance(configurations, list):
        raise AnsibleFilterError(
            f"ca_injected needs a list of webhook configurations, got {type(configurations).__name__}"
        )
    return [_name(c) for c in configurations if _readiness.ca_injected(c or {}) is None]


def device_plugin_ready(info, namespace: str, release: str, expected_gpus=0) -> bool:
    """gang_info's facts show the release's device plugin DaemonSets ready and the GPUs allocatable."""
    if not isinstance(info, dict):
        raise AnsibleFilterError(f"device_plugin_ready needs gang_info's result (a dict), got {type(info).__name__}")
    try:
        return _capacity.device_plugin_ready(info, namespace, release, int(expected_gpus))
    except (TypeError, ValueError) as e:
        msg = f"device_plugin_ready: expected_gpus must be a whole number, got {expected_gpus!r}"
        raise AnsibleFilterError(msg) from e


def condition_true(objects, condition: str) -> list[str]:
    """Names of the objects whose status carries ``condition`` with status True, at the object's
    current generation where the status reports one (a condition of an older spec does not count)."""
    if not isinstance(objects, list):
        raise AnsibleFilterError(f"condition_true needs a list of Kubernetes objects, got {type(objects).__name__}")
    return [_name(o) for o in objects if _readiness.condition_true(o or {}, condition)]


def gang_slots(nodes, gpus_per_member) -> int:
    """Members of ``gpus_per_member`` GPUs that fit at once on gang_info's ``nodes``, node by node
    (the smoke test's own slot arithmetic)."""
    if not isinstance(nodes, list) or not all(isinstance(n, dict) for n in nodes):
        raise AnsibleFilterError(f"gang_slots needs gang_info's nodes (a list of dicts), got {type(nodes).__name__}")
    try:
        per = _capacity.quantity(gpus_per_member)
        return _capacity.member_slots(nodes, per)
    except (ValueError, TypeError) as e:
        raise AnsibleFilterError(f"gang_slots: gpus_per_member={gpus_per_member!r}: {e}") from e


class FilterModule:
    def filters(self):
        return {
            "manifest_filename": manifest_filename,
            "gang_rbac_objects": gang_rbac_objects,
            "ca_injected": ca_injected,
            "release_webhooks": release_webhooks,
            "kueue_webhooks": kueue_webhooks,
            "label_gang": label_gang,
            "native_gang": native_gang,
            "native_gang_static_pod": native_gang_static_pod,
            "native_gang_version_problem": native_gang_version_problem,
            "native_gang_manifest_problem": native_gang_manifest_problem,
            "native_gang_job_problem": native_gang_job_problem,
            "trainer_runtime_gang": trainer_runtime_gang,
            "kube_scheduler_rbac_objects": kube_scheduler_rbac_objects,
            "operator_gang_patch": operator_gang_patch,
            "coscheduling_static_pod": coscheduling_static_pod,
            "static_pod_flag": static_pod_flag,
            "report_line": report_line,
            "condition_true": condition_true,
            "gang_slots": gang_slots,
            "device_plugin_ready": device_plugin_ready,
            "newer_running": newer_running,
        }
