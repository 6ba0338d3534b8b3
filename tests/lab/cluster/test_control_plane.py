"""The lab's control plane is real: version, RBAC enforcement, node add/remove, bad input."""

from __future__ import annotations

import ipaddress
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubernetes import client as k

from lab import kube, nodes, podnet, procs, scenarios
from lab import versions as V
from lab.cluster import COMPONENTS, REPO


def test_server_version_is_the_labs(api):
    v = k.VersionApi(api).get_code()
    assert v.git_version == V.KUBERNETES, v.git_version
    assert v.minor == str(V.KUBERNETES_MINOR)


def test_serviceaccount_without_rights_gets_403(lab, core, namespace):
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "nobody"}})
    token = core.create_namespaced_service_account_token("nobody", namespace, {"spec": {"expirationSeconds": 600}})
    cfg = k.Configuration()
    cfg.host = lab.api_url()
    cfg.ssl_ca_cert = str(lab.pki / "ca.crt")
    cfg.api_key = {"authorization": f"Bearer {token.status.token}"}
    with k.ApiClient(cfg) as c:
        with pytest.raises(k.ApiException) as e:
            k.CoreV1Api(c).list_namespaced_pod("kube-system")
    assert e.value.status == 403
    assert "system:serviceaccount:" + namespace + ":nobody" in e.value.body


def test_gpu_nodes_carry_capacity_and_product_label(core):
    gpu = [n for n in core.list_node().items if n.metadata.name.startswith("gpu-node-")]
    assert len(gpu) >= 4
    for n in gpu:
        assert n.status.allocatable["nvidia.com/gpu"] == "1"
        assert n.metadata.labels["nvidia.com/gpu.product"] == nodes.GPU_PRODUCT


def test_nodes_add_and_remove_at_run_time(lab, api, core):
    name = nodes.add(api, gpus=2)
    try:
        nodes.wait_ready(api, names=[name])
        assert core.read_node(name).status.allocatable["nvidia.com/gpu"] == "2"
    finally:
        nodes.remove(api, name)
    assert name not in {n.metadata.name for n in core.list_node().items}


def _lab_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lab", *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_second_up_is_refused_with_a_clear_message(lab):
    r = _lab_cli("up")
    assert r.returncode == 2
    assert "already running" in r.stderr and "python -m lab down" in r.stderr


def test_status_lists_every_component_up(lab):
    r = _lab_cli("status")
    assert r.returncode == 0, r.stdout + r.stderr
    for c in ("etcd", "kube-apiserver", "kube-controller-manager", "kwok", "runner"):
        assert any(line.startswith(c) and " up " in line for line in r.stdout.splitlines()), r.stdout


def test_logs_of_unknown_component_names_the_choices(lab):
    r = _lab_cli("logs", "kubelet")
    assert r.returncode == 2 and "unknown component 'kubelet'" in r.stderr and "pod/NS/NAME" in r.stderr


def _local_hosts(ss_output: str) -> list[str]:
    return [line.split()[3].rsplit(":", 1)[0] for line in ss_output.splitlines() if line.strip()]


def test_nothing_listens_beyond_loopback_and_the_pods_own_addresses(volcano, core):
    """Lab processes listen on the host's loopback only. Each runner pod has one address of the lab's
    /24 (its status.podIP), on eth0 in its own network namespace, and routes nowhere but that /24:
    whatever a component listens on there is reachable from this host's lab alone."""
    lab = volcano
    pids = {str(lab.pid(c)) for c in ("etcd", "kube-apiserver", "kube-controller-manager", "kwok", "runner")}
    out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if any(f"pid={p}," in line for p in pids):
            local = line.split()[3]
            assert local.startswith(("127.0.0.1:", "[::1]:")), line
    subnet = ipaddress.ip_network(lab.state()["pod_subnet"])
    scenarios.wait_deployment(lab, scenarios.VC_NS, "vc-scheduler")
    pods = {n: s for n, s in lab.status().items() if n.startswith("pod/") and s["up"]}
    assert any("vc-scheduler" in n for n in pods), pods
    for name, s in pods.items():
        ip, sandbox = s["ip"], str(s["sandbox_pid"])
        assert ipaddress.ip_address(ip) in subnet, (name, ip)
        assert set(podnet.addresses_inside(int(sandbox))) <= {("lo", "127.0.0.1"), ("lo", "::1"), ("eth0", ip)}
        assert ("eth0", ip) in podnet.addresses_inside(int(sandbox)), name
        ns = ["nsenter", "-t", sandbox, "-n"]
        routes = subprocess.run([*ns, "ip", "-4", "route"], capture_output=True, text=True).stdout.splitlines()
        assert sorted(r.split()[0] for r in routes) == sorted([str(subnet), str(subnet.network_address + 1)]), routes
        listening = _local_hosts(subprocess.run([*ns, "ss", "-Hltn"], capture_output=True, text=True).stdout)
        assert set(listening) <= {"127.0.0.1", ip, "0.0.0.0", "*", "[::]", "[::1]"}, (name, listening)
    pod = next(p for p in core.list_namespaced_pod(scenarios.VC_NS).items if p.status.phase == "Running")
    ns_name = f"pod/{scenarios.VC_NS}/{pod.metadata.name}:"
    assert [s["ip"] for n, s in pods.items() if n.startswith(ns_name)] == [pod.status.pod_ip]
    r = _lab_cli("status")
    assert f"ip {pod.status.pod_ip}" in r.stdout, r.stdout


def test_restart_starts_a_component_again_from_the_table_it_was_started_from(lab, core):
    table = lab.components()
    assert set(table) == set(COMPONENTS), table.keys()
    assert table["runner"]["env"]["GANGSCHED_LAB_DIR"] == str(lab.root)
    before = lab.pid("kube-controller-manager")
    lab.restart("kube-controller-manager", down_for=0.5, log=lambda *_: None)
    pid = lab.pid("kube-controller-manager")
    assert pid != before and procs.alive(pid)
    # the kernel can hand back an empty cmdline while the new process's memory is busy (a loaded machine):
    # read again then, as long as it runs
    deadline = time.monotonic() + 10
    running = [""]
    while running == [""] and procs.alive(pid) and time.monotonic() < deadline:
        running = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").decode().split("\0")
        if running == [""]:
            time.sleep(0.2)
    assert procs.alive(pid), "kube-controller-manager exited after its restart: " + "\n".join(
        procs.tail(lab.logs / "kube-controller-manager.log", 15)
    )
    assert running == table["kube-controller-manager"]["argv"]
    # the controller manager works again: a new namespace gets its default ServiceAccount
    name = "restart-check"
    kube.ensure_namespace(core, name)
    kube.delete_namespace(core, name)


def test_a_lab_releases_only_the_pod_subnet_it_holds(tmp_path):
    """A lab whose old state names a /24 that another lab claimed since (after a crash, or a reused lab
    directory) must not take that lab's network away: only the owner recorded at claim time releases."""
    mine, other = str(tmp_path / "a"), str(tmp_path / "b")
    net = podnet.claim_subnet(mine)
    try:
        assert podnet.owner(net) == mine
        assert podnet.release_subnet(net, other) is False
        routes = subprocess.run(["ip", "route", "show", "type", "unreachable"], capture_output=True, text=True).stdout
        assert net in routes, "another lab's release took the claim away"
        assert podnet.release_subnet(net, mine) is True
        routes = subprocess.run(["ip", "route", "show", "type", "unreachable"], capture_output=True, text=True).stdout
        assert net not in routes and podnet.owner(net) is None
    finally:
        podnet.release_subnet(net, mine)
