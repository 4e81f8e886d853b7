"""``--web-config`` (tiptop/exporter/webconfig.py) over real loopback TLS: no credentials
401, wrong ones 401, right ones 200, with the certificate the file names; a client
certificate required is required; every wrong file is one line (exit code 2). The
certificates are made here with ``cryptography`` (a test dependency)."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest

from tiptop.exporter.aggregate import Family, MetricType, Snapshot
from tiptop.exporter.httpd import MetricsServer
from tiptop.exporter.serve import SnapshotCollector
from tiptop.exporter.webconfig import WebConfig, WebConfigError, load

x509 = pytest.importorskip("cryptography.x509", reason="needs cryptography (test extra)")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402

PASSWORD = "s3cret pass"
#: Cost 4, the least bcrypt takes: the tests check the logic, not the cost.
HASH = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()


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
    (folder / f"{name}.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("certs")
    make_cert(folder, "server")
    make_cert(folder, "ca")
    make_cert(folder, "client", (folder / "ca.crt", folder / "ca.key"))
    return folder


def serve(web: WebConfig) -> MetricsServer:
    collector = SnapshotCollector()
    fam = Family(
        "tiptop_cpu_seconds_total", "CPU", MetricType.COUNTER, ("comm",), ((("sh",), 1.5),)
    )
    collector.publish(Snapshot((fam,), 1.0))
    srv = MetricsServer("127.0.0.1", 0, web.guard(collector.handle), 8, web.tls)
    srv.start()
    return srv


@pytest.fixture
def tls_and_users(certs: Path) -> Iterator[MetricsServer]:
    conf = certs / "web.yml"
    conf.write_text(
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        f"basic_auth_users:\n  prometheus: '{HASH}'\n"
    )
    srv = serve(load(str(conf)))
    yield srv
    srv.close()


def fetch(
    srv: MetricsServer, certs: Path, auth: tuple[str, str] | None, client: bool = False
) -> int:
    """The status of ``GET /metrics`` over TLS, the server's certificate verified."""
    ctx = ssl.create_default_context(cafile=str(certs / "server.crt"))
    if client:
        ctx.load_cert_chain(certs / "client.crt", certs / "client.key")
    request = urllib.request.Request(f"https://127.0.0.1:{srv.port}/metrics")
    if auth is not None:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, context=ctx, timeout=5) as r:
            assert b"tiptop_cpu_seconds_total" in r.read()
            return int(r.status)
    except urllib.error.HTTPError as err:
        assert err.headers["WWW-Authenticate"].startswith("Basic realm=")
        return err.code


def test_basic_auth_over_tls(tls_and_users: MetricsServer, certs: Path) -> None:
    srv = tls_and_users
    assert fetch(srv, certs, None) == 401
    assert fetch(srv, certs, ("prometheus", "wrong")) == 401
    assert fetch(srv, certs, ("nobody", PASSWORD)) == 401
    assert fetch(srv, certs, ("prometheus", PASSWORD)) == 200
    assert fetch(srv, certs, ("prometheus", PASSWORD)) == 200  # remembered
    # Plain HTTP to a TLS port: no answer but a closed connection; the server goes on.
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
        assert b"tiptop_cpu" not in s.recv(4096)
    assert fetch(srv, certs, ("prometheus", PASSWORD)) == 200
    assert srv.serving


def test_a_client_certificate_required_is_required(certs: Path) -> None:
    conf = certs / "mtls.yml"
    conf.write_text(
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
        "  min_version: TLS13\n"
    )
    srv = serve(load(str(conf)))
    try:
        assert fetch(srv, certs, None, client=True) == 200
        with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
            fetch(srv, certs, None, client=False)
        assert fetch(srv, certs, None, client=True) == 200
    finally:
        srv.close()


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[1, 2]", "not a mapping of settings"),
        ("tls_server_config: {cert_file: a}\n", "tls_server_config: key_file missing"),
        (
            "tls_server_config: {cert_file: nope.crt, key_file: nope.key}\n",
            "tls_server_config: certificate or key: No such file or directory",
        ),
        (
            "tls_server_config: {cert_file: server.key, key_file: server.key}\n",
            "tls_server_config: certificate or key: ",
        ),
        (
            "tls_server_config: {cert_file: server.crt, key_file: server.key, "
            "client_auth_type: RequireAnyClientCert}\n",
            "client_auth_type RequireAnyClientCert: not supported",
        ),
        (
            "tls_server_config: {cert_file: server.crt, key_file: server.key, "
            "client_auth_type: RequireAndVerifyClientCert}\n",
            "client_auth_type RequireAndVerifyClientCert: client_ca_file missing",
        ),
        (
            "tls_server_config: {cert_file: server.crt, key_file: server.key, "
            "min_version: TLS14}\n",
            "min_version TLS14: not one of TLS10, TLS11, TLS12, TLS13",
        ),
        (
            "tls_server_config: {cert_file: server.crt, key_file: server.key, "
            "cipher_suites: [x]}\n",
            "tls_server_config: cipher_suites: not supported",
        ),
        ("basic_auth_users: {alice: plain}\n", "basic_auth_users: alice: not a bcrypt hash"),
        ("http_server_config: {http2: false}\n", "http_server_config: not supported"),
        ("tls_server_config: [\n", "not YAML"),
    ],
)
def test_a_wrong_file_is_one_line(certs: Path, text: str, why: str) -> None:
    conf = certs / "bad.yml"
    conf.write_text(text)
    with pytest.raises(WebConfigError) as err:
        load(str(conf))
    assert str(err.value).startswith(f"--web-config {conf}: {why}"), str(err.value)
    assert "\n" not in str(err.value) and err.value.exit_code == 2


def test_a_missing_file_and_an_empty_one(tmp_path: Path) -> None:
    with pytest.raises(WebConfigError, match=r"No such file or directory$"):
        load(str(tmp_path / "none.yml"))
    (tmp_path / "empty.yml").write_text("")
    assert load(str(tmp_path / "empty.yml")) == WebConfig()
