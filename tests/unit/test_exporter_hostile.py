"""The exporter's server with TLS and basic authentication against the 2026-11-29 attack's
clients, in process over real loopback TLS, at a small scale (the system tests run them at
the issue's: tests/system/test_exporter_hostile.py): a stalled ClientHello is closed after
HANDSHAKE_TIMEOUT; TLS scrapes get through idle connections, or stalled ClientHellos,
holding every slot; garbage instead of a ClientHello is closed at once; the request fuzz
over TLS with credentials (tools/exp_fuzz.py --tls) and the Authorization fuzz
(tools/auth_fuzz.py: twelve kinds of header) get 200 for the right credentials and 400,
401 or 429 for the rest, never 500."""

from __future__ import annotations

import base64
import collections
import functools
import random
import socket
import ssl
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import bcrypt
import pytest

from tests.support.floods import (
    HelloFlood,
    IdleFlood,
    basic,
    client_hello,
    client_tls,
    loopback_sources,
    scrape_for,
    scrape_once,
)
from tests.support.sockets import closed_by_peer, web_server
from tiptop.exporter import httpd
from tiptop.exporter.httpd import MetricsServer
from tiptop.exporter.webconfig import load

pytest.importorskip("cryptography.x509", reason="needs cryptography (test extra)")
from tests.support.certs import make_certs

HASH = bcrypt.hashpw(b"secret", bcrypt.gensalt(4)).decode()
#: Cases of the request fuzz over TLS.
TLS_FUZZ = 300
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
    srv = web_server(load(str(conf)))
    yield srv
    srv.close()


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


#: Floods against 8 slots: connections made again as they are closed, how many, the
#: seconds of scrapes, and the p90 a scrape keeps. Idle ones (before: most TLS scrapes
#: failed, the scraper's handshake was closed to make room); the attack's ``hello`` mode,
#: 60% of a ClientHello then nothing: a stalled one makes way after STALLED seconds, so a
#: scrape waits its turn (8 ahead, 8 a second).
SLOT_FLOODS = {"idle": (IdleFlood, 50, 3.0, 1.0), "stalled ClientHello": (HelloFlood, 16, 5.0, 3.0)}


@pytest.mark.parametrize("kind", list(SLOT_FLOODS))
def test_tls_scrapes_get_through_floods_holding_every_slot(
    server: MetricsServer, kind: str
) -> None:
    flood_of, n, seconds, p90 = SLOT_FLOODS[kind]
    # From other addresses than the scraper's (tests/system/test_exporter_hostile.py says why).
    flood = flood_of(server.port, n, loopback_sources(10))
    flood.start()
    try:
        time.sleep(0.3)
        seen = scrape_for(server.port, seconds, RIGHT, client_tls(), every=0.1)
    finally:
        flood.stop()
    print(f"{n} {kind} connections ({flood.opened} made), 8 slots: {seen.summary()}")
    assert flood.opened > n  # they were closed to make room, and came back
    assert seen.ok >= 0.95, seen.summary()
    assert seen.p90() < p90, seen.summary()
    assert server.serving


def test_garbage_instead_of_a_client_hello_is_closed_in_the_handshake_time(
    server: MetricsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random bytes: refused at once, or (when they read as the start of a longer record)
    closed when the handshake's time is up; never answered."""
    monkeypatch.setattr(httpd, "HANDSHAKE_TIMEOUT", 0.5)
    rng = random.Random(52)
    for size in (1, 5, 300, 3000):
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
            s.sendall(bytes(rng.randrange(256) for _ in range(size)))
            t0 = time.monotonic()
            try:
                answer = b"".join(iter(functools.partial(s.recv, 4096), b""))
            except ConnectionResetError:
                answer = b""
            assert time.monotonic() - t0 < 2.0
            assert b"HTTP" not in answer and b"tiptop" not in answer
    assert scrape_once(server.port, RIGHT, client_tls())[1] == "200"


def test_a_fuzz_of_requests_over_tls_with_auth_kills_no_server(
    server: MetricsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """exporter_fuzz.sh's TLS run (tools/exp_fuzz.py --tls --user): mangled requests (the
    plain fuzz's, test_exporter_attacks.py) with right, wrong or mangled credentials, over
    TLS; each gets one HTTP/1.1 answer or a close (an unfinished one after its second),
    never a 500, and the server goes on."""
    from tests.unit.test_exporter_attacks import SENT_HEADERS, fuzz_case, head_of

    monkeypatch.setattr(httpd, "REQUEST_TIMEOUT", 1.0)  # an unfinished request: closed then
    monkeypatch.setattr(httpd, "HANDSHAKE_TIMEOUT", 0.8)
    rng = random.Random(53)
    credentials = [RIGHT, basic("prom", "wrong"), b"Authorization: Basic !!\r\n", b""]
    requests = []
    for _ in range(TLS_FUZZ):
        head, sep, rest = b"".join(fuzz_case(rng)).partition(b"\n")
        requests.append(head + sep + rng.choice(credentials) + rest if sep else head)

    def send(request: bytes) -> bytes:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as plain:
            try:
                tls = client_tls().wrap_socket(plain)
                tls.sendall(request)
                return b"".join(iter(lambda: tls.recv(65536), b""))
            except (ssl.SSLError, ConnectionError):
                return b""

    statuses: collections.Counter[bytes] = collections.Counter()
    # Four at a time, fewer than the slots: a client thread of this process may wait for
    # the interpreter's lock longer than STALLED, and a full server closes such a one.
    with ThreadPoolExecutor(4) as pool:
        for start in range(0, TLS_FUZZ, 50):
            batch = requests[start : start + 50]
            for request, answer in zip(batch, pool.map(send, batch), strict=True):
                if answer:
                    line, names = head_of(answer)
                    assert line.startswith(b"HTTP/1.1 ") and b" 500 " not in line, (request, line)
                    assert set(names) <= SENT_HEADERS | {b"www-authenticate", b"retry-after"}
                    statuses[line[9:12]] += 1
            assert scrape_once(server.port, RIGHT, client_tls())[1] == "200"
    print(f"TLS fuzz: {TLS_FUZZ} cases, answers by status {sorted(statuses.items())}")
    assert {b"200", b"400", b"401"} <= set(statuses), statuses
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
