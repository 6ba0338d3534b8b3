"""site.yml with Volcano on a fresh lab: check mode changes nothing, the real run installs the chain and
proves it with the smoke test, a second run changes nothing; render.yml gives the same objects (no
server-side diff) and applies with a server-side dry run; uninstall.yml puts the operators back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import seeds
import tarball_check
from ansible_run import kubectl, module, playbook
from kubernetes import client as k

from lab import build, kube, scenarios
from lab import versions as V

pytestmark = pytest.mark.timeout(1500)
BIN = Path(sys.executable).parent


def _deployments(lab) -> dict[str, dict]:
    apps = k.AppsV1Api(kube.api(lab))
    return {
        f"{d.metadata.namespace}/{d.metadata.name}": d
        for d in apps.list_deployment_for_all_namespaces().items
        if d.metadata.namespace != "kube-system"
    }


def _queue_state(lab, name: str) -> str:
    out = kube.kubectl(lab, "get", "queues.scheduling.volcano.sh", name, "-o", "jsonpath={.status.state}", check=False)
    return out.stdout.strip()


def _real_changes(diff: str) -> list[str]:
    """Changed lines of a `kubectl diff`, less the re-serialised client-side-apply annotation (kubectl
    writes its JSON in another layout than kubernetes.core does; the content is the same) and the
    metadata.generation that a server-side apply of the same spec bumps (an empty list where the live
    object has none, such as `webhooks: []`), and the release revision Volcano v1.15's chart writes into its admission
    Deployment's template (`rollme/helm-revision`: 1 in any render, the release's revision in the cluster)."""
    out = []
    for line in diff.splitlines():
        if not line.startswith(("+", "-")) or line.startswith(("+++", "---")):
            continue
        body = line[1:].strip()
        if (
            "kubectl.kubernetes.io/last-applied-configuration" in body
            or body.startswith('{"apiVersion"')
            or body.startswith("generation:")
            or body.startswith("rollme/helm-revision:")
        ):
            continue
        out.append(line)
    return out


def test_check_mode_on_a_fresh_lab_changes_nothing(lab):
    before = _deployments(lab)
    run = playbook(lab, "site", check=True)
    assert run.rc == 0, run.failures()
    changed = run.changed()
    # the Helm releases and the operators' objects are reported as changes ...
    for name in (
        "Install | Helm release",
        "Install | Helm release (the chart's CRDs are templates, so an upgrade upgrades them)",
    ):
        assert any(c.endswith(name) for c in changed), changed
    # ... and nothing was made
    assert _deployments(lab) == before == {}
    ns = {n.metadata.name for n in k.CoreV1Api(kube.api(lab)).list_namespace().items}
    assert not {"volcano-system", "nvidia-device-plugin", "kubeflow", "mpi-operator"} & ns
    lab.check_mode_changed = changed  # for the next test


def test_site_installs_the_chain_and_proves_it(lab, pod_ports_named):
    run = playbook(lab, "site")
    assert run.rc == 0, run.failures()
    changed = run.changed()
    # what check mode announced is what the real run changed (the real run changes more: the RBAC and
    # flags of operators that check mode could not see yet, as they did not exist); the 1.33 cell (make minor)
    # runs this test without the check-mode one
    if hasattr(lab, "check_mode_changed"):
        announced = {c for c in lab.check_mode_changed if "(check mode)" not in c}
        assert announced <= set(changed), announced - set(changed)
    deps = _deployments(lab)
    for name in (
        "volcano-system/volcano-scheduler",
        "volcano-system/volcano-controllers",
        "kubeflow/training-operator",
        "mpi-operator/mpi-operator",
    ):
        assert name in deps, sorted(deps)
    cmd = deps["kubeflow/training-operator"].spec.template.spec.containers[0].command
    assert cmd.count("--gang-scheduler-name=volcano") == 1, cmd
    args = deps["mpi-operator/mpi-operator"].spec.template.spec.containers[0].args
    assert args.count("--gang-scheduling=volcano") == 1, args
    # the smoke test ran both gangs with the expected verdicts (the role fails the play otherwise)
    verdicts = [r["verdict"] for r in run.results("gangsched.kubeflow.gang_smoke_test : Fitting gang runs as a whole")]
    verdicts += [
        r["verdict"] for r in run.results("gangsched.kubeflow.gang_smoke_test : Oversized gang stays entirely Pending")
    ]
    assert verdicts == ["gang_held_running", "gang_held_pending"], verdicts
    pod_ports_named()


# the kubernetes.core tasks (each a process of its own) that a converged run skips, as drift found nothing to change
VOLCANO_RELEASE = "Helm release (the chart's CRDs are templates, so an upgrade upgrades them)"
APPLIES = {
    "gangsched.kubeflow.gpu_device_plugin : Install | Helm release": "what a Helm upgrade would change",
    f"gangsched.kubeflow.volcano : Install | {VOLCANO_RELEASE}": "what a Helm upgrade would change",
    "gangsched.kubeflow.volcano : Install | default queue": "what an apply of the default queue would change",
    "gangsched.kubeflow.kubeflow_gang : Install | the operators' objects": (
        "what an apply of the operators' objects would change"
    ),
}


def _drift_of(run, apply_task: str) -> tuple[list, list]:
    role = apply_task.split(" : ")[0]
    (res,) = run.results(f"{role} : Install | {APPLIES[apply_task]}")
    (applied,) = run.results(apply_task)
    return res["drifted"], applied


def test_second_run_changes_nothing(lab):
    run = playbook(lab, "site")
    assert run.rc == 0, run.failures()
    assert run.changed() == []
    assert all(s["changed"] == 0 for s in run.stats.values()), run.stats
    # what kubernetes.core.helm and kubernetes.core.k8s applied, drift reads as applied (their last-applied
    # annotation, the release's chart and values): so they are not run again
    for task in APPLIES:
        drifted, applied = _drift_of(run, task)
        assert drifted == [] and applied.get("skipped") is True, (task, drifted, applied)
    assert run.writers_run() == [], run.writers_run()


def test_what_drifted_is_put_back(lab):
    """A queue and a release changed behind the collection's back: drift sees both, and the next run puts both
    back through kubernetes.core (the queue's weight, the release's values), leaving the rest alone."""
    kubectl(lab, "patch", "queues.scheduling.volcano.sh", "default", "--type=merge", "-p", '{"spec":{"weight":5}}')
    facts = json.loads((lab.root / "inventory-facts.json").read_text())
    helm = [facts["helm"], "--kubeconfig", str(lab.kubeconfig), "-n", "volcano-system"]
    subprocess.run(
        [*helm, "upgrade", "volcano", facts["charts"]["volcano"], "--reuse-values", "--set", "gangsched_test=1"],
        check=True,
        capture_output=True,
    )
    run = playbook(lab, "scheduler")
    assert run.rc == 0, run.failures()
    queue_task = "gangsched.kubeflow.volcano : Install | default queue"
    release_task = next(t for t in APPLIES if t.startswith("gangsched.kubeflow.volcano : Install | Helm"))
    assert _drift_of(run, queue_task)[0] == [{"object": "Queue default", "why": "an apply would change it"}]
    assert _drift_of(run, release_task)[0] == [
        {"object": "Helm release volcano-system/volcano", "why": "its values are not release_values"}
    ]
    assert sorted(run.changed()) == sorted([queue_task, release_task]), run.changed()
    weight = kubectl(lab, "get", "queues.scheduling.volcano.sh", "default", "-o", "jsonpath={.spec.weight}").stdout
    values = subprocess.run([*helm, "get", "values", "volcano", "-o", "json"], check=True, capture_output=True)
    assert weight == "1" and "gangsched_test" not in json.loads(values.stdout), (weight, values.stdout)
    again = playbook(lab, "scheduler")
    assert again.rc == 0 and again.changed() == [], again.failures() or again.changed()


def test_gang_info_sees_no_problem(lab):
    res = module(lab, "gang_info")
    assert res["problems"] == [], res["problems"]
    ops = {o["operator"]: o for o in res["operators"]}
    assert (ops["training_operator"]["gang_value"], ops["training_operator"]["flag_occurrences"]) == ("volcano", 1), ops
    assert (ops["mpi_operator"]["gang_value"], ops["mpi_operator"]["flag_occurrences"]) == ("volcano", 1), ops


def test_report_runs_from_the_installed_tarball(lab, tmp_path):
    """What Galaxy users get: the collection built, installed offline into an empty path, and a playbook
    of it run from there against the lab (the checkout is not on the collections path)."""
    path = tarball_check.build_and_install(tmp_path)
    listed = subprocess.run(
        [str(BIN / "ansible-galaxy"), "collection", "list", "gangsched.kubeflow", "--format", "json"],
        env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": path, "ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg")},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    found = json.loads(listed.stdout or "{}")
    assert list(found) == [str(tmp_path / "installed" / "ansible_collections")], listed.stdout + listed.stderr
    run = playbook(lab, "report", collections_path=path)
    assert run.rc == 0, run.failures()
    (report,) = run.results("Report | gang scheduling on lab")
    lines = report["msg"]
    assert any(line.startswith("gang scheduler: volcano") for line in lines), lines
    assert "problems: none" in lines, lines


def test_admission_webhooks_refuse_what_upstream_refuses(lab):
    """training-operator's and Volcano's webhooks, installed as upstream installs them, answer at create
    time (the apiserver calls them at their Service's endpoints): a PyTorchJob with two Masters and a
    Volcano Job that wants more members than it has are refused with the webhook's own message. The
    valid jobs and pods of the smoke tests went through the same webhooks."""
    co = k.CustomObjectsApi(kube.api(lab))
    bad = scenarios.pytorchjob("default", "two-masters", workers=1)
    bad["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    with pytest.raises(k.ApiException) as e:
        co.create_namespaced_custom_object("kubeflow.org", "v1", "default", "pytorchjobs", bad)
    msg = json.loads(e.value.body)["message"]
    assert 'admission webhook "validator.pytorchjob.training-operator.kubeflow.org" denied' in msg, msg
    assert "Master].replicas: Forbidden: must be 1" in msg, msg
    task = {"name": "worker", "replicas": 1, "template": {"spec": {"containers": [{"name": "w", "image": "busybox"}]}}}
    vcjob = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "too-few", "namespace": "default"},
        "spec": {"minAvailable": 3, "schedulerName": "volcano", "queue": "default", "tasks": [task]},
    }
    with pytest.raises(k.ApiException) as e:
        co.create_namespaced_custom_object("batch.volcano.sh", "v1alpha1", "default", "jobs", vcjob)
    msg = json.loads(e.value.body)["message"]
    assert 'admission webhook "validatejob.volcano.sh" denied' in msg, msg
    assert "'minAvailable' should not be greater than total replicas in tasks" in msg, msg


def test_members_of_a_podgroup_that_does_not_exist_are_named_until_their_job_is_gone(lab):
    """A batch Job whose pods name a Volcano PodGroup that does not exist (deleted with a stale gang, or not made
    yet). Volcano v1.15's chart enables no pod admission by default (v1.10's refused such pods at creation, and
    gang_info named the Job from its FailedCreate events: the unit tests keep that way), so the pods are created and
    vc-scheduler ignores them: gang_info names the pods and the missing PodGroup, not a hung scheduler, and says so on
    the Job's explanation. Deleted, the Job is no longer named."""
    template = {
        "metadata": {"annotations": {"scheduling.k8s.io/group-name": "no-such-podgroup"}},
        "spec": {"schedulerName": "volcano", "restartPolicy": "Never", "containers": [{"name": "w", "image": "b"}]},
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "refused", "namespace": "default"},
        "spec": {"parallelism": 2, "completions": 2, "backoffLimit": 0, "template": template},
    }
    kube.apply(lab, [job])
    try:

        def named() -> list[dict]:
            probs = module(lab, "gang_info", partial_threshold_seconds=1)["problems"]
            return [p for p in probs if "no-such-podgroup" in p["message"]]

        (p,) = kube.wait_for(named, 60, "the members of a missing PodGroup named")
        assert "join Volcano PodGroup default/no-such-podgroup" in p["message"] and "not hung" in p["message"], p
        assert "create PodGroup no-such-podgroup in namespace default" in p["fix"], p
        probs = module(lab, "gang_info", partial_threshold_seconds=1)["problems"]
        assert not any("makes no progress" in q["message"] for q in probs), probs
        job_info = module(
            lab,
            "gang_info",
            partial_threshold_seconds=1,
            job={"kind": "Job", "namespace": "default", "name": "refused"},
        )["job"]
        assert "which does not exist" in job_info["why"], job_info["why"]
    finally:
        kubectl(lab, "-n", "default", "delete", "job", "refused", "--cascade=foreground", "--wait=true")
    assert module(lab, "gang_info")["problems"] == []


# ---- the seed guides end to end (tests/playbooks/seeds.py), on the chain site.yml installed ----------
class TestWithoutGang:
    """training-operator without its gang flag (operator_gang gang_scheduler=none), as before the
    collection: the stock scheduler starts whatever fits. The flag is put back afterwards."""

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def gangless(cls, lab):
        off = module(lab, "operator_gang", operator="training_operator", gang_scheduler="none", wait=True)
        assert off["changed"] is True and off.get("failed") is not True, off
        yield
        on = module(lab, "operator_gang", operator="training_operator", gang_scheduler="volcano", wait=True)
        assert on["changed"] is True and on["scheduler_name"] == "volcano", on

    def test_seed003_tfjob_starts_partly(self, jobs, pool):
        seeds.check_seed003_without_gang(jobs, pool)

    def test_seed004_second_job_starts_partly_and_gang_info_reports_it(self, lab, jobs):
        seeds.check_seed004_without_gang(jobs, lab)

    def test_two_jobs_deadlock_and_gang_info_reports_both(self, lab, jobs, pool):
        seeds.check_deadlock_without_gang(jobs, pool, lab)


def test_seed003_tfjob_gang_all_pending_then_all_running(jobs, pool):
    seeds.check_seed003_gang(jobs, pool, "volcano")


def test_seed004_second_gang_waits_whole_until_the_first_is_gone(jobs):
    seeds.check_seed004_gang(jobs, "volcano")


def test_seed000_mpijob_of_n_where_n_minus_2_fit_stays_pending(jobs):
    seeds.check_seed000_mpijob(jobs, "volcano")


def test_deadlocking_jobs_under_gang_run_one_after_the_other(jobs):
    seeds.check_deadlock_gang(jobs, "volcano")


def test_member_deleted_under_load_regangs(lab, jobs):
    seeds.check_member_deleted_under_load(jobs, "volcano", lab)


def test_operator_without_podgroup_rights_named_then_fixed_by_gang_rbac(lab):
    """The seeds' troubleshooting case: training-operator's PodGroup rights taken away (gang_rbac
    state=absent). The smoke test's verdict names the forbidden call; operators.yml (gang_rbac) gives
    the rights back and the same smoke test passes. No wildcard rule is left anywhere."""
    smoke = {"gang_scheduler": "volcano", "workload": "tfjob", "replicas": 3, "expect": "running", "timeout": 90}
    gone = module(lab, "gang_rbac", component="training_operator", gang_scheduler="volcano", state="absent")
    assert gone["changed"] is True and "create scheduling.volcano.sh/podgroups" in gone["missing_after"], gone
    failed = module(lab, "gang_smoke_test", **smoke)
    assert failed.get("failed") is True and failed["verdict"] == "error", failed
    assert "Forbidden: ServiceAccount kubeflow/training-operator" in failed["cause"], failed["cause"]
    assert "create scheduling.volcano.sh/podgroups" in failed["cause"], failed["cause"]
    assert failed["left_behind"] == [], failed
    run = playbook(lab, "operators")
    assert run.rc == 0, run.failures()
    assert any("PodGroup rights" in c for c in run.changed()), run.changed()
    passed = module(lab, "gang_smoke_test", **smoke)
    assert passed.get("failed") is not True and passed["verdict"] == "gang_held_running", passed
    assert seeds.wildcard_rules(lab) == []


def test_render_matches_the_cluster_and_applies(lab, tmp_path):
    out = tmp_path / "rendered"
    run = playbook(lab, "render", gangsched_render_dir=str(out))
    assert run.rc == 0, run.failures()
    dirs = sorted(d for d in out.iterdir() if d.is_dir())
    assert [d.name for d in dirs] == ["10-gpu-device-plugin", "20-volcano", "30-kubeflow-gang"]
    files = sorted(f.name for d in dirs for f in d.glob("*.yaml"))
    assert "deployment-kubeflow-training-operator.yaml" in files
    # the same objects site.yml made: a server-side diff finds nothing to change (Helm hooks aside: the
    # Volcano chart's admission-init Job and its RBAC are removed by Helm once they succeeded)
    for d in dirs:
        kept = [f for f in sorted(d.glob("*.yaml")) if "helm.sh/hook" not in f.read_text()]
        p = kubectl(lab, "diff", "--server-side", "--force-conflicts", *[a for f in kept for a in ("-f", str(f))])
        assert p.returncode in (0, 1), p.stderr
        assert _real_changes(p.stdout) == [], f"{d.name}:\n{p.stdout[-3000:]}"
        p = kubectl(lab, "apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", str(d))
        assert p.returncode == 0, f"{d.name}: {p.stderr[-2000:]}"
    # rendering again rewrites the same files: nothing changed
    again = playbook(lab, "render", gangsched_render_dir=str(out))
    assert again.rc == 0, again.failures()
    assert again.changed() == [], again.changed()
    # and so does Helm 4's `helm template` (render-only mode needs no kubernetes.core support of it): a pipeline that
    # moves to Helm 4 commits no change
    helm4 = playbook(
        lab, "render", gangsched_render_dir=str(out), gangsched_helm_binary=str(build.binary_path("helm", V.HELM4))
    )
    assert helm4.rc == 0, helm4.failures()
    assert helm4.changed() == [], helm4.changed()


# rights no gang component needs, whatever its install: RBAC escalation, impersonation, node deletion,
# and reading Secrets — except the two operators whose own work is Secrets
NEVER = [
    ("list", "", "secrets"),
    ("create", "rbac.authorization.k8s.io", "clusterrolebindings"),
    ("escalate", "rbac.authorization.k8s.io", "clusterroles"),
    ("bind", "rbac.authorization.k8s.io", "clusterroles"),
    ("impersonate", "", "users"),
    ("delete", "", "nodes"),
]


SECRETS_NEEDED = {
    ("kubeflow", "training-operator"): "its webhook serving certificate, kept in a Secret it rotates",
    ("mpi-operator", "mpi-operator"): "the SSH key Secret it creates for each MPIJob",
}


def test_least_privilege_audit(lab):
    """After site.yml: every ServiceAccount of the installed components is bound to no wildcard rule and
    to none of NEVER (SubjectAccessReview); the collection's own ClusterRoles hold exactly their table's
    rules, and each of those is allowed."""
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _rbac
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._client import Client

    api = kube.api(lab)
    client = Client(api)
    rbac = k.RbacAuthorizationV1Api(api)
    namespaces = {"kubeflow", "mpi-operator", "volcano-system", "nvidia-device-plugin"}
    sas = [
        (sa.metadata.namespace, sa.metadata.name)
        for sa in k.CoreV1Api(api).list_service_account_for_all_namespaces().items
        if sa.metadata.namespace in namespaces and sa.metadata.name != "default"
    ]
    assert len(sas) >= 4, sas  # the operators, Volcano's scheduler and controllers, the device plugin
    roles = {r.metadata.name: r for r in rbac.list_cluster_role().items}
    bound: dict[tuple[str, str], list] = {sa: [] for sa in sas}
    bindings = [(b, None) for b in rbac.list_cluster_role_binding().items]
    bindings += [(b, b.metadata.namespace) for b in rbac.list_role_binding_for_all_namespaces().items]
    for b, ns in bindings:
        for s in b.subjects or []:
            key = (s.namespace, s.name)
            if s.kind == "ServiceAccount" and key in bound:
                role = (
                    roles.get(b.role_ref.name)
                    if b.role_ref.kind == "ClusterRole"
                    else rbac.read_namespaced_role(b.role_ref.name, ns)
                )
                bound[key].append((b.metadata.name, role))
    findings = []
    for (ns, sa), pairs in bound.items():
        for binding, role in pairs:
            for rule in (role.rules if role else None) or []:
                r = {"apiGroups": rule.api_groups or [], "resources": rule.resources or [], "verbs": rule.verbs}
                if _rbac.has_wildcard(r):
                    findings.append(f"{ns}/{sa} via {binding}: wildcard rule {r}")
        for check in NEVER:
            if check[2] == "secrets" and (ns, sa) in SECRETS_NEEDED:
                continue
            if _service.allowed(client, ns, sa, check):
                findings.append(f"{ns}/{sa} may {' '.join(check)}")
    # gang_rbac's ClusterRoles: gangsched.kubeflow:<component>:<namespace>:<serviceaccount>
    ours = [
        r
        for r in roles.values()
        if (r.metadata.labels or {}).get("app.kubernetes.io/managed-by") == "gangsched.kubeflow"
        and len(r.metadata.name.split(":")) == 4
        and r.metadata.name.split(":")[1] in _rbac.COMPONENTS
    ]
    assert len(ours) >= 2, "site.yml applied no gang_rbac ClusterRole for the operators"
    for role in ours:
        _, component, ns, sa = role.metadata.name.split(":")
        table = _rbac.required_rules(component, "volcano")
        got = [{"apiGroups": r.api_groups or [], "resources": r.resources or [], "verbs": r.verbs} for r in role.rules]
        for r in got:
            for v in r["verbs"]:
                for g in r["apiGroups"]:
                    for res in r["resources"]:
                        if not _rbac.covers(table, v, g, res):
                            findings.append(f"ClusterRole {role.metadata.name}: {v} {g}/{res} is outside its table")
        for check in _rbac.checks(table):
            if not _service.allowed(client, ns, sa, check):
                findings.append(f"{ns}/{sa} lacks {' '.join(check)} from its table")
    assert findings == [], "\n".join(findings)


def test_uninstalling_volcano_under_a_users_queue_and_gang_is_refused(lab):
    """uninstall.yml with the components would delete Volcano's CRDs (its chart renders them as templates), and with
    them every Queue and PodGroup: with a user's queue and a PodGroup in it, it refuses before any change, naming
    both; once they are gone, nothing is named."""
    kube.kubectl(lab, "create", "namespace", "team-volcano")
    docs = [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "team-a"},
            "spec": {"weight": 1, "reclaimable": True},
        },
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "train", "namespace": "team-volcano"},
            "spec": {"minMember": 2, "queue": "team-a"},
        },
    ]
    # Volcano v1.15 admits a PodGroup only into an Open queue, and its queue controller opens a new queue a moment
    # after it is made
    kube.apply(lab, docs[:1])
    kube.wait_for(lambda: _queue_state(lab, "team-a") == "Open", 60, "queue team-a Open")
    kube.apply(lab, docs[1:])
    try:
        before = sorted(_deployments(lab))
        run = playbook(lab, "uninstall", gangsched_uninstall_components=True)
        assert run.rc != 0
        assert "Queue team-a" in run.failures() and "PodGroup team-volcano/train" in run.failures(), run.failures()
        assert "Queue default" not in run.failures(), run.failures()
        assert run.changed() == [] and sorted(_deployments(lab)) == before, run.changed()
    finally:
        kube.kubectl(lab, "delete", "namespace", "team-volcano")
        kube.kubectl(lab, "delete", "queues.scheduling.volcano.sh", "team-a")
    assert "volcano" not in module(lab, "gang_info")["in_use"]


def test_uninstall_puts_the_operators_back(lab):
    deps = _deployments(lab)
    original = json.loads(deps["kubeflow/training-operator"].metadata.annotations["gangsched.kubeflow/original-argv"])[
        "training-operator"
    ]
    run = playbook(lab, "uninstall")
    assert run.rc == 0, run.failures()
    deps = _deployments(lab)
    c = deps["kubeflow/training-operator"].spec.template.spec.containers[0]
    assert c.command == original["command"] and c.args == original["args"]
    assert "gangsched.kubeflow/original-argv" not in (deps["kubeflow/training-operator"].metadata.annotations or {})
    m = deps["mpi-operator/mpi-operator"].spec.template.spec.containers[0]
    assert not any(a.startswith("--gang-scheduling") for a in m.args), m.args
    rbac = k.RbacAuthorizationV1Api(kube.api(lab))
    left = [
        r.metadata.name
        for r in rbac.list_cluster_role().items
        if r.metadata.name.startswith("gangsched.kubeflow:") and r.metadata.name.count(":") == 3
    ]
    assert left == [], left
    again = playbook(lab, "uninstall")
    assert again.rc == 0, again.failures()
    assert again.changed() == [], again.changed()
