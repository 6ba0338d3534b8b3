"""The trainer role on one fresh lab, in order: the preflight refusing Koordinator and Trainer 2.1; render-only
(files written, no cluster access); the install refused, changing nothing, before the PodGroup CRD of its
scheduler exists; check mode once scheduler-plugins runs (passes, creates nothing); a real run that also makes
a stock-like runtime gang-scheduled (trainer_gang_runtimes); a second run and a check-mode run (changed=0);
JobSet's and Trainer's pods, run by the lab's runner from the Deployments the role applied, with their webhooks
callable (caBundle written by their own cert rotators); a TrainJob of 5 nodes on the role's gang runtime holding
all 5 Pending on 4 GPUs (none ever bound), one of 4 running all 4; no call of either ServiceAccount refused;
Volcano's PodGroup CRD installed afterwards restarting Trainer on the next run; then uninstall (CRDs kept).

The release files come from the lab's build cache (no internet)."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from ansible_run import BIN, REPO, Run, ansible_cli, ansible_env
from kubernetes import client as k

from lab import build, kube, scenarios

pytestmark = pytest.mark.timeout(900)

TRAINER_NS, TRAINER = "kubeflow-system", "kubeflow-trainer-controller-manager"
JOBSET_NS, JOBSET = "jobset-system", "jobset-controller-manager"
USERS = {f"system:serviceaccount:{TRAINER_NS}:{TRAINER}", f"system:serviceaccount:{JOBSET_NS}:{JOBSET}"}
CRDS = {
    "trainjobs.trainer.kubeflow.org",
    "trainingruntimes.trainer.kubeflow.org",
    "clustertrainingruntimes.trainer.kubeflow.org",
    "jobsets.jobset.x-k8s.io",
}
WEBHOOKS = {
    "jobset-mutating-webhook-configuration",
    "jobset-validating-webhook-configuration",
    "defaulter.trainer.kubeflow.org",
    "validator.trainer.kubeflow.org",
}
STOCK, GANG = "torch-stock", "torch-stock-gang"
HOLD = 5.0
PLAY = """\
- name: Kubeflow Trainer v2
  hosts: gangsched_cluster
  gather_facts: false
  roles:
    - role: gangsched.kubeflow.trainer
"""


@pytest.fixture(scope="module")
def play(tmp_path_factory):
    path = tmp_path_factory.mktemp("trainer") / "trainer.yml"
    path.write_text(PLAY)
    return path


def _run(lab, play, check: bool = False, **extra_vars) -> Run:
    """The role on the lab inventory (its release files from the lab's build cache) for scheduler-plugins."""
    extra = {
        "trainer_crd_src": str(build.artifact_path("trainer", "crds")),
        "trainer_webhook_src": str(build.artifact_path("trainer", "webhook")),
        "trainer_jobset_crd_src": str(build.artifact_path("jobset", "crds")),
        "trainer_jobset_webhook_src": str(build.artifact_path("jobset", "webhook")),
        "trainer_gang_scheduler": "scheduler_plugins",
        **extra_vars,
    }
    cmd = [str(BIN / "ansible-playbook"), "-i", str(REPO / "inventories/lab"), str(play), "--diff"]
    cmd += ["--check"] if check else []
    cmd += ["-e", json.dumps(extra)]
    env = ansible_env(lab, kubeconfig=False)
    return Run(ansible_cli(cmd, env, timeout=600))


def _crds(lab) -> set[str]:
    ext = k.ApiextensionsV1Api(kube.api(lab))
    return {c.metadata.name for c in ext.list_custom_resource_definition().items} & CRDS


def _namespaces(lab) -> set[str]:
    return {n.metadata.name for n in k.CoreV1Api(kube.api(lab)).list_namespace().items}


def _collection_rbac(lab) -> list[str]:
    rbac = k.RbacAuthorizationV1Api(kube.api(lab))
    names = [r.metadata.name for r in rbac.list_cluster_role().items + rbac.list_cluster_role_binding().items]
    return sorted(n for n in names if n.startswith(("gangsched.kubeflow:trainer", "gangsched.kubeflow:jobset")))


def _webhook_configurations(lab) -> dict:
    adm = k.AdmissionregistrationV1Api(kube.api(lab))
    confs = adm.list_mutating_webhook_configuration().items + adm.list_validating_webhook_configuration().items
    return {c.metadata.name: c for c in confs if c.metadata.name in WEBHOOKS}


def _results_matching(run: Run, part: str) -> list[dict]:
    """The host results of every task whose name holds ``part`` (the role's task names carry the component)."""
    return [
        h
        for play in run.data["plays"]
        for task in play["tasks"]
        if part in task["task"]["name"]
        for h in task["hosts"].values()
    ]


def _refused(core, ns: str, selector: str) -> int:
    return sum(
        any(c.type == "PodScheduled" and c.status == "False" for c in p.status.conditions or [])
        for p in core.list_namespaced_pod(ns, label_selector=selector).items
    )


def test_preflight_refuses_koordinator_and_trainer_2_1(lab, play):
    run = _run(lab, play, trainer_gang_scheduler="koordinator")
    assert run.rc != 0
    assert "trainer_gang_scheduler must be one of: volcano, scheduler_plugins, got: koordinator" in run.failures()
    old = _run(lab, play, trainer_version="2.1.0")
    assert old.rc != 0 and "trainer_version=2.1.0 is not supported" in old.failures(), old.failures()
    assert run.changed() == [] and old.changed() == []
    assert TRAINER_NS not in _namespaces(lab) and _crds(lab) == set()


def test_render_only_writes_every_object_and_touches_no_cluster(lab, play, tmp_path):
    out = tmp_path / "rendered"
    run = _run(lab, play, trainer_render_only=True, trainer_render_dir=str(out), trainer_kubeconfig="/nope")
    assert run.rc == 0, run.failures()
    kinds = sorted(f.name.split("-")[0] for f in out.glob("*.yaml"))
    per_component = ["namespace", "serviceaccount", "configmap", "deployment", "service", "secret", "role"]
    per_component += ["rolebinding", "mutatingwebhookconfiguration", "validatingwebhookconfiguration"]
    per_component += ["clusterrole"] * 2 + ["clusterrolebinding"] * 2
    assert kinds == sorted(["customresourcedefinition"] * 4 + per_component * 2), kinds
    assert TRAINER_NS not in _namespaces(lab) and _crds(lab) == set() and _collection_rbac(lab) == []


def test_install_before_its_scheduler_is_refused_and_changes_nothing(lab, play):
    run = _run(lab, play)
    assert run.rc != 0
    assert "CRD podgroups.scheduling.x-k8s.io is missing" in run.failures(), run.failures()
    assert run.changed() == [], run.changed()
    assert TRAINER_NS not in _namespaces(lab) and _crds(lab) == set() and _collection_rbac(lab) == []


def test_install_check_idempotent_gang_audit_restart_uninstall(lab, play):
    api = kube.api(lab)
    core, apps = k.CoreV1Api(api), k.AppsV1Api(api)
    scenarios.install_scheduler_plugins(lab)

    check = _run(lab, play, check=True)
    assert check.rc == 0, check.failures()
    assert check.changed(), "check mode predicted no change on a fresh cluster"
    assert TRAINER_NS not in _namespaces(lab) and _crds(lab) == set() and _collection_rbac(lab) == []

    # the stock-like runtime needs the runtime CRDs: a first run without runtimes, then one with
    first = _run(lab, play)
    assert first.rc == 0, first.failures()
    rbac = _results_matching(first, "rights of the rule table")
    assert len(rbac) == 2 and all(r["missing_after"] == [] for r in rbac), rbac
    assert _crds(lab) == CRDS
    for ns, name in ((TRAINER_NS, TRAINER), (JOBSET_NS, JOBSET)):
        assert apps.read_namespaced_deployment(name, ns).status.available_replicas == 1, name
    confs = _webhook_configurations(lab)
    assert set(confs) == WEBHOOKS
    for c in confs.values():
        assert all(w.client_config.ca_bundle and w.failure_policy == "Fail" for w in c.webhooks), c.metadata.name

    kube.apply(lab, [scenarios.stock_training_runtime(STOCK)])
    runtimes = [{"name": STOCK, "gang_name": GANG, "schedule_timeout": 600}]
    run = _run(lab, play, trainer_gang_runtimes=runtimes)
    assert run.rc == 0, run.failures()
    assert run.changed(), "the gang runtime was not written"
    co = k.CustomObjectsApi(api)
    gang = co.get_cluster_custom_object("trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes", GANG)
    assert gang["spec"]["podGroupPolicy"] == {"coscheduling": {"scheduleTimeoutSeconds": 600}}, gang["spec"]

    again = _run(lab, play, trainer_gang_runtimes=runtimes)
    assert again.rc == 0, again.failures()
    assert again.changed() == [] and again.writers_run() == [], (again.changed(), again.writers_run())
    again_check = _run(lab, play, check=True, trainer_gang_runtimes=runtimes)
    assert again_check.rc == 0, again_check.failures()
    assert again_check.changed() == [], again_check.changed()

    # the runner runs each controller's own build from the Deployment the role applied
    for ns, name, binary in (
        (TRAINER_NS, TRAINER, "trainer-controller-manager"),
        (JOBSET_NS, JOBSET, "jobset-controller"),
    ):
        pods = core.list_namespaced_pod(ns, label_selector=f"app.kubernetes.io/name={name}").items
        assert [p.status.phase for p in pods] == ["Running"], [(p.metadata.name, p.status.phase) for p in pods]
        pidfile = next(iter(lab.pods.glob(f"{ns}_{pods[0].metadata.name}/manager.pid")), None)
        assert pidfile is not None, list(lab.pods.glob("*"))
        log = pidfile.with_suffix(".log").read_text(errors="replace")
        start = [line for line in log.splitlines() if line.startswith("=== ") and " start #" in line][-1]
        assert start.split(": ", 1)[1].split()[0] == str(build.binary_path(binary)), start

    # a TrainJob of 5 nodes on the role's gang runtime on 4 GPUs: all Pending, none ever bound; 4 nodes: all Running
    ns = f"tr-{uuid.uuid4().hex[:6]}"
    kube.ensure_namespace(core, ns)
    sel = "jobset.sigs.k8s.io/jobset-name="
    try:
        with kube.PodWatcher(lab, ns, sel + "big") as w:
            kube.apply(lab, [scenarios.trainjob(ns, "big", GANG, 5)])
            kube.wait_for(lambda: _refused(core, ns, sel + "big") == 5, 90, "the scheduler to refuse all 5 pods")
            time.sleep(HOLD)
            s = w.snapshot()
        assert s.ever_bound() == set(), f"pods bound while the gang could not fit: {s.events}"
        pg = kube.podgroup(api, ns, "big")
        assert pg and pg["spec"]["minMember"] == 5, pg
        co.delete_namespaced_custom_object("trainer.kubeflow.org", "v1alpha1", ns, "trainjobs", "big")
        kube.wait_for(lambda: not core.list_namespaced_pod(ns, label_selector=sel + "big").items, 60, "big's pods gone")
        with kube.PodWatcher(lab, ns, sel + "fits") as w:
            kube.apply(lab, [scenarios.trainjob(ns, "fits", GANG, 4)])
            kube.wait_for(lambda: len(w.snapshot().running()) == 4, 90, "all 4 pods Running")
    finally:
        kube.delete_namespace(core, ns, timeout=120)

    # refused by RBAC (not by admission, such as a create in the namespace the test just deleted)
    for user in USERS:
        denied = lab.rbac_refusals(user)
        assert denied == [], [(e["verb"], e["requestURI"], e["responseStatus"].get("message")) for e in denied]
        assert lab.audit_events(user=user), f"no call of {user} in the audit log"

    # a PodGroup CRD created after Trainer started: the next run restarts Trainer, which then watches it
    before = apps.read_namespaced_deployment(TRAINER, TRAINER_NS).spec.template.metadata.annotations
    scenarios.install_volcano_crds(lab)
    restart = _run(lab, play, trainer_gang_runtimes=runtimes)
    assert restart.rc == 0, restart.failures()
    after = apps.read_namespaced_deployment(TRAINER, TRAINER_NS)
    mark = after.spec.template.metadata.annotations["gangsched.kubeflow/podgroup-crds"]
    assert "podgroups.scheduling.volcano.sh@" in mark and mark != before["gangsched.kubeflow/podgroup-crds"], mark
    assert after.status.available_replicas == 1 and after.status.observed_generation == after.metadata.generation

    gone = _run(lab, play, trainer_state="absent")
    assert gone.rc == 0, gone.failures()
    assert (
        apps.list_namespaced_deployment(TRAINER_NS).items == []
        and apps.list_namespaced_deployment(JOBSET_NS).items == []
    )
    assert _webhook_configurations(lab) == {} and _collection_rbac(lab) == []
    assert _crds(lab) == CRDS
