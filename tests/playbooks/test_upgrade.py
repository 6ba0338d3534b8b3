"""The collection's own upgrade, in place, on a fresh lab: site.yml with the previous pins (the device plugin's chart
v0.17.3, scheduler-plugins v0.33.5 as the second scheduler, mpi-operator v0.6.0, Kubeflow Trainer v2.2.0 and JobSet
v0.11.1, each from its own build of that release), users' jobs on it (an MPIJob gang running, a TFJob gang held whole, a
gang copy of a runtime and a TrainJob on it), then site.yml with only the version variables back at their defaults.
Check mode shows the upgrade and writes nothing; the upgrade keeps every user object (the same uid), the running gang's
pods (the same uid, still bound), the held gang wholly held, the operators' gang flags; the lab then runs the new
releases' binaries and the smoke test proves them. Asking for the previous pins again is refused as a downgrade, before
any change. Then the same for koord-scheduler and its label gangs."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
import seeds
from ansible_run import module, playbook, run_module
from kubernetes import client as k

from lab import kube, scenarios
from lab import versions as V

pytestmark = pytest.mark.timeout(2400)

PATH = {"gangsched_gang_scheduler": "scheduler_plugins", "gangsched_trainer": True}
SP_API = ("scheduling.x-k8s.io", "v1alpha1")
TRAINER_API = ("trainer.kubeflow.org", "v1alpha1")
DEPLOYMENTS = {
    "scheduler_plugins": ("scheduler-plugins", "scheduler-plugins-scheduler"),
    "trainer": ("kubeflow-system", "kubeflow-trainer-controller-manager"),
    "jobset": ("jobset-system", "jobset-controller-manager"),
    "mpi_operator": ("mpi-operator", "mpi-operator"),
}
DAEMONSETS = {"nvidia_device_plugin": ("nvidia-device-plugin", "nvidia-device-plugin")}
# the lab unit of each component's binary (the runner runs the build of the image's tag)
UNITS = {
    "scheduler_plugins": "scheduler-plugins",
    "trainer": "trainer",
    "jobset": "jobset",
    "mpi_operator": "mpi-operator",
}


def _previous(lab) -> dict:
    """The role variables of the previous pins, from the lab's inventory facts: each release and its own files."""
    prev = json.loads(Path(lab.inventory_facts).read_text())["previous"]
    if not {"scheduler_plugins", "trainer", "jobset", "mpi_operator", "nvidia_device_plugin"} <= set(prev):
        pytest.skip(f"this lab's Kubernetes release has no previous pins to upgrade from: {sorted(prev)}")
    sp, tr, js, mpi = prev["scheduler_plugins"], prev["trainer"], prev["jobset"], prev["mpi_operator"]
    dp = prev["nvidia_device_plugin"]
    return {
        "gpu_device_plugin_version": dp["version"].lstrip("v"),
        "gpu_device_plugin_chart_ref": dp["chart"],
        "kubeflow_gang_mpi_operator_image": f"mpioperator/mpi-operator:{mpi['version'].lstrip('v')}",
        "kubeflow_gang_mpi_operator_crd_src": mpi["crds"],
        "scheduler_plugins_version": sp["version"].lstrip("v"),
        "scheduler_plugins_chart_ref": sp["chart"],
        "scheduler_plugins_crd_src": sp["crds"],
        "trainer_version": tr["version"].lstrip("v"),
        "trainer_crd_src": tr["crds"],
        "trainer_webhook_src": tr["webhook"],
        "trainer_jobset_version": js["version"].lstrip("v"),
        "trainer_jobset_crd_src": js["crds"],
        "trainer_jobset_webhook_src": js["webhook"],
    }


def _tags(lab) -> dict[str, str]:
    apps = k.AppsV1Api(kube.api(lab))
    out = {}
    objects = [(c, apps.read_namespaced_deployment(n, ns)) for c, (ns, n) in DEPLOYMENTS.items()]
    objects += [(c, apps.read_namespaced_daemon_set(n, ns)) for c, (ns, n) in DAEMONSETS.items()]
    for comp, obj in objects:
        image = obj.spec.template.spec.containers[0].image
        tag = image.rsplit(":", 1)[1]
        out[comp] = tag if tag.startswith("v") else f"v{tag}"
    return out


def _running_builds(lab, units: dict[str, str] = UNITS) -> dict[str, set[str]]:
    """The releases of the components' binaries this lab's runner pods run now, from their processes' executables (the
    lab's cache keeps each build under ``<unit>-<version>-<recipe>``), by component (``units``: component -> unit)."""
    out: dict[str, set[str]] = {c: set() for c in units}
    for name, st in lab.status().items():
        if not name.startswith("pod/") or not st["up"]:
            continue
        try:
            argv0 = Path(f"/proc/{st['pid']}/cmdline").read_bytes().split(b"\0", 1)[0].decode()
        except OSError:
            continue
        build_dir = Path(argv0).parent.name
        for comp, unit in units.items():
            rest = build_dir[len(unit) + 1 :] if build_dir.startswith(unit + "-v") else ""
            if rest:
                out[comp].add(rest.split("-")[0])
    return out


def _volcano_tag(lab) -> str:
    """The release of the Volcano scheduler the chart runs: its image's tag."""
    dep = k.AppsV1Api(kube.api(lab)).read_namespaced_deployment("volcano-scheduler", "volcano-system")
    return dep.spec.template.spec.containers[0].image.rsplit(":", 1)[1]


def _stored_versions(lab) -> dict[str, list[str]]:
    """Volcano's CRDs' stored versions (status.storedVersions), by CRD."""
    ext = k.ApiextensionsV1Api(kube.api(lab))
    return {
        c.metadata.name: list(c.status.stored_versions or [])
        for c in ext.list_custom_resource_definition().items
        if c.metadata.name.endswith("volcano.sh")
    }


def _uids(lab, ns: str) -> dict[str, str]:
    """The users' objects an upgrade must keep, by kind/name: their uids."""
    co, core = k.CustomObjectsApi(kube.api(lab)), k.CoreV1Api(kube.api(lab))
    out = {}
    for pg in co.list_namespaced_custom_object(*SP_API, ns, "podgroups")["items"]:
        out[f"PodGroup/{pg['metadata']['name']}"] = pg["metadata"]["uid"]
    for tj in co.list_namespaced_custom_object(*TRAINER_API, ns, "trainjobs")["items"]:
        out[f"TrainJob/{tj['metadata']['name']}"] = tj["metadata"]["uid"]
    for rt in co.list_cluster_custom_object(*TRAINER_API, "clustertrainingruntimes")["items"]:
        out[f"ClusterTrainingRuntime/{rt['metadata']['name']}"] = rt["metadata"]["uid"]
    for p in core.list_namespaced_pod(ns).items:
        out[f"Pod/{p.metadata.name}"] = p.metadata.uid
    return out


def test_upgrade_from_the_previous_pins_keeps_every_job_and_proves_the_new_releases(lab):
    previous = _previous(lab)
    installed = playbook(lab, "site", "--skip-tags", "smoke", **PATH, **previous)
    assert installed.rc == 0, installed.failures()
    before = _tags(lab)
    assert before == {
        "scheduler_plugins": f"v{previous['scheduler_plugins_version']}",
        "trainer": f"v{previous['trainer_version']}",
        "jobset": f"v{previous['trainer_jobset_version']}",
        "mpi_operator": "v" + previous["kubeflow_gang_mpi_operator_image"].rsplit(":", 1)[1],
        "nvidia_device_plugin": f"v{previous['gpu_device_plugin_version']}",
    }, before
    # the runner runs each component's build of its image's tag (the device plugin's pods are KWOK's: its GPUs are)
    assert _running_builds(lab) == {c: {t} for c, t in before.items() if c in UNITS}, _running_builds(lab)

    # the users' jobs: an MPIJob gang running (its launcher and 2 workers, 2 GPUs of 4), a TFJob gang held whole (3 GPUs
    # wanted, 2 free), a gang copy of a stock runtime and a TrainJob on it, suspended
    core = k.CoreV1Api(kube.api(lab))
    ns = f"team-{uuid.uuid4().hex[:6]}"
    kube.ensure_namespace(core, ns)
    kube.apply(lab, [scenarios.stock_training_runtime("torch-stock")])
    made = run_module(
        lab,
        "trainer_runtime_gang",
        {"name": "torch-stock", "gang_name": "torch-stock-gang", "gang_scheduler": "scheduler_plugins"},
    )
    assert made.get("failed") is not True and made["changed"] is True, made.get("msg")
    later = scenarios.trainjob(ns, "later", "torch-stock-gang", 2)
    later["spec"]["suspend"] = True
    try:
        with seeds.Jobs(lab, ns) as jobs:
            jobs.submit(scenarios.mpijob(ns, "running", workers=2))
            running = jobs.wait("running", running=3)
            jobs.submit(scenarios.tfjob(ns, "held", workers=3))
            jobs.held("held", 4, "scheduler_plugins")
            kube.apply(lab, [later])
            kept = _uids(lab, ns)
            assert {"PodGroup/running", "PodGroup/held", "TrainJob/later"} <= set(kept), kept
            assert "ClusterTrainingRuntime/torch-stock-gang" in kept, kept

            # check mode shows the upgrade and writes nothing
            checked = playbook(lab, "site", "--skip-tags", "smoke", check=True, **PATH)
            assert checked.rc == 0, checked.failures()
            assert checked.changed(), "check mode showed no change for an upgrade"
            assert _tags(lab) == before

            upgraded = playbook(lab, "site", **PATH)
            assert upgraded.rc == 0, upgraded.failures()
            after = _tags(lab)
            assert after == {
                "scheduler_plugins": V.SCHEDULER_PLUGINS,
                "trainer": V.TRAINER,
                "jobset": V.JOBSET,
                "mpi_operator": V.MPI_OPERATOR,
                "nvidia_device_plugin": V.NVIDIA_DEVICE_PLUGIN,
            }, after
            assert _running_builds(lab) == {c: {t} for c, t in after.items() if c in UNITS}, _running_builds(lab)
            # the smoke test proved the new releases, for pods and for a TrainJob: the fitting gangs', then the others'
            assert upgraded.verdicts() == ["gang_held_running"] * 2 + ["gang_held_pending"] * 2, upgraded.verdicts()

            # nothing of the users' lost or made again; the running gang runs on, the held one is still held whole
            now = _uids(lab, ns)
            assert {n: now.get(n) for n in kept} == kept, now
            st = jobs.state("running")
            assert st["running"] == running["running"] and st["pending"] == [], st
            held = jobs.state("held")
            assert held["ever_bound"] == [] and held["running"] == [], held
            # the operators' gang flags kept, Trainer's gang copy already what the new release takes
            apps = k.AppsV1Api(kube.api(lab))
            dep = apps.read_namespaced_deployment("training-operator", "kubeflow").spec.template.spec.containers[0]
            flags = [a for a in dep.command if a.startswith("--gang-scheduler-name")]
            assert flags == ["--gang-scheduler-name=scheduler-plugins-scheduler"], flags
            mpi = apps.read_namespaced_deployment("mpi-operator", "mpi-operator").spec.template.spec.containers[0]
            flags = [a for a in (mpi.command or []) + (mpi.args or []) if a.startswith("--gang-scheduling")]
            assert flags == ["--gang-scheduling=scheduler-plugins-scheduler"], flags
            again = run_module(
                lab,
                "trainer_runtime_gang",
                {"name": "torch-stock", "gang_name": "torch-stock-gang", "gang_scheduler": "scheduler_plugins"},
            )
            assert again.get("failed") is not True and again["changed"] is False, again

            info = module(lab, "gang_info")
            versions = {s["component"]: s["version"] for s in info["support"]}
            assert versions["scheduler_plugins"] == V.SCHEDULER_PLUGINS and versions["trainer"] == V.TRAINER, versions

            # the previous pins again: a downgrade, refused before any change, by the first role that would go
            # back (the device plugin's, site.yml's first), and without that one by scheduler-plugins'
            rest = {k_: v for k_, v in previous.items() if not k_.startswith("gpu_device_plugin")}
            for given, role in ((previous, "gpu_device_plugin"), (rest, "scheduler_plugins")):
                back = playbook(lab, "site", "--skip-tags", "smoke", **PATH, **given)
                assert back.rc != 0
                msg = back.failures()
                assert f"{role}_version={previous[f'{role}_version']} would downgrade" in msg, msg
                assert f"{role}_allow_downgrade=true" in msg, msg
                assert back.changed() == [] and _tags(lab) == after, back.changed()
    finally:
        kube.delete_namespace(core, ns, timeout=120)


def _pods(lab, ns: str) -> dict[str, dict]:
    core = k.CoreV1Api(kube.api(lab))
    return {
        p.metadata.name: {"uid": p.metadata.uid, "node": p.spec.node_name, "phase": p.status.phase}
        for p in core.list_namespaced_pod(ns).items
    }


def test_koord_scheduler_upgraded_in_place_keeps_label_gangs_and_proves_the_new_release(lab):
    """koord-scheduler v1.6.1 (the previous pin) to v1.8.0 on the same lab (the second scheduler of scheduler-plugins
    beside it, as the test before left it): a label gang running and one held whole keep their pods, the held one
    never bound; the smoke test proves v1.8.0."""
    prev = json.loads(Path(lab.inventory_facts).read_text())["previous"].get("koordinator")
    if prev is None:
        pytest.skip("this lab's Kubernetes release runs the previous koord-scheduler pin already")
    path = {"gangsched_gang_scheduler": "koordinator"}
    previous = {"koordinator_version": prev["version"].lstrip("v"), "koordinator_crd_src": prev["crds"]}
    installed = playbook(lab, "site", "--skip-tags", "smoke", **path, **previous)
    assert installed.rc == 0, installed.failures()
    apps = k.AppsV1Api(kube.api(lab))

    def tag() -> str:
        dep = apps.read_namespaced_deployment("koord-scheduler", "koordinator-system")
        return dep.spec.template.spec.containers[0].image.rsplit(":", 1)[1]

    def builds() -> set[str]:
        return _running_builds(lab, {"koordinator": "koordinator"})["koordinator"]

    assert tag() == prev["version"] and builds() == {prev["version"]}, (tag(), builds())

    core = k.CoreV1Api(kube.api(lab))
    ns = f"team-{uuid.uuid4().hex[:6]}"
    kube.ensure_namespace(core, ns)
    try:
        kube.apply(lab, scenarios.koord_gang(ns, "running", 2, 2))
        kube.wait_for(
            lambda: [p for p in _pods(lab, ns).values() if p["phase"] == "Running"] if len(_pods(lab, ns)) == 2 else [],
            90,
            "the running gang's 2 pods Running",
        )
        kube.apply(lab, scenarios.koord_gang(ns, "held", 3, 3))
        time.sleep(seeds.HOLD)
        kept = _pods(lab, ns)
        held = {n: p for n, p in kept.items() if n.startswith("held-")}
        assert len(held) == 3 and all(p["node"] is None for p in held.values()), held

        upgraded = playbook(lab, "site", **path)
        assert upgraded.rc == 0, upgraded.failures()
        assert tag() == V.KOORDINATOR and builds() == {V.KOORDINATOR}, (tag(), builds())
        assert upgraded.verdicts() == ["gang_held_running", "gang_held_pending"], upgraded.verdicts()
        now = _pods(lab, ns)
        assert {n: p["uid"] for n, p in now.items()} == {n: p["uid"] for n, p in kept.items()}, now
        assert all(p["phase"] == "Running" for n, p in now.items() if n.startswith("running-")), now
        assert all(p["node"] is None for n, p in now.items() if n.startswith("held-")), now

        back = playbook(lab, "site", "--skip-tags", "smoke", **path, **previous)
        assert back.rc != 0 and f"koordinator_version={prev['version'].lstrip('v')} would downgrade" in back.failures()
        assert back.changed() == [] and tag() == V.KOORDINATOR, back.changed()
    finally:
        kube.delete_namespace(core, ns, timeout=120)


VC_API = ("scheduling.volcano.sh", "v1beta1")


def test_on_the_volcano_path_the_upgrade_keeps_queues_podgroups_and_gangs(lab):
    """The Volcano path on the same lab: site.yml with Volcano v1.10.0 (the previous pin, from its own chart) and the
    previous pins of what upgrades under it (the device plugin's chart, mpi-operator: going back to them is a downgrade,
    asked for and named), a user's Queue, an MPIJob gang running in it and a TFJob gang held whole; then site.yml at
    the defaults, which moves Volcano to v1.15.1 in place. The Queue, the PodGroups and the running pods keep their uids
    and the CRDs their stored versions, the held gang is never bound, both verdicts; the held gang runs once the
    running one is gone; a second run changes nothing; asking for v1.10.0 again is refused as a downgrade, changing
    nothing."""
    prev = json.loads(Path(lab.inventory_facts).read_text())["previous"]
    if "volcano" not in prev:
        pytest.skip(f"this lab's Kubernetes release has no previous Volcano to upgrade from: {sorted(prev)}")
    previous = {k_: v for k_, v in _previous(lab).items() if k_.startswith(("gpu_device_plugin", "kubeflow_gang"))}
    old_volcano = {
        "volcano_version": prev["volcano"]["version"].lstrip("v"),
        "volcano_chart_ref": prev["volcano"]["chart"],
    }
    path = {"gangsched_gang_scheduler": "volcano"}
    allow = {"kubeflow_gang_allow_downgrade": True, "gpu_device_plugin_allow_downgrade": True}
    back = playbook(lab, "site", "--skip-tags", "smoke", **allow, **path, **previous, **old_volcano)
    assert back.rc == 0, back.failures()
    named = back.messages("Downgrade | no older release")
    assert any("goes back from mpi_operator 0.8.0" in m for m in named), named
    assert any(f"goes back from gpu_device_plugin {V.NVIDIA_DEVICE_PLUGIN}" in m for m in named), named
    before = _tags(lab)
    assert before["mpi_operator"] == "v0.6.0" and before["nvidia_device_plugin"] == "v0.17.3", before
    assert _volcano_tag(lab) == prev["volcano"]["version"]
    assert _running_builds(lab, {"volcano": "volcano"})["volcano"] == {prev["volcano"]["version"]}

    core, co = k.CoreV1Api(kube.api(lab)), k.CustomObjectsApi(kube.api(lab))
    ns = f"team-{uuid.uuid4().hex[:6]}"
    kube.ensure_namespace(core, ns)
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": ns},
        "spec": {"weight": 1},
    }
    try:
        kube.apply(lab, [queue])
        with seeds.Jobs(lab, ns) as jobs:
            running_job = scenarios.mpijob(ns, "running", workers=2)
            held_job = scenarios.tfjob(ns, "held", workers=3)
            for job in (running_job, held_job):
                job["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": ns}
            jobs.submit(running_job)
            running = jobs.wait("running", running=3)
            jobs.submit(held_job)
            jobs.held("held", 4, "volcano")
            pgs = co.list_namespaced_custom_object(*VC_API, ns, "podgroups")["items"]
            kept = {f"PodGroup/{p['metadata']['name']}": p["metadata"]["uid"] for p in pgs}
            kept |= {n: u for n, u in _uids(lab, ns).items() if n.startswith("Pod/")}
            kept["Queue"] = co.get_cluster_custom_object(*VC_API, "queues", ns)["metadata"]["uid"]
            assert len(pgs) == 2, pgs
            stored = _stored_versions(lab)

            upgraded = playbook(lab, "site", **path)
            assert upgraded.rc == 0, upgraded.failures()
            after = _tags(lab)
            assert after["mpi_operator"] == V.MPI_OPERATOR, after
            assert after["nvidia_device_plugin"] == V.NVIDIA_DEVICE_PLUGIN, after
            assert _volcano_tag(lab) == V.VOLCANO
            assert upgraded.verdicts() == ["gang_held_running", "gang_held_pending"], upgraded.verdicts()
            pgs = co.list_namespaced_custom_object(*VC_API, ns, "podgroups")["items"]
            now = {f"PodGroup/{p['metadata']['name']}": p["metadata"]["uid"] for p in pgs}
            now |= {n: u for n, u in _uids(lab, ns).items() if n.startswith("Pod/")}
            now["Queue"] = co.get_cluster_custom_object(*VC_API, "queues", ns)["metadata"]["uid"]
            assert now == kept, (now, kept)
            assert all(set(v) <= set(_stored_versions(lab)[c]) for c, v in stored.items()), (
                stored,
                _stored_versions(lab),
            )
            st = jobs.state("running")
            assert st["running"] == running["running"] and st["pending"] == [], st
            held = jobs.state("held")
            assert held["ever_bound"] == [] and held["running"] == [], held
            # the lab runs v1.15.1's scheduler now; gang_info finds nothing wrong with the upgraded installation (what
            # it says of the held gang, which waits by design, is about that gang)
            assert _running_builds(lab, {"volcano": "volcano"})["volcano"] == {V.VOLCANO}
            probs = module(lab, "gang_info")["problems"]
            installation = [p for p in probs if "ServiceAccount" in p["message"] or "not Open" in p["message"]]
            assert installation == [] and not any("makes no progress" in p["message"] for p in probs), probs

            again = playbook(lab, "site", "--skip-tags", "smoke", **path)
            assert again.rc == 0 and again.changed() == [], again.changed()
            refused = playbook(lab, "site", "--skip-tags", "smoke", **path, **old_volcano)
            assert refused.rc != 0 and refused.changed() == [], refused.changed()
            want = f"volcano_version={old_volcano['volcano_version']} would downgrade volcano {V.VOLCANO}"
            assert want in refused.failures(), refused.failures()

            # room made: the held gang runs, whole
            kube.kubectl(lab, "-n", ns, "delete", "mpijob", "running", "--wait=true")
            jobs.wait("held", running=4)
    finally:
        kube.delete_namespace(core, ns, timeout=120)
        co.delete_cluster_custom_object(*VC_API, "queues", ns)
