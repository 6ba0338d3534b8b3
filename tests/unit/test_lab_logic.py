"""Unit tests of the lab's own logic (no cluster)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from lab import build, cluster, flags, images, nodes, ports, procs, versions
from lab.podrunner import expand

UPSTREAM = """module example.com/up

go 1.24.0

toolchain go1.24.4

require (
	k8s.io/api v0.0.0
	k8s.io/client-go v0.0.0
	github.com/x/y v1.2.3 // indirect
)

retract v1.0.0

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	k8s.io/endpointslice => ./staging/src/k8s.io/endpointslice
	google.golang.org/grpc => google.golang.org/grpc v1.57.0
)

replace go.etcd.io/etcd/api/v3 => ../api
"""


def _replaces(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if "=>" in line:
            lhs, rhs = line.replace("replace", "").split("=>")
            out[lhs.split()[0]] = rhs.strip()
    return out


def test_wrapper_gomod_renames_module_and_drops_toolchain_and_retract():
    text = build.wrapper_gomod(UPSTREAM, "gangsched.lab/build/x", [("example.com/up", "v1.0.1")])
    assert text.startswith("module gangsched.lab/build/x\n")
    assert "toolchain" not in text and "retract" not in text
    assert "\texample.com/up v1.0.1" in text
    assert "go 1.24.0" in text


def test_wrapper_gomod_drops_relative_replaces_without_staging_version():
    r = _replaces(build.wrapper_gomod(UPSTREAM, "w", []))
    assert r == {"google.golang.org/grpc": "google.golang.org/grpc v1.57.0"}


def test_wrapper_gomod_turns_staging_replaces_into_versions_and_applies_overrides():
    text = build.wrapper_gomod(
        UPSTREAM, "w", [], overrides=(("k8s.io/endpointslice", "v0.33.4"),), staging_version="v0.33.5"
    )
    r = _replaces(text)
    assert r["k8s.io/api"] == "k8s.io/api v0.33.5"
    assert r["k8s.io/client-go"] == "k8s.io/client-go v0.33.5"
    assert r["k8s.io/endpointslice"] == "k8s.io/endpointslice v0.33.4"
    assert r["go.etcd.io/etcd/api/v3"] == "go.etcd.io/etcd/api/v3 v0.33.5"
    assert text.count("k8s.io/endpointslice =>") == 1


def test_unit_keys_change_with_version_and_are_stable():
    u = build.unit_by_name("kwok")
    assert u.key == build.unit_by_name("kwok").key
    assert u.key.startswith("kwok-v")
    other = build.Unit(**{**u.__dict__, "version": "v9.9.9"})
    assert other.key != u.key


def test_binary_path_of_unbuilt_binary_says_how_to_build(tmp_path, monkeypatch):
    monkeypatch.setenv("GANGSCHED_LAB_CACHE", str(tmp_path))
    with pytest.raises(build.BuildError, match="python -m lab build"):
        build.binary_path("kube-apiserver")


def test_units_for_a_path_are_the_base_and_its_own_in_build_order():
    volcano = build.units_for(["volcano"])
    assert set(volcano) == set(build.BASE_UNITS) | {"volcano", "volcano-webhook"}
    assert volcano == [u.name for u in build.UNITS if u.name in volcano]
    # the default demo waits for no other path's units
    assert not {"scheduler-plugins", "koordinator", "trainer", "jobset"} & set(volcano)
    both = build.units_for(["koordinator", "trainer"])
    assert {"koordinator", "trainer", "jobset"} <= set(both) and "volcano" not in both
    # every unit belongs to the base or to a path: `make build` and the paths together build the same set
    assert set(build.units_for(list(build.PATH_UNITS))) == {build.label(u) for u in build.all_units()}


def test_a_previous_pin_is_a_unit_of_its_own_and_the_runner_runs_the_build_of_the_images_tag():
    """versions.PREVIOUS: what the upgrade tests install first, each built as ``<unit>@<version>`` beside the pinned
    one (the same cache entry as where that release is the pin: scheduler-plugins v0.33.5 on 1.33)."""
    for name, version in versions.PREVIOUS.items():
        pinned = build.unit_by_name(name)
        if pinned.version == version:
            continue
        prev = build.unit_by_name(f"{name}@{version}")
        assert prev.version == version and prev.module == pinned.module and prev.key != pinned.key
        assert f"{name}@{version}" in build.units_for(["upgrade"])
        for b in prev.binaries:
            assert build.binary_where(b.name, version).parent == build.bin_dir(prev)
            # an image of the pinned release, or of a tag the lab does not build: the pinned build
            assert build.binary_where(b.name, pinned.version).parent == build.bin_dir(pinned)
            assert build.binary_where(b.name, "v9.9.9").parent == build.bin_dir(pinned)
    sp = (
        build.unit_by_name("scheduler-plugins@v0.33.5")
        if "scheduler-plugins@v0.33.5" in build.units_for(["upgrade"])
        else build.unit_by_name("scheduler-plugins")
    )
    # reports the Kubernetes release it is built on
    assert "-X k8s.io/component-base/version.gitVersion=v1.33.5" in sp.binaries[0].ldflags
    with pytest.raises(KeyError):
        build.unit_by_name("scheduler-plugins@v0.1.0")


def test_every_gang_path_and_trainer_has_a_demo_build_of_its_own_units():
    """`make demo GANG_SCHEDULER=<path>` (and TRAINER=1, KUEUE=1) builds the base and that path's units, no other
    path's."""
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry

    own = {p: set(build.PATH_UNITS[p]) for p in build.PATH_UNITS}
    for path in [*_registry.names(), "trainer", "kueue"]:
        units = set(build.units_for([path]))
        others = set().union(*(v for p, v in own.items() if p != path)) - own[path]
        assert units == set(build.BASE_UNITS) | own[path] and not units & others, (path, units)
    assert build.units_for(["native"]) == [u.name for u in build.UNITS if u.name in build.BASE_UNITS]


def test_units_for_an_unknown_path_names_the_known_ones():
    with pytest.raises(build.BuildError, match="unknown lab path.*volcanoo.*choose among volcano, scheduler_plugins"):
        build.units_for(["volcanoo"])


def test_build_prints_one_line_per_unit_with_its_time_and_what_is_left(tmp_path, monkeypatch):
    monkeypatch.setenv("GANGSCHED_LAB_CACHE", str(tmp_path))
    done, fetched = [], []
    monkeypatch.setattr(build, "build_unit", lambda unit, log: done.append(unit.name))
    monkeypatch.setattr(build, "prefetch", lambda unit: fetched.append(unit.name))
    monkeypatch.setattr(build.shutil, "which", lambda name: "/usr/bin/go")
    kwok = build.unit_by_name("kwok")
    (build.bin_dir(kwok)).mkdir(parents=True)
    (build.bin_dir(kwok) / ".done").write_text("x")
    build.artifacts_dir(kwok).mkdir(parents=True)
    (build.artifacts_dir(kwok) / ".done").write_text("x")
    lines = []
    timings = build.build(["etcd", "kwok", "helm"], log=lines.append)
    assert done == ["etcd", "helm"]
    assert fetched == ["helm"]  # the next unit's downloads, while the first compiled
    assert timings["kwok"] == 0.0 and set(timings) == {"etcd", "kwok", "helm"}
    assert lines[0] == "[build] cached: kwok"
    assert lines[1].startswith(f"[build 1/2] etcd {build.unit_by_name('etcd').version}: ")
    assert lines[1].endswith("left: helm)")
    assert lines[2].startswith("[build 2/2] helm ") and lines[2].endswith("done)")
    assert len(lines) == 3


def test_build_of_an_unknown_unit_is_refused_before_anything_builds(monkeypatch):
    monkeypatch.setattr(build, "build_unit", lambda unit, log: pytest.fail("built"))
    monkeypatch.setattr(build, "prefetch", lambda unit: pytest.fail("fetched"))
    monkeypatch.setattr(build.shutil, "which", lambda name: "/usr/bin/go")
    with pytest.raises(build.BuildError, match="unknown unit.*kubernets"):
        build.build(["etcd", "kubernets"])


def test_a_failed_unit_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("GANGSCHED_LAB_CACHE", str(tmp_path))

    def fail(unit, log):
        raise build.BuildError("command failed in /x: go build")

    monkeypatch.setattr(build, "build_unit", fail)
    monkeypatch.setattr(build, "prefetch", lambda unit: None)
    monkeypatch.setattr(build.shutil, "which", lambda name: "/usr/bin/go")
    with pytest.raises(build.BuildError, match=r"^helm v\S+ did not build: command failed"):
        build.build(["helm"], log=lambda *_: None)


@pytest.mark.parametrize(
    ("image", "repo", "binary"),
    [
        ("volcanosh/vc-scheduler:v1.10.0", "volcanosh/vc-scheduler", "vc-scheduler"),
        ("docker.io/volcanosh/vc-scheduler:v1.10.0", "volcanosh/vc-scheduler", "vc-scheduler"),
        (
            "my.registry:5000/volcanosh/vc-controller-manager@sha256:abc",
            "volcanosh/vc-controller-manager",
            "vc-controller-manager",
        ),
        ("registry.k8s.io/kube-scheduler:v1.33.5", "kube-scheduler", "kube-scheduler"),
        (
            "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.33.5",
            "scheduler-plugins/kube-scheduler",
            "sp-scheduler",
        ),
        ("registry.k8s.io/scheduler-plugins/controller:v0.33.5", "scheduler-plugins/controller", "sp-controller"),
        ("kubeflow/training-operator:v1-855e096", "kubeflow/training-operator", "training-operator"),
        ("mpioperator/mpi-operator:0.6.0", "mpioperator/mpi-operator", "mpi-operator"),
        ("localhost/mpioperator/mpi-operator", "mpioperator/mpi-operator", "mpi-operator"),
        ("busybox:1.36", "busybox", None),
        ("nvcr.io/nvidia/k8s-device-plugin:v0.17.3", "nvidia/k8s-device-plugin", None),
        ("example.com/mirror/volcanosh/vc-scheduler:v1", "mirror/volcanosh/vc-scheduler", None),
    ],
)
def test_image_to_binary(image, repo, binary):
    assert images.repository(image) == repo
    assert images.binary_for(image) == binary


@pytest.mark.parametrize(
    ("value", "env", "out"),
    [
        ("--ns=$(NS)", {"NS": "kubeflow"}, "--ns=kubeflow"),
        ("$(MISSING)", {}, "$(MISSING)"),
        ("$$(NS)", {"NS": "x"}, "$(NS)"),
        ("a $(A) b $(B)", {"A": "1", "B": "2"}, "a 1 b 2"),
    ],
)
def test_env_expansion_follows_kubernetes_rules(value, env, out):
    assert expand(value, env) == out


def test_gpu_node_body_has_capacity_labels_and_no_taint():
    body = nodes.node_body("gpu-node-9", 2)
    assert body["status"]["capacity"]["nvidia.com/gpu"] == "2"
    assert body["status"]["allocatable"]["nvidia.com/gpu"] == "2"
    assert body["metadata"]["labels"]["nvidia.com/gpu.present"] == "true"
    assert body["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert "taints" not in body["spec"]


def test_cpu_and_control_plane_nodes_have_no_gpus():
    assert "nvidia.com/gpu" not in nodes.node_body("cpu-node-0", 0)["status"]["capacity"]
    cp = nodes.node_body("cp", 0, control_plane=True)
    assert cp["spec"]["taints"][0]["key"] == "node-role.kubernetes.io/control-plane"


def test_runner_query_lists_every_runner_image():
    q = nodes.runner_image_query()
    names = yaml.safe_load(q.split(" as $n")[0])
    assert sorted(names) == sorted(images.V.IMAGES)


def test_runner_tick_in_progress_cannot_start_a_container_for_a_pod_being_stopped(tmp_path, monkeypatch):
    """The runner loop ticks pods on its thread while the pod watch stops them on another: a tick that
    is starting a container when stop() comes must not leave that container running."""
    import threading
    import types

    from lab import containers, podrunner

    class Proc:
        def __init__(self):
            self.dead = False

        def poll(self):
            return 0 if self.dead else None

    entered, release = threading.Event(), threading.Event()

    def slow_start(self, ctr):
        entered.set()
        release.wait(2)  # stop() arrives while the container is being started
        ctr.proc = Proc()

    def stop_container(self, grace=10.0):
        if self.proc is not None:
            self.proc.dead = True

    monkeypatch.setattr(podrunner.PodRun, "start_container", slow_start)
    monkeypatch.setattr(podrunner.PodRun, "push_status", lambda self, force=False: None)
    monkeypatch.setattr(containers.Container, "stop", stop_container)
    fake_runner = types.SimpleNamespace(
        lab=types.SimpleNamespace(pods=tmp_path), allocate_ip=lambda: "10.245.9.2", release_ip=lambda ip: None
    )
    pod = {
        "metadata": {"namespace": "ns", "name": "p", "uid": "u"},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/kube-scheduler:v1.33.5"}]},
    }
    run = podrunner.PodRun(fake_runner, pod)
    ticking = threading.Thread(target=run.tick)
    ticking.start()
    assert entered.wait(2)
    stopping = threading.Thread(target=run.stop)
    stopping.start()
    stopping.join(0.2)  # stop() waits for the tick in progress ...
    release.set()
    ticking.join(2)
    stopping.join(2)
    assert not any(c.alive() for c in run.containers), "a container outlived its pod's stop()"
    run.tick()  # ... and no tick after stop() starts one again
    assert not any(c.alive() for c in run.containers)


def _lanes_module(tmp_path):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("lanes", Path(__file__).resolve().parent.parent / "lanes.py")
    lanes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lanes)
    lanes.LABS, lanes.RUN_LOG = tmp_path, tmp_path / "logs" / "ansible_runs.jsonl"  # not the checkout's .labs
    return lanes


def test_a_failed_stage_is_told_by_its_failed_tests_and_its_end(tmp_path):
    lanes = _lanes_module(tmp_path)
    log = "\n".join(
        ["....F..", *[f"noise {i}" for i in range(100)], "FAILED tests/lab/test_x.py::test_y - assert 1 == 2"]
        + ["ERROR tests/lab/test_z.py::test_w"]
        + [f"tail {i}" for i in range(30)]
    )
    digest = lanes.failure_digest(log, tail=5).splitlines()
    assert digest[:2] == ["FAILED tests/lab/test_x.py::test_y - assert 1 == 2", "ERROR tests/lab/test_z.py::test_w"]
    assert digest[2:] == [f"tail {i}" for i in range(25, 30)]
    assert not any(line.startswith("noise") for line in digest)


def _taken_by(out: str) -> dict:
    """Each stage's lane, from the summary's lines."""
    return {
        ln.split()[0]: int(ln.rsplit("(lane ", 1)[1].rstrip(")"))
        for ln in out.splitlines()
        if " exit " in ln and ln.endswith(")")
    }


def test_shared_stages_go_to_the_lane_that_is_free_first(tmp_path, capsys):
    lanes = _lanes_module(tmp_path)
    rc = lanes.main(["slow=sleep 3", "quick=true", "--shared", "s1=sleep 0.3; s2=true; s3=true"])
    out = capsys.readouterr().out
    assert rc == 0, out
    # the quick lane took every shared stage, in the order given, while the slow one was still at its own
    assert _taken_by(out) == {"slow": 0, "quick": 1, "s1": 1, "s2": 1, "s3": 1}, out
    assert out.index("===== stage s1 ") < out.index("===== stage s2 ") < out.index("===== stage s3 "), out


def test_a_lane_whose_stage_failed_takes_no_shared_stage(tmp_path, capsys):
    lanes = _lanes_module(tmp_path)
    rc = lanes.main(["ok=true", "broken=false", "--shared", "s1=true; s2=false; s3=true"])
    out = capsys.readouterr().out
    assert rc == 1, out
    # the broken lane took nothing; the other took s1, then s2 failed there and s3 was left
    assert _taken_by(out) == {"ok": 0, "broken": 1, "s1": 0, "s2": 0}, out
    assert "s3" in out and "not run (a stage of every lane failed before a lane could take it)" in out, out
    assert "why stage broken failed" in out and "why stage s2 failed" in out, out


def test_a_stage_name_given_twice_is_refused(tmp_path):
    lanes = _lanes_module(tmp_path)
    with pytest.raises(SystemExit, match="appears twice"):
        lanes.main(["a=true", "--shared", "a=true"])


def test_free_port_is_between_the_pods_ports_and_the_kernels_range_for_client_sockets_and_bindable():
    low = ports.ephemeral_ports()[0]
    picked = {ports.free_port() for _ in range(20)}
    # kube-apiserver's port is forwarded into every pod: none a component listens on there (10259 among them)
    assert all(ports.PICK_FROM <= p < low for p in picked), (low, picked)
    assert ports.PICK_FROM > max(ports.POD_PORTS)
    assert len(picked) > 1  # random, so labs starting side by side rarely try the same one
    with socket.socket() as s:  # free: a component can listen on it
        s.bind(("127.0.0.1", picked.pop()))


def test_an_api_port_a_pod_listens_on_is_refused_before_anything_starts(tmp_path):
    # on 10259 the forwarded apiserver listener takes kube-scheduler's secure port in its pod: it would exit at
    # every start ("bind: address already in use") and the lab never come up
    root = tmp_path / "lab"
    with pytest.raises(cluster.LabError, match=r"port 10259 is one the lab's pods listen on \(kube-scheduler's"):
        cluster.Lab(root).up(api_port=10259, log=lambda *_: None)
    assert not root.exists()


def test_a_pid_recorded_for_a_process_long_gone_is_never_stopped(tmp_path):
    # the kernel hands a pid out again (every 32,768 processes, or after a reboot): a lab's pidfile naming a process
    # that started at another time than the one holding that pid now must not stop it, nor count as running
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        lab = cluster.Lab(tmp_path / "lab")
        lab.pids.mkdir(parents=True)
        procs.write_pid(lab.pids / "etcd.pid", other.pid)
        assert lab.pid("etcd") == other.pid and lab.running()["etcd"]
        (lab.pids / "etcd.pid").write_text(f"{other.pid} 1")  # its process started at tick 1, not this one
        assert lab.pid("etcd") is None and not lab.running()["etcd"]
        assert lab.down(log=lambda *_: None) == []
        assert other.poll() is None, "a process the lab did not start was stopped"
        (lab.pids / "etcd.pid").write_text(str(other.pid))  # a pid alone is taken as it is
        assert lab.pid("etcd") == other.pid
    finally:
        other.kill()
        other.wait()


def test_a_port_a_pod_listens_on_is_named_unless_pod_ports_has_it():
    # the forwarded apiserver listener is no problem; a pod's port POD_PORTS lacks is, the pod and the fix named
    assert ports.pod_port_problems({"kube-system_kube-scheduler": [10259, 23699]}, 23699) == []
    assert ports.pod_port_problems({"ns_op": [8080, 9443, 24000, 23699]}, 23699) == [
        "pod ns_op listens on 24000, a port lab.ports.POD_PORTS does not name: add it there"
    ]


def test_a_port_is_claimed_once_until_its_claim_expires(tmp_path):
    # two labs starting side by side: the second one to ask for the same free port is refused it
    assert ports.claim_port(31158, tmp_path) is True
    assert ports.claim_port(31158, tmp_path) is False
    assert ports.claim_port(31159, tmp_path) is True
    # long after, its component bound it or never will: the claim has expired and can be taken over
    old = time.time() - ports.PORT_CLAIM_SECONDS - 1
    os.utime(tmp_path / "31158", (old, old))
    assert ports.claim_port(31158, tmp_path) is True
    assert ports.claim_port(31158, tmp_path) is False


def test_free_port_never_hands_out_a_port_claimed_by_another_lab(tmp_path, monkeypatch):
    monkeypatch.setattr(ports, "PORT_CLAIMS", tmp_path)
    first, second, third = [p for p in range(21000, 21100) if ports.port_free(p)][:3]
    for port in (first, second):  # free, but handed to another lab that has not bound them yet
        (tmp_path / str(port)).touch()
    tries = iter([first, second, third])
    monkeypatch.setattr(ports.random, "randrange", lambda *_: next(tries))
    assert ports.free_port() == third
    assert (tmp_path / str(third)).exists()  # claimed now: the next lab is refused it
    assert ports.claim_port(third, tmp_path) is False


@pytest.mark.parametrize(
    ("wanted", "release"),
    [(None, "v1.37.2"), ("", "v1.37.2"), ("1.37", "v1.37.2"), ("1.33", "v1.33.5"), ("v1.33.5", "v1.33.5")],
)
def test_kubernetes_release_by_minor_or_release(wanted, release):
    assert versions.kubernetes_release(wanted) == release


@pytest.mark.parametrize("wanted", ["1.34", "v1.33.4", "latest"])
def test_kubernetes_release_not_run_by_the_lab_names_those_it_runs(wanted):
    with pytest.raises(ValueError, match=r"GANGSCHED_LAB_KUBERNETES=.*runs Kubernetes 1\.37 \(v1\.37\.2\), 1\.33"):
        versions.kubernetes_release(wanted)


def test_kcm_controllers_name_only_what_the_minor_has():
    assert flags.kcm_controllers(37) == "*,-nodeipam"
    assert "-cloud-node-lifecycle" in flags.kcm_controllers(33)


def test_binaries_sharing_their_link_flags_build_in_one_go_build_under_their_lab_names(tmp_path, monkeypatch):
    monkeypatch.setenv("GANGSCHED_LAB_CACHE", str(tmp_path))
    sp = build.unit_by_name("scheduler-plugins")
    runs = []

    def run(cmd, cwd, env, log):
        runs.append(cmd)
        out = Path(cmd[cmd.index("-o") + 1])
        for pkg in cmd[cmd.index("-o") + 2 :]:
            (out / pkg.rsplit("/", 1)[-1]).write_text(pkg)

    monkeypatch.setattr(build, "_run", run)
    build._compile(sp, tmp_path, {}, lambda *_: None)
    (cmd,) = runs
    assert cmd[-2:] == ["sigs.k8s.io/scheduler-plugins/cmd/scheduler", "sigs.k8s.io/scheduler-plugins/cmd/controller"]
    assert sorted(p.name for p in build.bin_dir(sp).iterdir()) == ["sp-controller", "sp-scheduler"]
    assert (build.bin_dir(sp) / "sp-scheduler").read_text().endswith("cmd/scheduler")


def test_an_addon_is_a_component_until_stopped_and_down_stops_it(tmp_path):
    lab = cluster.Lab(tmp_path / "lab")
    lab.root.mkdir()
    lab.start_addon("sleeper", ["sleep", "60"], {"X": "1"})
    pid = lab.pid("sleeper")
    assert lab.addons() == ["sleeper"]
    assert lab.components()["sleeper"] == {"argv": ["sleep", "60"], "env": {"X": "1"}}
    assert lab.status()["sleeper"]["up"]
    assert lab.log_path("sleeper") == lab.logs / "sleeper.log"
    with pytest.raises(cluster.LabError, match="control-plane component"):
        lab.start_addon("etcd", ["true"])
    assert "sleeper" in lab.down(log=lambda *_: None)
    assert not cluster.procs.alive(pid)
    lab.start_addon("sleeper", ["sleep", "60"])
    assert lab.stop_addon("sleeper") and lab.addons() == []
    # its log outlives it
    assert lab.log_path("sleeper").is_file()
    with pytest.raises(cluster.LabError, match="unknown component"):
        lab.log_path("nothing")


def test_the_flux_git_server_serves_clone_and_push_over_smart_http(tmp_path):
    from lab import fluxgit

    repos = tmp_path / "git"
    repos.mkdir()
    fluxgit.git("init", "--quiet", "--bare", "--initial-branch=main", str(repos / "r.git"))
    fluxgit.git("config", "http.receivepack", "true", cwd=repos / "r.git")
    port = ports.free_port()
    lab = cluster.Lab(tmp_path / "lab")
    lab.root.mkdir()
    lab.start_addon(
        "git",
        [sys.executable, "-m", "lab", "flux", "git-server", f"--root={repos}", f"--port={port}"],
        {"PYTHONPATH": str(cluster.REPO)},
    )
    try:
        url = f"http://127.0.0.1:{port}/r.git"
        lab._wait(lambda: cluster._http_ok(f"{url}/info/refs?service=git-upload-pack"), "git", 30)
        fluxgit.git("clone", "--quiet", url, str(tmp_path / "a"))
        fluxgit.git("symbolic-ref", "HEAD", "refs/heads/main", cwd=tmp_path / "a")
        (tmp_path / "a" / "f.yaml").write_bytes(os.urandom(200_000))  # a push of more than one chunk
        fluxgit.git("add", ".", cwd=tmp_path / "a")
        fluxgit.git("commit", "--quiet", "-m", "one", cwd=tmp_path / "a")
        fluxgit.git("-c", "http.postBuffer=4096", "push", "--quiet", "origin", "HEAD:main", cwd=tmp_path / "a")
        sha = fluxgit.git("rev-parse", "HEAD", cwd=tmp_path / "a")
        assert fluxgit.git("rev-parse", "main", cwd=repos / "r.git") == sha
        fluxgit.git("clone", "--quiet", url, str(tmp_path / "b"))
        assert (tmp_path / "b" / "f.yaml").read_bytes() == (tmp_path / "a" / "f.yaml").read_bytes()
        assert "git-receive-pack" in lab.log_path("git").read_text()
    finally:
        lab.down(log=lambda *_: None)


def test_pod_watcher_forgets_a_pod_deleted_while_no_watch_ran(monkeypatch):
    """PodWatcher relists after each watch (30 s, or a failure): a pod deleted between two watches is absent from the
    next list, and must be gone from what the watcher reports (a test waiting for a job's pods to go waited for
    ever)."""
    import threading
    from types import SimpleNamespace

    from lab import kube

    def pod(name):
        return SimpleNamespace(
            metadata=SimpleNamespace(name=name),
            status=SimpleNamespace(phase="Running"),
            spec=SimpleNamespace(node_name="n"),
        )

    w = kube.PodWatcher.__new__(kube.PodWatcher)
    w.ns, w.selector, w.obs = "ns", None, kube.PodObservation()
    w._stop, w._lock, w._ready = threading.Event(), threading.Lock(), threading.Event()
    lists = [[pod("job-0"), pod("job-1")], [pod("job-0")]]

    def list_namespaced_pod(ns, **kw):
        items = lists.pop(0)
        if not lists:
            w._stop.set()  # the second list is the last
        return SimpleNamespace(items=items, metadata=SimpleNamespace(resource_version="1"))

    w.core = SimpleNamespace(list_namespaced_pod=list_namespaced_pod)
    monkeypatch.setattr(kube.watch, "Watch", lambda: SimpleNamespace(stream=lambda *a, **kw: iter(())))
    w._run()
    assert sorted(w.snapshot().latest) == ["job-0"]
