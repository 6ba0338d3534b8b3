"""A cluster a round trip away, for the lab: a TCP forwarder in front of the lab's kube-apiserver that holds each chunk
a client sends for ``delay`` seconds before passing it on (TLS passes through untouched: the apiserver's certificate
names 127.0.0.1, whatever the port). It counts the connections open at once, so that a test can tell requests sent
together from requests sent one after another without timing them.

    with LatencyProxy(lab.state()["ports"]["apiserver"], 0.05) as proxy:
        kubeconfig = proxy.kubeconfig(lab, tmp_path / "far")  # the lab's, its server the proxy
"""

from __future__ import annotations

import re
import socket
import threading
import time
from pathlib import Path


class LatencyProxy:
    def __init__(self, target_port: int, delay: float, host: str = "127.0.0.1"):
        self.target = (host, target_port)
        self.delay = float(delay)
        self.open = 0
        self.most = 0  # the most connections open at once
        self.accepted = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server((host, 0))
        self.port = self._listener.getsockname()[1]
        self._socks: list[socket.socket] = []
        self._stopped = False

    def __enter__(self) -> LatencyProxy:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._stopped = True
        self._listener.close()
        with self._lock:
            for s in self._socks:
                try:
                    s.close()
                except OSError:
                    pass

    def kubeconfig(self, lab, path: Path) -> Path:
        """The lab's kubeconfig with the proxy as its server, written to ``path``."""
        text = Path(lab.kubeconfig).read_text()
        path.write_text(re.sub(r"server: https://127\.0\.0\.1:\d+", f"server: https://127.0.0.1:{self.port}", text))
        return path

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self.accepted += 1
                self.open += 1
                self.most = max(self.most, self.open)
                self._socks += [client, upstream]
            done = threading.Event()
            threading.Thread(target=self._pump, args=(client, upstream, self.delay, done), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, 0.0, done), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, delay: float, done: threading.Event) -> None:
        try:
            while True:
                data = src.recv(1 << 16)
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
            if not done.is_set():
                done.set()
                with self._lock:
                    self.open -= 1
