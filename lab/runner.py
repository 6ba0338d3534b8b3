"""The pod-process runner (``python -m lab runner``): the lab's kubelet, one process.

It runs the pods bound to a lab node whose image is a known component (``lab.podrunner``, their processes in
``lab.containers``) and the static pods of ``.lab/manifests`` (``lab.staticpods``), ticking them in one loop;
stopped (SIGTERM, SIGINT), it stops every pod process it runs.
"""

from __future__ import annotations

import signal
import threading
import time
import traceback

from .cluster import Lab
from .containers import log
from .podrunner import PodRunner
from .staticpods import StaticPods


class Runner(PodRunner):
    """The runner process: the API's pods (``PodRunner``) and the static pods (``StaticPods``), ticked in one
    loop."""

    def __init__(self, lab: Lab):
        super().__init__(lab)
        self.static_pods = StaticPods(self)

    def run(self) -> None:
        signal.signal(signal.SIGTERM, lambda *_: self.stop_event.set())
        signal.signal(signal.SIGINT, lambda *_: self.stop_event.set())
        threading.Thread(target=self.watch_pods, daemon=True).start()
        for kind in ("configmaps", "secrets"):
            threading.Thread(target=self.watch_objects, args=(kind,), daemon=True).start()
        log(f"runner up: apiserver 127.0.0.1:{self.api_port}, manifests {self.lab.manifests}")
        last_static = 0.0
        while not self.stop_event.is_set():
            try:
                if time.monotonic() - last_static >= 1.0:
                    self.static_pods.sync_static()
                    last_static = time.monotonic()
                with self.lock:
                    runs = list(self.pods.values())
                runs += self.static_pods.runs()
                for r in runs:
                    r.tick()
            except Exception:  # noqa: BLE001 - keep the runner alive; say what broke
                log("runner loop error:\n" + traceback.format_exc())
            self.stop_event.wait(0.3)
        log("runner stopping: stopping all pod processes")
        with self.lock:
            runs = list(self.pods.values()) + self.static_pods.runs()
        for r in runs:
            r.stop(grace=5)


def main() -> None:
    Runner(Lab()).run()
