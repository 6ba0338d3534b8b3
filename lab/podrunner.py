"""The runner's part for the API's pods: it acts as the kubelet for pods of known component images.

Pods bound to a lab node whose container image is a known component (see ``versions.IMAGES``) are
run as real processes from the pod spec: the container's command/args, env (incl. fieldRef,
configMapKeyRef, secretKeyRef, envFrom), ConfigMap/Secret/projected/emptyDir/hostPath volumes
materialised and bind-mounted at their mountPaths, and the ServiceAccount token from a TokenRequest
for the pod's own ServiceAccount. Pod status follows the process (Running/Ready while alive,
restarts with back-off, exit codes kept). Deleting the pod stops the process.

``PodRun`` is one such pod (its volumes, environment, command lines and status; its processes are in
``lab.containers``); ``PodRunner`` watches the API's pods, takes those it runs, and hands each pod an
address of the lab's /24.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path

from kubernetes import client as k
from kubernetes import watch

from . import build, images
from . import versions as V
from .cluster import CONTROL_PLANE_NODE, Lab
from .containers import Container, PodSetupError, Sandbox, log, now
from .paths import REPO

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# a running pod's ConfigMap and Secret volumes are rewritten when the runner's watch of those objects shows a new
# resourceVersion (as the kubelet's default Watch change detection); while that watch is not synced, and in any case
# this often, they are read again
VOLUME_POLL_S = 5.0
VOLUME_RESYNC_S = 60.0
TOKEN_REFRESH_S = 1800.0
SHELLS = {"sh", "bash", "ash", "dash"}


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


class PodRun:
    """One pod the runner is responsible for."""

    def __init__(self, runner: PodRunner, pod: dict, static: bool = False):
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
        # ("configmaps" | "secrets", name) -> the resourceVersion its volume was last written from (None: absent)
        self.volume_versions: dict[tuple[str, str], str | None] = {}
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
    def _read_configmap(self, name: str, optional: bool, seen: dict | None = None) -> dict | None:
        try:
            cm = self.runner.core.read_namespaced_config_map(name, self.ns)
        except k.ApiException as e:
            if e.status == 404 and optional:
                if seen is not None:
                    seen[("configmaps", name)] = None
                return None
            raise PodSetupError("CreateContainerConfigError", f"configmap {self.ns}/{name}: {e.reason}") from e
        if seen is not None:
            seen[("configmaps", name)] = cm.metadata.resource_version
        data = dict(cm.data or {})
        data.update({key: base64.b64decode(v).decode(errors="replace") for key, v in (cm.binary_data or {}).items()})
        return data

    def _read_secret(self, name: str, optional: bool, seen: dict | None = None) -> dict | None:
        try:
            s = self.runner.core.read_namespaced_secret(name, self.ns)
        except k.ApiException as e:
            if e.status == 404 and optional:
                if seen is not None:
                    seen[("secrets", name)] = None
                return None
            raise PodSetupError("CreateContainerConfigError", f"secret {self.ns}/{name}: {e.reason}") from e
        if seen is not None:
            seen[("secrets", name)] = s.metadata.resource_version
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
        seen: dict[tuple[str, str], str | None] = {}
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
                data = self._read_configmap(cm["name"], cm.get("optional", False), seen)
                if data is not None:
                    self._write_items(target, data, cm.get("items"))
            elif "secret" in v:
                sec = v["secret"]
                data = self._read_secret(sec["secretName"], sec.get("optional", False), seen)
                if data is not None:
                    self._write_items(target, data, sec.get("items"))
            elif "projected" in v:
                for src in v["projected"].get("sources") or []:
                    if "serviceAccountToken" in src:
                        t = src["serviceAccountToken"]
                        if tokens or not (target / t["path"]).exists():
                            _put(target / t["path"], self._token(t.get("audience"), t.get("expirationSeconds", 3600)))
                    elif "configMap" in src:
                        cm = src["configMap"]
                        data = self._read_configmap(cm["name"], cm.get("optional", False), seen)
                        if data is not None:
                            self._write_items(target, data, cm.get("items"))
                    elif "secret" in src:
                        sec = src["secret"]
                        data = self._read_secret(sec["name"], sec.get("optional", False), seen)
                        if data is not None:
                            self._write_items(target, data, sec.get("items"))
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
        self.volume_versions = seen
        self.volumes_refreshed = time.monotonic()
        return vols

    def volumes_stale(self) -> bool:
        """A token to renew, or a ConfigMap or Secret of its volumes changed since they were written (by the
        runner's watch; every VOLUME_POLL_S while that watch is not synced), or VOLUME_RESYNC_S gone by."""
        since = time.monotonic() - self.volumes_refreshed
        if since > VOLUME_RESYNC_S or time.monotonic() - self.token_refreshed > TOKEN_REFRESH_S:
            return True
        for (kind, name), version in self.volume_versions.items():
            current = self.runner.object_version(kind, self.ns, name)
            if current is False:  # the watch of that kind is not synced
                return since > VOLUME_POLL_S
            if current != version:
                return True
        return False

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
        # the release the image's tag names, where the lab builds more than one (a previous pin, for upgrades)
        return [str(build.binary_path(binary, images.tag(c["image"])))] + [expand(a, env) for a in rest]

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
        if any(c.alive() for c in self.containers) and self.volumes_stale():
            try:  # ConfigMap/Secret contents when they changed, tokens every 30 minutes
                self.materialise_volumes(tokens=time.monotonic() - self.token_refreshed > TOKEN_REFRESH_S)
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


class PodRunner:
    """The kubelet's part for the API's pods: the pod watch takes the pods it runs (``managed``) and stops those
    deleted; each pod it runs, static ones too, has an address of the lab's /24 from here."""

    def __init__(self, lab: Lab):
        self.lab = lab
        self.api_port = lab.state()["ports"]["apiserver"]
        self.api = build_client(lab)
        self.core = k.CoreV1Api(self.api)
        self.pods: dict[str, PodRun] = {}  # by ns/name
        self.lock = threading.RLock()
        # the lab's /24 for pod addresses (claimed by `lab up`); .1 is the host's end, .2-.254 the pods'
        self.subnet = lab.state()["pod_subnet"]
        self.ips_in_use: set[str] = set()
        self.ip_lock = threading.Lock()
        self.stop_event = threading.Event()
        # "configmaps" | "secrets" -> {(namespace, name): resourceVersion}, kept by watch_objects; absent: not synced
        self.versions: dict[str, dict[tuple[str, str], str]] = {}

    def object_version(self, kind: str, ns: str, name: str) -> str | None | bool:
        """The resourceVersion of a ConfigMap or Secret as the watch saw it last; None when it does not exist;
        False when that watch is not synced (at the start, or relisting after an error)."""
        seen = self.versions.get(kind)
        if seen is None:
            return False
        return seen.get((ns, name))

    def watch_objects(self, kind: str) -> None:
        """List and watch every ConfigMap (or Secret) for its resourceVersion: a pod's volume is rewritten when
        one it mounts changes, as the kubelet's watch of them does, instead of each pod reading them every few
        seconds."""
        lister = {
            "configmaps": self.core.list_config_map_for_all_namespaces,
            "secrets": self.core.list_secret_for_all_namespaces,
        }[kind]
        while not self.stop_event.is_set():
            try:
                data = json.loads(lister(_preload_content=False).data)
                seen = {
                    (i["metadata"]["namespace"], i["metadata"]["name"]): i["metadata"]["resourceVersion"]
                    for i in data["items"]
                }
                self.versions[kind] = seen
                for ev in watch.Watch().stream(
                    lister,
                    resource_version=data["metadata"]["resourceVersion"],
                    timeout_seconds=300,
                    _request_timeout=330,
                ):
                    if self.stop_event.is_set():
                        return
                    if ev["type"] == "ERROR":
                        break
                    md = ev["raw_object"]["metadata"]
                    if ev["type"] == "DELETED":
                        seen.pop((md["namespace"], md["name"]), None)
                    else:
                        seen[(md["namespace"], md["name"])] = md["resourceVersion"]
            except Exception as e:  # noqa: BLE001 - apiserver restart, expired watch: relist
                log(f"{kind} watch interrupted ({type(e).__name__}: {str(e)[:200]}); relisting")
                time.sleep(1)
            finally:
                self.versions.pop(kind, None)

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


def build_client(lab: Lab) -> k.ApiClient:
    from kubernetes import config

    return config.new_client_from_config(str(lab.kubeconfig))
