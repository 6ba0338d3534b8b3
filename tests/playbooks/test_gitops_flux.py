"""The GitOps stage for real: Flux's source- and kustomize-controller on the lab read a Git repository served over
HTTP, and the three pipeline playbooks drive it — gitops_commit.yml renders the chain and commits its layout,
gitops_wait.yml waits for Flux to apply that commit, gitops_prove.yml proves the gang on what Flux applied.

The first two stages run as a ServiceAccount that may only read Flux's objects: the cluster is converged through Git
alone, and the audit log shows that identity never wrote. The tests share one lab and run in order."""

from __future__ import annotations

import subprocess
import time

import pytest
import yaml
from ansible_run import kubectl, module, playbook
from kubernetes import client as k

from lab import build, kube
from lab import flux as lab_flux

PATH = "clusters/lab/gangsched"  # under the root Kustomization's ./clusters/lab, as flux bootstrap lays it out
READER = "gitops-pipeline"
READER_USER = f"system:serviceaccount:default:{READER}"
# fast for the lab: a stage retried every 2 s while the one before is not ready
FLUX_VARS = {"gangsched_gitops_path": PATH, "gangsched_flux_retry_interval": "2s", "gangsched_flux_interval": "1m"}
OPERATOR = "30-kubeflow-gang"


def git(checkout, *args) -> str:
    return subprocess.run(
        ["git", "-C", str(checkout), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture(scope="module")
def flux(lab):
    for unit in ("source-controller", "kustomize-controller"):
        try:
            build.binary_path(unit)
        except build.BuildError as e:
            pytest.fail(str(e), pytrace=False)
    fx = lab_flux.Flux(lab)
    fx.up(interval="5s", kustomization_interval="1m", log=lambda *_: None)
    yield fx
    fx.down(log=lambda *_: None)


@pytest.fixture(scope="module")
def checkout(flux, tmp_path_factory):
    """The pipeline's workspace: a clone of the GitOps repository."""
    where = tmp_path_factory.mktemp("gitops") / "checkout"
    subprocess.run(["git", "clone", "--quiet", flux.url, str(where)], check=True, capture_output=True)
    git(where, "config", "user.name", "pipeline")
    git(where, "config", "user.email", "pipeline@example.org")
    return where


@pytest.fixture(scope="module")
def reader(lab, tmp_path_factory):
    """A kubeconfig of a ServiceAccount that may read Flux's Kustomizations and sources, and nothing else."""
    api = kube.api(lab)
    core, rbac = k.CoreV1Api(api), k.RbacAuthorizationV1Api(api)
    core.create_namespaced_service_account("default", {"metadata": {"name": READER}})
    rbac.create_cluster_role(
        {
            "metadata": {"name": READER},
            "rules": [
                {
                    "apiGroups": ["kustomize.toolkit.fluxcd.io", "source.toolkit.fluxcd.io"],
                    "resources": ["kustomizations", "gitrepositories"],
                    "verbs": ["get", "list", "watch"],
                }
            ],
        }
    )
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": READER},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": READER},
            "subjects": [{"kind": "ServiceAccount", "name": READER, "namespace": "default"}],
        }
    )
    token = core.create_namespaced_service_account_token(
        READER, "default", {"spec": {"expirationSeconds": 7200}}
    ).status.token
    admin = yaml.safe_load(lab.kubeconfig.read_text())
    cluster = admin["clusters"][0]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": READER, "user": {"token": token}}],
        "contexts": [{"name": READER, "context": {"cluster": cluster["name"], "user": READER}}],
        "current-context": READER,
    }
    path = tmp_path_factory.mktemp("reader") / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def writes_by(lab, user: str) -> list[str]:
    return [
        f"{e['verb']} {e.get('requestURI')} -> {e.get('responseStatus', {}).get('code')}"
        for e in lab.audit_events(user=user)
        if e.get("verb") not in ("get", "list", "watch")
    ]


def commit_stage(lab, checkout, reader, tmp_path, **more):
    render = tmp_path / f"rendered-{time.monotonic_ns()}"
    return playbook(
        lab,
        "gitops_commit",
        gangsched_gitops_checkout=str(checkout),
        gangsched_render_dir=str(render),
        gangsched_kubeconfig=reader,
        **FLUX_VARS,
        **more,
    )


def wait_stage(lab, checkout, reader, **more):
    return playbook(
        lab,
        "gitops_wait",
        gangsched_gitops_checkout=str(checkout),
        gangsched_kubeconfig=reader,
        gangsched_gitops_timeout=300,
        **FLUX_VARS,
        **more,
    )


def test_a_fresh_cluster_converges_through_git_alone_and_is_proven(lab, flux, checkout, reader, tmp_path):
    committed = commit_stage(lab, checkout, reader, tmp_path)
    assert committed.rc == 0, committed.failures()
    sha = git(checkout, "rev-parse", "HEAD")
    assert sha == flux.head(), "the commit is on the server's main"
    layout = committed.results("Lay out the rendered chain for Flux")[0]
    assert layout["kustomizations"] == [
        "gangsched-10-gpu-device-plugin-main",
        "gangsched-20-volcano-hooks",
        "gangsched-20-volcano-main",
        "gangsched-20-volcano-admitted",
        "gangsched-30-kubeflow-gang-main",
    ], layout["kustomizations"]

    waited = wait_stage(lab, checkout, reader)
    assert waited.rc == 0, waited.failures()
    synced = waited.results("Flux has applied the commit and every stage is Ready")[0]
    assert synced["synced"] is True and synced["revision"] == sha
    assert [s["name"] for s in synced["kustomizations"]] == ["flux-system", *layout["kustomizations"]]
    assert all(s["applied_revision"] == f"main@sha1:{sha}" for s in synced["kustomizations"]), synced

    # what the first two stages did to the cluster: nothing; the identity they ran as can only read
    assert writes_by(lab, READER_USER) == []
    assert lab.audit_events(user=READER_USER), "the wait read the cluster as that identity"
    # Flux applied the chain: kustomize-controller manages the scheduler, the operators' gang flags are in place
    dep = k.AppsV1Api(kube.api(lab)).read_namespaced_deployment("volcano-scheduler", "volcano-system")
    assert "kustomize-controller" in {m.manager for m in dep.metadata.managed_fields}
    assert dep.metadata.labels.get("kustomize.toolkit.fluxcd.io/name") == "gangsched-20-volcano-main"
    info = module(lab, "gang_info")
    assert info.get("failed") is not True and info["problems"] == [], info

    proved = playbook(lab, "gitops_prove")
    assert proved.rc == 0, proved.failures()
    assert proved.verdicts() == ["gang_held_running", "gang_held_pending"], proved.verdicts()

    # the pipeline again with nothing new: no commit, the same revision synced
    again = commit_stage(lab, checkout, reader, tmp_path)
    assert again.rc == 0, again.failures()
    assert git(checkout, "rev-parse", "HEAD") == sha and "Commit" not in again.changed(), again.changed()


def test_what_a_commit_cannot_carry_is_refused_before_the_render(lab, checkout, reader, tmp_path):
    head = git(checkout, "rev-parse", "HEAD")
    refused = commit_stage(
        lab, checkout, reader, tmp_path, gangsched_trainer=True, trainer_gang_runtimes=[{"name": "torch-distributed"}]
    )
    assert refused.rc != 0
    assert "trainer_gang_runtimes (torch-distributed) are made gang-scheduled in place" in refused.failures()
    assert "Render" not in " ".join(refused.changed()) and git(checkout, "rev-parse", "HEAD") == head
    nowhere = playbook(lab, "gitops_commit", gangsched_gitops_checkout=str(tmp_path / "none"), **FLUX_VARS)
    assert nowhere.rc != 0 and "is not a Git checkout: set it to a clone" in nowhere.failures(), nowhere.failures()


def test_a_hand_edit_is_put_back_by_flux(lab, flux):
    """The gang flag taken off training-operator by hand: Flux's next apply of its stage puts it back, and gang_info
    finds no problem."""
    name = "gangsched-30-kubeflow-gang-main"
    apps = k.AppsV1Api(kube.api(lab))
    dep = apps.read_namespaced_deployment("training-operator", "kubeflow")
    command = dep.spec.template.spec.containers[0].command
    gang = [a for a in command if a.startswith("--gang-scheduler-name=")]
    assert gang == ["--gang-scheduler-name=volcano"], command
    patch = [{"op": "replace", "path": "/spec/template/spec/containers/0/command", "value": command[:-1]}]
    assert command[-1] == gang[0]

    # held still while the edit is looked at: the Kustomization's interval would otherwise put it back at any moment
    def gang_value(info):
        return next(o["gang_value"] for o in info["operators"] if o["operator"] == "training_operator")

    flux.suspend(True, name=name)
    try:
        edit = ("-n", "kubeflow", "patch", "deployment", "training-operator", "--type=json")
        p = kubectl(lab, *edit, "-p", yaml.safe_dump(patch))
        assert p.returncode == 0, p.stderr
        assert gang_value(module(lab, "gang_info")) is None
    finally:
        flux.suspend(False, name=name)
    flux.wait_handled(flux.reconcile(name, with_source=False), timeout=120, name=name)
    dep = apps.read_namespaced_deployment("training-operator", "kubeflow")
    back = dep.spec.template.spec.containers[0].command
    assert back == command, back
    info = module(lab, "gang_info")
    assert gang_value(info) == "volcano" and info["problems"] == [], info


def test_a_broken_commit_fails_the_wait_and_a_scheduler_change_mends_it(lab, flux, checkout, reader, tmp_path):
    """An object the API server refuses, committed by hand: the wait ends at Flux's failure, naming the object, and the
    pipeline stops there. The pipeline's next run (a scheduler change) renders the object as the chain wants it again:
    a new revision the wait sees applied, the scheduler running with the change."""
    path = checkout / PATH / OPERATOR / "main" / "deployment-kubeflow-training-operator.yaml"
    obj = yaml.safe_load(path.read_text())
    obj["spec"]["replicas"] = -1
    path.write_text(yaml.safe_dump(obj))
    git(checkout, "commit", "--quiet", "-am", "training-operator: replicas -1")
    git(checkout, "push", "--quiet", "origin", "HEAD:main")
    broken = git(checkout, "rev-parse", "HEAD")

    t0 = time.monotonic()
    waited = wait_stage(lab, checkout, reader, gangsched_gitops_revision=broken)
    took = time.monotonic() - t0
    assert waited.rc != 0
    msg = waited.failures()
    assert f"Flux failed to apply revision {broken}" in msg, msg
    assert "Kustomization flux-system/gangsched-30-kubeflow-gang-main" in msg, msg
    assert "Deployment/kubeflow/training-operator" in msg, msg
    assert "Traceback" not in msg
    assert took < 240, f"the wait ended at the failure, not at its timeout ({took:.0f} s)"

    changed = commit_stage(lab, checkout, reader, tmp_path, volcano_values={"custom": {"scheduler_log_level": 4}})
    assert changed.rc == 0, changed.failures()
    sha = git(checkout, "rev-parse", "HEAD")
    assert sha != broken and "Commit" in changed.changed()
    layout = changed.results("Lay out the rendered chain for Flux")[0]
    assert sorted(layout["written"]) == [
        "20-volcano/main/deployment-volcano-system-volcano-scheduler.yaml",
        f"{OPERATOR}/main/deployment-kubeflow-training-operator.yaml",
    ], layout["written"]

    waited = wait_stage(lab, checkout, reader)
    assert waited.rc == 0, waited.failures()
    synced = waited.results("Flux has applied the commit and every stage is Ready")[0]
    assert synced["revision"] == sha and synced["synced"] is True
    apps = k.AppsV1Api(kube.api(lab))
    args = apps.read_namespaced_deployment("volcano-scheduler", "volcano-system").spec.template.spec.containers[0].args
    assert "-v=4" in args and "-v=3" not in args, args
    assert apps.read_namespaced_deployment("training-operator", "kubeflow").spec.replicas == 1
    assert writes_by(lab, READER_USER) == []


def test_trainer_joins_through_a_commit_and_trainjobs_are_proven(lab, flux, checkout, reader, tmp_path):
    """gangsched_trainer=true in the pipeline: one more stage (Trainer v2 and JobSet, their webhooks on, after the
    scheduler whose PodGroup CRD Trainer must see at its start), applied by Flux; the proof runs TrainJobs too."""
    trainer = {"gangsched_trainer": True}
    committed = commit_stage(
        lab, checkout, reader, tmp_path, volcano_values={"custom": {"scheduler_log_level": 4}}, **trainer
    )
    assert committed.rc == 0, committed.failures()
    layout = committed.results("Lay out the rendered chain for Flux")[0]
    assert layout["kustomizations"][-1] == "gangsched-40-trainer-main", layout["kustomizations"]
    assert {s["depends_on"] for s in layout["stages"] if s["name"] == "gangsched-40-trainer-main"} == {
        "gangsched-30-kubeflow-gang-main"
    }

    waited = wait_stage(lab, checkout, reader)
    assert waited.rc == 0, waited.failures()
    apps = k.AppsV1Api(kube.api(lab))
    for ns, name in (
        ("kubeflow-system", "kubeflow-trainer-controller-manager"),
        ("jobset-system", "jobset-controller-manager"),
    ):
        dep = apps.read_namespaced_deployment(name, ns)
        assert dep.metadata.labels.get("kustomize.toolkit.fluxcd.io/name") == "gangsched-40-trainer-main"
        assert (dep.status.available_replicas or 0) >= 1, f"{ns}/{name}"

    proved = playbook(lab, "gitops_prove", **trainer)
    assert proved.rc == 0, proved.failures()
    (results,) = proved.facts("gang_smoke_test_results")[-1:]
    assert [r["verdict"] for r in results] == ["gang_held_running", "gang_held_pending"] * 2, results
    assert writes_by(lab, READER_USER) == []
