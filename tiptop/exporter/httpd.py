"""The ``--serve`` HTTP server: one thread and one ``selectors`` loop over every client, so
that what clients can take is bounded whatever they do.

prometheus_client's own server (a ``ThreadingHTTPServer`` from wsgiref) gives each client
a thread and an fd for as long as the client keeps its connection, listens with a backlog
of 5 and never times a client out: idle connections alone spent the exporter's fds
(issue 31). Here:

* a client has :data:`REQUEST_TIMEOUT` seconds to send its request and
  :data:`RESPONSE_TIMEOUT` seconds to take the answer, then its connection is reset
  (:func:`reset_on_close`);
* at most ``max_clients`` connections are open at once (:func:`client_limit`: a share of
  RLIMIT_NOFILE that the counters' fd budget leaves free, ``tiptop.cli.serve``); when all
  are taken, a new connection resets the oldest one that has sent nothing for
  :data:`SILENT` seconds, else the one silent for longest among those still sending their
  request (TLS handshake or head), if silent for :data:`STALLED` seconds. So clients that
  connect and say nothing, or stall, cannot keep a scraper out, and a scraper that is
  talking is not closed to make room (the 2026-11-29 attack: 300 idle connections
  replaced TLS scrapers mid-handshake, 53 of 74 failed). Connections wait in the kernel's
  queue (:data:`BACKLOG`, listen(2)) while no slot can be freed;
* every connection is answered once and closed (``Connection: close``, RFC 9112 9.6), as
  prometheus_client's server does;
* nothing one request does stops the server: whatever the handler raises answers that
  request 500, whatever a connection's handling raises closes that connection only, and
  no request text reaches a response header (:func:`response_bytes` refuses CR, LF and
  other controls in a header). The head is limited to :data:`MAX_REQUEST` bytes however
  it is cut into packets; a bare LF ends a line as CRLF does (RFC 9112 2.2); HEAD is
  answered as GET without the body (RFC 9110 9.3.2);
* with an ``ssl.SSLContext`` (``--web-config``, :mod:`.webconfig`) each connection is TLS,
  its handshake driven by the same loop (non-blocking), begun once the client has sent
  its first bytes and done within :data:`HANDSHAKE_TIMEOUT` seconds;
* what is too slow for the loop (a bcrypt password check: tens of milliseconds, more at a
  high cost) the handler hands back as :class:`Deferred` work: it runs on one of
  :data:`CHECKERS` threads, at most :data:`QUEUED` waiting, the lowest ``priority`` first
  (a client that asked for fewer checks before one that asked for more), and its reply
  is sent by the loop.
  When the queue is full, work of a lower priority takes the place of the highest queued,
  which is answered 503 with Retry-After, as is work that finds no place.

Why not a library: waitress 3.0.2 and cheroot 11.1.2 behind prometheus_client's WSGI app,
given the same backlog, connection cap and timeouts, left a scrape unanswered for 30 s
behind 1,000 idle connections (this server: under 0.05 s), accepted a 20 KB header, and
waitress has no TLS (figures: the commit that added this paragraph). Nor asyncio's streams
with ``ssl``: given the same handler and password checks, under the 2026-11-29 floods,
they kept each of 1,000 idle TLS connections open (1,010 fds, no cap: a cap needs this
module's accounting again, under ``loop.start_tls``) and grew from 44 to 374 MB (a 256 KiB
buffer per TLS connection, asyncio's ``sslproto``), and spent about twice this loop's CPU
per request under 100 wrong-password clients (docs/exporter.md, "The server").

What to answer is the ``handler``'s business (``tiptop.exporter.serve``, which renders the
latest refresh once per format); this module knows HTTP only. Standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import heapq
import http
import itertools
import re
import selectors
import socket
import ssl
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import field

from tiptop.errors import TiptopError
from tiptop.readonly import by_value, mutable, readonly

#: Seconds a client has, from its connection, to send the request line and headers.
REQUEST_TIMEOUT = 5.0
#: Seconds a TLS client has, from its connection, to finish its handshake (within
#: :data:`REQUEST_TIMEOUT`): a stalled ClientHello holds a slot no longer.
HANDSHAKE_TIMEOUT = 3.0
#: Seconds a client has to take the whole answer once it is ready, and deferred work
#: (:class:`Deferred`) to be done.
RESPONSE_TIMEOUT = 10.0
#: Seconds after which a connection that has sent nothing may be closed to make room for a
#: new one: a client's first bytes (its request, its ClientHello) come with its connection,
#: and may reach the socket just after accept(2) returns it.
SILENT = 0.05
#: Seconds without a byte after which a connection still sending its request may be
#: closed to make room for a new one (when no connection that sent nothing is left): long
#: enough for a client busy elsewhere to go on with its handshake, short enough that a
#: flood of stalled ClientHellos lets a scraper in within seconds.
STALLED = 1.0
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
#: Threads running deferred work (password checks), and the most work waiting for one.
#: One, as exporter-toolkit checks one password at a time: hostile clients can make the
#: exporter spend at most one CPU on bcrypt, and the sampler keeps the rest.
CHECKERS = 1
QUEUED = 16


def client_limit(fd_soft: int) -> int:
    """Client connections allowed for a process whose soft RLIMIT_NOFILE is ``fd_soft``:
    a quarter of it, between 4 and :data:`MAX_CLIENTS`."""
    return max(4, min(MAX_CLIENTS, fd_soft // 4))


@by_value
class Request:
    """A parsed request: method, target (path and query), headers (names lower-case) and
    the client's address (its IP address, as accept(2) gave it)."""

    method: str
    target: str
    headers: dict[str, str]
    client: str = ""


@readonly
class Reply:
    """What to send back: status code, headers (without Content-Length and Connection,
    which the server adds), body."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""


@readonly
class Deferred:
    """Work a handler hands back instead of a reply because it is too slow for the serving
    loop (a password check): ``work()`` runs on a checker thread and its reply is sent;
    queued work of the lowest ``priority`` runs first; ``dropped()`` is called instead
    when the work will not run (no room for it in the queue, its connection closed)."""

    work: Callable[[], Reply]
    priority: int = 0
    dropped: Callable[[], None] | None = None


Handler = Callable[[Request], Reply | Deferred]

#: The answer to deferred work that found no place in the queue, or lost its place.
BUSY = Reply(
    503,
    (("Retry-After", "1"),),
    b"503 Service Unavailable: too many password checks waiting\n",
)


@mutable
class _Job:
    """Deferred work for one connection, and once done its reply."""

    work: Callable[[], Reply]
    priority: int
    headless: bool
    dropped: Callable[[], None] | None = None
    reply: Reply | None = None
    #: Its connection was closed (timed out, replaced): not to be started.
    cancelled: bool = False

    def drop(self) -> None:
        """The work will not run: tell its handler (:attr:`Deferred.dropped`)."""
        if self.dropped is not None:
            self.dropped()


class _Checkers:
    """The queue of deferred work (a heap, lowest priority first, at most :data:`QUEUED`),
    run by a pool of :data:`CHECKERS` threads (``concurrent.futures``, started at the
    first work), and the work done, handed back to the loop through a socket pair it
    watches. Each piece of work submitted starts one run of the pool, which takes the
    best work queued then."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: list[tuple[int, int, _Job]] = []
        self._order = itertools.count()
        self._pool: ThreadPoolExecutor | None = None
        self.done: deque[_Job] = deque()
        self.wake, self._waker = socket.socketpair()
        self.wake.setblocking(False)
        self._waker.setblocking(False)

    def submit(self, job: _Job) -> _Job | None:
        """Queue ``job``; the job that lost its place to it (or ``job`` itself when it
        found none), or None."""
        with self._lock:
            loser = None
            if len(self._queue) >= QUEUED:
                worst = max(self._queue)
                if worst[0] <= job.priority:
                    return job
                self._queue.remove(worst)
                heapq.heapify(self._queue)
                loser = worst[2]
            heapq.heappush(self._queue, (job.priority, next(self._order), job))
            if self._pool is None:
                self._pool = ThreadPoolExecutor(CHECKERS, thread_name_prefix="tiptop-check")
            self._pool.submit(self._run_next)
        return loser

    def _run_next(self) -> None:
        """Run the best work queued (a cancelled one is dropped). Whatever the work
        raises stays in the pool's future; the job goes back to the loop without a reply,
        which answers it 500."""
        with self._lock:
            if not self._queue:
                return  # its work lost its place in the queue
            job = heapq.heappop(self._queue)[2]
        if job.cancelled:
            job.drop()
            return
        try:
            job.reply = job.work()
        finally:
            self.done.append(job)
            with contextlib.suppress(OSError):  # a byte already waiting wakes it as well
                self._waker.send(b"\0")

    def finished(self) -> list[_Job]:
        """The work done since the last call (the wake-up bytes read)."""
        with contextlib.suppress(OSError):
            while self.wake.recv(4096):
                pass
        out = []
        while self.done:
            out.append(self.done.popleft())
        return out

    def close(self) -> None:
        """Drop the queued work and stop the pool without waiting for the work in hand
        (a check takes at most about RESPONSE_TIMEOUT: ``basicauth`` starts no longer one)."""
        with self._lock:
            self._queue.clear()
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
        self.wake.close()
        self._waker.close()


@mutable
class _Client:
    """One accepted connection: what it sent so far, or the answer still to send."""

    sock: socket.socket
    deadline: float
    #: The client's address (the IP address accept(2) gave).
    peer: str = ""
    received: bytearray = field(default_factory=bytearray)
    out: memoryview | None = None  # the answer's bytes not yet sent
    #: A TLS connection whose handshake is not done yet (:meth:`MetricsServer._handshake`).
    handshaking: bool = False
    #: When its latest bytes came (its connection's time until it sent any).
    active: float = 0.0
    #: Deferred work for its request, not answered yet.
    job: _Job | None = None


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
        #: Open connections in the order accepted.
        self._clients: dict[socket.socket, _Client] = {}
        #: Those that have sent nothing yet, in the order accepted: the first is the one a
        #: new connection replaces when all slots are taken.
        self._silent: dict[socket.socket, _Client] = {}
        #: Made at the first deferred work (a server without it has no checker threads,
        #: and no socket pair to hear from them).
        self._checkers: _Checkers | None = None
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
        if self._checkers is not None:
            self._checkers.close()
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
            # While accepting waits for a connection to become replaceable, look again then.
            wait = 0.25 if self._accepting else min(max(self._paused_until - now, 0.005), 0.25)
            for key, events in self._sel.select(timeout=wait):
                if key.fileobj is self._listener:
                    self._accept()
                elif self._checkers is not None and key.fileobj is self._checkers.wake:
                    self._deliver()
                elif (
                    isinstance(key.fileobj, socket.socket)
                    and (client := self._clients.get(key.fileobj)) is not None
                ):
                    self._step(client, events)
            self._expire(time.monotonic())

    def _step(self, client: _Client, events: int) -> None:
        """Move one connection on; whatever that raises closes it, never the server."""
        try:
            if client.job is not None:  # stepped once its deferred work is done
                job, client.job = client.job, None
                reply = job.reply or Reply(500, body=b"500 Internal Server Error\n")
                self._answer(client, reply, job.headless)
            elif client.handshaking:
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
        """Accept again once a slot is free or can be freed (or the fd pause is over)."""
        if self._accepting or now < self._paused_until:
            return
        if len(self._clients) < self.max_clients or self._replaceable(now) is not None:
            self._sel.register(self._listener, selectors.EVENT_READ)
            self._accepting = True
        else:
            self._paused_until = now + SILENT

    def _pause(self, until: float) -> None:
        if self._accepting:
            self._sel.unregister(self._listener)
            self._accepting = False
        self._paused_until = until

    def _replaceable(self, now: float) -> _Client | None:
        """The connection a new one replaces when every slot is taken: the oldest that has
        sent nothing for :data:`SILENT` seconds, else the one silent longest among those
        still sending their request (handshake or head) if silent for :data:`STALLED`
        seconds; None: none may go yet."""
        for client in self._silent.values():  # the oldest first
            if now - client.active >= SILENT:
                return client
            break
        sending = [c for c in self._clients.values() if c.out is None and c.job is None]
        stalled = min(sending, key=lambda c: c.active, default=None)
        return stalled if stalled is not None and now - stalled.active >= STALLED else None

    def _accept(self) -> None:
        """Take the queued connections, each replacing another (:meth:`_replaceable`) when
        every slot is taken."""
        for _ in range(self.max_clients):
            now = time.monotonic()
            if len(self._clients) >= self.max_clients:
                gone = self._replaceable(now)
                if gone is None:  # none may go yet: the rest wait in the kernel's queue
                    self._pause(now + SILENT)
                    return
                self._drop(gone, reset=True)
            try:
                sock, addr = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as err:
                if err.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self._pause(time.monotonic() + FD_PAUSE)
                return  # ECONNABORTED and the like: that client is gone
            sock.setblocking(False)
            tls = self.tls is not None
            deadline = now + (HANDSHAKE_TIMEOUT if tls else REQUEST_TIMEOUT)
            client = _Client(sock, deadline, str(addr[0]), handshaking=tls, active=now)
            self._clients[sock] = client
            self._silent[sock] = client
            self._sel.register(sock, selectors.EVENT_READ)
            self._step(client, selectors.EVENT_READ)  # a scraper's request is usually there

    def _heard(self, client: _Client) -> None:
        """Bytes came from ``client`` now."""
        client.active = time.monotonic()
        self._silent.pop(client.sock, None)

    def _handshake(self, client: _Client) -> None:
        """Wrap a connection in TLS once its first bytes came, and drive its handshake
        without blocking; the request is read once it is done."""
        assert self.tls is not None
        if not isinstance(client.sock, ssl.SSLSocket):
            raw = client.sock
            try:
                first = raw.recv(1, socket.MSG_PEEK)
            except (BlockingIOError, InterruptedError):
                return  # nothing sent yet: it may be replaced meanwhile (_replaceable)
            if not first:  # closed before a byte
                self._drop(client)
                return
            self._heard(client)
            self._sel.unregister(raw)
            del self._clients[raw]
            client.sock = self.tls.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
            self._clients[client.sock] = client
            self._sel.register(client.sock, selectors.EVENT_READ)
        else:
            self._heard(client)
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
        client.deadline += REQUEST_TIMEOUT - HANDSHAKE_TIMEOUT
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
            self._heard(client)
            client.received += data
            if self._answered(client):
                return
            if not isinstance(client.sock, ssl.SSLSocket) or not client.sock.pending():
                return

    def _answered(self, client: _Client) -> bool:
        """Answer the request once its head is complete (or hand its work to a checker),
        or 431 once it cannot fit in :data:`MAX_REQUEST` bytes (however the bytes came
        in); whether answered."""
        end = _HEAD_END.search(client.received)
        if (end is None and len(client.received) > MAX_REQUEST) or (
            end is not None and end.start() > MAX_REQUEST
        ):
            self._answer(client, Reply(431, body=b"431 Request Header Fields Too Large\n"))
            return True
        if end is None:
            return False
        request = parse_request(bytes(client.received[: end.start()]), client.peer)
        if request is None:
            self._answer(client, Reply(400, body=b"400 Bad Request: not an HTTP/1.x request\n"))
            return True
        headless = request.method == "HEAD"  # answered as GET without the body
        if headless:
            request = Request("GET", request.target, request.headers, request.client)
        reply = self.handler(request)  # what it raises answers 500 (_fail)
        if isinstance(reply, Deferred):
            self._defer(client, _Job(reply.work, reply.priority, headless, reply.dropped))
        else:
            self._answer(client, reply, headless)
        return True

    def _defer(self, client: _Client, job: _Job) -> None:
        """Hand ``client``'s work to the checkers; it is not watched until its reply."""
        if self._checkers is None:
            self._checkers = _Checkers()
            self._sel.register(self._checkers.wake, selectors.EVENT_READ)
        loser = self._checkers.submit(job)
        if loser is not None:
            loser.drop()
        if loser is job:
            self._answer(client, BUSY)
            return
        client.job = job
        client.deadline = time.monotonic() + RESPONSE_TIMEOUT
        self._sel.unregister(client.sock)
        if loser is not None:
            loser.cancelled = True
            owner = next((c for c in self._clients.values() if c.job is loser), None)
            if owner is not None:
                owner.job = None
                self._answer(owner, BUSY)

    def _deliver(self) -> None:
        """Send the replies of the work the checkers finished (a job without one: 500)."""
        assert self._checkers is not None  # only its socket wakes this
        for job in self._checkers.finished():
            owner = next((c for c in self._clients.values() if c.job is job), None)
            if owner is not None:  # else its connection was closed meanwhile
                self._step(owner, 0)

    def _answer(self, client: _Client, reply: Reply, headless: bool = False) -> None:
        answer = response_bytes(reply)
        if headless:
            answer = answer[: len(answer) - len(reply.body)]
        client.out = memoryview(answer)
        client.deadline = time.monotonic() + RESPONSE_TIMEOUT
        try:
            self._sel.modify(client.sock, selectors.EVENT_WRITE)
        except KeyError:  # not watched while its work was deferred
            self._sel.register(client.sock, selectors.EVENT_WRITE)
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
            self._drop(client, reset=True)

    def _drop(self, client: _Client, *, reset: bool = False) -> None:
        """Close a connection (its slot is free again; its deferred work, if not started,
        is not started). ``reset``: for a connection dropped unanswered (timed out, or
        replaced by a new one), a TCP reset (:func:`reset_on_close`), as nginx's
        ``reset_timedout_connection`` does: an orderly close leaves a TIME_WAIT socket
        for 60 s (tcp(7)), and where netfilter tracks connections (nf_conntrack) an
        entry for 120 s, against 10 s for a reset one; a flood of idle connections,
        thousands dropped a second, filled that table, and the kernel then dropped
        every new connection's SYN, a scraper's too (dmesg: "nf_conntrack: table
        full, dropping packet")."""
        self._clients.pop(client.sock, None)
        self._silent.pop(client.sock, None)
        if client.job is not None:
            client.job.cancelled = True
            client.job = None
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(client.sock)
        with contextlib.suppress(OSError):  # the client may be gone already
            if reset:
                reset_on_close(client.sock)
            else:
                client.sock.shutdown(socket.SHUT_RDWR)
        client.sock.close()


def reset_on_close(sock: socket.socket) -> None:
    """Make ``sock``'s close(2) reset its connection (RST) instead of closing it in order:
    ``SO_LINGER`` on with a zero timeout (socket(7)). Raises OSError."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


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


def parse_request(head: bytes, client: str = "") -> Request | None:
    """The request line and headers (RFC 9112 3 and 5) of a request from ``client``, or None
    when they are not HTTP/1.x (a control character in a field, a space before a colon, a
    folded line...)."""
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
    return Request(parts[0], parts[1], headers, client)


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
    "BUSY",
    "CHECKERS",
    "HANDSHAKE_TIMEOUT",
    "MAX_CLIENTS",
    "QUEUED",
    "REQUEST_TIMEOUT",
    "RESPONSE_TIMEOUT",
    "Deferred",
    "Handler",
    "MetricsServer",
    "Reply",
    "Request",
    "client_limit",
    "parse_request",
    "reset_on_close",
    "response_bytes",
]
