"""A single-layer OCI image as an image-layout tar (what ``ctr images import`` reads), written from files.

The GPU-node harness runs its pods from such images (the sandbox's pause binary, the probe with the C
library it links), so the node needs no registry.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

_EPOCH = 0  # fixed times: the same files give the same image digest


def _add_dirs(tar: tarfile.TarFile, path: str, seen: set[str]) -> None:
    parts = path.strip("/").split("/")[:-1]
    for i in range(1, len(parts) + 1):
        d = "/".join(parts[:i])
        if d in seen:
            continue
        seen.add(d)
        info = tarfile.TarInfo(d)
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        info.mtime = _EPOCH
        tar.addfile(info)


def layer(files: dict[str, Path]) -> bytes:
    """An uncompressed layer tar holding ``files`` (path in the image -> file here), with their parent
    directories, owned by root, executable where the source is."""
    buf = io.BytesIO()
    seen: set[str] = set()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for dest in sorted(files):
            _add_dirs(tar, dest, seen)
            data = Path(files[dest]).read_bytes()
            info = tarfile.TarInfo(dest.strip("/"))
            info.size = len(data)
            info.mode = 0o755 if Path(files[dest]).stat().st_mode & 0o111 else 0o644
            info.mtime = _EPOCH
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _blob(tar: tarfile.TarFile, data: bytes) -> tuple[str, int]:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo("blobs/sha256/" + digest.split(":", 1)[1])
    info.size = len(data)
    info.mtime = _EPOCH
    tar.addfile(info, io.BytesIO(data))
    return digest, len(data)


def write_image(out: Path, name: str, files: dict[str, Path], entrypoint: list[str]) -> str:
    """Write the image ``name`` (a full reference, e.g. ``gangsched.lab/pause:v1``) with ``files`` to the
    image-layout tar ``out``; return the manifest's digest."""
    layer_bytes = layer(files)
    diff_id = "sha256:" + hashlib.sha256(layer_bytes).hexdigest()
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": entrypoint, "Env": ["PATH=/"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }
    with tarfile.open(out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        layer_digest, layer_size = _blob(tar, layer_bytes)
        config_bytes = json.dumps(config, sort_keys=True).encode()
        config_digest, config_size = _blob(tar, config_bytes)
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": config_digest,
                "size": config_size,
            },
            "layers": [
                {"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer_digest, "size": layer_size}
            ],
        }
        manifest_digest, manifest_size = _blob(tar, json.dumps(manifest, sort_keys=True).encode())
        index = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": manifest_digest,
                    "size": manifest_size,
                    "platform": {"architecture": "amd64", "os": "linux"},
                    "annotations": {
                        "io.containerd.image.name": name,
                        "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1],
                    },
                }
            ],
        }
        for fname, body in (("oci-layout", {"imageLayoutVersion": "1.0.0"}), ("index.json", index)):
            data = json.dumps(body, sort_keys=True).encode()
            info = tarfile.TarInfo(fname)
            info.size = len(data)
            info.mtime = _EPOCH
            tar.addfile(info, io.BytesIO(data))
    return manifest_digest
