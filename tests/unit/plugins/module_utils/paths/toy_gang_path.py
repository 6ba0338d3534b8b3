"""A toy fifth gang path, the whole of it in this one file: a scheduler "toy" that gangs pods by two labels (no
PodGroup object), takes plain pods only, and whose gang_info check names a toy scheduler that is not ready.
test_a_fifth_gang_path registers it with one line and runs the collection's code on it unchanged."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _gang_path

GANG_LABEL, SIZE_LABEL = "toy.example/gang", "toy.example/size"


class Toy(_gang_path.GangPath):
    name = "toy"
    title = "Toy"
    role = "toy"
    scheduler_kind = "toy"
    workloads = ("pods",)
    operator_flag = False

    def pod_marks(self, name, replicas):
        return {GANG_LABEL: name, SIZE_LABEL: str(replicas)}, {}

    def scheduler_name(self, given, schedulers, operator_label=None):
        return given or "toy-scheduler"

    def serves(self, s, sname):
        return s["kind"] == self.scheduler_kind and sname in (s.get("scheduler_names") or [])

    def cluster_problems(self, schedulers, ops, facts):
        return [
            {
                "object": _gang_path.where(s),
                "message": "the toy scheduler is not ready: its gangs wait",
                "fix": "start the toy scheduler",
            }
            for s in schedulers
            if s["kind"] == self.scheduler_kind and not s["ready"]
        ]


PATH = Toy()
