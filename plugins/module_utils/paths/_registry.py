# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: every gang path, one registration line each, and what is asked of them by name —
the path of a gang_scheduler value, the choices of every module's gang_scheduler option, the scheduler name a path's
gangs name, which path an operator's gang flag leads to. Pure: no I/O. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _operators
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import (
    _gang_path,
    _koordinator,
    _native,
    _scheduler_plugins,
    _volcano,
)

# gang_scheduler value -> its path, in the order the modules list their choices
PATHS: dict[str, _gang_path.GangPath] = {}


def register(path: _gang_path.GangPath) -> _gang_path.GangPath:
    """Adds a gang path; every module's gang_scheduler choices, the smoke test and gang_info then know it."""
    PATHS[path.name] = path
    return path


register(_volcano.PATH)
register(_scheduler_plugins.PATH)
register(_koordinator.PATH)
register(_native.PATH)

# every gang path a module's gang_scheduler option takes (its choices come from here)
GANG_PATHS = tuple(PATHS)


def get(name: str) -> _gang_path.GangPath:
    """The path of a gang_scheduler value (KeyError for any other)."""
    return PATHS[name]


def names(**having) -> list[str]:
    """The paths' names, in order; ``having``: only those whose attributes have these values
    (operator_flag=True: the paths an operator's gang flag points at)."""
    return [n for n, p in PATHS.items() if all(getattr(p, k) == v for k, v in having.items())]


def derive_scheduler_name(gang: str, given: str | None, schedulers: list[dict], operator_label: str | None = None):
    """The scheduler name gangs for ``gang`` name (the value an operator's gang flag must carry), from ``given``
    and the schedulers found; ``operator_label`` names the operator in messages. Raises GangError."""
    path = get(gang)
    if operator_label and path.operator_flag:
        refuse_claimed(given, schedulers, operator_label)
    return path.scheduler_name(given, schedulers, operator_label)


def refuse_claimed(given: str | None, schedulers: list[dict], operator_label: str | None = None) -> None:
    """Raises where an operator's gang flag ``given`` names the scheduler of a path that ignores the operator's
    PodGroups (a koord-scheduler profile), whatever path was asked for."""
    for p in PATHS.values():
        if given and p.claims_flag(given, schedulers):
            raise GangError(p.operator_refusal("", operator_label, given))


def serves(s: dict, gang: str, sname: str) -> bool:
    """Whether a found scheduler takes the pods of a ``gang`` path whose schedulerName is ``sname``."""
    return get(gang).serves(s, sname)


def flag_path(value: str, schedulers: list[dict]) -> _gang_path.GangPath:
    """The path an operator's gang flag ``value`` leads to: one that claims the value (a koord-scheduler profile),
    else the path of the PodGroups the operator makes for it."""
    for p in PATHS.values():
        if p.claims_flag(value, schedulers):
            return p
    kind = _operators.podgroup_scheduler(value)
    return next(p for p in PATHS.values() if p.podgroup_kind == kind)


def fixed_scheduler_names() -> set[str]:
    """The scheduler names some path's gangs always name (Volcano's)."""
    return {p.fixed_scheduler_name for p in PATHS.values() if p.fixed_scheduler_name}


def run_kinds() -> tuple:
    """(kind, apiVersion) of the gang objects a smoke run may create on any path, each once."""
    out: list = []
    for p in PATHS.values():
        out += [k for k in p.run_kinds() if k not in out]
    return tuple(out)
