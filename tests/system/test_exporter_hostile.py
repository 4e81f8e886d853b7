"""``tiptop --serve`` against the anonymous clients and the files of the 2026-11-29 attack
(issue 52 item 6; /work/shared/attacks/webconfig_*.sh, tools/exp_tls_attack.py), loopback
only:

* 100 clients sending wrong passwords (the same one from the scraper's own address, a new
  one each time from 100 other addresses, unknown users): scrapes with the right password
  keep p90 < 1 s (it was 7.0 s, bcrypt ran on the server's thread);
* 1,000 idle TCP connections against the TLS port: >= 95% of TLS scrapes succeed (53 of
  74 failed with 300: scrapers were replaced mid-handshake);
* each wrong ``--web-config`` is one line and exit code 2, a FIFO without a hang.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import time
from pathlib import Path

import bcrypt
import pytest

from tests.helpers import TIPTOP
from tests.support.floods import (
    AuthFlood,
    IdleFlood,
    basic,
    client_tls,
    loopback_sources,
    scrape_for,
)
from tests.system.exporter_support import raise_nofile, serving

pytest.importorskip("cryptography.x509", reason="needs cryptography (test extra)")
from tests.support.certs import make_certs

#: Seconds each flood lasts while the scraper scrapes every 0.25 s.
FLOOD_SECONDS = 10
RIGHT = basic("prom", "secret")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Certificates and web configurations: ``auth-10.yml`` (a cost-10 hash, as the
    attack's), ``tls-auth-4.yml`` (TLS, a cost-4 hash)."""
    where = make_certs(tmp_path_factory.mktemp("web"))
    tls = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
    for cost, name, head in ((10, "auth-10.yml", ""), (4, "tls-auth-4.yml", tls)):
        hashed = bcrypt.hashpw(b"secret", bcrypt.gensalt(cost)).decode()
        (where / name).write_text(f"{head}basic_auth_users:\n  prom: '{hashed}'\n")
    return where


#: Numbers for the passwords and user names no one has tried before.
GUESSES = itertools.count()


def _a_new_wrong_password() -> bytes:
    return basic("prom", f"guess{next(GUESSES)}")


def _an_unknown_user() -> bytes:
    return basic(f"user{next(GUESSES)}", "secret")


FLOODS = {
    "the same wrong password from the scraper's address": lambda port: AuthFlood(
        port, 100, lambda: basic("prom", "wrong")
    ),
    "a new wrong password each time from 100 other addresses": lambda port: AuthFlood(
        port, 100, _a_new_wrong_password, loopback_sources(100)
    ),
    "unknown users from 100 other addresses": lambda port: AuthFlood(
        port, 100, _an_unknown_user, loopback_sources(100)
    ),
}


@pytest.mark.parametrize("flood", list(FLOODS))
def test_scrapes_keep_their_latency_under_100_clients_sending_wrong_passwords(
    folder: Path, flood: str
) -> None:
    with serving("--web-config", str(folder / "auth-10.yml"), "-S", "sched", "-d", "0.5") as (
        proc,
        address,
    ):
        port = int(address.rsplit(":", 1)[1])
        time.sleep(2)  # past the first refresh, without a scrape that would be remembered
        attack = FLOODS[flood](port)
        attack.start()
        try:
            seen = scrape_for(port, FLOOD_SECONDS, RIGHT)
        finally:
            attack.stop()
        print(f"{flood}: {attack.opened} attacker requests {dict(attack.statuses)}")
        print(f"  scrapes with the right password: {seen.summary()}")
        assert proc.poll() is None, died(proc)
        assert seen.ok >= 0.95, seen.summary()
        assert seen.p90() < 1.0, seen.summary()
        assert attack.opened > 200  # the flood flooded


def died(proc: subprocess.Popen[str]) -> str:
    """What an exporter that ended said last."""
    assert proc.stderr is not None
    return f"the exporter ended ({proc.returncode}): {proc.stderr.read()[-2000:]}"


def test_tls_scrapes_get_through_1000_idle_connections(folder: Path) -> None:
    why = raise_nofile(1000 + 200)
    if why:
        pytest.skip(why)
    conf = str(folder / "tls-auth-4.yml")
    with serving("--web-config", conf, "-S", "sched", "-d", "0.5") as (proc, address):
        port = int(address.rsplit(":", 1)[1])
        time.sleep(1)
        idle = IdleFlood(port, 1000)
        idle.start()
        try:
            seen = scrape_for(port, FLOOD_SECONDS, RIGHT, client_tls())
        finally:
            idle.stop()
        print(f"1000 idle connections ({idle.opened} made): TLS scrapes {seen.summary()}")
        assert proc.poll() is None, died(proc)
        assert seen.ok >= 0.95, seen.summary()
        assert seen.p90() < 1.0, seen.summary()


def _start(folder: Path, name: str) -> subprocess.CompletedProcess[str]:
    argv = ["--serve", "127.0.0.1:0", "--web-config", name, "-S", "sched", "-d", "0.2", "-n", "1"]
    return subprocess.run([*TIPTOP, *argv], cwd=folder, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        (
            "bad-type.yml",
            "  client_ca_file: 5\n",
            "tls_server_config: client_ca_file: not a file name",
        ),
        ("bad-minver.yml", "  min_version: [TLS12]\n", "tls_server_config: min_version (a list)"),
        ("bad-authtype.yml", "  client_auth_type: {a: 1}\n", "tls_server_config: client_auth_type"),
        (
            "min-gt-max.yml",
            "  min_version: TLS13\n  max_version: TLS12\n",
            "tls_server_config: min_version TLS13 is above max_version TLS12",
        ),
        ("fifo-cert.yml", None, "tls_server_config: cert_file fifo.pem: not a regular file"),
        ("fifo.yml", None, "not a regular file (a FIFO): not read"),
        ("nulls.yml", None, "tls_server_config: empty"),
    ],
)
def test_a_wrong_web_config_is_one_line_and_rc_2_at_once(
    folder: Path, name: str, text: str | None, line: str
) -> None:
    """webconfig_startup.sh's files that ended in a traceback, hung, or started."""
    tls = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
    path = folder / name
    if name == "fifo.yml" and not path.exists():
        os.mkfifo(path)
    elif name == "fifo-cert.yml":
        if not (folder / "fifo.pem").exists():
            os.mkfifo(folder / "fifo.pem")
        path.write_text("tls_server_config:\n  cert_file: fifo.pem\n  key_file: server.key\n")
    elif name == "nulls.yml":
        path.write_text("tls_server_config: null\nbasic_auth_users: null\n")
    else:
        path.write_text(tls + (text or ""))
    t0 = time.monotonic()
    r = _start(folder, name)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith(f"tiptop: --web-config {name}: {line}"), r.stderr
    assert time.monotonic() - t0 < 30  # not a hang (start-up is a few seconds)
