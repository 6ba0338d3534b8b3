"""The koordinator role on one fresh lab, in order: the preflight refusing 1.7.0; render-only (files written,
no cluster access); check mode (passes, creates nothing); a real run; a second run and a check-mode run
(changed=0); koord-scheduler's pod, run by the lab's runner from the Deployment the role applied, holding seed
003's label gang (5 x 1 GPU on 4 GPUs: all Pending, none ever bound; a fifth GPU node: all Running) with no call
of its ServiceAccount refused; then uninstall (CRDs kept), and uninstall with koordinator_uninstall_crds (CRDs
gone).

The CRDs come from the lab's build cache (no internet): the directory holds all of Koordinator's CRDs, and the
role applies only the three koord-scheduler needs."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from ansible_run import BIN, REPO, Run, ansible_cli, ansible_env, module
from kubernetes import client as k

from lab import build, kube, scenarios

pytestmark = pytest.mark.timeout(900)

NS = "koordinator-system"
NAME = "koord-scheduler"
USER = f"system:serviceaccount:{NS}:{NAME}"
CRDS = set(scenarios.KOORD_CRDS)
OWNER = "gangsched.kubeflow/crds-of=koordinator"
# after koord-scheduler has tried and refused every member: long enough for its retries
HOLD = 5.0
RBAC_TASK = "koordinator-specific rights (least privilege, verified by SubjectAccessReview)"
PLAY = """\
- name: Koordinator koord-scheduler
  hosts: gangsched_cluster
  gather_facts: false
  roles:
    - role: gangsched.kubeflow.koordinator
"""


@pytest.fixture(scope="module")
def play(tmp_path_factory):
    path = tmp_path_factory.mktemp("koordinator") / "koordinator.yml"
    path.write_text(PLAY)
    return path


def _run(lab, play, check: bool = False, **extra_vars) -> Run:
    """The role on the lab inventory, its CRDs from the lab's build cache."""
    extra = {"koordinator_crd_src": str(build.artifact_path("koordinator", "crds")), **extra_vars}
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
    """The RBAC objects the role makes for koord-scheduler (its own bindings and gang_rbac's)."""
    rbac = k.RbacAuthorizationV1Api(kube.api(lab))
    names = [r.metadata.name for r in rbac.list_cluster_role().items + rbac.list_cluster_role_binding().items]
    names += [r.metadata.name for r in rbac.list_namespaced_role_binding("kube-system").items]
    return sorted(n for n in names if n.startswith("gangsched.kubeflow:koord"))


def _refused(core, ns: str, selector: str) -> int:
    """Pods the scheduler tried and left unscheduled (condition PodScheduled False)."""
    return sum(
        any(c.type == "PodScheduled" and c.status == "False" for c in p.status.conditions or [])
        for p in core.list_namespaced_pod(ns, label_selector=selector).items
    )


def test_preflight_refuses_the_release_that_binds_no_gang_member(lab, play):
    run = _run(lab, play, koordinator_version="1.7.0")
    assert run.rc != 0
    assert "koordinator_version=1.7.0 binds no gang member" in run.failures(), run.failures()
    assert run.changed() == [], run.changed()
    assert NS not in _namespaces(lab) and _crds(lab) == set()


def test_render_only_writes_every_object_and_touches_no_cluster(lab, play, tmp_path):
    out = tmp_path / "rendered"
    # a kubeconfig that does not exist: any API call would fail the run
    run = _run(lab, play, koordinator_render_only=True, koordinator_render_dir=str(out), koordinator_kubeconfig="/nope")
    assert run.rc == 0, run.failures()
    kinds = sorted(f.name.split("-")[0] for f in out.glob("*.yaml"))
    assert kinds == sorted(
        ["customresourcedefinition"] * 3
        + ["namespace", "serviceaccount", "configmap", "deployment", "rolebinding", "clusterrole"]
        + ["clusterrolebinding"] * 3
    ), kinds
    assert {f.name.split("-", 1)[1][: -len(".yaml")] for f in out.glob("customresourcedefinition-*")} == CRDS
    assert NS not in _namespaces(lab) and _crds(lab) == set() and _collection_rbac(lab) == []


def test_install_check_idempotent_gang_audit_uninstall(lab, play, pool):
    api = kube.api(lab)
    core, apps = k.CoreV1Api(api), k.AppsV1Api(api)

    # check mode on a fresh cluster: passes, reports changes, creates nothing
    check = _run(lab, play, check=True)
    assert check.rc == 0, check.failures()
    assert check.changed(), "check mode predicted no change on a fresh cluster"
    assert NS not in _namespaces(lab) and _crds(lab) == set() and _collection_rbac(lab) == []

    run = _run(lab, play)
    assert run.rc == 0, run.failures()
    rbac = run.results(f"gangsched.kubeflow.koordinator : Install | {RBAC_TASK}")
    assert rbac and rbac[0]["missing_after"] == [], rbac
    assert _crds(lab) == CRDS
    ext = k.ApiextensionsV1Api(api)
    assert {c.metadata.name for c in ext.list_custom_resource_definition(label_selector=OWNER).items} == CRDS
    dep = apps.read_namespaced_deployment(NAME, NS)
    assert dep.status.available_replicas == 1, dep.status
    assert dep.spec.template.spec.containers[0].args[:2] == [
        "--config=/etc/koord-scheduler/koord-scheduler-config.yaml",
        "--address=127.0.0.1",
    ]

    again = _run(lab, play)
    assert again.rc == 0, again.failures()
    assert again.changed() == [] and again.writers_run() == [], (again.changed(), again.writers_run())
    again_check = _run(lab, play, check=True)
    assert again_check.rc == 0, again_check.failures()
    assert again_check.changed() == [], again_check.changed()

    # the runner runs koord-scheduler's own build from that Deployment, under its ServiceAccount
    pods = core.list_namespaced_pod(NS, label_selector=f"app.kubernetes.io/name={NAME}").items
    assert [p.status.phase for p in pods] == ["Running"], [(p.metadata.name, p.status.phase) for p in pods]
    pidfile = next(iter(lab.pods.glob(f"{NS}_{pods[0].metadata.name}/{NAME}.pid")), None)
    assert pidfile is not None, list(lab.pods.glob("*"))
    log = pidfile.with_suffix(".log").read_text(errors="replace")
    start = [line for line in log.splitlines() if line.startswith("=== ") and " start #" in line][-1]
    assert start.split(": ", 1)[1].split()[0] == str(build.binary_path("koord-scheduler")), start

    # gang_info finds it as a koord-scheduler with the gang profile
    info = module(lab, "gang_info")
    found = [s for s in info["schedulers"] if s["kind"] == "koordinator"]
    assert found and found[0]["gang_profiles"] == [NAME], info["schedulers"]

    # seed 003: 5 x 1 GPU by labels on 4 GPUs: all Pending, none ever bound; a fifth GPU: all Running
    ns = f"koord-{uuid.uuid4().hex[:6]}"
    kube.ensure_namespace(core, ns)
    try:
        with kube.PodWatcher(lab, ns, "app=gang") as w:
            kube.apply(lab, scenarios.koord_gang(ns, "gang", 5, min_available=5))
            kube.wait_for(lambda: _refused(core, ns, "app=gang") == 5, 60, "koord-scheduler to refuse all 5 pods")
            time.sleep(HOLD)
            s = w.snapshot()
            assert s.ever_bound() == set(), f"pods bound while the gang could not fit: {s.events}"
            assert len(s.pending()) == 5, s.latest
            pool.add(gpus=1)
            kube.wait_for(lambda: len(w.snapshot().running()) == 5, 60, "all 5 gang pods Running after a fifth GPU")
    finally:
        kube.delete_namespace(core, ns, timeout=120)

    events = lab.audit_events(user=USER)
    seen = {(e["verb"], e["objectRef"].get("resource")) for e in events if e.get("objectRef")}
    # its informers' initial lists: a list (v1.6.1), or a watch that sends the initial objects (v1.8.0: client-go's
    # watch-list)
    for resource in ("pods", "nodes", "podgroups", "reservations", "devices"):
        assert ("list", resource) in seen or ("watch", resource) in seen, sorted(seen)
    # refused by RBAC (not by admission: an event koord-scheduler writes into the test's namespace while it is being
    # deleted is refused by NamespaceLifecycle, also with 403)
    denied = lab.rbac_refusals(USER)
    assert denied == [], [(e["verb"], e["requestURI"], e["responseStatus"].get("message")) for e in denied]

    # uninstall: what install made goes, the CRDs (users' PodGroups live in them) stay
    gone = _run(lab, play, koordinator_state="absent")
    assert gone.rc == 0, gone.failures()
    assert apps.list_namespaced_deployment(NS).items == []
    assert [s.metadata.name for s in core.list_namespaced_service_account(NS).items] == ["default"]
    assert NAME + "-config" not in {c.metadata.name for c in core.list_namespaced_config_map(NS).items}
    assert _collection_rbac(lab) == []
    assert _crds(lab) == CRDS
    crds_gone = _run(lab, play, koordinator_state="absent", koordinator_uninstall_crds=True)
    assert crds_gone.rc == 0, crds_gone.failures()
    assert _crds(lab) == set()
    # again, with nothing left to remove: nothing changes, no failure
    again = _run(lab, play, koordinator_state="absent", koordinator_uninstall_crds=True)
    assert again.rc == 0 and again.changed() == [], (again.failures(), again.changed())
