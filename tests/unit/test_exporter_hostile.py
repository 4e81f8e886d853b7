"""The exporter's server with TLS and basic authentication against the 2026-11-29 attack's
clients, in process over real loopback TLS, at a small scale (the system tests run them at
the issue's: tests/system/test_exporter_hostile.py): a stalled ClientHello is closed after
HANDSHAKE_TIMEOUT; TLS scrapes get through idle connections holding every slot; the
attack's Authorization fuzz (tools/auth_fuzz.py: twelve kinds of header) gets 200 for the
right credentials and 401 or 429 for the rest, never 500."""

from __future__ import annotations

import base64
import collections
import random
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest

from tests.support.floods import IdleFlood, basic, client_tls, scrape_for, scrape_once
from tests.support.sockets import closed_by_peer
from tiptop.exporter import httpd
from tiptop.exporter.aggregate import Family, Snapshot
from tiptop.exporter.httpd import MetricsServer
from tiptop.exporter.serve import SnapshotCollector
from tiptop.exporter.webconfig import load

pytest.importorskip("cryptography.x509", reason="needs cryptography (test extra)")
from tests.support.certs import make_certs

HASH = bcrypt.hashpw(b"secret", bcrypt.gensalt(4)).decode()
RIGHT = basic("prom", "secret")


@pytest.fixture(scope="module")
def conf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = make_certs(tmp_path_factory.mktemp("hostile"))
    path = folder / "web.yml"
    path.write_text(
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        f"basic_auth_users:\n  prom: '{HASH}'\n"
    )
    return path


@pytest.fixture
def server(conf: Path) -> Iterator[MetricsServer]:
    """A TLS and basic-auth server of 8 slots."""
    web = load(str(conf))
    collector = SnapshotCollector()
    fam = Family("tiptop_cpu_seconds_total", "CPU", "counter", ("comm",), ((("sh",), 1.5),))
    collector.publish(Snapshot((fam,), 1.0))
    srv = MetricsServer("127.0.0.1", 0, web.guard(collector.handle), 8, web.tls)
    srv.start()
    yield srv
    srv.close()


def client_hello() -> bytes:
    """The first flight of a TLS client: its ClientHello record."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = client_tls().wrap_bio(incoming, outgoing)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def test_a_stalled_client_hello_is_closed_after_the_handshake_timeout(
    server: MetricsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(httpd, "HANDSHAKE_TIMEOUT", 0.5)
    hello = client_hello()
    with socket.create_connection(("127.0.0.1", server.port)) as stalled:
        stalled.sendall(hello[: len(hello) * 6 // 10])
        t0 = time.monotonic()
        assert closed_by_peer(stalled, 5)
        took = time.monotonic() - t0
    assert 0.3 < took < 2.0, took
    assert scrape_once(server.port, RIGHT, client_tls())[1] == "200"


def test_tls_scrapes_get_through_idle_connections_holding_every_slot(
    server: MetricsServer,
) -> None:
    """50 idle connections, made again as they are closed, against 8 slots: the scraper's
    handshake is never the one closed to make room (before: most TLS scrapes failed)."""
    idle = IdleFlood(server.port, 50)
    idle.start()
    try:
        time.sleep(0.3)
        seen = scrape_for(server.port, 3, RIGHT, client_tls(), every=0.1)
    finally:
        idle.stop()
    print(f"50 idle connections ({idle.opened} made), 8 slots: {seen.summary()}")
    assert idle.opened > 100  # they were replaced, and came back
    assert seen.ok >= 0.95, seen.summary()
    assert server.serving


def auth_cases(rng: random.Random) -> dict[str, bytes]:
    """tools/auth_fuzz.py's kinds of Authorization header (user prom, password secret)."""
    u, p = "prom", "secret"

    def b64(raw: bytes) -> bytes:
        return base64.b64encode(raw)

    return {
        "right": b"Basic " + b64(f"{u}:{p}".encode()),
        "right, scheme lower-case": b"basic " + b64(f"{u}:{p}".encode()),
        "wrong password": b"Basic " + b64(f"{u}:wrong{rng.randrange(999)}".encode()),
        "password > 72 bytes": b"Basic "
        + b64(f"{u}:".encode() + b"A" * rng.choice([73, 100, 4000])),
        "password = right + NUL + x": b"Basic " + b64(f"{u}:{p}\0x".encode()),
        "right + 70 bytes (bcrypt's 72-byte cut)": b"Basic " + b64(f"{u}:{p}".encode() + b"Z" * 70),
        "non-UTF-8 user": b"Basic " + b64(b"\xff" + f"{u}:{p}".encode()),
        "no colon": b"Basic " + b64(u.encode()),
        "garbage base64": b"Basic " + bytes(rng.choice(b"!@#$%^&*()ab=") for _ in range(9)),
        "other scheme": rng.choice([b"Bearer x", b"Digest a=b", b"Basic", b"Basic "]),
        "random bytes": b"Basic "
        + b64(bytes(rng.randrange(256) for _ in range(rng.randint(1, 200)))),
        "unknown user": b"Basic " + b64(f"nobody{rng.randrange(99)}:{p}".encode()),
    }


def test_the_authorization_fuzz_gets_200_or_401_never_500(server: MetricsServer) -> None:
    rng = random.Random(52)
    got: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    # The scraper first: once its address has asked for too many checks, credentials not
    # remembered get 429 from it, the right ones too.
    assert scrape_once(server.port, RIGHT, client_tls())[1] == "200"
    for _ in range(300):
        kind, value = rng.choice(list(auth_cases(rng).items()))
        status = scrape_once(server.port, b"Authorization: " + value + b"\r\n", client_tls())[1]
        got[kind][status] += 1
    print({k: dict(v) for k, v in sorted(got.items())})
    for kind, statuses in got.items():
        allowed = {"200"} if kind.startswith("right") and "bytes" not in kind else {"401", "429"}
        assert set(statuses) <= allowed, (kind, statuses)
    assert got["password > 72 bytes"]["401"] > 0  # was 500 (bcrypt raised ValueError)
    assert server.serving
