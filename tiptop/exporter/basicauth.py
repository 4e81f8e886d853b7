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
* the checks each client address asks for are counted (an IPv6 client by its /64, which
  one host may hold whole), those turned away for want of room included, one forgiven
  every :data:`FORGIVE` seconds: a check waits behind those of addresses that asked for
  fewer (a scraper, which asks once, goes first; a client that asks again and again, in
  parallel or not, falls behind); failed checks are counted the same way, and past
  :data:`FAILURES_ALLOWED` an address gets 429 with ``Retry-After`` for any credential not
  remembered. The same credential again while its check is pending waits behind every
  other;
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
from dataclasses import field

import bcrypt

from tiptop.exporter.httpd import RESPONSE_TIMEOUT, Deferred, Reply, Request
from tiptop.readonly import mutable

#: bcrypt reads at most this many bytes of a password (its key schedule, Provos and
#: Mazieres 1999); a longer one is refused.
MAX_PASSWORD = 72
#: Credentials remembered by digest: accepted ones, refused ones.
REMEMBERED = 64
REMEMBERED_REFUSED = 4096
#: Client addresses whose failures are counted (the least recently seen forgotten first).
ADDRESSES = 4096
#: Failed checks an address may have before it is answered 429; one is forgiven every
#: FORGIVE seconds, as is one check asked for.
FAILURES_ALLOWED = 10
FORGIVE = 5.0
#: The priority of a check of a credential whose check is pending already: after all others.
REPEAT = 1 << 30

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


@mutable
class _Address:
    """One client address, as of ``at``: the checks it asked for and those that failed,
    each less those forgiven."""

    asked: float = 0.0
    failures: float = 0.0
    at: float = 0.0


@mutable
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
    _addresses: OrderedDict[str, _Address] = field(default_factory=OrderedDict)
    #: The checks waiting or running, by credential (the same one again is a repeat).
    _pending: dict[bytes, _Attempt] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._decoy = decoy(max(map(cost_of, self.users.values()), default=10))

    def gate(self, request: Request, handler: Callable[[Request], Reply]) -> Reply | Deferred:
        """``handler``'s reply when the request's ``Authorization`` header names a user and
        its password, 401 when not, 429 when its address failed too often, 503 when the
        check would outlast a scrape; a check not known yet is deferred to a checker
        thread (:meth:`_check`)."""
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
        attempt = _Attempt(name, decoded, hashed, digest, client_key(request.client))
        priority = self._admit(attempt)
        if isinstance(priority, Reply):
            return priority
        return Deferred(
            lambda: self._check(attempt, request, handler),
            priority,
            lambda: self._settle(attempt, None),
        )

    def _admit(self, attempt: _Attempt) -> int | Reply:
        """The priority of ``attempt``'s check: how many its address asked for lately,
        those turned away for want of room included (a scraper asks once; a client that
        asks again and again, in parallel or not, falls behind), or 429 when the address
        failed too often. The same credential again while its check is pending waits
        behind every other (:data:`REPEAT`): its verdict will be remembered."""
        with self._lock:
            address = self._address(attempt.address)
            if address.failures >= FAILURES_ALLOWED:
                return _too_many(address.failures)
            if attempt.digest in self._pending:
                return REPEAT
            self._pending[attempt.digest] = attempt
            attempt.counted = True
            address.asked += 1
            return math.ceil(address.asked) - 1

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
        checked = ok is None
        if ok is None:
            password = attempt.decoded.partition(b":")[2]
            ok = bcrypt.checkpw(password, attempt.hashed) and attempt.name in self.users
            self._remember(attempt.digest, ok)
        self._settle(attempt, ok if checked else None)
        return handler(request) if ok else DENIED

    def _settle(self, attempt: _Attempt, ok: bool | None) -> None:
        """``attempt``'s check done (``ok``: bcrypt's verdict; None when bcrypt did not run:
        a verdict found remembered, or a check dropped before it ran): no longer pending;
        a refusal is a failure of its address."""
        with self._lock:
            if attempt.counted:
                attempt.counted = False
                if self._pending.get(attempt.digest) is attempt:
                    del self._pending[attempt.digest]
            if ok is False:
                self._address(attempt.address).failures += 1

    def _address(self, key: str) -> _Address:
        """The record of the address ``key`` as of now: what was forgiven taken off (under
        the lock); the least recently seen address is forgotten past :data:`ADDRESSES`."""
        now = self.clock()
        address = self._addresses.get(key)
        if address is None:
            address = self._addresses[key] = _Address(at=now)
            if len(self._addresses) > ADDRESSES:
                self._addresses.popitem(last=False)
        else:
            self._addresses.move_to_end(key)
            forgiven = (now - address.at) / FORGIVE
            address.asked = max(address.asked - forgiven, 0.0)
            address.failures = max(address.failures - forgiven, 0.0)
        address.at = now
        return address

    def _remember(self, digest: bytes, ok: bool) -> None:
        """A check's verdict kept."""
        with self._lock:
            kept, bound = (
                (self._accepted, REMEMBERED) if ok else (self._refused, REMEMBERED_REFUSED)
            )
            kept[digest] = None
            if len(kept) > bound:
                kept.popitem(last=False)


@mutable
class _Attempt:
    """A credential to check: the user's name, ``user:password`` as sent, the hash it is
    checked against (the decoy for an unknown user), their digest, the client's address,
    and whether it is counted as pending for that address (not a repeat of one pending)."""

    name: str
    decoded: bytes
    hashed: bytes
    digest: bytes
    address: str
    counted: bool = False


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


def _too_many(failures: float) -> Reply:
    """429 (RFC 6585 4), with the seconds until the address may try again."""
    wait = math.ceil((failures - FAILURES_ALLOWED + 1) * FORGIVE)
    body = b"429 Too Many Requests: too many failed passwords from this address\n"
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
    "REPEAT",
    "BasicAuth",
    "check_seconds",
    "client_key",
    "cost_of",
    "decoy",
    "time_cost_4",
]
