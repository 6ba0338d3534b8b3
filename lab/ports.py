"""The loopback ports the lab's components listen on: one picked free at random below the kernel's range for client
sockets, and claimed across the labs of the machine so that two starting side by side never pick the same one."""

from __future__ import annotations

import os
import random
import socket
import time
from pathlib import Path


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
    PORT_CLAIM_SECONDS. Picked at random below the kernel's ephemeral range: a port the kernel hands out (bind to
    port 0) can be taken, before the component binds it, by any client socket's local port; and two labs starting
    side by side (make test's lanes) could pick the same free port before either bound it ("address already in
    use"), which the claim rules out."""
    low = ephemeral_ports()[0]
    if low > 12000:
        for _ in range(200):
            port = random.randrange(10000, low)
            if port_free(port) and claim_port(port):
                return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
