"""What Volcano's ``gen-admission-secret.sh`` does, for the chart's admission-init hook Job in the lab.

The Volcano v1.10.0 chart runs ``./gen-admission-secret.sh --service S --namespace N --secret X`` in
the vc-webhook-manager image as a pre-install/pre-upgrade hook Job. The script (openssl and kubectl in
an Alpine image) makes a self-signed CA (RSA 2048, CN ``S.N.svc``, 10 years) and a serving
certificate signed by it (CN ``S.N.svc``, DNS names ``S``, ``S.N``, ``S.N.svc``, serverAuth), then
creates Secret X in namespace N with ``tls.key``, ``tls.crt`` and ``ca.crt`` — or, when X exists,
replaces those three keys. The lab runs no shell-script images, so the runner runs this module in the
hook's pod instead: same arguments, same Secret, created with the pod's own ServiceAccount token (the
chart's Role allows secrets create/patch/get), so the Job succeeds or fails as it would in a cluster.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DAYS = 3650


def _pem_key(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )


def certificates(service: str, namespace: str) -> dict[str, bytes]:
    """tls.key, tls.crt and ca.crt as the script makes them."""
    cn = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{service}.{namespace}.svc")])
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca = (
        x509.CertificateBuilder()
        .subject_name(cn)
        .issuer_name(cn)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    names = [service, f"{service}.{namespace}", f"{service}.{namespace}.svc"]
    cert = (
        x509.CertificateBuilder()
        .subject_name(cn)
        .issuer_name(cn)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=False)
        .add_extension(
            x509.KeyUsage(True, True, True, False, False, False, False, False, False), critical=False
        )  # nonRepudiation, digitalSignature, keyEncipherment
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return {
        "tls.key": _pem_key(key),
        "tls.crt": cert.public_bytes(serialization.Encoding.PEM),
        "ca.crt": ca.public_bytes(serialization.Encoding.PEM),
    }


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="gen-admission-secret.sh")
    p.add_argument("--service", required=True)
    p.add_argument("--namespace", default="default")
    p.add_argument("--secret", required=True)
    a = p.parse_args(argv)

    from kubernetes import client, config

    config.load_incluster_config()
    core = client.CoreV1Api()
    print(f"creating certs for {a.service}.{a.namespace}.svc", flush=True)
    data = {k: base64.b64encode(v).decode() for k, v in certificates(a.service, a.namespace).items()}
    try:
        core.read_namespaced_secret(a.secret, a.namespace)
    except client.ApiException as e:
        if e.status != 404:
            raise
        core.create_namespaced_secret(
            a.namespace, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": a.secret}, "data": data}
        )
        print(f"secret/{a.secret} created", flush=True)
        return 0
    print(f"The secret {a.secret} -n {a.namespace} already exists. Will update it.", flush=True)
    core.patch_namespaced_secret(a.secret, a.namespace, {"data": data})
    print(f"secret/{a.secret} patched", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception as e:  # noqa: BLE001 - a failed hook Job says why, as the script's set -e would
        print(f"gen-admission-secret: {e}", file=sys.stderr)
        sys.exit(1)
