"""Gangs of plain pods on the lab, and watching them to what the scheduler did."""

from __future__ import annotations

import time

from .. import kube
from ..cluster import Lab
from ._common import SP_NAME


# ---- gangs ----------------------------------------------------------------------------------------
def gang(
    ns: str,
    name: str,
    size: int,
    scheduler: str,
    gpus: int = 1,
    min_member: int | None = None,
    scheduler_name: str | None = None,
) -> list[dict]:
    """A PodGroup (for the given scheduler) and ``size`` pods of ``gpus`` GPUs each that join it.

    ``scheduler_name`` overrides the pods' schedulerName (scheduler-plugins as the default scheduler).
    """
    min_member = size if min_member is None else min_member
    docs: list[dict] = []
    labels = {"app": name}
    annotations: dict = {}
    sched_name = "default-scheduler"
    if scheduler == "scheduler-plugins":
        sched_name = scheduler_name or SP_NAME
        docs.append(
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"minMember": min_member, "scheduleTimeoutSeconds": 600},
            }
        )
        labels["scheduling.x-k8s.io/pod-group"] = name
    elif scheduler == "volcano":
        sched_name = "volcano"
        docs.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"minMember": min_member, "queue": "default"},
            }
        )
        annotations["scheduling.k8s.io/group-name"] = name
    for i in range(size):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{name}-{i}", "namespace": ns, "labels": labels, "annotations": annotations},
                "spec": {
                    "schedulerName": sched_name,
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "worker",
                            "image": "busybox:1.36",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                        }
                    ],
                },
            }
        )
    return docs


def observe_gang(
    lab: Lab,
    ns: str,
    name: str,
    size: int,
    scheduler: str,
    hold: float = 20.0,
    add_gpus: int = 0,
    scheduler_name: str | None = None,
) -> dict:
    """Create a gang, watch it ``hold`` seconds, optionally add a GPU node and watch it start.

    Returns what was seen: bound pods during the hold, Running/Pending at the end of the hold, and
    (after adding GPUs) how long until all ran.
    """
    from .. import nodes

    out: dict = {"scheduler": scheduler, "size": size}
    added = None
    with kube.PodWatcher(lab, ns, f"app={name}") as w:
        kube.apply(lab, gang(ns, name, size, scheduler, scheduler_name=scheduler_name))
        t0 = time.monotonic()
        time.sleep(hold)
        s = w.snapshot()
        out["bound_during_hold"] = sorted(s.ever_bound())
        out["running_after_hold"] = sorted(s.running())
        out["pending_after_hold"] = sorted(s.pending())
        out["hold_seconds"] = round(time.monotonic() - t0, 1)
        if add_gpus:
            api = nodes.client(lab.kubeconfig)
            added = nodes.add(api, gpus=add_gpus)
            nodes.wait_ready(api, names=[added])
            t1 = time.monotonic()
            try:
                kube.wait_for(lambda: len(w.snapshot().running()) == size, 60, f"all {size} pods Running")
                out["all_running_after_s"] = round(time.monotonic() - t1, 1)
            except TimeoutError:
                out["all_running_after_s"] = None
            s = w.snapshot()
            out["running_final"] = sorted(s.running())
            out["pending_final"] = sorted(s.pending())
    out["added_node"] = added
    return out
