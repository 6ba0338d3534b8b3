#!/usr/bin/python
# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gang_smoke_test
short_description: Run a gang and return an all-or-nothing verdict
version_added: 0.1.0
description:
  - Creates a gang (plain pods with a PodGroup, or a PyTorchJob, TFJob or MPIJob through the Kubeflow
    operators), watches its pods with the watch API and returns a verdict, then removes everything it
    created (also on failure, timeout or SIGTERM). Every object carries the label
    C(gangsched.kubeflow/smoke-run=<run id>).
  - "Verdicts: V(gang_held_running) (every member Running), V(gang_held_pending) (no member ever bound,
    and the scheduler marked every member unschedulable after all were there, O(skew_seconds) ago; or,
    without such marks, no member bound for O(settle_seconds)), V(partial) (some members bound while another stayed unbound longer than
    O(skew_seconds)), V(timeout), V(error) (with RV(cause): no PodGroup created, scheduler not running,
    forbidden ...)."
  - The task fails when the verdict is not the expected one; the returned timeline says why.
  - With O(control=true) the same pods are then run without a gang on the default scheduler, to show
    the partial start gang scheduling prevents (its verdict is returned, not asserted).
  - A run interrupted before its cleanup (SIGKILL, a cancelled pipeline) leaves labelled objects
    behind. The next run removes those in its O(namespace) before it measures capacity (RV(stale_removed));
    O(state=absent) removes them in all namespaces and runs no test. Run one smoke test at a time per namespace.
author:
  - gangsched.kubeflow maintainers (@gangsched)
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: partial
    details: Runs the preflight (CRDs, scheduler, capacity, expected verdict) and creates nothing.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
    details: >-
      It leaves nothing behind to diff; RV(ignore:changed) is true only when leftovers of an earlier run
      were removed (RV(stale_removed)).
  idempotent:
    description: When run twice in a row outside check mode, with the same arguments, the second run reports no change.
    support: full
    details: Each run creates and removes its own objects.
options:
  state:
    description:
      - V(present) runs the test.
      - V(absent) runs no test and removes every object labelled C(gangsched.kubeflow/smoke-run) in all
        namespaces (jobs, PodGroups, pods, and namespaces a run created), as left by interrupted runs.
    type: str
    default: present
    choices: [present, absent]
  gang_scheduler:
    description: The gang scheduler to test. Required with O(state=present).
    type: str
    choices: [volcano, scheduler_plugins]
  scheduler_name:
    description: The scheduler-plugins profile name; derived from the running scheduler when not set.
    type: str
  workload:
    description: What to run. The Kubeflow jobs need the operator installed with its gang flag.
    type: str
    default: pods
    choices: [pods, pytorchjob, tfjob, mpijob]
  replicas:
    description:
      - Members of the gang (PyTorchJob 1 Master + N-1 Workers, TFJob 1 PS + N-1 Workers, MPIJob N workers).
    type: int
    default: 2
  resources:
    description: Requests (and limits) of every member.
    type: dict
    default: {nvidia.com/gpu: 1}
  expect:
    description: Expected outcome; V(auto) is V(running) when the gang fits the free capacity, else V(pending).
    type: str
    default: auto
    choices: [running, pending, auto]
  namespace:
    description: Namespace to run in; created (and removed again) when missing.
    type: str
    default: gangsched-smoke
  timeout:
    description: Seconds to wait for a verdict.
    type: int
    default: 180
  settle_seconds:
    description:
      - How long no member may be bound before the gang counts as held pending, when the scheduler has not
        marked every member unschedulable (once it has, O(skew_seconds) after its last mark is enough).
    type: int
    default: 20
  skew_seconds:
    description: How long after the first bind the other members may still be unbound before it is a partial gang.
    type: int
    default: 5
  control:
    description: Also run the same pods without a gang on the default scheduler.
    type: bool
    default: false
  cleanup:
    description: Remove what the test created (always, also on failure, timeout or interrupt).
    type: bool
    default: true
  report_dir:
    description: Directory for C(gang-smoke-<run id>.json), C(.xml) (JUnit) and C(.svg) (timeline).
    type: path
  run_id:
    description: Id for the labels and names; random when not set.
    type: str
seealso:
  - module: gangsched.kubeflow.gang_info
  - module: gangsched.kubeflow.operator_gang
"""

EXAMPLES = r"""
---
- name: A gang that fits must start as a whole
  gangsched.kubeflow.gang_smoke_test:
    gang_scheduler: volcano
    replicas: 4
    expect: running
    report_dir: reports/

- name: Remove what interrupted smoke runs left behind, in all namespaces
  gangsched.kubeflow.gang_smoke_test:
    state: absent

- name: One member more than the cluster has GPUs must stay entirely Pending, and show the control
  gangsched.kubeflow.gang_smoke_test:
    gang_scheduler: scheduler_plugins
    workload: pytorchjob
    replicas: 5
    expect: pending
    control: true
"""

RETURN = r"""
verdict:
  description: The verdict; null in check mode.
  returned: always
  type: str
  sample: gang_held_pending
expected:
  description: The expected outcome (V(running) or V(pending)), after resolving V(auto).
  returned: always
  type: str
  sample: pending
ok:
  description: Whether the verdict is the expected one; null in check mode.
  returned: always
  type: bool
  sample: true
cause:
  description: Why the verdict is V(error).
  returned: when the verdict is error
  type: str
  sample: "scheduler not running: no ready scheduler serves 'volcano'"
capacity:
  description: Free GPUs on schedulable nodes, whether the gang fits, and how many members would fit.
  returned: always
  type: dict
  sample: {"free_gpus": 4, "fits": false, "slots": 4}
scheduler_name:
  description: The scheduler name the members use.
  returned: always
  type: str
  sample: volcano
run_id:
  description: The run id in every created object's labels.
  returned: when the test ran
  type: str
  sample: 3f2a9c1d
gang:
  description:
    - What was seen of the gang — bound, running, unbound and ever-bound members, and the timeline.
    - C(held_pending_by) says how a V(gang_held_pending) verdict was reached, C(rejected) (the scheduler marked
      every member unschedulable) or C(settled) (no member bound for O(settle_seconds)); null otherwise.
  returned: when the test ran
  type: dict
  sample: {"verdict": "gang_held_pending", "bound": [], "held_pending_by": "rejected",
           "timeline": [{"t": 0.01, "pod": "smoke-x-gang-0", "state": "Unschedulable"}]}
control:
  description: The same for the no-gang control run.
  returned: when O(control=true)
  type: dict
  sample: {"verdict": "partial", "bound": ["smoke-x-control-0"]}
stale_removed:
  description:
    - Objects of earlier, interrupted runs removed before this run (or, with O(state=absent), by it).
    - In check mode, what would be removed.
  returned: always
  type: list
  elements: str
  sample: ["Pod gangsched-smoke/smoke-3f2a9c1d-gang-0"]
left_behind:
  description: Objects still present after cleanup (should be empty).
  returned: when the test ran, or with O(state=absent)
  type: list
  elements: str
  sample: []
reports:
  description: Paths of the JSON, JUnit and SVG reports.
  returned: when O(report_dir) is set
  type: dict
  sample: {"json": "reports/gang-smoke-3f2a9c1d.json"}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gangsched.kubeflow.plugins.module_utils._client import Client, check_requirements
from ansible_collections.gangsched.kubeflow.plugins.module_utils._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils._module import with_auth
from ansible_collections.gangsched.kubeflow.plugins.module_utils._report import write
from ansible_collections.gangsched.kubeflow.plugins.module_utils._smoke import run


def argument_spec() -> dict:
    return with_auth(
        state=dict(type="str", default="present", choices=["present", "absent"]),
        gang_scheduler=dict(type="str", choices=["volcano", "scheduler_plugins"]),
        scheduler_name=dict(type="str"),
        workload=dict(type="str", default="pods", choices=["pods", "pytorchjob", "tfjob", "mpijob"]),
        replicas=dict(type="int", default=2),
        resources=dict(type="dict", default={"nvidia.com/gpu": 1}),
        expect=dict(type="str", default="auto", choices=["running", "pending", "auto"]),
        namespace=dict(type="str", default="gangsched-smoke"),
        timeout=dict(type="int", default=180),
        settle_seconds=dict(type="int", default=20),
        skew_seconds=dict(type="int", default=5),
        control=dict(type="bool", default=False),
        cleanup=dict(type="bool", default=True),
        report_dir=dict(type="path"),
        run_id=dict(type="str"),
    )


def main() -> None:
    module = AnsibleModule(
        argument_spec=argument_spec(),
        supports_check_mode=True,
        required_if=[("state", "present", ["gang_scheduler"])],
    )
    check_requirements(module)
    try:
        client = Client.from_params(module.params)
        result = run(client, module.params, module.check_mode, module.warn)
    except GangError as e:
        module.fail_json(msg=e.msg, **e.details)
    if module.params["report_dir"] and result.get("verdict") is not None:
        result["reports"] = write(module.params["report_dir"], result)
    if result.get("left_behind"):
        module.warn(f"objects left after cleanup: {', '.join(result['left_behind'])}")
    if result.get("ok") is False:
        g = result.get("gang") or {}
        why = result.get("cause") or (
            f"bound {len(g.get('bound', []))}/{result['replicas']}, running {len(g.get('running', []))}, "
            f"unbound {', '.join(g.get('unbound', [])) or 'none'}"
        )
        module.fail_json(
            msg=f"Gang smoke test: verdict {result['verdict']}, expected {result['expected']} ({why})", **result
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
