# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the Volcano gang path — vc-scheduler serving the scheduler name 'volcano', its
scheduling.volcano.sh PodGroups (a pod joins by the annotation scheduling.k8s.io/group-name) in queues, made by the
Kubeflow operators and Trainer, and what gang_info checks of it. Pure: no I/O. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _gang_path

NAME = "volcano"  # the scheduler name Volcano serves by default, and the value the operators treat as Volcano's
FLAG_FIX = "remove --scheduler-name from the Volcano scheduler's args (it then serves volcano), or add "


class Volcano(_gang_path.GangPath):
    name = "volcano"
    title = "Volcano"
    role = "volcano"
    scheduler_kind = "volcano"
    podgroup_kind = "volcano"
    fixed_scheduler_name = NAME
    queues = True
    smoke_queue = "default"

    def podgroup_spec(self) -> dict:
        return {"queue": self.smoke_queue}

    def scheduler_name(self, given, schedulers, operator_label=None) -> str:
        if given not in (None, NAME):
            who = f"{operator_label} treats" if operator_label else "the Kubeflow operators treat"
            raise GangError(
                f"scheduler_name={given!r} with gang_scheduler=volcano: {who} any value other than 'volcano' as a "
                "scheduler-plugins profile name. Leave scheduler_name unset"
            )
        return NAME

    def serves(self, s: dict, sname: str) -> bool:
        return s["kind"] == self.scheduler_kind and sname in (s.get("scheduler_names") or [])

    def runs_flag(self, s: dict, sname: str) -> bool:
        return s["kind"] == self.scheduler_kind

    def runtime_scheduler_refusal(self, given):
        if given not in (None, NAME):
            return (
                f"scheduler_name={given!r} with gang_scheduler=volcano: Volcano gangs are scheduled by 'volcano'. "
                + ("Leave scheduler_name unset")
            )
        return None

    def not_served_hint(self, schedulers, sname):
        found = [s for s in schedulers if s["kind"] == self.scheduler_kind]
        if not found:
            return None
        names = "; ".join(
            f"{_gang_path.label(s)} serves {', '.join(map(repr, s['scheduler_names']))} (--scheduler-name)"
            for s in found
        )
        return (
            f"scheduler not running: no ready scheduler serves {sname!r}: {names}; the gang's pods name "
            f"{sname!r} and would never be looked at. Remove --scheduler-name (or add --scheduler-name={sname})"
        )

    def flag_problems(self, o, value, schedulers, crds):
        out = super().flag_problems(o, value, schedulers, crds)
        ready = [s for s in schedulers if s["kind"] == self.scheduler_kind and s["ready"]]
        if not ready:
            out.append((f"--{o['gang_flag']}={NAME} but no Volcano scheduler is running", "install Volcano"))
        elif not any(NAME in s["scheduler_names"] for s in ready):
            where = "; ".join(
                f"Deployment {s['namespace']}/{s['name']} serves {', '.join(s['scheduler_names'])}" for s in ready
            )
            out.append(
                (
                    f"--{o['gang_flag']}={NAME} names no scheduler: the running Volcano scheduler ({where}, from its "
                    "--scheduler-name) does not serve 'volcano'; members would stay Pending forever, unseen",
                    FLAG_FIX + "--scheduler-name=volcano",
                )
            )
        return out

    def cluster_problems(self, schedulers, ops, facts):
        ready = [s for s in schedulers if s["kind"] == self.scheduler_kind and s["ready"]]
        if not ready or any(NAME in s["scheduler_names"] for s in ready) or any(o["gang_value"] == NAME for o in ops):
            return []
        # no operator points at it yet: the Kubeflow operators' Volcano gangs would still be unseen
        return [
            {
                "object": f"Deployment {s['namespace']}/{s['name']}",
                "message": f"the Volcano scheduler serves only {', '.join(s['scheduler_names'])} (--scheduler-name), "
                "not 'volcano': the pods of Kubeflow jobs gang-scheduled by Volcano (schedulerName volcano) would "
                "stay Pending, unseen, while it reports Ready",
                "fix": FLAG_FIX + "--scheduler-name=volcano",
            }
            for s in ready
        ]


PATH = Volcano()
