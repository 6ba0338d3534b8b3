"""Every role's preflight through ansible-playbook on this machine, in render-only mode (no cluster is read): the
defaults pass, and with several rules broken at once one run fails on exactly those rules, each naming its variable,
and nothing after the failing task runs.

Every case is a host of its own, with the case's variables as its host variables (a failed host stops only its own
tasks), in one play per role and one ansible-playbook run for the whole file: the role's preflight, then a task that
runs only where the preflight passed. One run, not one per case: a run costs about 2 s of CPU before its first task,
and the cases run again in each compat cell; one play per role, not one per case: each play loads its role again."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml
from ansible_run import BIN, REPO, ansible_cli, ansible_env

AFTER = "After the preflight"


def _play(role: str, hosts: list[str]) -> dict:
    """A role's preflight alone, on the hosts of its cases, each with its case's variables (host variables of the
    inventory: the roles set none of them), so that the role is loaded once for all its cases. localhost is in each
    play and runs nothing: a play whose every host failed would end the whole run."""
    mine = {"when": "inventory_hostname != 'localhost'"}
    return {
        "name": f"{role}'s preflight",
        "hosts": ":".join([*hosts, "localhost"]),
        "gather_facts": False,
        "tasks": [
            {
                "name": "Preflight",
                "ansible.builtin.include_role": {"name": f"gangsched.kubeflow.{role}", "tasks_from": "preflight"},
                **mine,
            },
            {"name": AFTER, "ansible.builtin.debug": {"msg": "passed"}, **mine},
        ],
    }


# role -> {case: (variables, [a fragment of each message that must fail, one per broken rule])}
CASES = {
    "gpu_device_plugin": {
        "every rule": (
            {
                "gpu_device_plugin_version": "v0.17.3",
                "gpu_device_plugin_release_name": "Bad_Name",
                "gpu_device_plugin_namespace": "Bad",
                "gpu_device_plugin_expected_gpus": -1,
                "gpu_device_plugin_wait_timeout": 0,
                "gpu_device_plugin_chart_repo_url": "",
                "gpu_device_plugin_chart_ref": "/nonexistent/chart",
                "gpu_device_plugin_driver_root": "run/nvidia/driver",
            },
            [
                "gpu_device_plugin_version must be X.Y.Z without a leading v (got v0.17.3)",
                "gpu_device_plugin_release_name must be a DNS label",
                "gpu_device_plugin_namespace must be a DNS label",
                "gpu_device_plugin_expected_gpus must be 0 or more",
                "gpu_device_plugin_wait_timeout must be seconds > 0",
                "gpu_device_plugin_chart_ref=/nonexistent/chart is no chart directory or .tgz",
                "gpu_device_plugin_driver_root must be an absolute path",
            ],
        ),
        "a CDI strategy without a driver root": (
            {
                "gpu_device_plugin_device_list_strategy": "cdi-cri",
                "gpu_device_plugin_driver_root": "",
                "gpu_device_plugin_cdi_hook_path": "usr/bin/nvidia-cdi-hook",
            },
            [
                "gpu_device_plugin_device_list_strategy=cdi-cri writes a CDI spec",
                "gpu_device_plugin_cdi_hook_path must be the absolute path",
            ],
        ),
    },
    "volcano": {
        "every rule": (
            {
                "volcano_version": "v1.12.0",
                "volcano_release_name": "Bad_Name",
                "volcano_namespace": "Bad",
                "volcano_default_queue": {"name": "Bad Queue", "weight": 0},
                "volcano_wait_timeout": 0,
                "volcano_chart_repo_url": "",
                "volcano_chart_ref": "/nonexistent/chart",
            },
            [
                "volcano_version must be X.Y.Z",
                "volcano_version=v1.12.0 is of release line 1.12, whose chart's admission webhooks the role does not",
                "volcano_release_name must be a DNS label",
                "volcano_namespace must be a DNS label",
                "volcano_default_queue.name must be a DNS name",
                "volcano_default_queue.weight must be an integer > 0",
                "volcano_wait_timeout must be seconds > 0",
                "volcano_chart_ref=/nonexistent/chart is no chart directory",
            ],
        ),
    },
    "scheduler_plugins": {
        "second mode": (
            {
                "scheduler_plugins_version": "v0.33.5",
                "scheduler_plugins_profile_name": "Bad_Name",
                "scheduler_plugins_namespace": "Bad",
                "scheduler_plugins_permit_waiting_seconds": 0,
                "scheduler_plugins_wait_timeout": 0,
                "scheduler_plugins_scheduler_extra_args": ["-v=3", "--v=4"],
                "scheduler_plugins_chart_repo_url": "",
                "scheduler_plugins_chart_ref": "/nonexistent/chart",
            },
            [
                "scheduler_plugins_version must be X.Y.Z",
                "scheduler_plugins_profile_name must be a DNS label",
                "scheduler_plugins_namespace must be a DNS label",
                "scheduler_plugins_permit_waiting_seconds must be seconds > 0",
                "scheduler_plugins_wait_timeout must be seconds > 0",
                "each --name=value (got -v=3 among them)",
                "scheduler_plugins_chart_ref=/nonexistent/chart is no chart directory",
            ],
        ),
        "second mode as the default scheduler": (
            {"scheduler_plugins_profile_name": "default-scheduler"},
            ["scheduler_plugins_profile_name must not be default-scheduler with scheduler_plugins_mode=second"],
        ),
        "default mode": (
            {
                "scheduler_plugins_mode": "default",
                "scheduler_plugins_control_plane_hosts": ["no-such-host"],
                "scheduler_plugins_scheduler_extra_args": "--v=4",
            },
            [
                "names none that is in the inventory",
                "scheduler_plugins_scheduler_extra_args must be a list of kube-scheduler flags "
                "(got the string '--v=4')",
            ],
        ),
    },
    "koordinator": {
        "every rule": (
            {
                "koordinator_version": "1.7.0",
                "koordinator_namespace": "Bad",
                "koordinator_scheduler_name": "default-scheduler",
                "koordinator_image_registry": "https://registry.example.com/",
                "koordinator_scheduler_extra_args": ["-v=3", "--config=/mine"],
                "koordinator_wait_timeout": 0,
                "koordinator_crd_src": "/nonexistent",
            },
            [
                "koordinator_version=1.7.0 binds no gang member",
                "koordinator_namespace must be a DNS label",
                "koordinator_scheduler_name must not be default-scheduler",
                "koordinator_image_registry must be a registry",
                "each --name=value (got -v=3 among them)",
                "koordinator_scheduler_extra_args must not set --config=/mine",
                "koordinator_wait_timeout must be seconds > 0",
                "koordinator_crd_src=/nonexistent is neither an http(s) URL nor a local file or directory",
            ],
        ),
        "the others": (
            {
                "koordinator_version": "v1.6.1",
                "koordinator_scheduler_name": "Bad_Name",
                "koordinator_scheduler_extra_args": "--v=4",
                "koordinator_crd_src": "{{ playbook_dir }}",
            },
            [
                "koordinator_version must be X.Y.Z",
                "koordinator_scheduler_name must be a DNS subdomain",
                "koordinator_scheduler_extra_args must be a list of koord-scheduler flags (got the string '--v=4')",
                "is a directory without",
            ],
        ),
    },
    "kubeflow_gang": {
        "every rule": (
            {
                "kubeflow_gang_operators": [],
                "kubeflow_gang_scheduler_name": "Bad_Name",
                "kubeflow_gang_wait_timeout": 0,
            },
            [
                "kubeflow_gang_operators must list at least one operator",
                "kubeflow_gang_scheduler_name must be empty (derived from the scheduler that runs) or a DNS label",
                "kubeflow_gang_scheduler_name must be empty or volcano when kubeflow_gang_gang_scheduler=volcano",
                "kubeflow_gang_wait_timeout must be seconds > 0",
            ],
        ),
        "CRD sources": (
            {"kubeflow_gang_training_operator_crd_src": "/nonexistent"},
            ["kubeflow_gang_training_operator_crd_src='/nonexistent' is not a file or directory"],
        ),
    },
    "trainer": {
        "every rule": (
            {
                "trainer_version": "v2.2.0",
                "trainer_jobset_version": "v0.11.1",
                "trainer_namespace": "Bad",
                "trainer_jobset_namespace": "Bad",
                "trainer_wait_timeout": 0,
                "trainer_gang_scheduler": "scheduler_plugins",
                "trainer_gang_runtimes": [{"name": "torch-distributed", "queue": "q"}],
            },
            [
                "trainer_version must be X.Y.Z",
                "trainer_jobset_version must be X.Y.Z",
                "trainer_namespace must be a DNS label",
                "trainer_jobset_namespace must be a DNS label",
                "trainer_wait_timeout must be seconds > 0",
                "trainer_gang_runtimes sets a queue with trainer_gang_scheduler=scheduler_plugins",
            ],
        ),
        "2.1": ({"trainer_version": "2.1.0"}, ["trainer_version=2.1.0 is not supported"]),
        "release sources": (
            {"trainer_crd_src": "/nonexistent", "trainer_jobset_webhook_src": "/nonexistent/too"},
            [
                "trainer_crd_src=/nonexistent is neither an http(s) URL nor a local directory",
                "trainer_jobset_webhook_src=/nonexistent/too is neither an http(s) URL nor a local directory",
            ],
        ),
        "runtimes": (
            {"trainer_gang_runtimes": [{"gang_name": "no-name"}, {"name": "torch-distributed", "gang": "typo"}]},
            [
                "trainer_gang_runtimes entry {'gang_name': 'no-name'} must be a dict with name",
                "trainer_gang_runtimes entry {'name': 'torch-distributed', 'gang': 'typo'} must be a dict",
            ],
        ),
    },
    "kueue": {
        "every rule": (
            {
                "kueue_version": "v0.17.0",
                "kueue_namespace": "Bad",
                "kueue_integrations": ["pod", "batch/job"],
                "kueue_wait_for_pods_ready_timeout": "5 minutes",
                "kueue_quota": {"nvidia.com/gpu": 4},
                "kueue_local_queues": [{"namespace": "team-a"}],
                "kueue_wait_timeout": 0,
            },
            [
                "kueue_version must be X.Y.Z",
                "kueue_namespace must be a DNS label",
                "kueue_integrations must be a non-empty list among",
                "kueue_wait_for_pods_ready_timeout must be a duration",
                "kueue_quota must give nvidia.com/gpu, cpu and memory",
                "kueue_local_queues entries must be dicts with namespace and name",
                "kueue_wait_timeout must be seconds > 0",
            ],
        ),
        "0.16": ({"kueue_version": "0.16.2"}, ["kueue_version=0.16.2 is not supported"]),
        "TrainJobs without JobSets, a LocalQueue named default": (
            {
                "kueue_integrations": ["trainer.kubeflow.org/trainjob"],
                "kueue_local_queues": [{"namespace": "team-a", "name": "default"}],
            },
            [
                "kueue_integrations lists trainer.kubeflow.org/trainjob without jobset.x-k8s.io/jobset",
                "kueue_local_queues names a LocalQueue default",
            ],
        ),
        "release sources": (
            {"kueue_crd_src": "/nonexistent"},
            ["kueue_crd_src=/nonexistent is neither an http(s) URL nor a local directory"],
        ),
    },
    "gang_smoke_test": {
        "every rule": (
            {
                "gang_smoke_test_gang_scheduler": "kube-batch",
                "gang_smoke_test_gpus_per_member": 0,
                "gang_smoke_test_fit_replicas": 1,
                "gang_smoke_test_timeout": 0,
            },
            [
                "gang_smoke_test_gang_scheduler must be one of volcano, scheduler_plugins, koordinator, native",
                "gang_smoke_test_gpus_per_member must be 1 or more",
                "gang_smoke_test_fit_replicas must be 0 (as many as fit) or 2 or more",
                "gang_smoke_test_timeout must be seconds > 0",
            ],
        ),
        "TrainJob with Koordinator": (
            {"gang_smoke_test_gang_scheduler": "koordinator", "gang_smoke_test_workload": "trainjob"},
            [
                "gang_smoke_test_workload=trainjob with gang_smoke_test_gang_scheduler=koordinator: workload=trainjob "
                "cannot be tested with gang_scheduler=koordinator"
            ],
        ),
        "a Kubeflow job for the native gang": (
            {"gang_smoke_test_gang_scheduler": "native", "gang_smoke_test_workload": "pytorchjob"},
            [
                "gang_smoke_test_workload=pytorchjob with gang_smoke_test_gang_scheduler=native: workload=pytorchjob "
                "cannot be tested with gang_scheduler=native"
            ],
        ),
        "a queue for pods": (
            {"gang_smoke_test_cluster_queue": "gpu-cluster-queue", "gang_smoke_test_workload": "pods"},
            [
                "gang_smoke_test_cluster_queue=gpu-cluster-queue sends the gangs through Kueue, which admits jobs, not "
                "gang_smoke_test_workload=pods"
            ],
        ),
        "a Job for Volcano": (
            {"gang_smoke_test_gang_scheduler": "volcano", "gang_smoke_test_workload": "job"},
            ["gang_smoke_test_workload=job with gang_smoke_test_gang_scheduler=volcano"],
        ),
    },
    "native_gang": {
        "every rule but two": (
            {
                "native_gang_wait_timeout": 0,
                "native_gang_backup_dir": "/etc/kubernetes/manifests/backup",
                "native_gang_control_plane_hosts": ["nohost"],
            },
            [
                "native_gang_wait_timeout must be seconds > 0",
                "native_gang_backup_dir (/etc/kubernetes/manifests/backup) must not be inside",
                "native_gang_control_plane_hosts=['nohost'] names hosts that are not in the inventory",
            ],
        ),
        "the other two": (
            {"native_gang_static_pod_dir": "manifests", "native_gang_control_plane_hosts": []},
            [
                "native_gang_static_pod_dir and native_gang_backup_dir must be absolute paths",
                "render-only mode writes each control-plane host's manifests, but native_gang_control_plane_hosts",
            ],
        ),
    },
}


def _newest_scheduler_plugins() -> str:
    """The release the role picks in render-only mode: the newest of those it proves."""
    role_vars = yaml.safe_load((REPO / "roles/scheduler_plugins/vars/main.yml").read_text())
    releases = role_vars["_scheduler_plugins_releases"]
    return releases[max(releases)]


def _base(tmp_path, role: str, chart_version: str | None = None) -> dict:
    """What the defaults leave to the user: helm (a stand-in that prints Helm 3's version, which every kubernetes.core
    drives), scheduler-plugins' local chart (no repository publishes it) of the release the run picks
    (``chart_version``, else the newest), the operators' CRD sources."""
    helm = tmp_path / "helm"
    helm.write_text("#!/bin/sh\nprintf v3.18.6\n")
    helm.chmod(0o755)
    return {"gangsched_helm_binary": str(helm), **_role_base(tmp_path, role, chart_version)}


def _role_base(tmp_path, role: str, chart_version: str | None) -> dict:
    if role == "scheduler_plugins":
        chart = tmp_path / "chart"
        chart.mkdir(exist_ok=True)
        version = chart_version or _newest_scheduler_plugins()
        (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: sp\nversion: {version}\n")
        return {"scheduler_plugins_chart_ref": str(chart)}
    if role == "kubeflow_gang":
        crds = tmp_path / "crds.yaml"
        crds.write_text("")
        return {
            "kubeflow_gang_install_operators": True,
            "kubeflow_gang_training_operator_crd_src": str(crds),
            "kubeflow_gang_mpi_operator_crd_src": str(crds),
        }
    if role == "native_gang":
        return {"native_gang_control_plane_hosts": ["localhost"]}
    return {}


@dataclasses.dataclass(frozen=True)
class Run:
    """A case: a role's preflight with ``variables`` on top of what the defaults leave to the user."""

    role: str
    variables: dict
    chart_version: str | None = None


RUNS: dict[str, Run] = {}


def case(key: str, role: str, variables: dict, chart_version: str | None = None) -> str:
    """Register the case under ``key`` (the test's own id) for the file's one run; return the key."""
    RUNS[key] = Run(role, variables, chart_version)
    return key


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, list[tuple[str, dict]]]:
    """Every registered case as a play on a host of its own, in one ansible-playbook run: each case's tasks."""
    root = tmp_path_factory.mktemp("preflight")
    hosts = {key: f"case{i}" for i, key in enumerate(RUNS)}
    local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    # localhost too: the native gang's control plane hosts must name a host of the inventory
    inventory_hosts = {"localhost": local}
    by_role: dict[str, list[str]] = {}
    for key, run in RUNS.items():
        here = root / hosts[key]
        here.mkdir()
        variables = {"gangsched_render_only": True, **_base(here, run.role, run.chart_version), **run.variables}
        inventory_hosts[hosts[key]] = {**local, **variables}
        by_role.setdefault(run.role, []).append(hosts[key])
    plays = [_play(role, names) for role, names in by_role.items()]
    inventory = {"all": {"hosts": inventory_hosts}}
    (root / "inventory.yml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    (root / "play.yml").write_text(yaml.safe_dump(plays, sort_keys=False))
    cmd = [str(BIN / "ansible-playbook"), "-i", str(root / "inventory.yml"), str(root / "play.yml")]
    out = ansible_cli(cmd, ansible_env(None), timeout=900)
    assert out.stdout, out.stderr[-3000:]
    data = json.loads(out.stdout)
    return {
        key: [(t["task"]["name"], t["hosts"][host]) for p in data["plays"] for t in p["tasks"] if host in t["hosts"]]
        for key, host in hosts.items()
    }


def _failed(item: dict) -> bool:
    # ansible-core 2.21 leaves failed out of a loop item's result; an assert's item says evaluated_to false
    return bool(item.get("failed")) or item.get("evaluated_to") is False


def _passed(tasks: list[tuple[str, dict]]) -> bool:
    return [name for name, h in tasks if h.get("failed")] == [] and tasks[-1][0] == AFTER


@pytest.mark.parametrize("key", [case(f"defaults {role}", role, {}) for role in CASES])
def test_the_defaults_pass(results, key):
    tasks = results[key]
    assert [(name, h.get("msg")) for name, h in tasks if h.get("failed")] == []
    assert tasks[-1][0] == AFTER


@pytest.mark.parametrize(
    "key",
    [case(f"{role}: {c}", role, variables) for role, cases in CASES.items() for c, (variables, _) in cases.items()],
)
def test_one_run_names_every_broken_rule(results, key):
    role, c = key.split(": ", 1)
    expected = CASES[role][c][1]
    tasks = results[key]
    failed = [(name, h) for name, h in tasks if h.get("failed")]
    assert len(failed) == 1, failed
    name, result = failed[0]
    msgs = [r["msg"] for r in result.get("results", []) if _failed(r)] or [result["msg"]]
    assert len(msgs) == len(expected), f"{key}: {name}: {msgs}"
    for fragment in expected:
        assert any(fragment in m for m in msgs), f"{key}: no message has {fragment!r}: {msgs}"
    assert AFTER not in [n for n, _ in tasks]


SKEW = [
    # scheduler_plugins_version empty: the newest release not newer than the cluster
    ("v1.33.5", "", False, None),  # 0.33.5
    ("v1.34.1", "", False, None),  # 0.34.7
    ("v1.35.4", "", False, None),  # 0.34.7, one minor older: within the policy
    ("v1.36.0", "", False, "No scheduler-plugins release is built on Kubernetes 1.35 or later: use Volcano"),
    ("v1.37.2", "", False, "No scheduler-plugins release is built on Kubernetes 1.35 or later: use Volcano"),
    ("v1.32.9", "", False, "Set scheduler_plugins_version to a 0.32.x or 0.31.x release"),  # 0.33.5: newer
    ("v1.37.2", "", True, None),
    # a release asked for
    ("v1.34.1", "0.33.5", False, None),  # one minor newer API server: within the policy
    ("v1.35.4", "0.33.5", False, "Set scheduler_plugins_version to a 0.35.x or 0.34.x release, or use Volcano"),
    ("v1.33.5", "0.34.7", False, "Set scheduler_plugins_version to a 0.33.x or 0.32.x release"),  # newer
]


def _picked(cluster: str, version: str) -> str:
    return version or {"v1.32.9": "0.33.5", "v1.33.5": "0.33.5"}.get(cluster, "0.34.7")


@pytest.mark.parametrize(
    ("key", "cluster", "version", "accept", "message"),
    [
        (
            case(
                f"skew {cluster} {version!r} {accept}",
                "scheduler_plugins",
                {
                    "gangsched_render_only": False,
                    "gangsched_cluster_info": {"kubernetes_version": cluster},
                    "scheduler_plugins_accept_skew": accept,
                    "scheduler_plugins_version": version,
                },
                chart_version=_picked(cluster, version),
            ),
            cluster,
            version,
            accept,
            message,
        )
        for cluster, version, accept, message in SKEW
    ],
)
def test_scheduler_plugins_outside_the_skew_policy_is_refused_unless_accepted(
    results, key, cluster, version, accept, message
):
    """The cluster rule, with the cluster's version given as site.yml gives it (gangsched_cluster_info)."""
    tasks = results[key]
    failed = [(name, h["msg"]) for name, h in tasks if h.get("failed")]
    if message is None:
        assert _passed(tasks), failed
        return
    ((name, msg),) = failed
    assert "version-skew policy" in name, name
    named = (
        f"scheduler_plugins_version={version} "
        if version
        else f"scheduler-plugins {_picked(cluster, version)} (the newest"
    )
    assert msg.startswith(named) and f"and the cluster runs {cluster}" in msg, msg
    assert ("(the newest release the collection proves" in msg) == (not version), msg
    assert message in msg and "scheduler_plugins_accept_skew: true" in msg, msg


SP_RUNNING = {
    "component": "scheduler_plugins",
    "version": "v0.34.7",
    "where": "Deployment scheduler-plugins/scheduler-plugins-scheduler",
}


VC_RUNNING = {"component": "volcano", "version": "v1.15.1", "where": "Deployment volcano-system/volcano-scheduler"}
# a chart role's downgrade: role -> (the cluster's version, what runs (gang_info's support), the release asked for)
DOWNGRADES = {
    "scheduler_plugins": ("v1.34.1", SP_RUNNING, "0.33.5"),
    "volcano": ("v1.37.2", VC_RUNNING, "1.10.0"),
}


@pytest.mark.parametrize(
    ("key", "role", "allow"),
    [
        (
            case(
                f"{role} downgrade allowed={allow}",
                role,
                {
                    "gangsched_render_only": False,
                    "gangsched_cluster_info": {"kubernetes_version": cluster, "support": [running]},
                    f"{role}_version": wanted,
                    f"{role}_allow_downgrade": allow,
                },
                chart_version=wanted,
            ),
            role,
            allow,
        )
        for role, (cluster, running, wanted) in DOWNGRADES.items()
        for allow in (False, True)
    ],
)
def test_a_chart_release_older_than_the_one_that_runs_is_refused_unless_allowed(results, key, role, allow):
    """A downgrade: the running release comes from gang_info's support (the image tag), as site.yml reads it."""
    _cluster, running, wanted = DOWNGRADES[role]
    tasks = results[key]
    failed = [(name, h["msg"]) for name, h in tasks if h.get("failed")]
    said = [h.get("msg", "") for name, h in tasks if "Downgrade | no older release" in name and not h.get("failed")]
    if allow:
        assert _passed(tasks), failed
        assert said and f"goes back from {role} {running['version']}" in said[0], said
        return
    ((name, msg),) = failed
    assert msg.startswith(f"Nothing was changed: {role}_version={wanted} would downgrade"), msg
    assert f"{role} {running['version']} ({running['where']})" in msg, msg
    newer = running["version"].lstrip("v")
    assert f"Set {role}_version to {newer} or newer, or {role}_allow_downgrade=true" in msg, msg


KOORDINATOR = [
    # koordinator_version empty: 1.8.0 where it runs (1.34 and later), 1.6.1 below
    ("v1.37.2", "", None, None),
    ("v1.33.5", "", None, None),
    ("v1.33.5", "1.8.0", None, "koordinator_version=1.8.0 needs resource.k8s.io/v1"),
    # a downgrade of what runs, refused before any change
    ("v1.37.2", "1.6.1", "v1.8.0", "Nothing was changed: koordinator_version=1.6.1 would downgrade koordinator"),
    ("v1.37.2", "", "v1.6.1", None),  # the upgrade
]


def _koordinator_vars(cluster: str, version: str, running: str | None) -> dict:
    support = [
        {"component": "koordinator", "version": running, "where": "Deployment koordinator-system/koord-scheduler"}
    ]
    return {
        "gangsched_render_only": False,
        "gangsched_cluster_info": {"kubernetes_version": cluster, "support": support if running else []},
        "koordinator_version": version,
    }


@pytest.mark.parametrize(
    ("key", "message"),
    [(case(f"koordinator {c} {v!r} {r}", "koordinator", _koordinator_vars(c, v, r)), m) for c, v, r, m in KOORDINATOR],
)
def test_koordinator_release_for_the_clusters_minor_and_no_downgrade(results, key, message):
    tasks = results[key]
    failed = [(name, h["msg"]) for name, h in tasks if h.get("failed")]
    if message is None:
        assert _passed(tasks), failed
        return
    ((_name, msg),) = failed
    assert message in msg, msg


MPI_RUNNING = {"component": "mpi_operator", "version": "0.8.0", "where": "Deployment mpi-operator/mpi-operator"}


@pytest.mark.parametrize(
    ("key", "image"),
    [
        (
            case(
                f"operator {image}",
                "kubeflow_gang",
                {
                    "gangsched_render_only": False,
                    "gangsched_cluster_info": {"kubernetes_version": "v1.37.2", "support": [MPI_RUNNING]},
                    "kubeflow_gang_mpi_operator_image": image,
                },
            ),
            image,
        )
        for image in ("mpioperator/mpi-operator:0.6.0", "mpioperator/mpi-operator:0.8.0")
    ],
)
def test_an_operator_older_than_the_one_that_runs_is_refused(results, key, image):
    """mpi-operator 0.8.0 runs (gang_info's support, from its image tag): 0.6.0 is a downgrade, 0.8.0 is not."""
    tasks = results[key]
    failed = [(name, h.get("msg")) for name, h in tasks if h.get("failed")]
    if image.endswith("0.8.0"):
        assert _passed(tasks), failed
        return
    ((_name, msg),) = failed
    assert "the tag of kubeflow_gang_mpi_operator_image=0.6.0 would downgrade mpi_operator 0.8.0" in msg, msg
    assert "kubeflow_gang_allow_downgrade=true" in msg, msg


def _device_plugin_vars(running: str, allow: bool) -> dict:
    plugin = {
        "daemonset": "nvidia-device-plugin/nvidia-device-plugin",
        "kind": "nvidia",
        "image": f"nvcr.io/nvidia/k8s-device-plugin:{running}",
        "desired": 4,
        "ready": 4,
    }
    info = {
        "kubernetes_version": "v1.37.2",
        "device_plugins": [plugin],
        "nodes": [{"labels": {"nvidia.com/gpu.present": "true"}}],
    }
    return {
        "gangsched_render_only": False,
        "gangsched_cluster_info": info,
        "gpu_device_plugin_version": "0.17.3",
        "gpu_device_plugin_allow_downgrade": allow,
    }


@pytest.mark.parametrize(
    ("key", "refused"),
    [
        (
            case(
                f"device plugin over {running} allowed={allow}",
                "gpu_device_plugin",
                _device_plugin_vars(running, allow),
            ),
            r,
        )
        for running, allow, r in (("v0.19.0", False, True), ("v0.19.0", True, False), ("v0.17.3", False, False))
    ],
)
def test_the_device_plugin_older_than_the_one_that_runs_is_refused_unless_allowed(results, key, refused):
    """The role's own DaemonSet in gang_info's device_plugins (its image tag): 0.17.3 over 0.19.0 is a downgrade."""
    tasks = results[key]
    failed = [(name, h.get("msg")) for name, h in tasks if h.get("failed")]
    if not refused:
        assert _passed(tasks), failed
        return
    ((_name, msg),) = failed
    assert "gpu_device_plugin_version=0.17.3 would downgrade gpu_device_plugin v0.19.0" in msg, msg
    assert "(DaemonSet nvidia-device-plugin/nvidia-device-plugin)" in msg, msg


@pytest.mark.parametrize(
    "key",
    [
        case(
            "volcano: another release line with its admissions given",
            "volcano",
            {"volcano_version": "1.12.0", "volcano_values": {"custom": {"enabled_admissions": "/jobs/mutate"}}},
            chart_version="1.12.0",
        )
    ],
)
def test_a_volcano_line_the_role_does_not_know_passes_with_its_admissions(results, key):
    assert _passed(results[key]), [(name, h.get("msg")) for name, h in results[key] if h.get("failed")]
