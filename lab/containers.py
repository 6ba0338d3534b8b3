"""A runner pod's processes: the sandbox holding the pod's network namespace (``lab.podexec --sandbox``, with the
apiserver listener forwarded to the host), each container's process (``lab.podexec``) with its restarts and back-off,
and a container's readinessProbe, run from the host as kubelet runs it."""

from __future__ import annotations

import contextlib
import datetime
import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING

from . import podnet, procs
from .paths import REPO

if TYPE_CHECKING:
    from .podrunner import PodRun

MAX_BACKOFF = 30.0


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)


class PodSetupError(Exception):
    """The pod cannot start yet (missing ConfigMap, unsupported command ...): reported as Waiting."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class Forwarder:
    """Accepts connections on a listener (inside a pod's network namespace, or lab.latency's on the host); pipes them
    to a port on the host. ``delay``: seconds each chunk the accepted side sends is held before it is passed on (0
    for a pod's). Counts the connections open at once (``most``)."""

    def __init__(self, listener: socket.socket, target_port: int, delay: float = 0.0):
        self.listener = listener
        self.target = ("127.0.0.1", target_port)
        self.delay = float(delay)
        self.closed = False
        self.open = self.most = self.accepted = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(self.target, timeout=5)
                up.settimeout(None)
                # a cluster a round trip away (lab.latency): each chunk passed on when its delay is over, as by the
                # clients and servers on either side (Go's and urllib3's sockets set TCP_NODELAY); with Nagle's
                # algorithm on, a chunk sent while the one before waited for its ACK was held until the peer's delayed
                # ACK, up to 40 ms more, which no direct path has. The pods' forwarders (no delay) are left as they
                # were: two runs of make test with it on there each missed a scheduler's reaction once, unexplained
                if self.delay:
                    for s in (conn, up):
                        with contextlib.suppress(OSError):
                            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                conn.close()
                continue
            with self._lock:
                self.accepted += 1
                self.open += 1
                self.most = max(self.most, self.open)
            ended = threading.Event()
            for a, b, delay in ((conn, up, self.delay), (up, conn, 0.0)):
                threading.Thread(target=self._pump, args=(a, b, delay, ended), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, delay: float, ended: threading.Event) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if delay:
                    time.sleep(delay)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            with self._lock:
                if not ended.is_set():
                    ended.set()
                    self.open -= 1

    def close(self) -> None:
        self.closed = True
        try:
            self.listener.close()
        except OSError:
            pass


class Prober:
    """A container's readinessProbe, run from the host against the pod's address (httpGet, tcpSocket),
    as kubelet does: initialDelaySeconds, periodSeconds, timeoutSeconds, success/failureThreshold."""

    def __init__(self, ctr: Container, spec: dict | None):
        self.ctr = ctr
        self.spec = spec or {}
        self.supported = bool(spec) and ("httpGet" in spec or "tcpSocket" in spec)
        self.ready = False
        self.successes = 0
        self.failures = 0
        self.last: str = ""
        self.next = time.monotonic() + float(self.spec.get("initialDelaySeconds", 0))
        self.busy = False

    def _port(self, port) -> int:
        if isinstance(port, int) or str(port).isdigit():
            return int(port)
        for p in self.ctr.spec.get("ports") or []:
            if p.get("name") == port:
                return int(p["containerPort"])
        raise ValueError(f"no container port named {port!r}")

    def check(self) -> tuple[bool, str]:
        timeout = float(self.spec.get("timeoutSeconds", 1))
        host = self.ctr.pod.pod_ip
        try:
            if "tcpSocket" in self.spec:
                t = self.spec["tcpSocket"]
                socket.create_connection((t.get("host") or host, self._port(t["port"])), timeout=timeout).close()
                return True, ""
            h = self.spec["httpGet"]
            scheme = (h.get("scheme") or "HTTP").upper()
            url_host = h.get("host") or host
            cls = http.client.HTTPSConnection if scheme == "HTTPS" else http.client.HTTPConnection
            kw = {"context": ssl._create_unverified_context()} if scheme == "HTTPS" else {}  # noqa: S323 - as kubelet
            conn = cls(url_host, self._port(h["port"]), timeout=timeout, **kw)
            try:
                headers = {x["name"]: x["value"] for x in h.get("httpHeaders") or []}
                conn.request("GET", h.get("path") or "/", headers=headers)
                code = conn.getresponse().status
            finally:
                conn.close()
            return 200 <= code < 400, f"HTTP probe failed with statuscode: {code}"
        except (OSError, ValueError, http.client.HTTPException) as e:
            return False, f"probe failed: {e}"

    def tick(self) -> None:
        if not self.supported or self.busy or time.monotonic() < self.next:
            return
        self.busy = True
        self.next = time.monotonic() + float(self.spec.get("periodSeconds", 10))
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        try:
            ok, why = self.check()
            if ok:
                self.successes, self.failures = self.successes + 1, 0
                if self.successes >= int(self.spec.get("successThreshold", 1)):
                    self.ready = True
            else:
                self.successes, self.failures = 0, self.failures + 1
                if self.failures >= int(self.spec.get("failureThreshold", 3)) or not self.ready:
                    self.ready = False
                if why != self.last:
                    log(f"{self.ctr.pod.ns}/{self.ctr.pod.name}:{self.ctr.name} readiness {why}")
            self.last = why if not ok else ""
        finally:
            self.busy = False


class Sandbox:
    """The pod's network namespace, held by ``lab.podexec --sandbox`` for the pod's lifetime: loopback,
    the forwarded apiserver listener, and eth0 with the pod's address (see ``lab.podnet``)."""

    def __init__(self, pod: PodRun):
        self.pod = pod
        self.proc: subprocess.Popen | None = None
        self.forwarders: list[Forwarder] = []
        self.pid_path = pod.dir / "sandbox.pid"

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc else 0

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        runner = self.pod.runner
        spec_file = self.pod.dir / "sandbox.json"
        spec_file.write_text(
            json.dumps({"forward_ports": [runner.api_port], "ip": self.pod.pod_ip, "subnet": runner.subnet})
        )
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with open(self.pod.dir / "sandbox.log", "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "lab.podexec", "--sandbox", str(spec_file), str(child.fileno())],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                pass_fds=(child.fileno(),),
                start_new_session=True,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )
        child.close()
        procs.write_pid(self.pid_path, self.proc.pid)
        parent.settimeout(10)
        done = False
        try:
            while True:
                msg, fds, _, _ = socket.recv_fds(parent, 64, 1)
                if not msg:
                    break
                if fds:
                    self.forwarders.append(Forwarder(socket.socket(fileno=fds[0]), int(msg.decode())))
                elif msg == b"ready":
                    podnet.attach(self.proc.pid, self.pod.pod_ip, runner.subnet)
                    parent.sendall(b"go")
                elif msg == b"ok":
                    done = True
                    break
        except (OSError, ValueError, podnet.PodNetError) as e:
            self.stop()
            raise PodSetupError("LabPodNetworkError", f"pod network for {self.pod.pod_ip}: {e}") from e
        finally:
            parent.close()
        if not done:
            self.stop()
            tail = " | ".join(procs.tail(self.pod.dir / "sandbox.log", 3))
            raise PodSetupError("LabPodNetworkError", f"the pod's sandbox did not come up: {tail}")

    def stop(self) -> None:
        if self.proc is not None:
            procs.stop(self.proc.pid, 2)
            try:
                self.proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
            self.proc = None
        for f in self.forwarders:
            f.close()
        self.forwarders = []
        self.pid_path.unlink(missing_ok=True)


class Container:
    def __init__(self, pod: PodRun, spec: dict, binary: str | None):
        self.pod = pod
        self.spec = spec
        self.name = spec["name"]
        self.binary = binary
        self.proc: subprocess.Popen | None = None
        self.probe: Prober | None = None
        self.restarts = 0
        self.started_at: str | None = None
        self.started_mono = 0.0
        self.last_term: dict | None = None
        self.next_start = 0.0
        self.waiting: tuple[str, str] | None = ("ContainerCreating", "")
        self.log_path = pod.dir / f"{self.name}.log"
        self.pid_path = pod.dir / f"{self.name}.pid"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, argv: list[str], env: dict, mounts: list[dict]) -> None:
        spec_file = self.pod.dir / f"{self.name}.spec.json"
        spec_file.write_text(
            json.dumps(
                {
                    "argv": argv,
                    "env": env,
                    "mounts": mounts,
                    "cwd": self.spec.get("workingDir") or str(self.pod.dir),
                    "netns": f"/proc/{self.pod.sandbox.pid}/ns/net",
                }
            )
        )
        with open(self.log_path, "ab") as out:
            out.write(f"\n=== {now()} start #{self.restarts}: {' '.join(argv)}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "lab.podexec", str(spec_file)],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )
        procs.write_pid(self.pid_path, self.proc.pid)
        self.started_at = now()
        self.started_mono = time.monotonic()
        self.waiting = None
        self.probe = Prober(self, self.spec.get("readinessProbe"))

    def stop(self, grace: float = 10.0) -> None:
        if self.proc is not None:
            procs.stop(self.proc.pid, grace)
            try:
                self.proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        self.pid_path.unlink(missing_ok=True)

    def reap(self) -> dict | None:
        """If the process exited, record it and schedule a restart; return the termination record."""
        if self.proc is None or self.proc.poll() is None:
            return None
        code = self.proc.returncode
        code = 128 - code if code < 0 else code
        self.last_term = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": self.started_at,
            "finishedAt": now(),
        }
        ran = time.monotonic() - self.started_mono
        backoff = 0.0 if ran > 60 else min(MAX_BACKOFF, 2.0 ** min(self.restarts, 5))
        self.next_start = time.monotonic() + backoff
        self.proc = None
        self.pid_path.unlink(missing_ok=True)
        self.waiting = ("CrashLoopBackOff", f"back-off {backoff:.0f}s restarting failed container")
        with open(self.log_path, "ab") as out:
            out.write(f"=== {now()} exited with code {code}\n".encode())
        return self.last_term

    def ready(self) -> bool:
        """Alive and, with a readinessProbe (httpGet or tcpSocket), passing it; without one (or with a
        kind the lab does not run), alive for 1 s."""
        if not self.alive():
            return False
        if self.probe is not None and self.probe.supported:
            return self.probe.ready
        return time.monotonic() - self.started_mono >= 1.0

    def status(self, image: str) -> dict:
        ready = self.ready()
        st: dict = {
            "name": self.name,
            "image": image,
            "imageID": "",
            "ready": ready,
            "restartCount": self.restarts,
            "started": self.alive(),
            "containerID": f"lab://{self.proc.pid}" if self.alive() else None,
        }
        if self.alive():
            st["state"] = {"running": {"startedAt": self.started_at}}
        elif self.next_start == float("inf") and self.last_term:  # done for good (restartPolicy)
            st["state"] = {"terminated": self.last_term}
        else:
            reason, message = self.waiting or ("ContainerCreating", "")
            st["state"] = {"waiting": {"reason": reason, "message": message}}
        if self.last_term:
            st["lastState"] = {"terminated": self.last_term}
        return st
