"""No single request stops the ``--serve`` server (issue 37): the attacks that did, each
followed by a scrape that must be answered within a second, and a seeded fuzz of 2,000
request lines and headers, cut into packets at random, against the real handler
(``SnapshotCollector.handle``, prometheus_client's encoders behind it). Loopback only."""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Iterator

import pytest

from tiptop.exporter import httpd
from tiptop.exporter.aggregate import Family, MetricType, Snapshot
from tiptop.exporter.httpd import MetricsServer, Reply, Request
from tiptop.exporter.serve import SnapshotCollector

#: Fuzz cases, and how often the server is asked for a plain scrape between them.
CASES, CHECK_EVERY = 2000, 100
#: Every header name the server may send: anything else came from a request.
SENT_HEADERS = {b"content-type", b"content-encoding", b"content-length", b"connection", b"allow"}
GET = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[MetricsServer]:
    monkeypatch.setattr(httpd, "REQUEST_TIMEOUT", 0.5)
    collector = SnapshotCollector()
    fam = Family(
        "tiptop_cpu_seconds_total", "CPU", MetricType.COUNTER, ("comm",), ((("sh",), 1.5),)
    )
    collector.publish(Snapshot((fam,), 1.0))
    srv = MetricsServer("127.0.0.1", 0, collector.handle, max_clients=8)
    srv.start()
    yield srv
    srv.close()


def exchange(srv: MetricsServer, pieces: list[bytes], timeout: float = 2.0) -> bytes:
    """Send ``pieces`` as separate packets, close the sending side, read the answer."""
    with socket.create_connection(("127.0.0.1", srv.port), timeout=timeout) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            for piece in pieces:
                s.sendall(piece)
            s.shutdown(socket.SHUT_WR)
        except OSError:  # the server answered (431) and closed before the rest was sent
            pass
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except ConnectionResetError:
            pass
        return out


def head_of(answer: bytes) -> tuple[bytes, list[bytes]]:
    """An answer's status line and its header names (lower-case)."""
    head = answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
    return head[0], [line.split(b":", 1)[0].lower() for line in head[1:]]


def scrape_within_a_second(srv: MetricsServer) -> None:
    t0 = time.monotonic()
    answer = exchange(srv, [GET])
    took = time.monotonic() - t0
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer[:200]
    assert b"tiptop_cpu_seconds_total" in answer
    assert took < 1.0, took
    assert srv.serving


ATTACKS = {
    # prometheus_client's choose_encoder raised TypeError on this version and the thread died.
    "version 1.x": (
        [b"GET / HTTP/1.1\r\nAccept: text/plain; version=1.x\r\n\r\n"],
        b"HTTP/1.1 200 OK",
    ),
    "openmetrics 1.x": (
        [b"GET / HTTP/1.1\r\nAccept: application/openmetrics-text; version=1.x\r\n\r\n"],
        b"HTTP/1.1 200 OK",
    ),
    # A bare LF in the version was copied into Content-Type: a header of the client's.
    "LF in version": (
        [
            b"GET / HTTP/1.1\r\nAccept: application/openmetrics-text; "
            b"version=1.0.0\nX-Evil: 1\r\n\r\n"
        ],
        b"HTTP/1.1 200 OK",
    ),
    "HEAD": ([b"HEAD /metrics HTTP/1.1\r\n\r\n"], b"HTTP/1.1 200 OK"),
    "bare LF line ends": ([b"GET /metrics HTTP/1.1\nHost: x\n\n"], b"HTTP/1.1 200 OK"),
    "20 KB header in one piece": (
        [b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n"],
        b"HTTP/1.1 431 ",
    ),
    "20 KB header in pieces": (
        [b"GET / HTTP/1.1\r\nX-Big: ", b"a" * 10000, b"a" * 10000 + b"\r\n\r\n"],
        b"HTTP/1.1 431 ",
    ),
    "NUL in a header": ([b"GET / HTTP/1.1\r\nX: a\x00b\r\n\r\n"], b"HTTP/1.1 400 "),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_single_request_neither_stops_the_server_nor_writes_a_header(
    server: MetricsServer, name: str
) -> None:
    pieces, status = ATTACKS[name]
    answer = exchange(server, pieces)
    line, names = head_of(answer)
    assert line.startswith(status), (name, answer[:300])
    assert set(names) <= SENT_HEADERS, names
    if name == "HEAD":
        get = exchange(server, [GET])
        assert answer == get.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n"  # GET's head, no body
    scrape_within_a_second(server)


def test_whatever_the_handler_raises_answers_500_and_the_server_goes_on() -> None:
    faults: list[type[Exception]] = [TypeError, KeyError, RuntimeError, ZeroDivisionError]

    def faulty(request: Request) -> Reply:
        if request.target == "/ok":
            return Reply(200, (("Content-Type", "text/plain"),), b"fine")
        if request.target == "/inject":
            return Reply(200, (("Content-Type", "text/plain\r\nX-Evil: 1"),), b"x")
        raise faults[len(request.target) % len(faults)]("boom")

    srv = MetricsServer("127.0.0.1", 0, faulty, max_clients=4)
    srv.start()
    try:
        for target in (b"/a", b"/ab", b"/abc", b"/abcd", b"/inject"):
            answer = exchange(srv, [b"GET " + target + b" HTTP/1.1\r\n\r\n"])
            assert answer.startswith(b"HTTP/1.1 500 "), answer
            assert b"X-Evil" not in answer
        assert exchange(srv, [b"GET /ok HTTP/1.1\r\n\r\n"]).endswith(b"\r\n\r\nfine")
        assert srv.serving
    finally:
        srv.close()


def fuzz_case(rng: random.Random) -> list[bytes]:
    """One request, mangled: odd methods, targets, versions, Accept values, control
    characters and line ends, sizes around the limit; cut into 1 to 4 packets."""
    method = rng.choice([b"GET", b"HEAD", b"POST", b"OPTIONS", b"G:T", b"", b"GET GET", b"\xff"])
    target = rng.choice([b"/metrics", b"/", b"*", b"", b"/a b", b"/\x00", b"/" + b"x" * 300])
    version = rng.choice([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2", b"HTTP/1.", b"", b"http/1.1"])
    accept = rng.choice(
        [
            b"text/plain; version=",
            b"application/openmetrics-text; version=",
            b"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,text/plain;version=",
            b"*/*; q=",
        ]
    ) + rng.choice(
        [b"1.x", b"0.0.4", b"1.0.0", b"", b"abc", b"1.0.0\nX-Evil: 1", b"9" * 40, b"\x00"]
    )
    encoding = rng.choice([b"gzip", b"identity", b"gzip;q=0", b"\xff", b""])
    lines = [
        method + b" " + target + b" " + version,
        b"Host: 127.0.0.1",
        b"Accept: " + accept,
        b"Accept-Encoding: " + encoding,
    ]
    if rng.random() < 0.2:
        lines.append(b"X-Big: " + b"b" * rng.choice([100, 8000, 16300, 17000, 30000]))
    if rng.random() < 0.3:
        lines.insert(rng.randrange(1, len(lines) + 1), rng.choice([b" folded", b":", b"X", b"\r"]))
    raw = rng.choice([b"\r\n", b"\n"]).join(lines) + rng.choice([b"\r\n\r\n", b"\n\n", b"\r\n"])
    for _ in range(rng.choice([0, 0, 1, 3])):  # stray bytes anywhere
        at = rng.randrange(len(raw) + 1)
        raw = (
            raw[:at]
            + bytes([rng.choice([0, 9, 10, 13, 32, 58, 127, 255, rng.randrange(256)])])
            + raw[at:]
        )
    cuts = sorted(rng.sample(range(1, len(raw)), min(rng.randrange(4), len(raw) - 1)))
    return [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]


def test_a_fuzz_of_requests_kills_no_server(server: MetricsServer) -> None:
    rng = random.Random(37)
    statuses: dict[bytes, int] = {}
    for case in range(CASES):
        pieces = fuzz_case(rng)
        answer = exchange(server, pieces)
        if answer:
            line, names = head_of(answer)
            assert line.startswith(b"HTTP/1.1 "), (pieces, answer[:200])
            assert set(names) <= SENT_HEADERS, (pieces, names)
            statuses[line[9:12]] = statuses.get(line[9:12], 0) + 1
        if case % CHECK_EVERY == CHECK_EVERY - 1:
            scrape_within_a_second(server)
    print(f"fuzz: {CASES} cases, answers by status {sorted(statuses.items())}")
    # The fuzz reaches every kind of answer, not only 400s.
    assert {b"200", b"400", b"405", b"431"} <= set(statuses), statuses
    scrape_within_a_second(server)
