"""The ``--serve`` HTTP server: one thread and one ``selectors`` loop over every client, so
that what clients can take is bounded whatever they do.

prometheus_client's own server (a ``ThreadingHTTPServer`` from wsgiref) gives each client
a thread and an fd for as long as the client keeps its connection, listens with a backlog
of 5 and never times a client out: idle connections alone spent the exporter's fds
(issue 31). Here:

* a client has :data:`REQUEST_TIMEOUT` seconds to send its request and
  :data:`RESPONSE_TIMEOUT` seconds to take the answer, then its connection is closed;
* at most ``max_clients`` connections are open at once (:func:`client_limit`: a share of
  RLIMIT_NOFILE that the counters' fd budget leaves free, ``tiptop.cli.serve``); when all
  are taken, a new connection closes the oldest one still waiting for its request, so
  clients that connect and say nothing cannot keep a scraper out. Connections wait in the
  kernel's queue (:data:`BACKLOG`, listen(2)) while every slot is answering;
* every connection is answered once and closed (``Connection: close``, RFC 9112 9.6), as
  prometheus_client's server does;
* nothing one request does stops the server: whatever the handler raises answers that
  request 500, whatever a connection's handling raises closes that connection only, and
  no request text reaches a response header (:func:`response_bytes` refuses CR, LF and
  other controls in a header). The head is limited to :data:`MAX_REQUEST` bytes however
  it is cut into packets; a bare LF ends a line as CRLF does (RFC 9112 2.2); HEAD is
  answered as GET without the body (RFC 9110 9.3.2);
* with an ``ssl.SSLContext`` (``--web-config``, :mod:`.webconfig`) each connection is TLS,
  its handshake driven by the same loop (non-blocking) and bounded by the same timeouts.

Why not a library: waitress 3.0.2 and cheroot 11.1.2 behind prometheus_client's WSGI app,
given the same backlog, connection cap and timeouts, left a scrape unanswered for 30 s
behind 1,000 idle connections (this server: under 0.05 s), accepted a 20 KB header, and
waitress has no TLS (figures: the commit that added this paragraph).

What to answer is the ``handler``'s business (``tiptop.exporter.serve``, which renders the
latest refresh once per format); this module knows HTTP only. Standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import http
import re
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tiptop.errors import TiptopError
from tiptop.readonly import readonly

#: Seconds a client has, from its connection, to send the request line and headers.
REQUEST_TIMEOUT = 5.0
#: Seconds a client has to take the whole answer once it is ready.
RESPONSE_TIMEOUT = 10.0
#: Bytes of request line and headers accepted; more is answered 431 (RFC 6585 5).
MAX_REQUEST = 16384
#: listen(2)'s backlog: connections the kernel completes and queues while every client
#: slot is busy (capped by net.core.somaxconn, 4096 since Linux 5.4).
BACKLOG = 1024
#: The most client connections a server keeps open, whatever the fd limit.
MAX_CLIENTS = 256
#: Seconds accepting pauses when the process is out of fds (EMFILE): its listening
#: socket stays readable, and the counters may give fds back meanwhile.
FD_PAUSE = 0.5


def client_limit(fd_soft: int) -> int:
    """Client connections allowed for a process whose soft RLIMIT_NOFILE is ``fd_soft``:
    a quarter of it, between 4 and :data:`MAX_CLIENTS`."""
    return max(4, min(MAX_CLIENTS, fd_soft // 4))


@dataclass(frozen=True)
class Request:
    """A parsed request: method, target (path and query) and headers (names lower-case)."""

    method: str
    target: str
    headers: dict[str, str]


@readonly
class Reply:
    """What to send back: status code, headers (without Content-Length and Connection,
    which the server adds), body."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""


Handler = Callable[[Request], Reply]


@dataclass(eq=False)
class _Client:
    """One accepted connection: what it sent so far, or the answer still to send."""

    sock: socket.socket
    deadline: float
    received: bytearray = field(default_factory=bytearray)
    out: memoryview | None = None  # the answer's bytes not yet sent
    #: A TLS connection whose handshake is not done yet (:meth:`MetricsServer._handshake`).
    handshaking: bool = False


class MetricsServer:
    """An HTTP server answering every request with ``handler`` on a thread of its own."""

    def __init__(
        self,
        host: str,
        port: int,
        handler: Handler,
        max_clients: int,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        """Bind and listen on ``host:port`` now (``port`` 0 picks one); with ``tls``
        every connection is TLS. Raises TiptopError naming the address when that fails."""
        self.handler = handler
        self.tls = tls
        self.max_clients = max(1, max_clients)
        self._listener = _listen(host, port)
        self.port = int(self._listener.getsockname()[1])
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._listener, selectors.EVENT_READ)
        self._accepting = True
        self._paused_until = 0.0
        #: Open connections in the order accepted (dicts keep insertion order): the first
        #: one without an answer is the one a new connection replaces when all are taken.
        self._clients: dict[socket.socket, _Client] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tiptop-httpd", daemon=True)

    def start(self) -> None:
        """Serve on a daemon thread until :meth:`close`."""
        self._thread.start()

    def close(self) -> None:
        """Stop serving, close the listening socket and every connection."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        for client in list(self._clients.values()):
            self._drop(client)
        self._sel.close()
        self._listener.close()

    @property
    def serving(self) -> bool:
        """Whether the serving thread runs."""
        return self._thread.is_alive()

    @property
    def clients(self) -> int:
        """Connections open now."""
        return len(self._clients)

    def _loop(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            self._listen_again(now)
            for key, events in self._sel.select(timeout=0.25):
                if key.fileobj is self._listener:
                    self._accept()
                elif (
                    isinstance(key.fileobj, socket.socket)
                    and (client := self._clients.get(key.fileobj)) is not None
                ):
                    self._step(client, events)
            self._expire(time.monotonic())

    def _step(self, client: _Client, events: int) -> None:
        """Move one connection on; whatever that raises closes it, never the server."""
        try:
            if client.handshaking:
                self._handshake(client)
            elif client.out is None:
                self._read(client)
            elif events & selectors.EVENT_WRITE:
                self._send(client)
        except Exception:  # the one catch-all: a request's fault never stops the loop
            self._fail(client)

    def _fail(self, client: _Client) -> None:
        """After a fault while serving ``client`` (the handler's included): a 500 when
        nothing was answered yet, else the connection closed."""
        if client.out is None and not client.handshaking and client.sock in self._clients:
            with contextlib.suppress(OSError, ValueError, KeyError):
                self._answer(client, Reply(500, body=b"500 Internal Server Error\n"))
                return
        self._drop(client)

    def _listen_again(self, now: float) -> None:
        """Accept again once a slot is free (or the fd pause is over)."""
        if self._accepting or now < self._paused_until:
            return
        if len(self._clients) < self.max_clients or self._waiting() is not None:
            self._sel.register(self._listener, selectors.EVENT_READ)
            self._accepting = True

    def _pause(self, until: float) -> None:
        if self._accepting:
            self._sel.unregister(self._listener)
            self._accepting = False
        self._paused_until = until

    def _waiting(self) -> _Client | None:
        """The oldest connection that has not had its answer yet."""
        return next((c for c in self._clients.values() if c.out is None), None)

    def _accept(self) -> None:
        """Take the queued connections, each replacing the oldest one still waiting for
        its request when every slot is taken."""
        for _ in range(self.max_clients):
            if len(self._clients) >= self.max_clients:
                oldest = self._waiting()
                if oldest is None:  # all are being answered: the rest wait in the queue
                    self._pause(0.0)
                    return
                self._drop(oldest)
            try:
                sock, _addr = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as err:
                if err.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self._pause(time.monotonic() + FD_PAUSE)
                return  # ECONNABORTED and the like: that client is gone
            sock.setblocking(False)
            client = _Client(sock, time.monotonic() + REQUEST_TIMEOUT, handshaking=bool(self.tls))
            self._clients[sock] = client
            self._sel.register(sock, selectors.EVENT_READ)
            self._step(client, selectors.EVENT_READ)  # a scraper's request is usually there

    def _handshake(self, client: _Client) -> None:
        """Wrap a new connection in TLS (first call) and drive its handshake without
        blocking; the request is read once it is done."""
        assert self.tls is not None
        if not isinstance(client.sock, ssl.SSLSocket):
            raw = client.sock
            self._sel.unregister(raw)
            del self._clients[raw]
            client.sock = self.tls.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
            self._clients[client.sock] = client
            self._sel.register(client.sock, selectors.EVENT_READ)
        try:
            client.sock.do_handshake()
        except ssl.SSLWantReadError:
            self._sel.modify(client.sock, selectors.EVENT_READ)
            return
        except ssl.SSLWantWriteError:
            self._sel.modify(client.sock, selectors.EVENT_WRITE)
            return
        except OSError:  # a failed handshake (an unknown client certificate...)
            self._drop(client)
            return
        client.handshaking = False
        self._sel.modify(client.sock, selectors.EVENT_READ)
        self._read(client)

    def _read(self, client: _Client) -> None:
        while True:
            try:
                data = client.sock.recv(65536)
            except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                return
            except OSError:
                data = b""
            if not data:  # the client closed (or reset) its connection
                self._drop(client)
                return
            client.received += data
            if self._answered(client):
                return
            if not isinstance(client.sock, ssl.SSLSocket) or not client.sock.pending():
                return

    def _answered(self, client: _Client) -> bool:
        """Answer the request once its head is complete, or 431 once it cannot fit in
        :data:`MAX_REQUEST` bytes (however the bytes came in); whether answered."""
        end = _HEAD_END.search(client.received)
        if (end is None and len(client.received) > MAX_REQUEST) or (
            end is not None and end.start() > MAX_REQUEST
        ):
            self._answer(client, Reply(431, body=b"431 Request Header Fields Too Large\n"))
            return True
        if end is None:
            return False
        self._answer(client, *self._reply(bytes(client.received[: end.start()])))
        return True

    def _reply(self, head: bytes) -> tuple[Reply, bool]:
        """The reply to a request head, and whether it goes without its body (HEAD)."""
        request = parse_request(head)
        if request is None:
            return Reply(400, body=b"400 Bad Request: not an HTTP/1.x request\n"), False
        headless = request.method == "HEAD"
        if headless:
            request = Request("GET", request.target, request.headers)
        return self.handler(request), headless  # what it raises answers 500 (_fail)

    def _answer(self, client: _Client, reply: Reply, headless: bool = False) -> None:
        answer = response_bytes(reply)
        if headless:
            answer = answer[: len(answer) - len(reply.body)]
        client.out = memoryview(answer)
        client.deadline = time.monotonic() + RESPONSE_TIMEOUT
        self._sel.modify(client.sock, selectors.EVENT_WRITE)
        self._send(client)

    def _send(self, client: _Client) -> None:
        assert client.out is not None
        try:
            sent = client.sock.send(client.out)
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return
        except OSError:
            self._drop(client)
            return
        client.out = client.out[sent:]
        if not client.out:
            self._drop(client)

    def _expire(self, now: float) -> None:
        for client in [c for c in self._clients.values() if c.deadline <= now]:
            self._drop(client)

    def _drop(self, client: _Client) -> None:
        """Close a connection (its slot is free again)."""
        self._clients.pop(client.sock, None)
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(client.sock)
        with contextlib.suppress(OSError):  # the client may be gone already
            client.sock.shutdown(socket.SHUT_RDWR)
        client.sock.close()


def _listen(host: str, port: int) -> socket.socket:
    """A non-blocking listening socket on ``host:port`` (the address family chosen by
    getaddrinfo(3), as prometheus_client does); TiptopError naming the address."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        family, kind, proto, _name, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as err:
        raise TiptopError(f"--serve {where}: {err.strerror or err}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # restart over TIME_WAIT
        sock.bind(address)
        sock.listen(BACKLOG)
        sock.setblocking(False)
    except OSError as err:
        sock.close()
        raise TiptopError(f"--serve {where}: cannot listen: {err.strerror or err}") from None
    return sock


#: The end of a request's head: an empty line, its line ends CRLF or a bare LF (RFC 9112 2.2).
_HEAD_END = re.compile(rb"\r?\n\r?\n")
#: A line end inside the head.
_LINE_END = re.compile(r"\r?\n")
#: A method or header name: an RFC 9110 5.6.2 token.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
#: A request target: printable ASCII without spaces (RFC 9112 3.2).
_TARGET = re.compile(r"[!-~]+")
#: What a field value may hold: visible characters, space, tab and obs-text (RFC 9110 5.5);
#: CR, LF, NUL and the other controls may not, in a request as in an answer.
_FIELD_VALUE = re.compile(r"[\t -~\x80-\xff]*")


def parse_request(head: bytes) -> Request | None:
    """The request line and headers (RFC 9112 3 and 5), or None when they are not HTTP/1.x
    (a control character in a field, a space before a colon, a folded line...)."""
    lines = _LINE_END.split(head.decode("latin-1"))  # every byte is a latin-1 character
    parts = lines[0].split(" ")
    if (
        len(parts) != 3
        or parts[2] not in ("HTTP/1.0", "HTTP/1.1")
        or not _TOKEN.fullmatch(parts[0])
        or not _TARGET.fullmatch(parts[1])
    ):
        return None
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not _TOKEN.fullmatch(name) or not _FIELD_VALUE.fullmatch(value):
            return None
        headers[name.lower()] = value.strip(" \t")
    return Request(parts[0], parts[1], headers)


def response_bytes(reply: Reply) -> bytes:
    """The status line, headers and body of an HTTP/1.1 answer that closes the connection.
    Raises ValueError for a header name that is not a token or a value with a control
    character: no text can add a header or end the head early."""
    reason = http.HTTPStatus(reply.status).phrase
    head = [f"HTTP/1.1 {reply.status} {reason}"]
    for name, value in reply.headers:
        if not _TOKEN.fullmatch(name) or not _FIELD_VALUE.fullmatch(value):
            raise ValueError(f"header {name!r} may not be sent")
        head.append(f"{name}: {value}")
    head += [f"Content-Length: {len(reply.body)}", "Connection: close", "", ""]
    return "\r\n".join(head).encode("latin-1") + reply.body


__all__ = [
    "BACKLOG",
    "MAX_CLIENTS",
    "REQUEST_TIMEOUT",
    "RESPONSE_TIMEOUT",
    "MetricsServer",
    "Reply",
    "Request",
    "client_limit",
    "parse_request",
    "response_bytes",
]
