# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what the collection knows about the gang schedulers — their images,
how each tells the scheduler names it serves (a flag, its KubeSchedulerConfiguration, a fixed name),
second or default mode — and the scheduler name an operator's gang flag must carry. Pure: no I/O.
Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _flags
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError

DEFAULT_SCHEDULER = "default-scheduler"

# scheduler kind -> its name in messages, the image names it runs as (registry and tag stripped, last
# path components matched), and how the names it serves are found (``names_from``):
#   flag:   the values of --<name_flag>, ``default_names`` without one
#   config: the profiles of the KubeSchedulerConfiguration it reads (--config, from a ConfigMap); one named
#           default-scheduler makes it the default scheduler (mode default), else it runs as a second one
#   fixed:  always ``default_names``
# ``static_pod_names``: it may run as the kube-scheduler static pod (default mode), serving these names
# (the config file lives on the control-plane host; kubeadm-style installs run Coscheduling in the
# default profile); ``conf_flag``: the flag naming its own configuration file, read by gang_info (vc-scheduler's actions
# and plugins); ``gangs``: "labels" where it forms its gangs from labels on the pods and ignores every
# PodGroup the operators create; ``prebind``: its configuration's Coscheduling preBind is read (koord-scheduler);
# ``permit_wait``: its configuration's CoschedulingArgs permitWaitingTimeSeconds is read (scheduler-plugins)
SCHEDULERS = {
    "scheduler_plugins": {
        "label": "scheduler-plugins",
        "images": ("scheduler-plugins/kube-scheduler",),
        "names_from": "config",
        "static_pod_names": (DEFAULT_SCHEDULER,),
        "permit_wait": True,
    },
    "volcano": {
        "label": "Volcano",
        "images": ("vc-scheduler",),
        "names_from": "flag",
        "name_flag": "scheduler-name",
        "default_names": ("volcano",),
        "conf_flag": "scheduler-conf",
    },
    # archived, does not run on current Kubernetes: found to be reported
    "kube_batch": {
        "label": "kube-batch",
        "images": ("kube-batch",),
        "names_from": "fixed",
        "default_names": ("kube-batch",),
    },
    "koordinator": {
        "label": "koord-scheduler",
        "images": ("koord-scheduler",),
        "names_from": "config",
        "gangs": "labels",
        "prebind": True,
    },
}

# image repository (registry and tag stripped) -> scheduler kind
SCHEDULER_IMAGES = {image: kind for kind, spec in SCHEDULERS.items() for image in spec["images"]}

# the KubeSchedulerConfiguration extension points where an enabled Coscheduling makes a gang profile
COSCHEDULING_POINTS = ("multiPoint", "queueSort", "permit", "preFilter")


def label_gangs(kind: str) -> bool:
    """Whether a scheduler kind forms its gangs from labels on the pods (and ignores the operators' PodGroups)."""
    return SCHEDULERS.get(kind, {}).get("gangs") == "labels"


def gang_profiles_of(schedulers: list[dict], kind: str) -> list[str]:
    """The gang profiles that the found schedulers of ``kind`` serve, sorted, each once."""
    return sorted({n for s in schedulers if s["kind"] == kind for n in s.get("gang_profiles") or []})


def label(kind: str) -> str:
    """A scheduler kind as messages name it."""
    return SCHEDULERS.get(kind, {}).get("label", kind)


def _gang_profiles(config_text: str | None) -> list[dict] | None:
    """The profiles of a KubeSchedulerConfiguration that enable Coscheduling; None when it was not read or does not
    parse."""
    import yaml

    if not config_text:
        return None
    try:
        cfg = yaml.safe_load(config_text) or {}
    except yaml.YAMLError:
        return None
    if not isinstance(cfg, dict):
        return None
    _names, gang = coscheduling_profiles(config_text)
    return [p for p in cfg.get("profiles") or [{}] if (p.get("schedulerName") or DEFAULT_SCHEDULER) in gang]


def coscheduling_prebind(config_text: str | None) -> bool | None:
    """Whether a koord-scheduler configuration leaves Coscheduling's preBind on in a gang profile
    (None when the configuration was not read)."""
    gangs = _gang_profiles(config_text)
    if gangs is None:
        return None
    for p in gangs:
        disabled = (((p.get("plugins") or {}).get("preBind") or {}).get("disabled")) or []
        if not any(d.get("name") in ("Coscheduling", "*") for d in disabled):
            return True
    return False


# scheduler-plugins' CoschedulingArgs default: how long the members a gang placed wait at Permit for the rest
# (a PodGroup's spec.scheduleTimeoutSeconds overrides it)
PERMIT_WAIT_DEFAULT = 60


def permit_waits(config_text: str | None) -> dict[str, int] | None:
    """Gang profile name -> its Coscheduling permitWaitingTimeSeconds (``PERMIT_WAIT_DEFAULT`` where its pluginConfig
    sets none) of a KubeSchedulerConfiguration; None when the configuration was not read.

    >>> permit_waits("profiles: [{schedulerName: a, plugins: {multiPoint: {enabled: [{name: Coscheduling}]}}}]")
    {'a': 60}
    """
    gangs = _gang_profiles(config_text)
    if gangs is None:
        return None
    out = {}
    for p in gangs:
        pname = p.get("schedulerName") or DEFAULT_SCHEDULER
        args = next((c.get("args") or {} for c in p.get("pluginConfig") or [] if c.get("name") == "Coscheduling"), {})
        wait = args.get("permitWaitingTimeSeconds")
        out[pname] = wait if isinstance(wait, int) and wait > 0 else PERMIT_WAIT_DEFAULT
    return out


def volcano_conf(text: str | None) -> dict | None:
    """The actions and the plugins of a vc-scheduler configuration ({"actions": [...], "plugins": [...]}), None when
    it was not read or is not one."""
    import yaml

    if not text:
        return None
    try:
        cfg = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return None
    if not isinstance(cfg, dict):
        return None
    actions = [a.strip() for a in str(cfg.get("actions") or "").split(",") if a.strip()]
    plugins = [p.get("name") for t in cfg.get("tiers") or [] for p in (t or {}).get("plugins") or [] if p.get("name")]
    return {"actions": actions, "plugins": plugins}


def semver(tag: str | None) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a release tag such as v1.6.1, None when it is not one."""
    import re

    m = re.match(r"v?(\d+)\.(\d+)\.(\d+)", tag or "")
    return tuple(int(x) for x in m.groups()) if m else None


def coscheduling_profiles(config_text: str) -> tuple[list[str], list[str]]:
    """(all profile names, names of profiles with Coscheduling enabled) of a KubeSchedulerConfiguration."""
    import yaml

    try:
        cfg = yaml.safe_load(config_text) or {}
    except yaml.YAMLError:
        return [], []
    if not isinstance(cfg, dict):
        return [], []
    names, cosched = [], []
    for p in cfg.get("profiles") or [{}]:
        pname = p.get("schedulerName") or DEFAULT_SCHEDULER
        names.append(pname)
        plugins = p.get("plugins") or {}
        for point in COSCHEDULING_POINTS:
            enabled = ((plugins.get(point) or {}).get("enabled")) or []
            if any(e.get("name") == "Coscheduling" for e in enabled):
                cosched.append(pname)
                break
    return names, cosched


def served_names(kind: str, container: dict, config_text: str | None) -> tuple[list[str], list[str]]:
    """(scheduler names served, of them the gang ones) by a scheduler container of ``kind``
    (``config_text``: its KubeSchedulerConfiguration when it reads one and it could be read)."""
    spec = SCHEDULERS[kind]
    how = spec["names_from"]
    if how == "flag":
        hits = _flags.find(container.get("command"), container.get("args"), spec["name_flag"])
        names = [h.value for h in hits if h.value] or list(spec["default_names"])
        return names, names
    if how == "config":
        if config_text:
            return coscheduling_profiles(config_text)
        return [], []
    names = list(spec["default_names"])
    return names, names


def mode(kind: str, scheduler_names: list[str]) -> str:
    """default: the scheduler replaces the default scheduler (serves its profile); second: beside it."""
    if SCHEDULERS[kind]["names_from"] == "config" and DEFAULT_SCHEDULER in scheduler_names:
        return "default"
    return "second"


def derive_profile(kind: str, given: str | None, served: list[str], schedulers: list[dict]) -> str:
    """A Coscheduling profile of a ``kind`` scheduler: ``given`` when one serves it, else the only one."""
    name = label(kind)
    if given:
        if served and given not in served:
            raise GangError(
                f"No {name} profile {given!r} with Coscheduling runs (found: {', '.join(served)}); set scheduler_name "
                "to one of them"
            )
        if not any(s["kind"] == kind for s in schedulers):
            raise GangError(f"No {name} serves {given!r}: none is deployed. Install it first")
        return given
    if len(served) == 1:
        return served[0]
    if not served:
        raise GangError(f"Cannot determine the {name} scheduler name: none with a Coscheduling profile was found")
    raise GangError(f"Several {name} Coscheduling profiles run ({', '.join(served)}); set scheduler_name")
