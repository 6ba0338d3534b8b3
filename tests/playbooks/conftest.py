"""Playbook tests: each module gets a fresh lab (the roles install cluster-wide components), run in a
pytest session of their own after the lab and module tests (see the Makefile)."""

from __future__ import annotations

import pytest

from lab import build, ports
from lab.cluster import Lab


@pytest.fixture(scope="module")
def lab():
    try:
        build.binary_path("helm")
    except build.BuildError as e:
        pytest.fail(str(e), pytrace=False)
    the_lab = Lab()
    the_lab.down(log=lambda *_: None)
    the_lab.up(gpu_nodes=4, gpus_per_node=1, cpu_nodes=1, log=lambda *_: None)
    yield the_lab
    the_lab.down(log=lambda *_: None)


@pytest.fixture
def pod_ports_named(lab):
    """A check for after site.yml: every port the lab's pods listen on is one lab.ports.POD_PORTS names, so that the lab
    never hands it to kube-apiserver (whose port is forwarded into every pod) and --api-port refuses it."""

    def check():
        listeners = lab.pod_listeners()
        assert 10259 in listeners.get("kube-system_kube-scheduler", []), listeners  # the pods' listeners are seen
        problems = ports.pod_port_problems(listeners, lab.state()["ports"]["apiserver"])
        assert not problems, problems

    return check


@pytest.fixture
def pool(lab):
    """The lab's GPU nodes, to cordon and add to; put back as they were afterwards."""
    from seeds import Pool

    p = Pool(lab)
    yield p
    p.restore()


@pytest.fixture
def jobs(lab):
    """A namespace of its own and a watch on the Kubeflow job pods in it; removed afterwards."""
    import uuid

    from kubernetes import client as k
    from seeds import Jobs

    from lab import kube

    core = k.CoreV1Api(kube.api(lab))
    ns = f"e2e-{uuid.uuid4().hex[:6]}"
    kube.ensure_namespace(core, ns)
    with Jobs(lab, ns) as j:
        yield j
    kube.delete_namespace(core, ns, timeout=120)
