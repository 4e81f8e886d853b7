"""The ``--serve`` HTTP server (tiptop/exporter/httpd.py) over real loopback sockets: what a
client may take is bounded (slots, timeouts), idle clients cannot keep a scraper out, and
requests are parsed and answered as HTTP/1.1 says."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest

from tests.support.sockets import closed_by_peer
from tiptop.errors import TiptopError
from tiptop.exporter import httpd
from tiptop.exporter.httpd import (
    Deferred,
    MetricsServer,
    Reply,
    Request,
    client_limit,
    parse_request,
    response_bytes,
)


def echo(request: Request) -> Reply:
    """Answers the method and target it was asked."""
    return Reply(
        200, (("Content-Type", "text/plain"),), f"{request.method} {request.target}".encode()
    )


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[MetricsServer]:
    monkeypatch.setattr(httpd, "REQUEST_TIMEOUT", 0.5)
    monkeypatch.setattr(httpd, "RESPONSE_TIMEOUT", 0.5)
    srv = MetricsServer("127.0.0.1", 0, echo, max_clients=4)
    srv.start()
    yield srv
    srv.close()


def connect(srv: MetricsServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", srv.port), timeout=5)


def get(srv: MetricsServer, path: str = "/metrics") -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{srv.port}{path}", timeout=5) as r:
        return r.read().decode()


def wait_clients(srv: MetricsServer, n: int) -> int:
    end = time.monotonic() + 5
    while srv.clients != n and time.monotonic() < end:
        time.sleep(0.01)
    return srv.clients


def test_requests_are_parsed_and_answered() -> None:
    req = parse_request(b"GET /metrics?x=1 HTTP/1.1\r\nAccept: text/plain\r\nHOST:  h ")
    assert req == Request("GET", "/metrics?x=1", {"accept": "text/plain", "host": "h"})
    for bad in (
        b"\x00\xffNOT HTTP",
        b"GET /",
        b"GET / HTTP/2",
        b"GET / HTTP/1.1\r\nno colon",
        b"GET / HTTP/1.1\r\n bad: folded",
        b"G:T / HTTP/1.1",
        b"GET /a\x00b HTTP/1.1",
        b"GET / HTTP/1.1\r\nX: a\rb",
        b"GET / HTTP/1.1\r\nX: a\x00b",
        b"GET / HTTP/1.1\r\nX : a",
    ):
        assert parse_request(bad) is None, bad
    answer = response_bytes(Reply(404, (("X-A", "b"),), b"gone"))
    assert answer == (
        b"HTTP/1.1 404 Not Found\r\nX-A: b\r\nContent-Length: 4\r\nConnection: close\r\n\r\ngone"
    )
    assert [client_limit(n) for n in (8, 64, 1024, 1 << 20)] == [4, 16, 256, 256]


def test_a_scrape_gets_in_past_idle_clients_holding_every_slot(
    server: MetricsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(httpd, "REQUEST_TIMEOUT", 3.0)  # the idle ones would hold on
    idle = [connect(server) for _ in range(10)]
    t0 = time.monotonic()
    assert get(server) == "GET /metrics"
    assert time.monotonic() - t0 < 1.5  # not after the idle ones' time ran out
    assert wait_clients(server, 0) == 0  # answered and closed; the idle ones made way
    assert sum(closed_by_peer(s, 0.05) for s in idle) >= 6  # the oldest ones, replaced
    for s in idle:
        s.close()


def test_idle_and_slow_clients_are_closed_after_their_time(server: MetricsServer) -> None:
    idle = connect(server)
    slow = connect(server)
    slow.sendall(b"GET /metr")  # never finished
    assert wait_clients(server, 2) == 2
    t0 = time.monotonic()
    assert closed_by_peer(idle, 3) and closed_by_peer(slow, 3)
    assert 0.4 < time.monotonic() - t0 < 2.0
    assert server.clients == 0
    idle.close()
    slow.close()


def test_a_connection_dropped_unanswered_is_reset_and_an_answered_one_closed(
    server: MetricsServer,
) -> None:
    """A client that timed out gets a TCP reset (no TIME_WAIT, 10 s in netfilter's
    connection table instead of 120 s: ``MetricsServer._drop``); one that was answered
    reads its whole answer, then end-of-file (an orderly close)."""
    idle = connect(server)
    assert wait_clients(server, 1) == 1
    idle.settimeout(3)
    with pytest.raises(ConnectionResetError):
        idle.recv(1)
    idle.close()
    assert get(server) == "GET /metrics"  # read to its end-of-file, not reset


def test_a_client_that_does_not_read_its_answer_is_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(httpd, "RESPONSE_TIMEOUT", 0.5)
    big = MetricsServer("127.0.0.1", 0, lambda r: Reply(200, (), b"x" * (64 << 20)), 4)
    big.start()
    try:
        s = connect(big)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(b"GET / HTTP/1.1\r\n\r\n")
        assert wait_clients(big, 1) == 1
        time.sleep(0.2)
        assert big.clients == 1  # still sending: 64 MiB do not fit the socket buffers
        t0 = time.monotonic()
        assert wait_clients(big, 0) == 0
        assert time.monotonic() - t0 < 1.5
    finally:
        big.close()


def test_bad_requests_get_one_answer_each(server: MetricsServer) -> None:
    bad = connect(server)
    bad.sendall(b"\x00\xffNOT HTTP\r\n\r\n")
    assert bad.recv(4096).startswith(b"HTTP/1.1 400 Bad Request\r\n")
    huge = connect(server)
    huge.sendall(b"GET / HTTP/1.1\r\nX: " + b"y" * (httpd.MAX_REQUEST + 10))
    assert huge.recv(4096).startswith(b"HTTP/1.1 431 ")
    for s in (bad, huge):
        s.close()


def test_an_address_in_use_is_named() -> None:
    first = MetricsServer("127.0.0.1", 0, echo, 4)
    try:
        with pytest.raises(
            TiptopError,
            match=rf"^--serve 127\.0\.0\.1:{first.port}: cannot "
            "listen: Address already in use$",
        ):
            MetricsServer("127.0.0.1", first.port, echo, 4)
    finally:
        first.close()
    if not socket.has_ipv6:
        return
    try:
        first = MetricsServer("::1", 0, echo, 4)
    except TiptopError:  # no IPv6 loopback here
        return
    try:
        with pytest.raises(TiptopError, match=rf"^--serve \[::1\]:{first.port}: "):
            MetricsServer("::1", first.port, echo, 4)
    finally:
        first.close()


def test_deferred_work_runs_off_the_loop_and_a_full_queue_is_503(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Slow work (a password check) runs on a checker thread: while it runs, other
    requests are answered at once. Past the queue's bound, work of the lowest priority
    takes the place of the highest queued one, which is answered 503 like work that finds
    no place (issue 52: bcrypt ran on the serving thread, a scrape's p90 went to 7 s)."""
    monkeypatch.setattr(httpd, "QUEUED", 2)
    release = threading.Event()
    dropped: list[int] = []  # the priorities of the work told it will not run

    def slow() -> Reply:
        release.wait(10)
        return Reply(200, (), b"checked")

    def handler(request: Request) -> Reply | Deferred:
        if request.target == "/fault":
            return Deferred(lambda: Reply(200, (), bytes([1 // len(request.target[7:])])))
        if request.target.startswith("/slow"):
            priority = int(request.target.removeprefix("/slow") or 0)
            return Deferred(slow, priority, lambda: dropped.append(priority))
        return echo(request)

    srv = MetricsServer("127.0.0.1", 0, handler, max_clients=16)
    srv.start()
    try:
        faulty = connect(srv)
        faulty.sendall(b"GET /fault HTTP/1.1\r\n\r\n")  # the work raises: that request 500
        assert faulty.recv(4096).startswith(b"HTTP/1.1 500 ")
        # Every checker busy, two queued (priority 5): the queue is full.
        busy = [connect(srv) for _ in range(httpd.CHECKERS + 2)]
        for s in busy:
            s.sendall(b"GET /slow5 HTTP/1.1\r\n\r\n")
            time.sleep(0.05)
        t0 = time.monotonic()
        assert get(srv) == "GET /metrics"
        assert time.monotonic() - t0 < 0.5  # the loop is not waiting on the work
        refused = connect(srv)
        refused.sendall(b"GET /slow9 HTTP/1.1\r\n\r\n")
        assert refused.recv(4096).startswith(b"HTTP/1.1 503 ")  # no place for it
        first = connect(srv)
        first.sendall(b"GET /slow0 HTTP/1.1\r\n\r\n")  # takes a priority-5 one's place
        lost = [s for s in busy[httpd.CHECKERS :] if closed_or_answered(s, b"HTTP/1.1 503 ")]
        assert len(lost) == 1
        assert dropped == [9, 5]  # the one refused, then the one that lost its place
        release.set()
        for s in [first, *[s for s in busy if s not in lost]]:
            s.settimeout(5)
            assert s.recv(4096).startswith(b"HTTP/1.1 200 OK"), s
        assert srv.serving
    finally:
        release.set()
        srv.close()


def closed_or_answered(sock: socket.socket, start: bytes) -> bool:
    """Whether ``sock`` got an answer beginning with ``start`` within a second."""
    sock.settimeout(1)
    try:
        return sock.recv(4096).startswith(start)
    except TimeoutError:
        return False


def test_a_silent_connection_makes_way_before_one_that_is_talking(
    server: MetricsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With every slot taken, a new connection replaces one that has sent nothing, never
    one whose request is arriving (the 2026-11-29 attack: idle connections replaced TLS
    scrapers mid-handshake); with none silent, one stalled for STALLED seconds goes, and
    while none may go new connections wait in the kernel's queue."""
    monkeypatch.setattr(httpd, "REQUEST_TIMEOUT", 5.0)
    talking = connect(server)
    talking.sendall(b"GET /metr")  # the oldest connection, half a request sent
    assert wait_clients(server, 1) == 1
    silent = [connect(server) for _ in range(20)]  # replacing each other
    time.sleep(0.5)
    assert sum(closed_by_peer(s) for s in silent) >= 16  # 3 slots left to them
    talking.sendall(b"ics HTTP/1.1\r\n\r\n")
    talking.settimeout(5)
    assert talking.recv(4096).endswith(b"GET /metrics")
    # Four stalled half-requests: after STALLED seconds the new one takes a slot.
    stalled = [connect(server) for _ in range(4)]
    for s in stalled:
        s.sendall(b"GET /")
    assert wait_clients(server, 4) == 4
    t0 = time.monotonic()
    assert get(server) == "GET /metrics"
    assert httpd.STALLED - 0.1 < time.monotonic() - t0 < 2.0
    assert sum(closed_by_peer(s, 0.1) for s in stalled) == 1
    for s in [talking, *silent, *stalled]:
        s.close()
