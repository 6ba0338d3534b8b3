"""The lab's kubeconfigs: the admin's and the control-plane components', of client certificates the lab's CA issues,
and a ServiceAccount token's (Flux's controllers)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:
    from . import pki
    from .cluster import Lab


def _write(path: Path, cfg: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    path.chmod(0o600)
    return path


def client_certificate(path: Path, user: str, cert: Path, key: Path, server: str, ca: Path) -> Path:
    """A kubeconfig of ``user``'s client certificate ``cert`` and ``key``, for ``server`` of CA ``ca``."""
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "gangsched-lab",
                "cluster": {"server": server, "certificate-authority": str(ca)},
            }
        ],
        "users": [{"name": user, "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [{"name": "gangsched-lab", "context": {"cluster": "gangsched-lab", "user": user}}],
        "current-context": "gangsched-lab",
    }
    return _write(path, cfg)


def control_plane(lab: Lab, ca: pki.CA, server: str) -> Path:
    """The admin's kubeconfig (``lab.kubeconfig``) and kube-controller-manager's and kube-scheduler's, as kubeadm
    lays them out (``<etc>/controller-manager.conf``, ``<etc>/scheduler.conf``), each of a certificate ``ca``
    issues; returns kube-controller-manager's."""
    ca_crt = lab.pki / "ca.crt"
    adm = ca.issue("admin", "kubernetes-admin", "system:masters")
    client_certificate(lab.kubeconfig, "kubernetes-admin", *adm, server, ca_crt)
    kcm = client_certificate(
        lab.etc / "controller-manager.conf",
        "system:kube-controller-manager",
        *ca.issue("controller-manager", "system:kube-controller-manager"),
        server,
        ca_crt,
    )
    client_certificate(
        lab.etc / "scheduler.conf",
        "system:kube-scheduler",
        *ca.issue("scheduler", "system:kube-scheduler"),
        server,
        ca_crt,
    )
    return kcm


def service_account(path: Path, user: str, token: str, server: str, ca: Path) -> Path:
    """A kubeconfig of a ServiceAccount's ``token`` (a TokenRequest's), as ``user``, for ``server`` of CA ``ca``."""
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "gangsched-lab",
                "cluster": {"server": server, "certificate-authority": str(ca)},
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "gangsched-lab", "user": user}}],
        "current-context": user,
    }
    return _write(path, cfg)
