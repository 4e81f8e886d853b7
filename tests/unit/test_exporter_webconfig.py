"""``--web-config`` (tiptop/exporter/webconfig.py) over real loopback TLS: no credentials
401, wrong ones 401, right ones 200, with the certificate the file names; a client
certificate required is required; every wrong file is one line (exit code 2). The
certificates are made here with ``cryptography`` (a test dependency)."""

from __future__ import annotations

import base64
import os
import socket
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest

from tiptop.exporter.httpd import MetricsServer
from tiptop.exporter.webconfig import WebConfigError, load

pytest.importorskip("cryptography.x509", reason="needs cryptography (test extra)")
from tests.support.certs import make_certs
from tests.support.sockets import web_server

PASSWORD = "s3cret pass"
#: Cost 4, the least bcrypt takes: the tests check the logic, not the cost.
HASH = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def tls_and_users(certs: Path) -> Iterator[MetricsServer]:
    conf = certs / "web.yml"
    conf.write_text(
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        f"basic_auth_users:\n  prometheus: '{HASH}'\n"
    )
    srv = web_server(load(str(conf)))
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
    srv = web_server(load(str(conf)))
    try:
        assert fetch(srv, certs, None, client=True) == 200
        with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
            fetch(srv, certs, None, client=False)
        assert fetch(srv, certs, None, client=True) == 200
    finally:
        srv.close()


TLS = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
USERS = f"basic_auth_users:\n  prom: '{HASH}'\n"

#: Wrong files and the start of their one line (after ``--web-config PATH: ``). Those the
#: 2026-11-29 attack found ending in a traceback (webconfig_files.sh: bad-type, null,
#: bad-minver, bad-authtype), starting with no word (empty, nulls, min-gt-max), plus the
#: ones refused before.
WRONG = {
    "not a mapping": ("[1, 2]", "not a mapping of settings (a list)"),
    "key_file missing": (
        "tls_server_config: {cert_file: a}\n",
        "tls_server_config: key_file missing",
    ),
    "no such file": (
        "tls_server_config: {cert_file: nope.crt, key_file: nope.key}\n",
        "tls_server_config: cert_file nope.crt: No such file or directory",
    ),
    "swapped": (
        "tls_server_config: {cert_file: server.key, key_file: server.key}\n",
        "tls_server_config: certificate or key: ",
    ),
    "RequireAnyClientCert": (
        TLS + "  client_auth_type: RequireAnyClientCert\n",
        "tls_server_config: client_auth_type RequireAnyClientCert: not supported",
    ),
    "client_ca_file missing": (
        TLS + "  client_auth_type: RequireAndVerifyClientCert\n",
        "tls_server_config: client_auth_type RequireAndVerifyClientCert: client_ca_file missing",
    ),
    "client_ca_file alone": (
        TLS + "  client_ca_file: ca.crt\n",
        "tls_server_config: client_ca_file without a client_auth_type that verifies",
    ),
    "TLS14": (
        TLS + "  min_version: TLS14\n",
        "tls_server_config: min_version TLS14: not one of TLS10, TLS11, TLS12, TLS13",
    ),
    "cipher_suites": (
        TLS + "  cipher_suites: [x]\n",
        "tls_server_config: cipher_suites: not supported",
    ),
    "not bcrypt": (
        "basic_auth_users: {alice: plain}\n",
        "basic_auth_users: alice: not a bcrypt hash",
    ),
    "http_server_config": (
        "http_server_config: {http2: false}\n",
        "http_server_config: not supported",
    ),
    "not YAML": ("tls_server_config: [\n", "not YAML (line 2, column 1: "),
    "nested too deep": ("[" * 5000, "not YAML (nested too deep)"),
    "not UTF-8": ("\udcff\udcfe", "not YAML ('utf-8' codec can't decode"),
    "a number for a file": (
        TLS + "  client_ca_file: 5\n",
        "tls_server_config: client_ca_file: not a file name (a number)",
    ),
    "null for a file": (
        TLS + "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: null\n",
        "tls_server_config: client_ca_file: not a file name (null)",
    ),
    "a list for a version": (
        TLS + "  min_version: [TLS12]\n",
        "tls_server_config: min_version (a list): not one of TLS10",
    ),
    "a mapping for a name": (
        TLS + "  client_auth_type: {a: 1}\n",
        "tls_server_config: client_auth_type (a mapping): not one of NoClientCert",
    ),
    "min above max": (
        TLS + "  min_version: TLS13\n  max_version: TLS12\n",
        "tls_server_config: min_version TLS13 is above max_version TLS12: no TLS version left",
    ),
    "empty file": ("", "empty: neither tls_server_config nor basic_auth_users"),
    "only a comment": ("# nothing\n", "empty: neither"),
    "null sections": (
        "tls_server_config: null\nbasic_auth_users: null\n",
        "tls_server_config: empty",
    ),
    "empty users": ("basic_auth_users: {}\n", "basic_auth_users: empty"),
    "cost 99": (
        USERS.replace("$04$", "$99$"),
        "basic_auth_users: prom: bcrypt cost 99: not in bcrypt's 4..31",
    ),
    "cost 3": (USERS.replace("$04$", "$03$"), "basic_auth_users: prom: bcrypt cost 3: not in"),
    "a device for a certificate": (
        "tls_server_config: {cert_file: /dev/zero, key_file: server.key}\n",
        "tls_server_config: cert_file /dev/zero: not a regular file (a character device)",
    ),
    "a directory for a key": (
        "tls_server_config: {cert_file: server.crt, key_file: /}\n",
        "tls_server_config: key_file /: not a regular file (a directory)",
    ),
}


@pytest.mark.parametrize("case", list(WRONG))
def test_a_wrong_file_is_one_line(certs: Path, case: str) -> None:
    text, why = WRONG[case]
    conf = certs / "bad.yml"
    conf.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(WebConfigError) as err:
        load(str(conf))
    assert str(err.value).startswith(f"--web-config {conf}: {why}"), str(err.value)
    assert "\n" not in str(err.value) and err.value.exit_code == 2


def test_a_fifo_is_refused_without_waiting_for_a_writer(certs: Path) -> None:
    """A FIFO as the file, or as the certificate it names, hung start-up (opening a FIFO
    waits for its writer); now each is one line at once."""
    folder = certs / "fifos"
    folder.mkdir(exist_ok=True)
    os.mkfifo(folder / "web.yml")
    os.mkfifo(folder / "cert.pem")
    (folder / "cert.yml").write_text(
        f"tls_server_config: {{cert_file: cert.pem, key_file: {certs / 'server.key'}}}\n"
    )
    lines: list[str] = []

    def both() -> None:
        for name in ("web.yml", "cert.yml"):
            with pytest.raises(WebConfigError) as err:
                load(str(folder / name))
            lines.append(str(err.value))

    worker = threading.Thread(target=both, daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), "load() waits on a FIFO"
    assert lines == [
        f"--web-config {folder / 'web.yml'}: not a regular file (a FIFO): not read",
        f"--web-config {folder / 'cert.yml'}: tls_server_config: cert_file cert.pem: "
        "not a regular file (a FIFO): not read",
    ]


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(WebConfigError, match=r"No such file or directory$"):
        load(str(tmp_path / "none.yml"))


def test_what_is_unwise_is_said(certs: Path) -> None:
    """A private key every user may read, a cost above 12 (with the time a check takes
    here), a cost no scrape can wait for, and users of different costs: said, not refused."""
    key = certs / "world.key"
    key.write_bytes((certs / "server.key").read_bytes())
    key.chmod(0o644)
    cost_13 = HASH.replace("$04$", "$13$")
    cost_31 = HASH.replace("$04$", "$31$")
    conf = certs / "unwise.yml"
    conf.write_text(
        "tls_server_config: {cert_file: server.crt, key_file: world.key}\n"
        f"basic_auth_users: {{a: '{HASH}', b: '{cost_13}', c: '{cost_31}'}}\n"
    )
    conf.chmod(0o666)
    web = load(str(conf))
    said = [w.removeprefix(f"--web-config {conf}: ") for w in web.warnings]
    assert said.pop(0) == (
        "writable by every user (mode 0666): anyone may change who logs in; chmod o-w it"
    )
    assert said[0] == (
        "tls_server_config: key_file world.key is readable by every user (mode 0644): chmod o-r it"
    )
    assert said[1].startswith("basic_auth_users: b: bcrypt cost 13: a check takes about ")
    assert said[1].endswith(" here (10 to 12 is usual)")
    assert said[2].startswith("basic_auth_users: c: bcrypt cost 31: a check takes about ")
    assert "longer than a scrape waits (10 s): this user cannot log in" in said[2]
    assert said[3].startswith("basic_auth_users: bcrypt costs differ (4, 13, 31): unknown")
    assert len(said) == 4
    assert web.describe() == "basic auth (3 users)"
    key.chmod(0o600)
    conf.chmod(0o644)
    assert load(str(conf)).warnings[0].startswith(f"--web-config {conf}: basic_auth_users: b:")
