"""Pod addresses: every runner pod gets a real IPv4 address inside its own network namespace.

Each lab claims a /24 of 10.245.0.0/16 on this machine (an ``unreachable`` route for the whole /24
in the host's routing table is the claim, so two labs on one machine never share addresses, and a
packet for an address no pod holds goes nowhere). A pod's network namespace is held by its sandbox
process (``lab.podexec --sandbox``, the pod's "pause" process); the runner links it to the host with a
veth pair: ``eth0`` in the pod with ``<ip>/32``, the host end (``gs<subnet><host>``) with the lab's
gateway address ``10.245.N.1/32`` and a ``/32`` route to the pod. The pod routes only the lab's /24
(via the gateway), and forwarding is enabled on the host ends alone, so:

- the apiserver (host network) reaches a pod's webhook at ``<pod ip>:<port>``, as it does in a cluster
  with ``--enable-aggregator-routing=true`` (it reads the Service's Endpoints);
- a pod reaches another pod of the same lab at its address (routed through the host);
- nothing outside the host can reach a pod, and a pod reaches nothing beyond its lab's /24 (and the
  apiserver, through the forwarded 127.0.0.1:<port> inside its namespace).
"""

from __future__ import annotations

import ipaddress
import subprocess
from pathlib import Path

PREFIX = "10.245"
IF_PREFIX = "gs"
# who holds each claim: a file per /24 naming the lab directory that claimed it. Like the routes, it
# lives until the machine restarts (/run is cleared then), and only its owner releases a claim: a lab
# whose old state names a /24 another lab has claimed since must not take that lab's network away.
OWNERS = Path("/run/gangsched-lab/subnets")


class PodNetError(RuntimeError):
    pass


def _ip(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(["ip", *args], input=stdin, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise PodNetError(f"ip {' '.join(args)}: {(r.stderr or r.stdout).strip()}")
    return r


def _owner_file(subnet: str) -> Path:
    return OWNERS / subnet.split("/")[0]


def owner(subnet: str) -> str | None:
    """The lab directory holding a claim, or None when nobody recorded one."""
    try:
        return _owner_file(subnet).read_text().strip() or None
    except OSError:
        return None


def claim_subnet(lab_dir: str, prefer: str | None = None) -> str:
    """Claim a free 10.245.N.0/24 for the lab in ``lab_dir`` (``prefer`` first); returns it as
    ``10.245.N.0/24``. Adding the route is the atomic step; the owner file follows it."""
    candidates = [f"{PREFIX}.{n}.0/24" for n in range(1, 255)]
    if prefer in candidates:
        candidates.remove(prefer)
        candidates.insert(0, prefer)
    for net in candidates:
        if _ip("route", "add", "unreachable", net, check=False).returncode == 0:
            OWNERS.mkdir(parents=True, exist_ok=True)
            _owner_file(net).write_text(lab_dir)
            return net
    raise PodNetError(f"no free /24 left in {PREFIX}.0.0/16 for the lab's pods (see: ip route show type unreachable)")


def release_subnet(subnet: str | None, lab_dir: str) -> bool:
    """Remove the claim of the lab in ``lab_dir`` and any host end of its pods' veth pairs still there;
    a /24 another lab holds now (or that nobody recorded) is left alone. Returns whether it released."""
    if not subnet or owner(subnet) != lab_dir:
        return False
    for name in host_links(subnet):
        _ip("link", "del", name, check=False)
    _ip("route", "del", "unreachable", subnet, check=False)
    _owner_file(subnet).unlink(missing_ok=True)
    return True


def gateway(subnet: str) -> str:
    return str(ipaddress.ip_network(subnet).network_address + 1)


def host_ifname(ip: str) -> str:
    _, _, n, m = (int(x) for x in ip.split("."))
    return f"{IF_PREFIX}{n:02x}{m:02x}"


def host_links(subnet: str) -> list[str]:
    n = int(subnet.split(".")[2])
    prefix = f"{IF_PREFIX}{n:02x}"
    out = _ip("-o", "link", "show", check=False).stdout
    names = [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line]
    return [name for name in names if name.startswith(prefix) and len(name) == len(prefix) + 2]


def attach(pid: int, ip: str, subnet: str) -> str:
    """Host side: a veth pair into the network namespace of ``pid`` (its end named eth0), the gateway
    address and a /32 route to ``ip`` on the host end. Returns the host end's name."""
    name = host_ifname(ip)
    gw = gateway(subnet)
    _ip("link", "del", name, check=False)  # left by a pod process that outlived its runner
    _ip("link", "add", name, "type", "veth", "peer", "name", "eth0", "netns", str(pid))
    _sysctl(f"ipv6/conf/{name}/disable_ipv6", "1")
    _ip(
        "-batch",
        "-",
        stdin=f"addr add {gw}/32 dev {name}\nlink set {name} up\nroute replace {ip}/32 dev {name} src {gw}\n",
    )
    # forwarding only for packets that come from pods (pod to pod); the host's other interfaces keep theirs
    _sysctl(f"ipv4/conf/{name}/forwarding", "1")
    return name


def configure_inside(ip: str, subnet: str) -> None:
    """Pod side, run inside the pod's network namespace once eth0 is there."""
    gw = gateway(subnet)
    _sysctl("ipv6/conf/eth0/disable_ipv6", "1")
    _ip(
        "-batch",
        "-",
        stdin=(
            f"addr add {ip}/32 dev eth0\nlink set eth0 up\nroute add {gw}/32 dev eth0 scope link\n"
            f"route add {subnet} via {gw} src {ip}\n"
        ),
    )


def _sysctl(key: str, value: str) -> None:
    try:
        Path("/proc/sys/net", key).write_text(value)
    except OSError as e:
        if "disable_ipv6" not in key:  # no IPv6 on this kernel: nothing to turn off
            raise PodNetError(f"sysctl net/{key}={value}: {e}") from e


def addresses_inside(pid: int) -> list[tuple[str, str]]:
    """(interface, address) of every IPv4/IPv6 address in the network namespace of ``pid``."""
    r = subprocess.run(["nsenter", "-t", str(pid), "-n", "ip", "-o", "addr", "show"], capture_output=True, text=True)
    out = []
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) > 3:
            out.append((parts[1], parts[3].split("/")[0]))
    return out
