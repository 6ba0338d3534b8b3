"""The pod-process runner: acts as the kubelet for pods of known component images.

Pods bound to a lab node whose container image is a known component (see ``versions.IMAGES``) are
run as real processes from the pod spec: the container's command/args, env (incl. fieldRef,
configMapKeyRef, secretKeyRef, envFrom), ConfigMap/Secret/projected/emptyDir/hostPath volumes
materialised and bind-mounted at their mountPaths, and the ServiceAccount token from a TokenRequest
for the pod's own ServiceAccount. Pod status follows the process (Running/Ready while alive,
restarts with back-off, exit codes kept). Deleting the pod stops the process.

It also runs the static pods in ``.lab/manifests`` (the kube-scheduler, kubeadm-style), restarting
them when their manifest file changes, and keeps a mirror pod for each in the API. The manifests of
kube-apiserver and kube-controller-manager there describe the processes the lab runs on the host: a
changed one starts that component again with the manifest's flags (``HostComponent``).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import yaml
from kubernetes import client as k
from kubernetes import watch

from . import build, images, podnet, procs
from . import versions as V
from .cluster import CONTROL_PLANE_NODE, HOST_COMPONENTS, Lab
from .paths import REPO

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
SHELLS = {"sh", "bash", "ash", "dash"}
MAX_BACKOFF = 30.0


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _put(path: Path, text: str) -> None:
    """Write a volume file only when its content changed, atomically (a reader never sees it empty)."""
    try:
        if path.read_text() == text:
            return
    except OSError:
        pass
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)


class PodSetupError(Exception):
    """The pod cannot start yet (missing ConfigMap, unsupported command ...): reported as Waiting."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class Forwarder:
    """Accepts connections on listeners inside a pod's network namespace; pipes them to the host."""

    def __init__(self, listener: socket.socket, target_port: int):
        self.listener = listener
        self.target = ("127.0.0.1", target_port)
        self.closed = False
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
            except OSError:
                conn.close()
                continue
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
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
        self.pid_path.write_text(str(self.proc.pid))
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
        self.pid_path.write_text(str(self.proc.pid))
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


class PodRun:
    """One pod the runner is responsible for."""

    def __init__(self, runner: Runner, pod: dict, static: bool = False):
        self.runner = runner
        self.pod = pod
        self.static = static
        md = pod["metadata"]
        self.ns, self.name, self.uid = md["namespace"], md["name"], md.get("uid")
        self.dir = runner.lab.pods / f"{self.ns}_{self.name}"
        if self.dir.exists():
            shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.containers = [Container(self, c, images.binary_for(c["image"])) for c in pod["spec"]["containers"]]
        self.token_refreshed = 0.0
        self.volumes_refreshed = 0.0
        self.pod_ip = runner.allocate_ip()
        self.sandbox = Sandbox(self)
        self.last_status: str | None = None
        self.last_ready: str | None = None
        self.stopping = False
        # held by tick() for its whole round and by stop() while it marks the pod stopping: a tick in
        # progress (the runner loop's thread) finishes before stop() (the watch thread) goes on to stop
        # the containers, and no tick after that starts one
        self.lock = threading.Lock()
        self.created = now()
        (self.dir / "pod.json").write_text(json.dumps({"namespace": self.ns, "name": self.name, "ip": self.pod_ip}))

    # ---- set-up --------------------------------------------------------------------------------
    def _read_configmap(self, name: str, optional: bool) -> dict | None:
        try:
            cm = self.runner.core.read_namespaced_config_map(name, self.ns)
        except k.ApiException as e:
            if e.status == 404 and optional:
                return None
            raise PodSetupError("CreateContainerConfigError", f"configmap {self.ns}/{name}: {e.reason}") from e
        data = dict(cm.data or {})
        data.update({key: base64.b64decode(v).decode(errors="replace") for key, v in (cm.binary_data or {}).items()})
        return data

    def _read_secret(self, name: str, optional: bool) -> dict | None:
        try:
            s = self.runner.core.read_namespaced_secret(name, self.ns)
        except k.ApiException as e:
            if e.status == 404 and optional:
                return None
            raise PodSetupError("CreateContainerConfigError", f"secret {self.ns}/{name}: {e.reason}") from e
        return {key: base64.b64decode(v).decode(errors="replace") for key, v in (s.data or {}).items()}

    def _field(self, path: str) -> str:
        md, spec = self.pod["metadata"], self.pod["spec"]
        table = {
            "metadata.name": md["name"],
            "metadata.namespace": md["namespace"],
            "metadata.uid": md.get("uid", ""),
            "spec.nodeName": spec.get("nodeName", ""),
            "spec.serviceAccountName": spec.get("serviceAccountName", ""),
            "status.podIP": self.pod_ip,
            "status.hostIP": "10.240.0.1",
            "status.podIPs": self.pod_ip,
        }
        m = re.match(r"metadata\.(labels|annotations)\['(.+)'\]", path)
        if m:
            return (md.get(m.group(1)) or {}).get(m.group(2), "")
        return table.get(path, "")

    def _token(self, audience: str | None, seconds: int) -> str:
        sa = self.pod["spec"].get("serviceAccountName") or "default"
        spec = {"expirationSeconds": max(seconds, 600)}
        if audience:
            spec["audiences"] = [audience]
        if not self.static:
            spec["boundObjectRef"] = {"kind": "Pod", "apiVersion": "v1", "name": self.name, "uid": self.uid}
        try:
            tr = self.runner.core.create_namespaced_service_account_token(sa, self.ns, {"spec": spec})
        except k.ApiException as e:
            raise PodSetupError(
                "CreateContainerConfigError", f"TokenRequest for serviceaccount {self.ns}/{sa}: {e.reason}"
            ) from e
        return tr.status.token

    def _write_items(self, target: Path, data: dict, items: list | None) -> None:
        target.mkdir(parents=True, exist_ok=True)
        pairs = [(i["key"], i["path"]) for i in items] if items else [(key, key) for key in data]
        for key, path in pairs:
            if key not in data:
                raise PodSetupError("CreateContainerConfigError", f"key {key} not found")
            p = target / path
            p.parent.mkdir(parents=True, exist_ok=True)
            _put(p, data[key])

    def materialise_volumes(self, tokens: bool = True) -> dict[str, Path]:
        """Write the pod's volumes under its directory, in place (the files stay the ones bind-mounted
        into a running container, as kubelet keeps mounted ConfigMaps and Secrets current)."""
        vols: dict[str, Path] = {}
        root = self.dir / "volumes"
        for v in self.pod["spec"].get("volumes") or []:
            name = v["name"]
            target = root / name
            if "hostPath" in v:
                vols[name] = Path(v["hostPath"]["path"])
                continue
            target.mkdir(parents=True, exist_ok=True)
            if "configMap" in v:
                cm = v["configMap"]
                data = self._read_configmap(cm["name"], cm.get("optional", False))
                if data is not None:
                    self._write_items(target, data, cm.get("items"))
            elif "secret" in v:
                sec = v["secret"]
                data = self._read_secret(sec["secretName"], sec.get("optional", False))
                if data is not None:
                    self._write_items(target, data, sec.get("items"))
            elif "projected" in v:
                for src in v["projected"].get("sources") or []:
                    if "serviceAccountToken" in src:
                        t = src["serviceAccountToken"]
                        if tokens or not (target / t["path"]).exists():
                            _put(target / t["path"], self._token(t.get("audience"), t.get("expirationSeconds", 3600)))
                    elif "configMap" in src:
                        data = self._read_configmap(src["configMap"]["name"], src["configMap"].get("optional", False))
                        if data is not None:
                            self._write_items(target, data, src["configMap"].get("items"))
                    elif "secret" in src:
                        data = self._read_secret(src["secret"]["name"], src["secret"].get("optional", False))
                        if data is not None:
                            self._write_items(target, data, src["secret"].get("items"))
                    elif "downwardAPI" in src:
                        for item in src["downwardAPI"].get("items") or []:
                            if "fieldRef" in item:
                                _put(target / item["path"], self._field(item["fieldRef"]["fieldPath"]))
            elif "downwardAPI" in v:
                for item in v["downwardAPI"].get("items") or []:
                    if "fieldRef" in item:
                        _put(target / item["path"], self._field(item["fieldRef"]["fieldPath"]))
            elif "emptyDir" in v:
                pass
            else:
                raise PodSetupError("CreateContainerConfigError", f"volume {name}: type not supported by the lab")
            vols[name] = target
        if tokens:
            self.token_refreshed = time.monotonic()
        self.volumes_refreshed = time.monotonic()
        return vols

    def env_for(self, c: dict) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOSTNAME": self.name,
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(self.runner.api_port),
            "KUBERNETES_SERVICE_PORT_HTTPS": str(self.runner.api_port),
            "HOME": str(self.dir),
        }
        for ef in c.get("envFrom") or []:
            prefix = ef.get("prefix", "")
            if "configMapRef" in ef:
                data = self._read_configmap(ef["configMapRef"]["name"], ef["configMapRef"].get("optional", False))
            else:
                data = self._read_secret(ef["secretRef"]["name"], ef["secretRef"].get("optional", False))
            env.update({prefix + key: val for key, val in (data or {}).items()})
        for e in c.get("env") or []:
            if "valueFrom" not in e:
                env[e["name"]] = expand(e.get("value", ""), env)
                continue
            vf = e["valueFrom"]
            if "fieldRef" in vf:
                env[e["name"]] = self._field(vf["fieldRef"]["fieldPath"])
            elif "configMapKeyRef" in vf:
                ref = vf["configMapKeyRef"]
                env[e["name"]] = (self._read_configmap(ref["name"], ref.get("optional", False)) or {}).get(
                    ref["key"], ""
                )
            elif "secretKeyRef" in vf:
                ref = vf["secretKeyRef"]
                env[e["name"]] = (self._read_secret(ref["name"], ref.get("optional", False)) or {}).get(ref["key"], "")
            else:
                env[e["name"]] = ""
        return env

    def argv_for(self, c: dict, binary: str, env: dict) -> list[str]:
        command, args = list(c.get("command") or []), list(c.get("args") or [])
        script = V.SCRIPTS.get(images.repository(c["image"]), {}).get(os.path.basename(command[0]) if command else "")
        if script:  # a script of the image that a lab module does (see versions.SCRIPTS)
            env["PYTHONPATH"] = str(REPO)
            return [sys.executable, "-m", script] + [expand(a, env) for a in command[1:] + args]
        if command and os.path.basename(command[0]) in SHELLS:
            raise PodSetupError(
                "LabUnsupportedCommand",
                f"container {c['name']}: a shell entrypoint ({command[0]}) cannot be run by the lab; "
                "give the component's own binary and flags in command/args",
            )
        rest = command[1:] + args if command else args
        return [str(build.binary_path(binary))] + [expand(a, env) for a in rest]

    # ---- lifecycle -----------------------------------------------------------------------------
    def start_container(self, ctr: Container) -> None:
        if ctr.binary is None:
            return
        c = ctr.spec
        vols = self.materialise_volumes()
        if not self.sandbox.alive():
            for other in self.containers:  # a pod whose sandbox died: its containers go with it
                if other.alive():
                    other.stop(2)
            self.sandbox.stop()
            self.sandbox.start()
        env = self.env_for(c)
        argv = self.argv_for(c, ctr.binary, env)
        mounts = []
        for vm in c.get("volumeMounts") or []:
            src = vols.get(vm["name"])
            if src is None:
                raise PodSetupError("CreateContainerConfigError", f"volumeMount {vm['name']}: no such volume")
            if vm.get("subPath"):
                src = src / vm["subPath"]
            mounts.append({"src": str(src), "dst": vm["mountPath"], "readonly": bool(vm.get("readOnly"))})
        ctr.start(argv, env, mounts)
        log(f"started {self.ns}/{self.name}:{ctr.name} pid {ctr.proc.pid}: {' '.join(argv[1:])[:300]}")

    def tick(self) -> None:
        """Start, reap and restart containers; push status when it changed. Never for a stopped pod."""
        with self.lock:
            if self.stopping:
                return
            self._tick()

    def _tick(self) -> None:
        policy = self.pod["spec"].get("restartPolicy", "Always")
        for ctr in self.containers:
            term = ctr.reap()
            if term:
                log(f"{self.ns}/{self.name}:{ctr.name} exited with code {term['exitCode']}")
                if policy == "Never" or (policy == "OnFailure" and term["exitCode"] == 0):
                    ctr.next_start = float("inf")
                    ctr.waiting = ("Terminated", "")
                else:
                    ctr.restarts += 1
            if ctr.binary and not ctr.alive() and time.monotonic() >= ctr.next_start:
                try:
                    self.start_container(ctr)
                except PodSetupError as e:
                    ctr.waiting = (e.reason, str(e))
                    ctr.next_start = time.monotonic() + 2
                    log(f"{self.ns}/{self.name}:{ctr.name} cannot start: {e}")
                except build.BuildError as e:
                    ctr.waiting = ("LabBinaryMissing", str(e))
                    ctr.next_start = time.monotonic() + 10
        for ctr in self.containers:
            if ctr.alive() and ctr.probe is not None:
                ctr.probe.tick()
        if any(c.alive() for c in self.containers) and time.monotonic() - self.volumes_refreshed > 5:
            try:  # ConfigMap/Secret contents every few seconds, tokens every 30 minutes
                self.materialise_volumes(tokens=time.monotonic() - self.token_refreshed > 1800)
            except PodSetupError as e:
                log(f"{self.ns}/{self.name}: volume refresh failed: {e}")
                self.volumes_refreshed = time.monotonic()
        self.push_status()

    def status(self) -> dict:
        statuses = []
        for ctr in self.containers:
            if ctr.binary is None:  # a container the lab has no binary for: reported as running, no process
                statuses.append(
                    {
                        "name": ctr.name,
                        "image": ctr.spec["image"],
                        "imageID": "",
                        "ready": True,
                        "restartCount": 0,
                        "started": True,
                        "state": {"running": {"startedAt": self.created}},
                    }
                )
            else:
                statuses.append(ctr.status(ctr.spec["image"]))
        ready = all(s["ready"] for s in statuses)
        done = [c for c in self.containers if c.next_start == float("inf")]
        phase = "Running"
        if done and len(done) == len([c for c in self.containers if c.binary]):
            phase = "Succeeded" if all(c.last_term and c.last_term["exitCode"] == 0 for c in done) else "Failed"
        elif not any(c.alive() for c in self.containers if c.binary) and not any(c.started_at for c in self.containers):
            phase = "Pending"
        cond = "True" if ready else "False"
        return {
            "phase": phase,
            "hostIP": "10.240.0.1",
            "podIP": self.pod_ip,
            "podIPs": [{"ip": self.pod_ip}],
            "startTime": (self.pod.get("status") or {}).get("startTime") or self.created,
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Initialized", "status": "True"},
                {"type": "ContainersReady", "status": cond},
                {"type": "Ready", "status": cond},
            ],
            "containerStatuses": statuses,
        }

    def push_status(self, force: bool = False) -> None:
        st = self.status()
        key = json.dumps({**st, "startTime": None}, sort_keys=True)
        if key == self.last_status and not force:
            return
        name = self.mirror_name() if self.static else self.name
        try:
            self.runner.core.patch_namespaced_pod_status(name, self.ns, {"status": st})
            self.last_status = key
            self.last_ready = _ready({"status": st})
        except k.ApiException as e:
            if e.status != 404:
                log(f"status update of {self.ns}/{name} failed: {e.reason}")
        except Exception as e:  # noqa: BLE001 - apiserver away: retry next tick
            log(f"status update of {self.ns}/{name} failed: {e}")

    def mirror_name(self) -> str:
        return f"{self.name}-{CONTROL_PLANE_NODE}"

    def stop(self, grace: float = 10.0) -> None:
        with self.lock:
            self.stopping = True
        for ctr in self.containers:
            ctr.stop(grace)
        self.sandbox.stop()
        self.runner.release_ip(self.pod_ip)
        log(f"stopped {self.ns}/{self.name}")


def _ready(pod: dict) -> str | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status")
    return None


def expand(value: str, env: dict) -> str:
    """Kubernetes' $(VAR) expansion in env values and command/args; $$(VAR) escapes."""

    def repl(m: re.Match) -> str:
        if m.group(0).startswith("$$"):
            return m.group(0)[1:]
        return env.get(m.group(1), m.group(0))

    return re.sub(r"\$?\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)", repl, value)


class HostComponent:
    """A control-plane component the lab runs on the host (``HOST_COMPONENTS``), followed from its static pod
    manifest as the kubelet follows a hostNetwork static pod: a manifest whose flags differ from what the component
    runs with starts it again with them (``Lab.replace``), and its mirror pod reports the process. Unlike a kubelet,
    it does not start a component that exited by itself or was stopped: the lab's fault tests stop them on purpose,
    and ``python -m lab restart`` brings them back."""

    def __init__(self, runner: Runner, pod: dict, digest: str):
        self.runner = runner
        self.pod = pod
        md = pod["metadata"]
        self.ns, self.name = md["namespace"], md["name"]
        self.component = (md.get("labels") or {}).get("component")
        containers = pod["spec"].get("containers") or []
        if len(containers) != 1:
            raise ValueError(f"{self.component}'s manifest must have one container, it has {len(containers)}")
        c = containers[0]
        if images.repository(c.get("image", "")) != self.component:
            raise ValueError(f"{self.component}'s manifest runs image {c.get('image')!r}, not {self.component}")
        command = list(c.get("command") or [])
        self.argv = [str(build.binary_path(self.component)), *command[1:], *(c.get("args") or [])]
        self.digest = digest
        self.started_at = now()
        self.last_status: str | None = None

    def mirror_name(self) -> str:
        return f"{self.name}-{CONTROL_PLANE_NODE}"

    def follow(self) -> None:
        """Start the component again when its manifest's flags are not what it runs with."""
        lab = self.runner.lab
        running = (lab.components().get(self.component) or {}).get("argv")
        if running == self.argv:
            return
        log(f"{self.component}: its manifest changed; starting it again with: {' '.join(self.argv[1:])[:400]}")
        up = lab.replace(self.component, self.argv, log=log)
        self.started_at = now()
        outcome = "up again" if up else f"did not come up (see: python -m lab logs {self.component})"
        log(f"{self.component}: {outcome}")

    def status(self) -> dict:
        alive = procs.alive(self.runner.lab.pid(self.component))
        cond = "True" if alive else "False"
        state = (
            {"running": {"startedAt": self.started_at}}
            if alive
            else {"waiting": {"reason": "CrashLoopBackOff", "message": f"{self.component} is not running"}}
        )
        return {
            "phase": "Running",
            "hostIP": "10.240.0.1",
            "podIP": "10.240.0.1",
            "podIPs": [{"ip": "10.240.0.1"}],
            "startTime": self.started_at,
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Initialized", "status": "True"},
                {"type": "ContainersReady", "status": cond},
                {"type": "Ready", "status": cond},
            ],
            "containerStatuses": [
                {
                    "name": self.pod["spec"]["containers"][0]["name"],
                    "image": self.pod["spec"]["containers"][0]["image"],
                    "imageID": "",
                    "ready": alive,
                    "restartCount": 0,
                    "started": alive,
                    "state": state,
                }
            ],
        }

    def tick(self) -> None:
        st = self.status()
        key = json.dumps(st, sort_keys=True)
        if key == self.last_status:
            return
        try:
            self.runner.core.patch_namespaced_pod_status(self.mirror_name(), self.ns, {"status": st})
            self.last_status = key
        except Exception:  # noqa: BLE001 - the API server away (restarting, or stopped by a test): next tick
            pass

    def stop(self, grace: float = 10.0) -> None:
        """Nothing to stop: the lab owns the process (``python -m lab down`` stops it)."""


class Runner:
    def __init__(self, lab: Lab):
        self.lab = lab
        self.api_port = lab.state()["ports"]["apiserver"]
        self.api = build_client(lab)
        self.core = k.CoreV1Api(self.api)
        self.pods: dict[str, PodRun] = {}  # by ns/name
        # manifest file -> (hash, what runs it)
        self.static: dict[str, tuple[str, PodRun | HostComponent | None]] = {}
        self.lock = threading.RLock()
        # the lab's /24 for pod addresses (claimed by `lab up`); .1 is the host's end, .2-.254 the pods'
        self.subnet = lab.state()["pod_subnet"]
        self.ips_in_use: set[str] = set()
        self.ip_lock = threading.Lock()
        self.stop_event = threading.Event()

    def allocate_ip(self) -> str:
        """The lowest free pod address of the lab's /24 (an address is free again once its pod stopped)."""
        base = self.subnet.rsplit(".", 1)[0]
        with self.ip_lock:
            for n in range(2, 255):
                ip = f"{base}.{n}"
                if ip not in self.ips_in_use:
                    self.ips_in_use.add(ip)
                    return ip
        raise RuntimeError(f"no free pod address left in {self.subnet}")

    def release_ip(self, ip: str) -> None:
        with self.ip_lock:
            self.ips_in_use.discard(ip)

    # ---- API pods ------------------------------------------------------------------------------
    def managed(self, pod: dict) -> bool:
        md, spec = pod["metadata"], pod.get("spec") or {}
        if (md.get("annotations") or {}).get("kubernetes.io/config.mirror"):
            return False
        if not spec.get("nodeName"):
            return False
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return False
        return any(images.binary_for(c["image"]) for c in spec.get("containers") or [])

    def on_pod(self, etype: str, pod: dict) -> None:
        md = pod["metadata"]
        key = f"{md['namespace']}/{md['name']}"
        with self.lock:
            run = self.pods.get(key)
            if run and (etype == "DELETED" or run.uid != md.get("uid")):
                self.pods.pop(key).stop()
                run = None
            if etype == "DELETED" or not self.managed(pod):
                return
            if md.get("deletionTimestamp"):
                grace = min(float(md.get("deletionGracePeriodSeconds") or 0), 10.0)
                if run:
                    self.pods.pop(key).stop(grace)
                threading.Thread(target=self._finalise_delete, args=(md,), daemon=True).start()
                return
            if run is None:
                log(f"taking pod {key} (node {pod['spec']['nodeName']})")
                self.pods[key] = PodRun(self, pod)
            else:
                run.pod = pod
                # someone else rewrote the status (the node lifecycle controller marks pods not ready
                # after missed heartbeats, e.g. across an apiserver restart): put ours back, as a
                # kubelet's status sync does
                if run.last_ready is not None and _ready(pod) != run.last_ready:
                    run.last_status = None

    def _finalise_delete(self, md: dict) -> None:
        try:
            self.core.delete_namespaced_pod(
                md["name"],
                md["namespace"],
                # with a body, the apiserver reads the options from it alone (query parameters are ignored)
                body=k.V1DeleteOptions(grace_period_seconds=0, preconditions=k.V1Preconditions(uid=md["uid"])),
            )
        except k.ApiException as e:
            if e.status not in (404, 409):
                log(f"deleting {md['namespace']}/{md['name']} failed: {e.reason}")

    def watch_pods(self) -> None:
        while not self.stop_event.is_set():
            try:
                lst = self.core.list_pod_for_all_namespaces(_preload_content=False)
                data = json.loads(lst.data)
                seen = set()
                for item in data["items"]:
                    seen.add(f"{item['metadata']['namespace']}/{item['metadata']['name']}")
                    self.on_pod("ADDED", item)
                with self.lock:
                    for key in list(self.pods):
                        if key not in seen:
                            self.pods.pop(key).stop()
                rv = data["metadata"]["resourceVersion"]
                w = watch.Watch()
                for ev in w.stream(
                    self.core.list_pod_for_all_namespaces,
                    resource_version=rv,
                    timeout_seconds=300,
                    _request_timeout=330,
                ):
                    if self.stop_event.is_set():
                        return
                    obj = self.api.sanitize_for_serialization(ev["object"])
                    if ev["type"] == "ERROR":
                        break
                    self.on_pod(ev["type"], obj)
            except Exception as e:  # noqa: BLE001 - apiserver restart, expired watch: relist
                log(f"pod watch interrupted ({type(e).__name__}: {str(e)[:200]}); relisting")
                time.sleep(1)

    # ---- static pods ---------------------------------------------------------------------------
    def sync_static(self) -> None:
        files = {str(p): p for p in sorted(self.lab.manifests.glob("*.yaml"))} if self.lab.manifests.exists() else {}
        for path in list(self.static):
            if path not in files:
                _, run = self.static.pop(path)
                if run:
                    self._stop_static(run)
                    log(f"static pod manifest {path} removed; pod stopped")
        for path, p in files.items():
            try:
                text = p.read_text()
            except OSError:
                continue
            digest = hashlib.sha256(text.encode()).hexdigest()
            old = self.static.get(path)
            if old and old[0] == digest:
                continue
            if old and old[1]:
                self._stop_static(old[1])
            try:
                pod = yaml.safe_load(text)
                if not isinstance(pod, dict) or pod.get("kind") != "Pod":
                    raise ValueError("not a Pod manifest")
                pod.setdefault("metadata", {}).setdefault("namespace", "kube-system")
                pod["metadata"]["uid"] = digest[:32]
                pod["spec"]["nodeName"] = CONTROL_PLANE_NODE
                if (pod["metadata"].get("labels") or {}).get("component") in HOST_COMPONENTS:
                    run = HostComponent(self, pod, digest)
                    run.follow()
                else:
                    run = PodRun(self, pod, static=True)
            except Exception as e:  # noqa: BLE001 - a broken manifest: nothing runs, say why
                log(f"static pod manifest {path} is invalid, not running it: {e}")
                self.static[path] = (digest, None)
                continue
            self.static[path] = (digest, run)
            self._create_mirror(run, digest)
            log(f"static pod {run.ns}/{run.name} (re)started from {path}")

    def _create_mirror(self, run: PodRun, digest: str) -> None:
        pod = json.loads(json.dumps(run.pod))
        md = pod["metadata"]
        md.pop("uid", None)
        md["name"] = run.mirror_name()
        md["annotations"] = {
            **(md.get("annotations") or {}),
            "kubernetes.io/config.mirror": digest,
            "kubernetes.io/config.source": "file",
            "kubernetes.io/config.hash": digest,
        }
        pod["spec"]["nodeName"] = CONTROL_PLANE_NODE
        pod["spec"]["tolerations"] = [{"operator": "Exists"}]
        for _ in range(20):
            try:
                self.core.delete_namespaced_pod(md["name"], md["namespace"], grace_period_seconds=0)
            except k.ApiException:
                pass
            except Exception:  # noqa: BLE001
                pass
            try:
                self.core.create_namespaced_pod(md["namespace"], pod)
                return
            except k.ApiException as e:
                if e.status != 409:
                    log(f"mirror pod {md['namespace']}/{md['name']}: {e.reason}")
                    return
            except Exception:  # noqa: BLE001 - apiserver not reachable yet
                pass
            time.sleep(0.5)

    def _stop_static(self, run: PodRun) -> None:
        run.stop()
        try:
            self.core.delete_namespaced_pod(run.mirror_name(), run.ns, grace_period_seconds=0)
        except Exception:  # noqa: BLE001
            pass

    # ---- main loop -----------------------------------------------------------------------------
    def run(self) -> None:
        signal.signal(signal.SIGTERM, lambda *_: self.stop_event.set())
        signal.signal(signal.SIGINT, lambda *_: self.stop_event.set())
        threading.Thread(target=self.watch_pods, daemon=True).start()
        log(f"runner up: apiserver 127.0.0.1:{self.api_port}, manifests {self.lab.manifests}")
        last_static = 0.0
        while not self.stop_event.is_set():
            try:
                if time.monotonic() - last_static >= 1.0:
                    self.sync_static()
                    last_static = time.monotonic()
                with self.lock:
                    runs = list(self.pods.values())
                runs += [r for _, r in self.static.values() if r]
                for r in runs:
                    r.tick()
            except Exception:  # noqa: BLE001 - keep the runner alive; say what broke
                log("runner loop error:\n" + traceback.format_exc())
            self.stop_event.wait(0.3)
        log("runner stopping: stopping all pod processes")
        with self.lock:
            runs = list(self.pods.values()) + [r for _, r in self.static.values() if r]
        for r in runs:
            r.stop(grace=5)


def build_client(lab: Lab) -> k.ApiClient:
    from kubernetes import config

    return config.new_client_from_config(str(lab.kubeconfig))


def main() -> None:
    Runner(Lab()).run()
