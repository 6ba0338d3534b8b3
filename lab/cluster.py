"""Start, stop and inspect the lab control plane: etcd, kube-apiserver, kube-controller-manager,
KWOK, the pod-process runner (which also runs the kube-scheduler static pod), and fake nodes.

What the lab writes for others has rooms of its own: its kubeconfigs (``lab.kubeconfigs``), its static pod manifests
(``lab.manifests``) and its inventory's facts (``lab.inventory``); its components' ports come from ``lab.ports``, the
flags that vary with the minor and the feature gates from ``lab.flags``."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import sys
import time
import urllib.request
from pathlib import Path

import yaml

from . import build, inventory, kubeconfigs, manifests, nodes, pki, podnet, procs
from . import versions as V
from .flags import feature_gates, gate_flags, kcm_controllers
from .paths import REPO, state_dir
from .ports import POD_PORTS, free_port, port_free

# The lab's API server collects its garbage less often than Go's default (a heap of up to 5x its live data, capped at
# 768 MiB, instead of 2x): on a lab running site.yml it spent about a sixth of its CPU in the garbage collector, and
# make test runs some 70 labs. Measured on 2 cores (a fresh lab, site.yml with Volcano, 30 s idle; two runs each):
# its CPU 10.5 and 11.6 s instead of 12.2 and 13.2 s, the whole machine's 37.4 and 41.0 CPU-s instead of 41.9 and
# 42.1; its resident memory about 725 MiB instead of 485 MiB (1.1 GiB without the cap). The collection's own
# components are not touched: the runner runs them as their Deployments say.
APISERVER_GO_ENV = {"GOGC": "400", "GOMEMLIMIT": "768MiB"}
# Go's scheduler on the lab's own processes (etcd, the control plane, kwok): one P each, unless GOMAXPROCS is set in
# the environment. make test runs five labs at once on two cores; idle, a Go process with a P per core spends most of
# its CPU waking on its timers (kube-controller-manager's profile: 70 % in the runtime's scheduler). Measured on 2
# cores, a bare lab idle for 2 minutes after 45 s (two runs each): 2.3 and 2.1 CPU-s a minute instead of 3.7 and 2.6;
# with the Volcano chain, site.yml's CPU and wall the same. The collection's components (the runner's pods) keep the
# runtime's default, as in a pod without a CPU limit.
LAB_GO_ENV = {"GOMAXPROCS": "1"}

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kwok", "runner")
# the control-plane components the lab runs as processes on the host and also lays out as kubeadm does, as static
# pod manifests in its manifest directory: the runner follows a changed manifest by starting the component again
# with the manifest's flags, as the kubelet restarts a hostNetwork static pod (see staticpods.HostComponent)
HOST_COMPONENTS = ("kube-apiserver", "kube-controller-manager")
CONTROL_PLANE_NODE = "lab-control-plane"


class LabError(RuntimeError):
    """A lab failure with a message that says what went wrong and what to do."""


class Lab:
    def __init__(self, root: Path | None = None):
        self.root = root or state_dir()
        self.pki = self.root / "pki"
        self.logs = self.root / "logs"
        self.pids = self.root / "pids"
        self.etc = self.root / "etc" / "kubernetes"
        self.manifests = self.root / "manifests"
        self.pods = self.root / "pods"
        self.kubeconfig = self.root / "kubeconfig"
        self.state_file = self.root / "state.json"

    # ---- state -------------------------------------------------------------------------------
    def state(self) -> dict:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return {}

    def save_state(self, st: dict) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.state_file.write_text(json.dumps(st, indent=2))

    def pid(self, name: str) -> int | None:
        return procs.read_pid(self.pids / f"{name}.pid")

    def running(self) -> dict[str, bool]:
        return {c: procs.alive(self.pid(c)) for c in COMPONENTS}

    def api_url(self) -> str:
        return f"https://127.0.0.1:{self.state()['ports']['apiserver']}"

    # ---- up ------------------------------------------------------------------------------------
    def up(
        self,
        gpu_nodes: int = 4,
        gpus_per_node: int = 1,
        cpu_nodes: int = 1,
        api_port: int | None = None,
        reuse: bool = False,
        log=print,
    ) -> dict:
        t0 = time.monotonic()
        run = self.running()
        if any(run.values()):
            running = (self.state().get("versions") or {}).get("kubernetes")
            gates = self.state().get("feature_gates", "")
            if gates != feature_gates():
                raise LabError(
                    f"the lab running in {self.root} has feature gates {gates or 'as upstream'}, not "
                    f"{feature_gates() or 'as upstream'} (GANGSCHED_LAB_FEATURE_GATES): stop it first with: "
                    "python -m lab down"
                )
            if reuse and all(run.values()) and running == V.KUBERNETES:
                log(f"lab already running; reusing it (kubeconfig {self.kubeconfig})")
                self.write_inventory_facts()
                return self.state()
            if running and running != V.KUBERNETES:
                raise LabError(
                    f"the lab running in {self.root} is Kubernetes {running}, not {V.KUBERNETES} "
                    "(GANGSCHED_LAB_KUBERNETES): stop it first with: python -m lab down"
                )
            up = ", ".join(c for c, a in run.items() if a)
            raise LabError(
                f"the lab is already running ({up} up, state in {self.root}). "
                "Use it as it is, or stop it first with: python -m lab down"
            )
        if gpu_nodes < 0 or gpus_per_node < 0 or cpu_nodes < 0:
            raise LabError("--gpu-nodes, --gpus-per-node and --cpu-nodes must be >= 0")
        if api_port in POD_PORTS:
            raise LabError(
                f"port {api_port} is one the lab's pods listen on ({POD_PORTS[api_port]}), and kube-apiserver's "
                "port is forwarded into every pod: pick another --api-port (6443, or one from 20000 up)"
            )
        if api_port and not port_free(api_port):
            raise LabError(f"port {api_port} on 127.0.0.1 is busy; pick another --api-port or free it")
        for b in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"):
            build.binary_path(b)  # raises a clear 'not built' error
        # fresh run state, but keep nothing from a previous lab (its pods' /24 is taken again if free)
        old_subnet = self.state().get("pod_subnet")
        podnet.release_subnet(old_subnet, str(self.root.resolve()))
        if self.root.exists():
            shutil.rmtree(self.root)
        for d in (self.pki, self.logs, self.pids, self.etc, self.manifests, self.pods):
            d.mkdir(parents=True, exist_ok=True)
        ports = {
            "etcd": free_port(),
            "etcd_peer": free_port(),
            "apiserver": api_port or free_port(),
            "controller_manager": free_port(),
            "kwok": free_port(),
        }
        st = {
            "ports": ports,
            "started": time.time(),
            "gpu_nodes": gpu_nodes,
            "gpus_per_node": gpus_per_node,
            "cpu_nodes": cpu_nodes,
            "versions": {"kubernetes": V.KUBERNETES},
            "feature_gates": feature_gates(),
        }
        self.save_state(st)
        try:
            st["pod_subnet"] = podnet.claim_subnet(str(self.root.resolve()), prefer=old_subnet)
            self.save_state(st)
            self._start_all(st, log)
            log("creating nodes")
            client = nodes.client(self.kubeconfig)
            nodes.create_control_plane(client, CONTROL_PLANE_NODE)
            for i in range(gpu_nodes):
                nodes.add(client, gpus=gpus_per_node, name=f"gpu-node-{i}")
            for i in range(cpu_nodes):
                nodes.add(client, gpus=0, name=f"cpu-node-{i}")
            nodes.wait_ready(client, timeout=60)
            self._wait_scheduler(client, log)
            self._wait_default_sa(client)
        except BaseException:
            log("lab up failed; stopping what was started")
            self.down(log=lambda *_: None, remove_state=False)
            raise
        st["up_seconds"] = round(time.monotonic() - t0, 1)
        self.save_state(st)
        self.write_inventory_facts()
        return st

    @property
    def inventory_facts(self) -> Path:
        return self.root / "inventory-facts.json"

    def write_inventory_facts(self) -> Path:
        """Where this lab keeps what an inventory needs (``lab.inventory``): ``inventories/lab`` reads it."""
        return inventory.write_facts(self)

    def _start_all(self, st: dict, log) -> None:
        p = st["ports"]
        ca = pki.CA(self.pki)
        api_crt, api_key = ca.issue(
            "apiserver",
            "kube-apiserver",
            server_names=(
                "127.0.0.1",
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
                "10.96.0.1",
            ),
        )
        sa_pub, sa_key = pki.service_account_keypair(self.pki)
        server = f"https://127.0.0.1:{p['apiserver']}"
        kcm = kubeconfigs.control_plane(self, ca, server)

        log(f"starting etcd on 127.0.0.1:{p['etcd']}")
        etcd_url, peer_url = f"http://127.0.0.1:{p['etcd']}", f"http://127.0.0.1:{p['etcd_peer']}"
        self._start(
            "etcd",
            [
                str(build.binary_path("etcd")),
                "--name=lab",
                f"--data-dir={self.root / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=lab={peer_url}",
                "--unsafe-no-fsync=true",
                "--quota-backend-bytes=4294967296",
                "--log-level=warn",
            ],
        )
        self._wait(lambda: _http_ok(f"{etcd_url}/health"), "etcd", 30)

        audit_policy = self.root / "audit-policy.yaml"
        audit_policy.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "audit.k8s.io/v1",
                    "kind": "Policy",
                    "omitStages": ["RequestReceived"],
                    # every request's user, verb, object and response code: what RBAC allowed or refused
                    "rules": [
                        {"level": "None", "resources": [{"group": "coordination.k8s.io", "resources": ["leases"]}]},
                        {"level": "Metadata"},
                    ],
                }
            )
        )
        log(f"starting kube-apiserver on {server}")
        self._start(
            "kube-apiserver",
            [
                str(build.binary_path("kube-apiserver")),
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={p['apiserver']}",
                f"--tls-cert-file={api_crt}",
                f"--tls-private-key-file={api_key}",
                f"--client-ca-file={self.pki / 'ca.crt'}",
                f"--service-account-key-file={sa_pub}",
                f"--service-account-signing-key-file={sa_key}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--api-audiences=https://kubernetes.default.svc.cluster.local",
                "--authorization-mode=Node,RBAC",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--endpoint-reconciler-type=none",
                # webhooks and aggregated APIs are called at a Service's endpoints (the pods' addresses),
                # not at its ClusterIP: the lab has no kube-proxy
                "--enable-aggregator-routing=true",
                "--allow-privileged=true",
                "--profiling=false",
                "--enable-priority-and-fairness=false",
                "--watch-cache=true",
                "--v=1",
                f"--audit-policy-file={audit_policy}",
                f"--audit-log-path={self.logs / 'audit.log'}",
                "--audit-log-maxsize=200",
                "--audit-log-maxbackup=1",
                "--audit-log-format=json",
                f"--requestheader-client-ca-file={self.pki / 'ca.crt'}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                *gate_flags(feature_gates(), "kube-apiserver", V.KUBERNETES_MINOR),
            ],
            APISERVER_GO_ENV,
        )
        self._wait(lambda: self._api_ready(), "kube-apiserver", 60)

        log("starting kube-controller-manager")
        self._start(
            "kube-controller-manager",
            [
                str(build.binary_path("kube-controller-manager")),
                f"--kubeconfig={kcm}",
                f"--authentication-kubeconfig={kcm}",
                f"--authorization-kubeconfig={kcm}",
                "--bind-address=127.0.0.1",
                f"--secure-port={p['controller_manager']}",
                f"--service-account-private-key-file={sa_key}",
                f"--root-ca-file={self.pki / 'ca.crt'}",
                "--use-service-account-credentials=true",
                "--leader-elect=false",
                f"--cluster-signing-cert-file={self.pki / 'ca.crt'}",
                f"--cluster-signing-key-file={self.pki / 'ca.key'}",
                f"--controllers={kcm_controllers(V.KUBERNETES_MINOR)}",
                "--node-monitor-grace-period=40s",
                "--v=1",
                *gate_flags(feature_gates(), "kube-controller-manager", V.KUBERNETES_MINOR),
            ],
        )

        log("starting kwok")
        stages = self.root / "kwok-stages.yaml"
        stages.write_text(nodes.kwok_stage_config())
        self._start(
            "kwok",
            [
                str(build.binary_path("kwok")),
                f"--kubeconfig={self.kubeconfig}",
                f"--config={stages}",
                "--manage-all-nodes=false",
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                "--cidr=10.244.0.0/16",
                "--node-ip=10.240.0.1",
                "--node-lease-duration-seconds=40",
                f"--server-address=127.0.0.1:{p['kwok']}",
            ],
        )

        for name in HOST_COMPONENTS:
            self.write_host_manifest(name)
        self.write_scheduler_manifest()
        log("starting the pod-process runner (runs the kube-scheduler static pod too)")
        runner_env = {"PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", "GANGSCHED_LAB_DIR": str(self.root)}
        self._start("runner", [sys.executable, "-m", "lab", "runner"], runner_env)
        time.sleep(0.5)
        for c in COMPONENTS:
            if not procs.alive(self.pid(c)):
                raise LabError(
                    f"{c} exited at start; see its log: python -m lab logs {c}\n"
                    + "\n".join(procs.tail(self.logs / f"{c}.log", 15))
                )

    @property
    def components_file(self) -> Path:
        """The table of what each component was started with: ``{name: {"argv": [...], "env": {...}}}``,
        ``env`` being what it adds to the lab's environment; ``restart`` starts a component from it."""
        return self.root / "components.json"

    def components(self) -> dict[str, dict]:
        try:
            return json.loads(self.components_file.read_text())
        except (OSError, ValueError):
            return {}

    def addons(self) -> list[str]:
        """Components started on a running lab besides the control plane (``start_addon``: Flux's controllers and
        its Git server), in the order they were started; ``down`` stops them, ``status`` and ``logs`` show them."""
        return [name for name in self.components() if name not in COMPONENTS]

    def start_addon(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        """Start a process on the running lab as one of its components: its log in the lab's log dir, its pid and
        its argv and env in the components table, so that ``status``, ``logs``, ``restart`` and ``down`` know it."""
        if name in COMPONENTS:
            raise LabError(f"{name!r} is a control-plane component, not an add-on")
        self._start(name, argv, env)

    def stop_addon(self, name: str) -> bool:
        """Stop an add-on and forget it (its log stays); True if it was running."""
        stopped = procs.stop(self.pid(name))
        (self.pids / f"{name}.pid").unlink(missing_ok=True)
        table = self.components()
        if table.pop(name, None) is not None:
            self.components_file.write_text(json.dumps(table, indent=1))
        return stopped

    def _start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        """Starts a component with ``env`` added to the lab's environment, and records both in the table."""
        env = env or {}
        table = self.components()
        table[name] = {"argv": argv, "env": env}
        self.components_file.write_text(json.dumps(table, indent=1))
        procs.start(
            name,
            argv,
            self.logs / f"{name}.log",
            self.pids / f"{name}.pid",
            env={**LAB_GO_ENV, **os.environ, **env},
            cwd=self.root,
        )

    def _wait(self, pred, name: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not procs.alive(self.pid(name)):
                raise LabError(
                    f"{name} exited at start; see its log: python -m lab logs {name}\n"
                    + "\n".join(procs.tail(self.logs / f"{name}.log", 15))
                )
            if pred():
                return
            time.sleep(0.2)
        raise LabError(
            f"{name} did not become ready in {timeout:.0f}s; see: python -m lab logs {name}\n"
            + "\n".join(procs.tail(self.logs / f"{name}.log", 15))
        )

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        ctx.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return ctx

    def _api_ready(self) -> bool:
        return _http_ok(f"{self.api_url()}/readyz", self.ssl_context())

    def _wait_scheduler(self, client, log) -> None:
        from kubernetes import client as k

        log("waiting for kube-scheduler (static pod) to take its lease")
        coord = k.CoordinationV1Api(client)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                lease = coord.read_namespaced_lease("kube-scheduler", "kube-system")
                if lease.spec.holder_identity:
                    return
            except k.ApiException as e:
                if e.status != 404:
                    raise
            if not procs.alive(self.pid("runner")):
                break
            time.sleep(0.5)
        raise LabError(
            "kube-scheduler did not start; see: python -m lab logs pod/kube-system/kube-scheduler\n"
            + "\n".join(procs.tail(self.logs / "runner.log", 8))
            + "\nits own log ends:\n"
            + "\n".join(procs.tail(self.pods / "kube-system_kube-scheduler" / "kube-scheduler.log", 12))
        )

    @staticmethod
    def _wait_default_sa(client) -> None:
        from kubernetes import client as k

        core = k.CoreV1Api(client)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                core.read_namespaced_service_account("default", "default")
                return
            except k.ApiException:
                time.sleep(0.3)
        raise LabError("the default ServiceAccount never appeared; see: python -m lab logs kube-controller-manager")

    def write_scheduler_manifest(self) -> Path:
        """The kubeadm-style static pod manifest the runner starts the default scheduler from (``lab.manifests``)."""
        return manifests.write_scheduler(self)

    def write_host_manifest(self, name: str) -> Path:
        """The static pod manifest of a component the lab started on the host (``HOST_COMPONENTS``), of the flags it
        runs with now (``lab.manifests``)."""
        return manifests.write_host(self, name)

    def replace(self, name: str, argv: list[str], log=print) -> bool:
        """Stop a host component and start it with ``argv`` (its environment kept): what the kubelet does when a
        static pod's manifest changes. True once it is up (kube-apiserver: ready; the others: alive for 2 s), False
        (said through ``log``) when it exits or is not ready within 60 s."""
        if name not in HOST_COMPONENTS:
            raise LabError(f"{name!r} is not a component the lab runs from a manifest; one of: {HOST_COMPONENTS}")
        env = (self.components().get(name) or {}).get("env") or {}
        procs.stop(self.pid(name))
        self._start(name, argv, env)
        t0 = time.monotonic()
        ready = self._api_ready if name == "kube-apiserver" else (lambda: time.monotonic() - t0 >= 2.0)
        try:
            self._wait(ready, name, 60)
        except LabError as e:
            log(str(e))
            return False
        return True

    # ---- down / status -------------------------------------------------------------------------
    def down(self, log=print, remove_state: bool = False) -> list[str]:
        stopped = []
        # add-ons before the control plane they talk to, the last started first
        for c in reversed(self.addons()):
            if procs.stop(self.pid(c)):
                stopped.append(c)
            (self.pids / f"{c}.pid").unlink(missing_ok=True)
        # the runner first: it stops the pod processes it runs
        for c in ("runner", "kwok", "kube-controller-manager", "kube-apiserver", "etcd"):
            if procs.stop(self.pid(c)):
                stopped.append(c)
            (self.pids / f"{c}.pid").unlink(missing_ok=True)
        # pod processes left behind by a runner that crashed
        for pidfile in self.pods.glob("*/*.pid") if self.pods.exists() else ():
            if procs.stop(procs.read_pid(pidfile), grace=3):
                stopped.append(f"pod process {pidfile.parent.name}/{pidfile.stem}")
            pidfile.unlink(missing_ok=True)
        podnet.release_subnet(self.state().get("pod_subnet"), str(self.root.resolve()))
        log("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))
        if remove_state and self.root.exists():
            shutil.rmtree(self.root)
        return stopped

    def restart(self, name: str, down_for: float = 5.0, log=print) -> float:
        """Stop one component and start it again after ``down_for`` seconds, with the argv and
        environment it was started with (``components.json``; a control-plane restart, as on a real
        cluster). Returns the seconds it was unreachable."""
        if name not in COMPONENTS and name not in self.addons():
            raise LabError(f"unknown component {name!r}; one of: {', '.join((*COMPONENTS, *self.addons()))}")
        pid = self.pid(name)
        if not procs.alive(pid):
            raise LabError(f"{name} is not running; start the lab first: python -m lab up")
        started = self.components().get(name)
        if not started:
            raise LabError(
                f"{name} has no entry in {self.components_file}; start the lab again: python -m lab down, then up"
            )
        t0 = time.monotonic()
        log(f"stopping {name} (pid {pid}) for {down_for:.1f}s")
        procs.stop(pid)
        time.sleep(max(0.0, down_for - (time.monotonic() - t0)))
        self._start(name, started["argv"], started["env"])
        if name == "kube-apiserver":
            self._wait(self._api_ready, name, 60)
        else:
            self._wait(lambda: True, name, 5)
        log(f"{name} is back (pid {self.pid(name)})")
        return time.monotonic() - t0

    def status(self) -> dict:
        out = {}
        for c in (*COMPONENTS, *self.addons()):
            pid = self.pid(c)
            out[c] = {"pid": pid, "up": procs.alive(pid), "log": procs.tail(self.logs / f"{c}.log", 3)}
        for pidfile in sorted(self.pods.glob("*/*.pid")) if self.pods.exists() else ():
            if pidfile.name == "sandbox.pid":
                continue
            pid = procs.read_pid(pidfile)
            name = f"pod/{pidfile.parent.name.replace('_', '/', 1)}:{pidfile.stem}"
            try:
                ip = json.loads((pidfile.parent / "pod.json").read_text())["ip"]
            except (OSError, ValueError, KeyError):
                ip = None
            out[name] = {
                "pid": pid,
                "up": procs.alive(pid),
                "ip": ip,
                "sandbox_pid": procs.read_pid(pidfile.parent / "sandbox.pid"),
                "log": procs.tail(pidfile.with_suffix(".log"), 3),
            }
        return out

    def pod_listeners(self) -> dict[str, list[int]]:
        """The TCP ports each running pod listens on, read from its sandbox's network namespace
        (``procs.listening``), by pod directory (``<namespace>_<name>``)."""
        out = {}
        for pidfile in sorted(self.pods.glob("*/sandbox.pid")) if self.pods.exists() else ():
            pid = procs.read_pid(pidfile)
            if not procs.alive(pid):
                continue
            out[pidfile.parent.name] = sorted({port for _addr, port in procs.listening(pid)})
        return out

    def audit_events(self, user: str | None = None, code: int | None = None) -> list[dict]:
        """Entries of the apiserver's audit log, optionally of one user and/or response code."""
        out = []
        try:
            with open(self.logs / "audit.log", errors="replace") as f:
                for line in f:
                    if user and user not in line:
                        continue
                    ev = json.loads(line)
                    if user and ev.get("user", {}).get("username") != user:
                        continue
                    if code is not None and ev.get("responseStatus", {}).get("code") != code:
                        continue
                    out.append(ev)
        except OSError:
            pass
        return out

    def rbac_refusals(self, user: str) -> list[dict]:
        """The audit log's 403s of ``user`` that the authorizer did not allow: refused by RBAC, not by admission (a
        create in a namespace being deleted is refused by NamespaceLifecycle with 403 too, its decision "allow")."""
        return [
            e
            for e in self.audit_events(user=user, code=403)
            if (e.get("annotations") or {}).get("authorization.k8s.io/decision") != "allow"
        ]

    def log_path(self, what: str) -> Path:
        if what.startswith("pod/"):
            parts = what.split("/")
            if len(parts) < 3:
                raise LabError("name a pod as pod/NAMESPACE/NAME[/CONTAINER]")
            pdir = self.pods / f"{parts[1]}_{parts[2]}"
            logs = sorted(pdir.glob("*.log")) if pdir.exists() else []
            if len(parts) > 3:
                logs = [pdir / f"{parts[3]}.log"]
            if not logs or not logs[0].exists():
                raise LabError(
                    f"no logs for {what}: the runner runs only pods of known component images "
                    "(see python -m lab status)"
                )
            return logs[0]
        if what == "audit":
            return self.logs / "audit.log"
        # an add-on's log outlives it (python -m lab flux down), so it can still be read
        if what not in COMPONENTS and what not in self.addons() and not (self.logs / f"{what}.log").is_file():
            known = ", ".join((*COMPONENTS, *self.addons()))
            raise LabError(f"unknown component {what!r}; one of: {known}, audit, or pod/NS/NAME")
        return self.logs / f"{what}.log"


def _http_ok(url: str, ctx: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=ctx) as r:
            return r.status == 200
    except Exception:  # noqa: BLE001 - any failure means "not ready yet"
        return False
