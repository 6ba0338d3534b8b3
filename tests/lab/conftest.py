"""The lab as a module-scoped fixture: a fresh lab for each test file (about 8 s to start), torn down
after it, so that what one file installs cluster-wide (CRDs, schedulers, operators, ClusterRoles)
never reaches another, whatever order or worker the files run in (a package of test files, such as
``trainer_stack/``, shares one lab of its own: its files run whole on one worker); on a failing test the tail of
every component's log (and of every runner pod's) is attached to the report."""

from __future__ import annotations

import socket
import uuid

import pytest
from fresh_lab import fresh_lab
from kubernetes import client as k

from lab import kube, nodes, procs, scenarios
from lab.cluster import Lab


@pytest.fixture(scope="module")
def lab():
    yield from fresh_lab()


@pytest.fixture(scope="module")
def api(lab):
    return kube.api(lab)


@pytest.fixture(scope="module")
def core(api):
    return k.CoreV1Api(api)


@pytest.fixture
def namespace(core):
    name = f"t-{uuid.uuid4().hex[:8]}"
    kube.ensure_namespace(core, name)
    yield name
    kube.delete_namespace(core, name, timeout=120)


@pytest.fixture(scope="module")
def volcano(lab):
    """Volcano's CRDs and vc-scheduler (the lab's own minimal Deployment), run by the runner."""
    scenarios.install_volcano(lab)
    return lab


@pytest.fixture(scope="module")
def silent_server():
    """A real listener on loopback that accepts connections and never answers a byte: its https URL."""
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(64)
        yield f"https://127.0.0.1:{srv.getsockname()[1]}"


@pytest.fixture
def added_nodes(api):
    """Names of nodes a test adds; removed again afterwards."""
    added: list[str] = []
    yield added
    for name in added:
        nodes.remove(api, name)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when != "call" or not rep.failed or "lab" not in item.fixturenames:
        return
    the_lab = Lab()
    parts = []
    for c in ("etcd", "kube-apiserver", "kube-controller-manager", "kwok", "runner", *the_lab.addons()):
        parts.append(f"--- {c} ---\n" + "\n".join(procs.tail(the_lab.logs / f"{c}.log", 25)))
    for log in sorted(the_lab.pods.glob("*/*.log")) if the_lab.pods.exists() else ():
        parts.append(f"--- pod {log.parent.name}/{log.stem} ---\n" + "\n".join(procs.tail(log, 25)))
    rep.sections.append(("lab component logs", "\n".join(parts)))
