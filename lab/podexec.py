"""A pod's sandbox, and a container's process exec'd inside it.

``python -m lab.podexec --sandbox SPEC.json FD`` is a pod's sandbox (its "pause" process): it
unshares a network namespace, brings up loopback, opens a listener on 127.0.0.1:<apiserver port>
inside it and hands it to the runner over the inherited UNIX socket FD (the runner forwards those
connections to the real apiserver), says ``ready``; the runner then links the namespace to the host
with a veth pair (``lab.podnet``) and answers ``go``; the sandbox gives ``eth0`` the pod's address and
routes, says ``ok``, and sleeps for the pod's lifetime. The namespace, the address and the veth pair
live as long as it does, across container restarts.

``python -m lab.podexec SPEC.json`` runs one container: it joins the sandbox's network namespace,
unshares a mount namespace, bind-mounts the pod's materialised volumes at their mountPaths, then execs
the component with the container's own argv and environment.

So every pod gets the ports it asks for without clashing and a real address the apiserver and other
pods reach, while nothing listens beyond 127.0.0.1 on the host.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18

_libc = ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src: str | None, dst: str, flags: int) -> None:
    _check(_libc.mount(src.encode() if src else None, dst.encode(), None, flags, None), f"mount {src} on {dst}")


def _bind(src: str, dst: str, readonly: bool) -> None:
    s, d = Path(src), Path(dst)
    if s.is_dir():
        d.mkdir(parents=True, exist_ok=True)
    else:
        d.parent.mkdir(parents=True, exist_ok=True)
        if not d.exists():
            d.touch()
    _mount(str(s), str(d), MS_BIND | MS_REC)
    if readonly:
        _mount(None, str(d), MS_REMOUNT | MS_BIND | MS_RDONLY)


def sandbox(spec: dict, chan: socket.socket) -> int:
    from . import podnet

    _check(_libc.unshare(CLONE_NEWNET), "unshare(net)")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    for port in spec.get("forward_ports", []):
        lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lst.bind(("127.0.0.1", port))
        lst.listen(128)
        socket.send_fds(chan, [str(port).encode()], [lst.fileno()])
        lst.close()
    socket.send_fds(chan, [b"ready"], [])
    if chan.recv(16) != b"go":
        raise RuntimeError("the runner did not set up the pod's veth pair")
    podnet.configure_inside(spec["ip"], spec["subnet"])
    socket.send_fds(chan, [b"ok"], [])
    chan.close()
    print(f"lab sandbox: pod address {spec['ip']} (lab pods {spec['subnet']})", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        signal.pause()


def container(spec: dict) -> int:
    with open(spec["netns"]) as ns:
        _check(_libc.setns(ns.fileno(), CLONE_NEWNET), f"setns({spec['netns']})")
    _check(_libc.unshare(CLONE_NEWNS), "unshare(mount)")
    _mount(None, "/", MS_REC | MS_PRIVATE)
    for m in spec.get("mounts", []):
        if m["src"] != m["dst"]:
            _bind(m["src"], m["dst"], m.get("readonly", False))
    os.chdir(spec.get("cwd") or "/")
    os.execve(spec["argv"][0], spec["argv"], spec["env"])
    return 127  # not reached


def main(argv: list[str]) -> int:
    if argv[1] == "--sandbox":
        return sandbox(json.loads(Path(argv[2]).read_text()), socket.socket(fileno=int(argv[3])))
    return container(json.loads(Path(argv[1]).read_text()))


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Exception as e:  # noqa: BLE001 - report any set-up failure as the container's exit
        what = "the pod sandbox" if "--sandbox" in sys.argv else "container"
        print(f"lab podexec: cannot start {what}: {e}", file=sys.stderr)
        sys.exit(127)
