"""The loopback ports the lab's components listen on: one picked free at random between the ports components listen on
inside their pods and the kernel's range for client sockets, and claimed across the labs of the machine so that two
starting side by side never pick the same one."""

from __future__ import annotations

import os
import random
import socket
import time
from pathlib import Path

# kube-apiserver's port is forwarded into every pod's network namespace (lab.podexec: the pod reaches the apiserver at
# 127.0.0.1:<its port>, as a kubeconfig written for the host says), so it must be none that a component listens on in
# its pod: with kube-apiserver on 10259, kube-scheduler's static pod exits at every start with "failed to listen on
# 127.0.0.1:10259: bind: address already in use" and the lab never comes up. The lab picks its ports from PICK_FROM up
# (above the components' defaults), never one of POD_PORTS, and refuses those for --api-port: the ports the lab's pods
# listen on (controller-runtime operators' metrics, probes and webhooks; Volcano's webhook and its schedulers' health
# port; the schedulers' ports), as the playbook tests find them after site.yml (pod_port_problems).
PICK_FROM = 20000
POD_PORTS = {
    8080: "metrics (controller-runtime operators, vc-scheduler)",
    8081: "health probes (controller-runtime operators)",
    8443: "webhook (Volcano's admission)",
    9443: "webhook (controller-runtime operators)",
    10251: "Koordinator's scheduler's insecure port",
    10259: "kube-scheduler's secure port, and every scheduler's built on it",
    11251: "health (Volcano's scheduler and controllers)",
}


def pod_port_problems(listeners: dict[str, list[int]], api_port: int) -> list[str]:
    """The ports the lab's pods listen on (``Lab.pod_listeners``) that POD_PORTS does not name: the lab could hand one
    to kube-apiserver (forwarded into every pod), and ``--api-port`` would not refuse it. Empty when it names all.

    >>> pod_port_problems({"kube-system_kube-scheduler": [10259, 23699]}, 23699)
    []
    >>> pod_port_problems({"ns_op": [8080, 24000]}, 23699)
    ['pod ns_op listens on 24000, a port lab.ports.POD_PORTS does not name: add it there']
    """
    return [
        f"pod {pod} listens on {port}, a port lab.ports.POD_PORTS does not name: add it there"
        for pod, pod_ports in sorted(listeners.items())
        for port in sorted(set(pod_ports) - {api_port} - set(POD_PORTS))
    ]


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def ephemeral_ports() -> tuple[int, int]:
    """The kernel's range for the local port of a client socket (Linux; its default elsewhere)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


# ports handed out by free_port() on this machine, one empty file each, so that labs starting side by side never
# hand out the same one: a port is only at risk between its choice and its component's bind (a few seconds, a
# minute on a loaded machine), after which port_free() says it is taken; a claim older than that has expired
# (per user: another user's directory would not be writable here)
PORT_CLAIMS = Path(os.environ.get("TMPDIR") or "/tmp") / f"gangsched-lab-port-claims-{os.getuid()}"
PORT_CLAIM_SECONDS = 600


def claim_port(port: int, claims: Path | None = None) -> bool:
    """Whether ``port`` is now this caller's to bind: its claim file created here (O_EXCL: one process wins), or
    found expired and taken over."""
    claims = claims or PORT_CLAIMS
    path = claims / str(port)
    try:
        claims.mkdir(parents=True, exist_ok=True)
    except OSError:
        return True  # no place to claim it: free is all that is known, as before claims
    for _ in range(2):
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            return True
        except FileExistsError:
            try:
                if time.time() - path.stat().st_mtime < PORT_CLAIM_SECONDS:
                    return False
                path.unlink()  # expired: its component bound it long ago, or never will
            except FileNotFoundError:
                pass  # another process took it over first: try once more
        except OSError:
            return True  # no place to claim it (a directory not writable here): free is all that is known
    return False


def free_port() -> int:
    """A port free now, for a component to listen on, that no other lab on this machine was handed in the last
    PORT_CLAIM_SECONDS. Picked at random from PICK_FROM up to the kernel's ephemeral range: a port the kernel hands
    out (bind to port 0) can be taken, before the component binds it, by any client socket's local port; one below
    PICK_FROM can be a component's own port inside its pod (see POD_PORTS); and two labs starting side by side
    (make test's lanes) could pick the same free port before either bound it ("address already in use"), which the
    claim rules out."""
    low = ephemeral_ports()[0]
    if low > PICK_FROM + 2000:
        for _ in range(200):
            port = random.randrange(PICK_FROM, low)
            if port not in POD_PORTS and port_free(port) and claim_port(port):
                return port
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in POD_PORTS:
            return port
