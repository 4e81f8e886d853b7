"""Hostile clients of the exporter's tests, kept from the 2026-11-29 attack's tools
(/work/shared/attacks/tools/exp_tls_attack.py: ``idle``, ``wrongpw``, ``unknown``), each a
thread with one ``selectors`` loop so that its load stays bounded by what the server
answers, and a scraper that measures what a Prometheus would see meanwhile. Loopback only.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import errno
import itertools
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tiptop.exporter.httpd import reset_on_close


def basic(user: str, password: str | bytes) -> bytes:
    """An ``Authorization`` header line for ``user:password``."""
    secret = password if isinstance(password, bytes) else password.encode()
    token = base64.b64encode(user.encode() + b":" + secret)
    return b"Authorization: Basic " + token + b"\r\n"


def client_tls() -> ssl.SSLContext:
    """A client context that takes any server certificate (the tests' are self-signed)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


@dataclass(eq=False)
class Scrapes:
    """What a scraper saw: per scrape its seconds and its status (an HTTP code, or the
    name of the exception that ended it)."""

    seen: list[tuple[float, str]] = field(default_factory=list)

    @property
    def ok(self) -> float:
        """The share of scrapes answered 200."""
        return sum(s == "200" for _, s in self.seen) / max(len(self.seen), 1)

    def p90(self) -> float:
        """The 90th percentile of the scrapes' seconds."""
        took = sorted(t for t, _ in self.seen)
        return took[min(len(took) - 1, int(0.9 * len(took)))] if took else float("inf")

    def summary(self) -> str:
        """``74 scrapes, 100% 200, p90 0.036 s; {'200': 74}``."""
        codes = collections.Counter(s for _, s in self.seen)
        return f"{len(self.seen)} scrapes, {self.ok:.0%} 200, p90 {self.p90():.3f} s; {dict(codes)}"


def scrape_once(
    port: int, auth: bytes = b"", tls: ssl.SSLContext | None = None, timeout: float = 10.0
) -> tuple[float, str]:
    """One ``GET /metrics`` as Prometheus sends it (a new connection, its answer read to
    the end): its seconds and status (an exception's name says at which step)."""
    t0 = time.monotonic()
    step = "connect"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw:
            step = "handshake"
            sock = tls.wrap_socket(raw) if tls is not None else raw
            step = "answer"
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n")
            answer = b"".join(iter(lambda: sock.recv(65536), b""))
        status = answer[9:12].decode() if answer.startswith(b"HTTP/1.1 ") else "no answer"
    except (OSError, ssl.SSLError) as err:
        status = f"{type(err).__name__} ({step})"
    return time.monotonic() - t0, status


def scrape_for(
    port: int,
    seconds: float,
    auth: bytes = b"",
    tls: ssl.SSLContext | None = None,
    every: float = 0.25,
) -> Scrapes:
    """A scrape every ``every`` seconds for ``seconds``."""
    out = Scrapes()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        out.seen.append(scrape_once(port, auth, tls))
        time.sleep(every)
    return out


class _Flood(threading.Thread):
    """Connections to 127.0.0.1:``port`` from one thread: each is made again when it ends
    (the server closed it, or answered); what each sends is :meth:`request`'s."""

    def __init__(self, port: int, n: int, sources: list[str] | None = None) -> None:
        super().__init__(daemon=True)
        self.port, self.n = port, n
        self.sources = itertools.cycle(sources or ["127.0.0.1"])
        self.opened = 0
        self.statuses: collections.Counter[str] = collections.Counter()
        self._halt = threading.Event()
        self._sel = selectors.DefaultSelector()
        self._got: dict[socket.socket, bytearray] = {}

    def request(self) -> bytes:
        """What a new connection sends (nothing: it stays silent)."""
        return b""

    def _open(self) -> None:
        s = socket.socket()
        s.setblocking(False)
        source = next(self.sources)
        with contextlib.suppress(OSError):
            s.bind((source, 0))
        err = s.connect_ex(("127.0.0.1", self.port))
        if err not in (0, errno.EINPROGRESS):
            s.close()
            time.sleep(0.01)  # out of ports or fds for a moment
            return
        self.opened += 1
        self._got[s] = bytearray()
        request = self.request()
        self._sel.register(s, selectors.EVENT_WRITE if request else selectors.EVENT_READ, request)

    def _close(self, s: socket.socket) -> None:
        self._sel.unregister(s)
        answer = self._got.pop(s)
        self.statuses[answer[9:12].decode() if answer.startswith(b"HTTP/1.1 ") else "closed"] += 1
        # A reset, not an orderly close: where netfilter tracks connections (podman's rules
        # load nf_conntrack), each closed one stays in its table 120 s (TIME_WAIT), a reset
        # one 10 s; these floods make thousands a second, and a full table drops every new
        # connection's SYN, a scraper's too (nf_conntrack: table full, dropping packet).
        with contextlib.suppress(OSError):
            reset_on_close(s)
        s.close()

    def run(self) -> None:
        while not self._halt.is_set():
            while len(self._got) < self.n and not self._halt.is_set():
                self._open()
            for key, events in self._sel.select(timeout=0.1):
                s = key.fileobj
                assert isinstance(s, socket.socket)
                if events & selectors.EVENT_WRITE:
                    with contextlib.suppress(OSError):
                        s.send(key.data)
                    self._sel.modify(s, selectors.EVENT_READ)
                    continue
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if data:
                    self._got[s] += data
                else:
                    self._close(s)
        for s in list(self._got):
            self._close(s)
        self._sel.close()

    def stop(self) -> None:
        """End the flood and close its connections."""
        self._halt.set()
        self.join(10)


class IdleFlood(_Flood):
    """``n`` connections that never send a byte, made again as the server closes them."""


class HelloFlood(_Flood):
    """``n`` connections that send 60% of a TLS ClientHello and stall (the attack's
    ``hello`` mode), made again as the server closes them."""

    def __init__(self, port: int, n: int, sources: list[str] | None = None) -> None:
        super().__init__(port, n, sources)
        hello = client_hello()
        self.part = hello[: len(hello) * 6 // 10]

    def request(self) -> bytes:
        return self.part


def client_hello() -> bytes:
    """The first flight of a TLS client: its ClientHello record."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = client_tls().wrap_bio(incoming, outgoing)
    with contextlib.suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


class AuthFlood(_Flood):
    """``n`` clients sending ``GET /metrics`` with credentials from ``credential()`` (an
    ``Authorization`` line), again and again, from ``sources`` in turn (127.0.0.2...: other
    clients than a scraper from 127.0.0.1, all on the loopback)."""

    def __init__(
        self,
        port: int,
        n: int,
        credential: Callable[[], bytes],
        sources: list[str] | None = None,
    ) -> None:
        super().__init__(port, n, sources)
        self.credential = credential

    def request(self) -> bytes:
        return b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + self.credential() + b"\r\n"


def loopback_sources(n: int) -> list[str]:
    """``n`` loopback addresses other than 127.0.0.1 (all of 127/8 is the loopback)."""
    return [f"127.0.{1 + i // 250}.{2 + i % 250}" for i in range(n)]


__all__ = [
    "AuthFlood",
    "HelloFlood",
    "IdleFlood",
    "Scrapes",
    "basic",
    "client_hello",
    "client_tls",
    "loopback_sources",
    "scrape_for",
    "scrape_once",
]
