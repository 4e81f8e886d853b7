"""Certificates for the exporter's TLS tests, made with ``cryptography`` (a test extra):
a server's, a CA's and a client's signed by it, all for 127.0.0.1."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def make_cert(folder: Path, name: str, issuer: tuple[Path, Path] | None = None) -> None:
    """``name.crt`` and ``name.key``: a certificate for 127.0.0.1, self-signed or signed
    by ``issuer`` (its certificate and key files)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    sign_key, issuer_name = key, subject
    if issuer is not None:
        issuer_cert = x509.load_pem_x509_certificate(issuer[0].read_bytes())
        sign_key = serialization.load_pem_private_key(issuer[1].read_bytes(), None)  # type: ignore[assignment]
        issuer_name = issuer_cert.subject
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), True)
        .sign(sign_key, hashes.SHA256())
    )
    (folder / f"{name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file = folder / f"{name}.key"
    key_file.touch(0o600)  # a private key only its owner reads (a wider one is warned of)
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def make_certs(folder: Path) -> Path:
    """``server``, ``ca`` and ``client`` (signed by ``ca``) certificates and keys in
    ``folder``; the folder."""
    make_cert(folder, "server")
    make_cert(folder, "ca")
    make_cert(folder, "client", (folder / "ca.crt", folder / "ca.key"))
    return folder
