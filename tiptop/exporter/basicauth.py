"""Basic authentication (RFC 7617) of ``--serve`` against the bcrypt hashes of
``--web-config`` (:mod:`.webconfig`), under clients that may be hostile.

A bcrypt check costs tens of milliseconds at cost 10 and doubles with each step of cost;
the 2026-11-29 attack ran it on the server's one thread: 100 clients sending wrong
passwords pushed a scrape's p90 to 7 s, and one request for a cost-31 hash held the thread
for days. Here:

* a check never runs on the serving thread: :meth:`BasicAuth.gate` hands it to the
  server's checker threads (:class:`~.httpd.Deferred`; :data:`~.httpd.CHECKERS` at once,
  :data:`~.httpd.QUEUED` waiting);
* each credential's verdict is remembered by a digest of it and the hash, refusals as
  acceptances (as exporter-toolkit's cache does): a scraper pays bcrypt once, and a client
  that repeats a wrong password costs nothing more;
* the checks a client address asks for are counted (an IPv6 client by its /64, which one
  host may hold whole), less those that succeeded, one forgiven every :data:`FORGIVE`
  seconds: a check waits behind those of addresses that asked for fewer (a scraper, which
  asks once, goes first; an address sending many connections at once is served in turn
  with the others), and past :data:`FAILURES_ALLOWED` an address gets 429 with
  ``Retry-After`` for any credential not remembered. The same credential asked for again
  while its check is on its way is not counted again, and waits behind every other;
* an unknown user is checked against a decoy hash of the users' cost (the highest, when
  they differ), so the time does not say which users exist (exporter-toolkit checks them
  against a fixed cost-10 hash: 63 ms against 247 ms for a cost-12 user);
* a password over 72 bytes is refused at once (bcrypt reads no more than 72 bytes; the
  library raises on more, which was answered 500);
* a check that would take longer than a scraper waits (:data:`~.httpd.RESPONSE_TIMEOUT`,
  from the cost and the time of a cost-4 check measured at start) is not started: 503.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import bcrypt

from tiptop.exporter.httpd import RESPONSE_TIMEOUT, Deferred, Reply, Request
from tiptop.readonly import readonly

#: bcrypt reads at most this many bytes of a password (its key schedule, Provos and
#: Mazieres 1999); a longer one is refused.
MAX_PASSWORD = 72
#: Credentials remembered by digest: accepted ones, refused ones.
REMEMBERED = 64
REMEMBERED_REFUSED = 4096
#: Client addresses whose failures are counted (the least recently seen forgotten first).
ADDRESSES = 4096
#: Checks an address may ask for (less those that succeeded) before it is answered 429;
#: one is forgiven every FORGIVE seconds.
FAILURES_ALLOWED = 10
FORGIVE = 5.0

CHALLENGE = (("WWW-Authenticate", 'Basic realm="tiptop", charset="UTF-8"'),)
DENIED = Reply(401, CHALLENGE, b"401 Unauthorized\n")
#: bcrypt's alphabet (its own base64, OpenBSD's ``bcrypt_base64``).
_ALPHABET = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def cost_of(hashed: bytes) -> int:
    """The cost of a bcrypt hash (``$2b$10$...``: 10)."""
    return int(hashed[4:6])


def decoy(cost: int) -> bytes:
    """A bcrypt hash of ``cost`` that no password matches: a fresh salt and 31 random
    characters where the digest goes. Made without computing one (which at a high cost
    takes as long as the check it stands for)."""
    tail = "".join(_ALPHABET[b % 64] for b in os.urandom(31))
    return bcrypt.gensalt(cost) + tail.encode()


def check_seconds(cost: int, at_cost_4: float) -> float:
    """The seconds a check of ``cost`` takes, from one of cost 4 (each step doubles it)."""
    return at_cost_4 * 2.0 ** (cost - 4)


def time_cost_4() -> float:
    """The seconds one cost-4 bcrypt check takes here (about a millisecond)."""
    hashed = bcrypt.hashpw(b"x", bcrypt.gensalt(4))
    start = time.perf_counter()
    bcrypt.checkpw(b"y", hashed)
    return time.perf_counter() - start


def client_key(address: str) -> str:
    """The address a client's failures are counted under: an IPv4 address as it is (one
    mapped into IPv6 too), an IPv6 one by its /64."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


@dataclass(eq=False)
class _Asked:
    """The checks an address asked for, less those that succeeded and those forgiven, as
    of ``at``."""

    count: float = 0.0
    at: float = 0.0


@dataclass(eq=False)
class BasicAuth:
    """The users and their bcrypt hashes; :meth:`gate` answers a request's credentials."""

    users: dict[str, bytes]
    #: Seconds one cost-4 check takes here (:func:`time_cost_4`; 0: not measured, every
    #: check is run).
    at_cost_4: float = 0.0
    clock: Callable[[], float] = time.monotonic
    _decoy: bytes = b""
    _accepted: OrderedDict[bytes, None] = field(default_factory=OrderedDict)
    _refused: OrderedDict[bytes, None] = field(default_factory=OrderedDict)
    _addresses: OrderedDict[str, _Asked] = field(default_factory=OrderedDict)
    #: When each credential's check was last asked for (a repeat is not counted).
    _asked: OrderedDict[bytes, float] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._decoy = decoy(max(map(cost_of, self.users.values()), default=10))

    def gate(self, request: Request, handler: Callable[[Request], Reply]) -> Reply | Deferred:
        """``handler``'s reply when the request's ``Authorization`` header names a user and
        its password, 401 when not, 429 when its address asked for too many checks, 503
        when the check would outlast a scrape; a check not known yet is deferred to a
        checker thread (:meth:`_check`)."""
        credential = _credential(request.headers.get("authorization", ""))
        if credential is None:
            return DENIED
        name, decoded = credential
        hashed = self.users.get(name, self._decoy)
        digest = hashlib.sha256(hashed + b"\0" + decoded).digest()
        known = self._known(digest)
        if known is not None:
            return handler(request) if known else DENIED
        if check_seconds(cost_of(hashed), self.at_cost_4) > RESPONSE_TIMEOUT:
            return _too_slow()
        address = client_key(request.client)
        admitted = self._admit(digest, address)
        if isinstance(admitted, Reply):
            return admitted
        counted = admitted < FAILURES_ALLOWED
        attempt = _Attempt(name, decoded, hashed, digest, address, counted)
        return Deferred(lambda: self._check(attempt, request, handler), admitted)

    def _admit(self, digest: bytes, address: str) -> int | Reply:
        """A check of ``digest`` asked for by ``address``: counted against it, and its
        priority (the address's count); 429 when it asked for too many. The same
        credential again while its check is on its way is not counted, and waits behind
        every other (:data:`FAILURES_ALLOWED`): its verdict will be remembered."""
        with self._lock:
            asked = self._asked_by(address)
            since = self._asked.get(digest)
            if since is not None and asked.at - since <= RESPONSE_TIMEOUT:
                return FAILURES_ALLOWED
            if asked.count >= FAILURES_ALLOWED:
                return _too_many(asked.count)
            self._asked[digest] = asked.at
            self._asked.move_to_end(digest)
            if len(self._asked) > REMEMBERED_REFUSED:
                self._asked.popitem(last=False)
            asked.count += 1
            return int(asked.count) - 1

    def _known(self, digest: bytes) -> bool | None:
        """The remembered verdict of a credential (its digest), or None."""
        with self._lock:
            for kept, verdict in ((self._accepted, True), (self._refused, False)):
                if digest in kept:
                    kept.move_to_end(digest)
                    return verdict
        return None

    def _check(
        self, attempt: _Attempt, request: Request, handler: Callable[[Request], Reply]
    ) -> Reply:
        """On a checker thread: bcrypt's verdict (unless an identical check gave it
        meanwhile), remembered; ``handler``'s reply or 401."""
        ok = self._known(attempt.digest)
        if ok is None:
            password = attempt.decoded.partition(b":")[2]
            ok = bcrypt.checkpw(password, attempt.hashed) and attempt.name in self.users
            self._remember(attempt.digest, ok)
        if ok and attempt.counted:
            with self._lock:  # a check that succeeded is not held against its address
                asked = self._asked_by(attempt.address)
                asked.count = max(asked.count - 1, 0.0)
        return handler(request) if ok else DENIED

    def _asked_by(self, address: str) -> _Asked:
        """What ``address`` asked for, as of now: the forgiven checks taken off (under the
        lock); the least recently seen address is forgotten past :data:`ADDRESSES`."""
        now = self.clock()
        asked = self._addresses.get(address)
        if asked is None:
            asked = self._addresses[address] = _Asked(0.0, now)
            if len(self._addresses) > ADDRESSES:
                self._addresses.popitem(last=False)
        else:
            self._addresses.move_to_end(address)
            asked.count = max(asked.count - (now - asked.at) / FORGIVE, 0.0)
        asked.at = now
        return asked

    def _remember(self, digest: bytes, ok: bool) -> None:
        """A check's verdict kept."""
        with self._lock:
            kept, bound = (
                (self._accepted, REMEMBERED) if ok else (self._refused, REMEMBERED_REFUSED)
            )
            kept[digest] = None
            if len(kept) > bound:
                kept.popitem(last=False)


@readonly
class _Attempt:
    """A credential to check: the user's name, ``user:password`` as sent, the hash it is
    checked against (the decoy for an unknown user), their digest, the client's address,
    and whether it was counted against that address (not a repeat of one on its way)."""

    name: str
    decoded: bytes
    hashed: bytes
    digest: bytes
    address: str
    counted: bool


def _credential(authorization: str) -> tuple[str, bytes] | None:
    """The user name and the decoded ``user:password`` of ``Basic ...``, or None when the
    header is not that, or the password is longer than bcrypt reads."""
    scheme, _, encoded = authorization.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    user, sep, password = decoded.partition(b":")
    if not sep or len(password) > MAX_PASSWORD:
        return None
    return user.decode("utf-8", "replace"), decoded


def _too_many(asked: float) -> Reply:
    """429 (RFC 6585 4), with the seconds until the address may try again."""
    wait = math.ceil((asked - FAILURES_ALLOWED + 1) * FORGIVE)
    body = b"429 Too Many Requests: too many password checks asked for from this address\n"
    return Reply(429, (("Retry-After", str(max(wait, 1))),), body)


def _too_slow() -> Reply:
    """503: the user's bcrypt cost makes a check longer than a scrape waits."""
    body = b"503 Service Unavailable: this password check would take longer than a scrape waits\n"
    return Reply(503, (), body)


__all__ = [
    "ADDRESSES",
    "DENIED",
    "FAILURES_ALLOWED",
    "FORGIVE",
    "MAX_PASSWORD",
    "REMEMBERED",
    "BasicAuth",
    "check_seconds",
    "client_key",
    "cost_of",
    "decoy",
    "time_cost_4",
]
