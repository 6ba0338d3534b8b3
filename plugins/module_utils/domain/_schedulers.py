# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what the collection knows about the gang schedulers — their images,
how each tells the scheduler names it serves (a flag, its KubeSchedulerConfiguration, a fixed name),
second or default mode — and the scheduler name an operator's gang flag must carry. Pure: no I/O.
Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _flags, _native
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
# default profile)
SCHEDULERS = {
    "scheduler_plugins": {
        "label": "scheduler-plugins",
        "images": ("scheduler-plugins/kube-scheduler",),
        "names_from": "config",
        "static_pod_names": (DEFAULT_SCHEDULER,),
    },
    "volcano": {
        "label": "Volcano",
        "images": ("vc-scheduler",),
        "names_from": "flag",
        "name_flag": "scheduler-name",
        "default_names": ("volcano",),
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
    },
}

# image repository (registry and tag stripped) -> scheduler kind
SCHEDULER_IMAGES = {image: kind for kind, spec in SCHEDULERS.items() for image in spec["images"]}

# the KubeSchedulerConfiguration extension points where an enabled Coscheduling makes a gang profile
COSCHEDULING_POINTS = ("multiPoint", "queueSort", "permit", "preFilter")


def serves(s: dict, gang: str, sname: str) -> bool:
    """Whether a found scheduler (an entry of the service's find_schedulers) takes the pods whose
    schedulerName is ``sname``, for gang scheduler ``gang``: Volcano by the names it serves, the
    Coscheduling schedulers by their gang profiles."""
    if gang == "volcano":
        return s["kind"] == "volcano" and sname in (s.get("scheduler_names") or [])
    if gang == "koordinator" or s["kind"] == "koordinator":  # gangs by labels; the operators' PodGroups are not its
        return gang == s["kind"] and sname in (s.get("gang_profiles") or [])
    return sname in (s.get("gang_profiles") or [])


def label(kind: str) -> str:
    """A scheduler kind as messages name it."""
    return SCHEDULERS.get(kind, {}).get("label", kind)


# koord-scheduler: the CRDs it needs at start even for a gang-only profile (without them it never starts)
KOORDINATOR_CRDS = (
    "podgroups.scheduling.sigs.k8s.io",
    "reservations.scheduling.koordinator.sh",
    "devices.scheduling.koordinator.sh",
)


def coscheduling_prebind(config_text: str | None) -> bool | None:
    """Whether a koord-scheduler configuration leaves Coscheduling's preBind on in a gang profile
    (None when the configuration was not read)."""
    import yaml

    if not config_text:
        return None
    try:
        cfg = yaml.safe_load(config_text) or {}
    except yaml.YAMLError:
        return None
    _names, gang = coscheduling_profiles(config_text)
    for p in cfg.get("profiles") or [{}]:
        if (p.get("schedulerName") or DEFAULT_SCHEDULER) not in gang:
            continue
        disabled = (((p.get("plugins") or {}).get("preBind") or {}).get("disabled")) or []
        if not any(d.get("name") in ("Coscheduling", "*") for d in disabled):
            return True
    return False


def _semver(tag: str | None) -> tuple[int, int, int] | None:
    import re

    m = re.match(r"v?(\d+)\.(\d+)\.(\d+)", tag or "")
    return tuple(int(x) for x in m.groups()) if m else None


def koordinator_version_problem(tag: str | None, prebind: bool | None, kube_version: str | None) -> str | None:
    """Why a koord-scheduler version does not gang-schedule here (the versions checked on v1.33):
    v1.7.0 binds no gang member while Coscheduling's preBind is on (it writes an invalid label value),
    v1.8+ needs resource.k8s.io/v1, which only Kubernetes 1.34+ serves."""
    v = _semver(tag)
    if v is None:
        return None
    if v[:2] == (1, 7) and v[2] == 0 and prebind is not False:
        return (
            f"koord-scheduler {tag} binds no gang member while Coscheduling's preBind is enabled (it writes an "
            "invalid label value bind-gang-group-id=<namespace>/<name>)"
        )
    k = _semver(kube_version)
    if v >= (1, 8, 0) and k is not None and k[:2] < (1, 34):
        return (
            f"koord-scheduler {tag} needs resource.k8s.io/v1 (Kubernetes 1.34 or later) and waits forever on "
            f"Kubernetes {kube_version}"
        )
    return None


# scheduler-plugins releases are built on one Kubernetes minor each (v0.X.y on 1.X); the newest served is built
# on 1.34, so no release fits a cluster of 1.36 or later within the version-skew policy
SCHEDULER_PLUGINS_NEWEST_MINOR = 34


def scheduler_plugins_skew(tag: str | None, kube_version: str | None) -> str | None:
    """Why a scheduler-plugins release is outside Kubernetes' version-skew policy on this cluster: a
    kube-scheduler may be at most one minor older than the API server, and never newer. None when within it
    or when either version is unknown.

    >>> scheduler_plugins_skew("v0.33.5", "v1.34.2") is None
    True
    >>> scheduler_plugins_skew("v0.33.5", "v1.37.2")[:60]
    'scheduler-plugins v0.33.5 is built on Kubernetes 1.33 and the'
    """
    v, k = _semver(tag), _semver(kube_version)
    if v is None or k is None or v[0] != 0 or k[1] - v[1] in (0, 1):
        return None
    how = "newer than" if v[1] > k[1] else f"{k[1] - v[1]} minors older than"
    return (
        f"scheduler-plugins {tag} is built on Kubernetes 1.{v[1]} and the cluster runs {kube_version}: its scheduler "
        f"is {how} the API server, outside Kubernetes' version-skew policy (a kube-scheduler at most one minor "
        "older, never newer)"
    )


def scheduler_plugins_skew_fix(kube_version: str | None) -> str:
    """What to do about a skewed scheduler-plugins: a fitting release where one exists, else another gang path."""
    k = _semver(kube_version)
    if k is not None and k[1] - 1 <= SCHEDULER_PLUGINS_NEWEST_MINOR:
        return (
            f"run a scheduler-plugins v0.{k[1]}.x or v0.{k[1] - 1}.x release (scheduler_plugins_version), or "
            "Volcano (gangsched_gang_scheduler: volcano)"
        )
    return (
        f"no scheduler-plugins release is built on Kubernetes 1.{SCHEDULER_PLUGINS_NEWEST_MINOR + 1} or later: run "
        "Volcano (gangsched_gang_scheduler: volcano) on this cluster; running scheduler-plugins anyway was accepted "
        "with scheduler_plugins_accept_skew, and this stays reported"
    )


def coscheduling_profiles(config_text: str) -> tuple[list[str], list[str]]:
    """(all profile names, names of profiles with Coscheduling enabled) of a KubeSchedulerConfiguration."""
    import yaml

    try:
        cfg = yaml.safe_load(config_text) or {}
    except yaml.YAMLError:
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


def koordinator_refusal(sname: str, operator_label: str | None = None) -> str:
    """Why an operator's gang flag must not name koord-scheduler, and the route that works."""
    who = operator_label or "A Kubeflow operator"
    return (
        f"{who}'s gang flag cannot point at koord-scheduler ({sname!r}): the operator would create "
        "scheduling.x-k8s.io or scheduling.volcano.sh PodGroups, which koord-scheduler ignores, so a job that does "
        "not fit starts partially (some pods Running, the rest Pending, GPUs held). Koordinator forms a gang from the "
        "labels pod-group.scheduling.sigs.k8s.io/name and pod-group.scheduling.sigs.k8s.io/min-available on each "
        f"replica's pod template with schedulerName {sname!r}: add them with the gangsched.kubeflow.label_gang filter "
        "and leave the operator's gang flag unset (gang_scheduler=none)"
    )


def _derive_profile(kind: str, given: str | None, served: list[str], schedulers: list[dict]) -> str:
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


def refuse_koordinator(given: str | None, schedulers: list[dict], operator_label: str | None = None) -> None:
    """Raises when an operator's gang flag would name a profile a running koord-scheduler serves."""
    koord = {n for s in schedulers if s["kind"] == "koordinator" for n in s.get("gang_profiles") or []}
    if given and given in koord:
        raise GangError(koordinator_refusal(given, operator_label))


def derive_scheduler_name(
    gang_scheduler: str, given: str | None, schedulers: list[dict], operator_label: str | None = None
) -> str:
    """The scheduler name gangs for ``gang_scheduler`` name (the value an operator's gang flag must
    carry), from ``given`` and the schedulers found; ``operator_label`` names the operator in messages."""
    if gang_scheduler == _native.GANG_PATH:
        return (
            _native.SCHEDULER_NAME
        )  # kube-scheduler's default profile runs the gang plugin (given: checked by the caller)
    koord = sorted({n for s in schedulers if s["kind"] == "koordinator" for n in s.get("gang_profiles") or []})
    if operator_label and (gang_scheduler == "koordinator" or (given and given in koord)):
        raise GangError(koordinator_refusal(given or (koord[0] if koord else "koord-scheduler"), operator_label))
    if gang_scheduler == "koordinator":
        return _derive_profile("koordinator", given, koord, schedulers)
    if gang_scheduler == "volcano":
        if given not in (None, "volcano"):
            who = f"{operator_label} treats" if operator_label else "the Kubeflow operators treat"
            raise GangError(
                f"scheduler_name={given!r} with gang_scheduler=volcano: {who} any value other than 'volcano' as a "
                "scheduler-plugins profile name. Leave scheduler_name unset"
            )
        return "volcano"
    served = sorted({n for s in schedulers if s["kind"] == "scheduler_plugins" for n in s["gang_profiles"]})
    if given:
        if given == "volcano":
            raise GangError(
                "scheduler_name='volcano' with gang_scheduler=scheduler_plugins would switch the operator to Volcano; "
                "set gang_scheduler=volcano instead"
            )
        if not served and not any(s["kind"] == "scheduler_plugins" for s in schedulers):
            raise GangError(
                f"No scheduler-plugins scheduler serves {given!r}: none is deployed. Install scheduler-plugins "
                "(role gangsched.kubeflow.scheduler_plugins) first"
            )
        if served and given not in served:
            raise GangError(
                f"No scheduler-plugins scheduler serves the profile {given!r} with Coscheduling (found: "
                f"{', '.join(served)}). Pods would stay Pending forever; set scheduler_name to one of them"
            )
        return given
    if len(served) == 1:
        return served[0]
    if not served:
        raise GangError(
            "Cannot determine the scheduler-plugins scheduler name: no scheduler-plugins kube-scheduler with a "
            "Coscheduling profile was found (Deployments in all namespaces, the kube-scheduler static pod). "
            "Install it first or set scheduler_name"
        )
    raise GangError(
        f"Cannot determine the scheduler-plugins scheduler name: several Coscheduling profiles run "
        f"({', '.join(served)}); set scheduler_name to one of them"
    )
