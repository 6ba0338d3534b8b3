"""A cluster a round trip away, for the lab: a forwarder (``containers.Forwarder``) on the host in front of the lab's
kube-apiserver that holds each chunk a client sends for ``delay`` seconds before passing it on (TLS passes through
untouched: the apiserver's certificate names 127.0.0.1, whatever the port). It counts the connections open at once
(``most``), so that a test can tell requests sent together from requests sent one after another without timing them.

    with LatencyProxy(lab.state()["ports"]["apiserver"], 0.05) as proxy:
        kubeconfig = proxy.kubeconfig(lab, tmp_path / "far")  # the lab's, its server the proxy
"""

from __future__ import annotations

import re
import socket
from pathlib import Path

from .containers import Forwarder


class LatencyProxy(Forwarder):
    def __init__(self, target_port: int, delay: float):
        listener = socket.create_server(("127.0.0.1", 0))
        self.port = listener.getsockname()[1]
        super().__init__(listener, target_port, delay)

    def __enter__(self) -> LatencyProxy:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def kubeconfig(self, lab, path: Path) -> Path:
        """The lab's kubeconfig with the proxy as its server, written to ``path``."""
        text = Path(lab.kubeconfig).read_text()
        path.write_text(re.sub(r"server: https://127\.0\.0\.1:\d+", f"server: https://127.0.0.1:{self.port}", text))
        return path
