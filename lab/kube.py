"""Small helpers over the lab cluster: kubectl, applying YAML, watching pods."""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from kubernetes import client as k
from kubernetes import watch

from . import build, yamlio
from .cluster import Lab


def kubectl(lab: Lab, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    cmd = [str(build.binary_path("kubectl")), f"--kubeconfig={lab.kubeconfig}", *args]
    proc = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc


def apply(lab: Lab, docs: list[dict] | str, server_side: bool = False) -> None:
    text = docs if isinstance(docs, str) else yamlio.dump_all(docs)
    args = ["apply", "-f", "-"] + (["--server-side", "--force-conflicts"] if server_side else [])
    kubectl(lab, *args, input=text)


def delete(lab: Lab, docs: list[dict] | str) -> None:
    text = docs if isinstance(docs, str) else yamlio.dump_all(docs)
    kubectl(lab, "delete", "--ignore-not-found", "--wait=false", "-f", "-", input=text, check=False)


def api(lab: Lab) -> k.ApiClient:
    from kubernetes import config

    return config.new_client_from_config(str(lab.kubeconfig))


def wait_for(pred, timeout: float, what: str, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def podgroup(api: k.ApiClient, ns: str, name: str, group: str = "scheduling.x-k8s.io", version: str = "v1alpha1"):
    """The PodGroup ``ns/name`` of ``group`` (scheduler-plugins' by default), or None when there is none."""
    try:
        return k.CustomObjectsApi(api).get_namespaced_custom_object(group, version, ns, "podgroups", name)
    except k.ApiException as e:
        if e.status == 404:
            return None
        raise


def ensure_namespace(core: k.CoreV1Api, name: str) -> None:
    try:
        core.create_namespace({"metadata": {"name": name}})
    except k.ApiException as e:
        if e.status != 409:
            raise
    wait_for(lambda: _sa_exists(core, name), 30, f"default ServiceAccount in {name}")


def _sa_exists(core: k.CoreV1Api, ns: str) -> bool:
    try:
        core.read_namespaced_service_account("default", ns)
        return True
    except k.ApiException:
        return False


def delete_namespace(core: k.CoreV1Api, name: str, timeout: float = 60) -> None:
    """Deletes a namespace and waits until it is gone. Its pods are deleted at once, without a grace
    period, once the namespace is terminating (so nothing can make new ones): the namespace controller
    waits 5 s before its first pass, and a pod still terminating then costs it a second pass 5 s later;
    with the pods gone, one pass empties and removes the namespace."""
    try:
        core.delete_namespace(name)
    except k.ApiException as e:
        if e.status == 404:
            return
        raise
    try:
        core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
    except k.ApiException as e:
        if e.status != 404:
            raise

    def gone() -> bool:
        try:
            core.read_namespace(name)
            return False
        except k.ApiException as e:
            return e.status == 404

    wait_for(gone, timeout, f"namespace {name} to be deleted")


@dataclass
class PodObservation:
    """Everything a watch saw of a set of pods: every (time, name, phase, node) transition."""

    events: list[tuple[float, str, str, str]] = field(default_factory=list)
    latest: dict[str, dict] = field(default_factory=dict)

    def ever_bound(self) -> set[str]:
        return {name for _, name, _, node in self.events if node}

    def running(self) -> set[str]:
        return {n for n, p in self.latest.items() if p["phase"] == "Running"}

    def pending(self) -> set[str]:
        return {n for n, p in self.latest.items() if p["phase"] == "Pending"}


class PodWatcher:
    """Watches pods in a namespace in a thread and records every transition (bound or phase change)."""

    def __init__(self, lab: Lab, namespace: str, label_selector: str | None = None):
        self.core = k.CoreV1Api(api(lab))
        self.ns = namespace
        self.selector = label_selector
        self.obs = PodObservation()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PodWatcher:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()

    def _record(self, pod) -> None:
        name, phase = pod.metadata.name, pod.status.phase if pod.status else "Unknown"
        node = pod.spec.node_name or ""
        with self._lock:
            prev = self.obs.latest.get(name)
            if prev is None or (prev["phase"], prev["node"]) != (phase, node):
                self.obs.events.append((time.monotonic(), name, phase, node))
            self.obs.latest[name] = {"phase": phase, "node": node}

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                kw = {"label_selector": self.selector} if self.selector else {}
                lst = self.core.list_namespaced_pod(self.ns, **kw)
                # the list is the namespace's pods at its resourceVersion: one deleted while no watch ran (between two
                # watches, or after a failed one) is gone from it, not kept as it was last seen
                listed = {p.metadata.name for p in lst.items}
                with self._lock:
                    for gone in set(self.obs.latest) - listed:
                        del self.obs.latest[gone]
                for p in lst.items:
                    self._record(p)
                self._ready.set()
                w = watch.Watch()
                for ev in w.stream(
                    self.core.list_namespaced_pod,
                    self.ns,
                    resource_version=lst.metadata.resource_version,
                    timeout_seconds=30,
                    **kw,
                ):
                    if ev["type"] == "DELETED":
                        with self._lock:
                            self.obs.latest.pop(ev["object"].metadata.name, None)
                        continue
                    self._record(ev["object"])
                    if self._stop.is_set():
                        return
            except Exception:  # noqa: BLE001 - relist after any watch failure
                time.sleep(0.5)

    def snapshot(self) -> PodObservation:
        with self._lock:
            return PodObservation(list(self.obs.events), {k_: dict(v) for k_, v in self.obs.latest.items()})


def service_account_kubeconfig(lab: Lab, ns: str, sa: str, path: Path, seconds: int = 3600) -> str:
    """Create ServiceAccount ns/sa and write a kubeconfig of a token of it to ``path``; returns the token."""
    core = k.CoreV1Api(api(lab))
    core.create_namespaced_service_account(ns, {"metadata": {"name": sa}})
    token = core.create_namespaced_service_account_token(sa, ns, {"spec": {"expirationSeconds": seconds}}).status.token
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "lab", "cluster": {"server": lab.api_url(), "certificate-authority": str(lab.pki / "ca.crt")}}
        ],
        "users": [{"name": sa, "user": {"token": token}}],
        "contexts": [{"name": sa, "context": {"cluster": "lab", "user": sa}}],
        "current-context": sa,
    }
    path.write_text(yaml.safe_dump(config))
    return token
