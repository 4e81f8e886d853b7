"""Basic authentication under hostile clients (tiptop/exporter/basicauth.py, issue 52 item
6): no bcrypt check on the serving thread, verdicts remembered, failures limited per
client address, unknown users checked at the users' cost, over-long passwords 401, a check
no scrape can wait for not started. The gate is called as the server calls it; a
:class:`~tiptop.exporter.httpd.Deferred` is what the server would run on a checker thread."""

from __future__ import annotations

import base64
import time

import bcrypt
import pytest

from tiptop.exporter import basicauth
from tiptop.exporter.basicauth import (
    DENIED,
    FAILURES_ALLOWED,
    FORGIVE,
    BasicAuth,
    client_key,
    cost_of,
    decoy,
)
from tiptop.exporter.httpd import Deferred, Reply, Request

HASH = bcrypt.hashpw(b"secret", bcrypt.gensalt(4))
OK = Reply(200, (), b"metrics")


def request(user: str | bytes, password: str | bytes, client: str = "192.0.2.1") -> Request:
    raw = (user if isinstance(user, bytes) else user.encode()) + b":"
    raw += password if isinstance(password, bytes) else password.encode()
    header = "Basic " + base64.b64encode(raw).decode()
    return Request("GET", "/metrics", {"authorization": header}, client)


def answer(auth: BasicAuth, req: Request) -> tuple[Reply, bool]:
    """The reply to ``req`` and whether a check had to run for it (deferred)."""
    got = auth.gate(req, lambda r: OK)
    if isinstance(got, Deferred):
        return got.work(), True
    return got, False


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_check_is_deferred_once_and_its_verdict_remembered() -> None:
    auth = BasicAuth({"prom": HASH})
    assert answer(auth, request("prom", "secret")) == (OK, True)
    assert answer(auth, request("prom", "secret")) == (OK, False)  # no bcrypt again
    assert answer(auth, request("prom", "wrong")) == (DENIED, True)
    # A wrong password repeated costs nothing more (the flood repeated one).
    assert answer(auth, request("prom", "wrong")) == (DENIED, False)
    assert answer(auth, request("nobody", "secret")) == (DENIED, True)
    assert answer(auth, request("nobody", "secret")) == (DENIED, False)


@pytest.mark.parametrize(
    "header",
    [
        "",
        "Bearer x",
        "Basic",
        "Basic !!!",
        "Basic " + base64.b64encode(b"no colon").decode(),
        # Over bcrypt's 72 bytes: bcrypt 5 raises ValueError, which was answered 500.
        "Basic " + base64.b64encode(b"prom:" + b"a" * 73).decode(),
        "Basic " + base64.b64encode(b"prom:secret" + b"Z" * 70).decode(),
    ],
)
def test_what_is_not_a_credential_bcrypt_can_check_is_401_at_once(header: str) -> None:
    auth = BasicAuth({"prom": HASH})
    got = auth.gate(Request("GET", "/", {"authorization": header}, "192.0.2.1"), lambda r: OK)
    assert got is DENIED


def test_odd_bytes_in_a_credential_are_checked_and_refused() -> None:
    auth = BasicAuth({"prom": HASH})
    for user, password in ((b"prom", b"secret\0x"), (b"\xffprom", b"secret"), (b"prom", b"")):
        assert answer(auth, request(user, password)) == (DENIED, True)


def test_failures_are_limited_per_address_and_forgiven_with_time() -> None:
    clock = Clock()
    auth = BasicAuth({"prom": HASH}, clock=clock)
    asked = [auth.gate(request("prom", f"guess{i}"), lambda r: OK) for i in range(FAILURES_ALLOWED)]
    # Checks asked for at once from one address are served in turn with other addresses'
    # (the more it has pending, the later), and nothing is held against it yet.
    assert [d.priority for d in asked if isinstance(d, Deferred)] == list(range(FAILURES_ALLOWED))
    other = auth.gate(request("prom", "another", "192.0.2.2"), lambda r: OK)
    assert isinstance(other, Deferred) and other.priority == 0
    assert all(d.work() is DENIED for d in asked if isinstance(d, Deferred))
    refused = auth.gate(request("prom", "guess-more"), lambda r: OK)
    assert isinstance(refused, Reply) and refused.status == 429
    assert ("Retry-After", str(int(FORGIVE))) in refused.headers
    # Even the right password waits: it is not known to be right without a check.
    held = auth.gate(request("prom", "secret"), lambda r: OK)
    assert isinstance(held, Reply) and held.status == 429
    clock.now += FORGIVE
    again = auth.gate(request("prom", "secret"), lambda r: OK)
    assert isinstance(again, Deferred) and again.priority == FAILURES_ALLOWED - 1
    assert again.work() == OK
    # A remembered credential passes whatever its address did.
    for i in range(3 * FAILURES_ALLOWED):
        auth.gate(request("prom", f"again{i}"), lambda r: OK)
    assert answer(auth, request("prom", "secret")) == (OK, False)


def test_a_check_turned_away_counts_as_asked_but_is_no_failure() -> None:
    """A check that finds no room in the queue (or whose client left) is dropped: it is no
    longer pending (asking again is not a repeat) and no failure, but it was asked for, so
    a client that asks again and again falls behind one that asked once."""
    auth = BasicAuth({"prom": HASH})
    first = auth.gate(request("prom", "secret"), lambda r: OK)
    assert isinstance(first, Deferred) and first.priority == 0 and first.dropped is not None
    second = auth.gate(request("prom", "other"), lambda r: OK)
    assert isinstance(second, Deferred) and second.priority == 1
    assert second.dropped is not None
    first.dropped()
    second.dropped()
    retry = auth.gate(request("prom", "secret"), lambda r: OK)
    assert isinstance(retry, Deferred) and retry.priority == 2  # not a repeat: behind others
    scraper = auth.gate(request("prom", "secret2", "192.0.2.9"), lambda r: OK)
    assert isinstance(scraper, Deferred) and scraper.priority == 0
    assert auth._address(client_key("192.0.2.1")).failures == 0


def test_a_credential_asked_again_while_its_check_is_on_its_way_counts_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same wrong password from a hundred clients at once (the attack's flood) is
    one check asked for: the repeats wait behind every other check and find its verdict."""
    auth = BasicAuth({"prom": HASH})
    first = auth.gate(request("prom", "wrong"), lambda r: OK)
    repeats = [auth.gate(request("prom", "wrong"), lambda r: OK) for _ in range(50)]
    assert isinstance(first, Deferred) and first.priority == 0
    assert {r.priority for r in repeats if isinstance(r, Deferred)} == {basicauth.REPEAT}
    assert first.work() is DENIED
    assert auth._address(client_key("192.0.2.1")).failures == pytest.approx(1, abs=0.01)
    checked = []
    real = basicauth.bcrypt.checkpw

    def checkpw(password: bytes, hashed: bytes) -> bool:
        checked.append(password)
        return real(password, hashed)

    monkeypatch.setattr(basicauth.bcrypt, "checkpw", checkpw)
    assert all(r.work() is DENIED for r in repeats if isinstance(r, Deferred))
    assert checked == []  # each found the first one's verdict
    # The scraper's right password, from the same address, is not held back.
    assert answer(auth, request("prom", "secret")) == (OK, True)


def test_addresses_are_counted_as_one_host_holds_them() -> None:
    assert client_key("192.0.2.7") == "192.0.2.7"
    assert client_key("::ffff:192.0.2.7") == "192.0.2.7"
    assert client_key("2001:db8:1:2:3:4:5:6") == client_key("2001:db8:1:2:ffff::1")
    assert client_key("2001:db8:1:2::1") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")


def test_an_unknown_user_costs_what_a_known_one_does() -> None:
    """The decoy an unknown user is checked against has the users' cost (exporter-toolkit
    used a fixed cost 10: 63 ms against 247 ms for a cost-12 user told who exists)."""
    cost_11 = bcrypt.hashpw(b"secret", bcrypt.gensalt(11))
    auth = BasicAuth({"prom": cost_11})
    assert cost_of(auth._decoy) == 11
    assert not bcrypt.checkpw(b"", decoy(4))  # no password matches a decoy

    def took(user: str) -> float:
        best = float("inf")
        for i in range(3):
            got = auth.gate(request(user, f"wrong{user}{i}", f"192.0.2.{i}"), lambda r: OK)
            assert isinstance(got, Deferred)
            t0 = time.thread_time()  # CPU time: what another load on the machine leaves
            assert got.work() is DENIED
            best = min(best, time.thread_time() - t0)
        return best

    known, unknown = took("prom"), took("nosuchuser")
    print(f"wrong password, cost 11: known user {known:.3f} s, unknown {unknown:.3f} s of CPU")
    assert 0.6 < unknown / known < 1.6  # a fixed cost-10 decoy: 0.5


def test_a_check_no_scrape_can_wait_for_is_not_started() -> None:
    """A cost-31 hash held the server for days with one request; now the check is not
    started (503), and other users are served."""
    slow = HASH.replace(b"$04$", b"$31$")
    auth = BasicAuth({"slow": slow, "prom": HASH}, at_cost_4=basicauth.time_cost_4())
    got = auth.gate(request("slow", "anything"), lambda r: OK)
    assert isinstance(got, Reply) and got.status == 503
    # Unknown users are checked at the highest cost: refused the same way.
    unknown = auth.gate(request("nosuchuser", "x"), lambda r: OK)
    assert isinstance(unknown, Reply) and unknown.status == 503
    assert answer(auth, request("prom", "secret")) == (OK, True)
