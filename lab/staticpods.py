"""The static pods in ``.lab/manifests``, followed as the kubelet follows its static pod directory.

A manifest runs as a pod of the runner (the kube-scheduler, kubeadm-style), restarted when its file changes,
with a mirror pod for each in the API. The manifests of kube-apiserver and kube-controller-manager there describe
the processes the lab runs on the host: a changed one starts that component again with the manifest's flags
(``HostComponent``).
"""

from __future__ import annotations

import hashlib
import json
import time

import yaml
from kubernetes import client as k

from . import build, images, procs
from .cluster import CONTROL_PLANE_NODE, HOST_COMPONENTS
from .containers import log, now
from .podrunner import PodRun, PodRunner


class HostComponent:
    """A control-plane component the lab runs on the host (``HOST_COMPONENTS``), followed from its static pod
    manifest as the kubelet follows a hostNetwork static pod: a manifest whose flags differ from what the component
    runs with starts it again with them (``Lab.replace``), and its mirror pod reports the process. Unlike a kubelet,
    it does not start a component that exited by itself or was stopped: the lab's fault tests stop them on purpose,
    and ``python -m lab restart`` brings them back."""

    def __init__(self, runner: PodRunner, pod: dict, digest: str):
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


class StaticPods:
    """The lab's static pod directory as the kubelet follows it: what runs each manifest (a ``PodRun`` of
    ``runner``'s, or a ``HostComponent``; nothing for an invalid one), started again when its manifest changes,
    and its mirror pod in the API."""

    def __init__(self, runner: PodRunner):
        self.runner = runner
        self.lab = runner.lab
        self.core = runner.core
        # manifest file -> (hash, what runs it)
        self.static: dict[str, tuple[str, PodRun | HostComponent | None]] = {}

    def runs(self) -> list[PodRun | HostComponent]:
        return [r for _, r in self.static.values() if r]

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
                    run = HostComponent(self.runner, pod, digest)
                    run.follow()
                else:
                    run = PodRun(self.runner, pod, static=True)
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
