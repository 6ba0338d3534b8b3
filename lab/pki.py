"""Certificates and keys for the lab control plane (a throwaway CA per lab)."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAYS = 365


def _write_key(key, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        )
    )
    path.chmod(0o600)


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


class CA:
    def __init__(self, directory: Path):
        self.dir = directory
        self.cert_path = directory / "ca.crt"
        self.key_path = directory / "ca.key"
        if self.cert_path.exists():
            self.key = serialization.load_pem_private_key(self.key_path.read_bytes(), None)
            self.cert = x509.load_pem_x509_certificate(self.cert_path.read_bytes())
            return
        directory.mkdir(parents=True, exist_ok=True)
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(_name("gangsched-lab-ca"))
            .issuer_name(_name("gangsched-lab-ca"))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
            # key identifiers as RFC 5280 asks (and as kubeadm's certificates have): Python 3.13's default
            # TLS context verifies strictly (VERIFY_X509_STRICT) and refuses a chain without them
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        _write_key(self.key, self.key_path)
        self.cert_path.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(
        self, name: str, cn: str, org: str | None = None, server_names: tuple[str, ...] = ()
    ) -> tuple[Path, Path]:
        """Issue a client (and, with ``server_names``, server) certificate; returns (cert, key) paths."""
        crt, keyp = self.dir / f"{name}.crt", self.dir / f"{name}.key"
        if crt.exists() and keyp.exists():
            return crt, keyp
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(cn, org))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=_DAYS))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
        )
        if server_names:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
            sans: list[x509.GeneralName] = []
            for n in server_names:
                try:
                    sans.append(x509.IPAddress(ipaddress.ip_address(n)))
                except ValueError:
                    sans.append(x509.DNSName(n))
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        _write_key(key, keyp)
        crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return crt, keyp


def service_account_keypair(directory: Path) -> tuple[Path, Path]:
    pub, priv = directory / "sa.pub", directory / "sa.key"
    if not priv.exists():
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        _write_key(key, priv)
        pub.write_bytes(
            key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        )
    return pub, priv
