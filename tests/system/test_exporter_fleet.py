"""``tiptop --serve`` under what a fleet's network does to it (issue 31), loopback only: a
thousand idle connections under ``ulimit -n 1024`` neither stop scrapes nor the exporter,
and are closed after a few seconds; 200 scrapes at once are all answered quickly; a port
in use is named in one line."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import TIPTOP
from tests.support.sockets import closed_by_peer
from tests.system.exporter_support import (
    burst,
    fd_count,
    hold_idle,
    raise_nofile,
    samples,
    scrape,
    serving,
    wait_for,
)
from tiptop.exporter.httpd import client_limit

#: Idle connections held open, and the exporter's ``ulimit -n`` (soft and hard) meanwhile.
IDLE, EXPORTER_NOFILE = 1000, 1024
#: Scrapes sent at once.
BURST = 200


def _timed_scrape(address: str) -> tuple[float, str]:
    t0 = time.monotonic()
    text = scrape(address, timeout=10)
    return time.monotonic() - t0, text


def test_a_thousand_idle_connections_neither_stop_scrapes_nor_the_exporter() -> None:
    why = raise_nofile(IDLE + 200)
    if why:
        pytest.skip(why)
    with serving("-S", "sched", "-d", "0.5", nofile=EXPORTER_NOFILE) as (proc, address):
        wait_for(address, lambda t: "tiptop_tasks_tracked" in t)
        idle = hold_idle(address, IDLE)
        try:
            took, text = _timed_scrape(address)
            sockets = fd_count(proc.pid, "socket")
            print(
                f"scrape with {IDLE} idle connections open: {took:.3f} s; exporter fds "
                f"{fd_count(proc.pid)} of {EXPORTER_NOFILE}, {sockets} sockets"
            )
            assert "tiptop_tasks_tracked" in text
            assert took < 1.0, took
            # The clients' slots (and the listening socket) and no more: the rest of the fds
            # stay the counters'.
            assert sockets <= client_limit(EXPORTER_NOFILE) + 1, sockets
            time.sleep(7)  # REQUEST_TIMEOUT (5 s) and then some: every idle one is closed
            still = sum(not closed_by_peer(s) for s in idle)
            assert still == 0, f"{still} idle connections still open after 7 s"
            assert proc.poll() is None
            before = samples(text)[("tiptop_refresh_interval_seconds", ())]
            took, text = _timed_scrape(address)
            assert took < 1.0, took
            tracked = samples(text)[("tiptop_tasks_tracked", ())]
            assert tracked > 10 and before > 0  # refreshes went on, counting tasks
        finally:
            for s in idle:
                s.close()
        assert proc.poll() is None


def test_200_scrapes_at_once_are_all_answered_quickly() -> None:
    why = raise_nofile(BURST + 100)
    if why:
        pytest.skip(why)
    with serving("-S", "sched", "-d", "0.5") as (proc, address):
        wait_for(address, lambda t: "tiptop_tasks_tracked" in t)
        took = sorted(burst(address, BURST))
        p50, p90 = took[len(took) // 2], took[int(len(took) * 0.9) - 1]
        print(f"{BURST} scrapes at once: median {p50:.3f} s, p90 {p90:.3f} s, max {took[-1]:.3f} s")
        assert p90 < 1.0, (p50, p90, took[-1])
        assert proc.poll() is None


def test_a_port_in_use_is_named() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        r = subprocess.run(
            [*TIPTOP, "--serve", f"127.0.0.1:{port}", "-S", "sched"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip().splitlines() == [
        f"tiptop: --serve 127.0.0.1:{port}: cannot listen: Address already in use"
    ]


def test_a_wrong_web_config_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    conf = tmp_path / "web.yml"
    conf.write_text("basic_auth_users: {alice: plain}\n")
    for argv, line in (
        (
            ["--serve", "127.0.0.1:0", "--web-config", str(conf)],
            f"tiptop: --web-config {conf}: basic_auth_users: alice: not a bcrypt hash "
            "($2a$, $2b$ or $2y$)",
        ),
        (
            ["--textfile", str(tmp_path / "m.prom"), "--web-config", str(conf)],
            "tiptop: --web-config: only with --serve",
        ),
    ):
        r = subprocess.run(
            [*TIPTOP, *argv, "-S", "sched"], capture_output=True, text=True, timeout=120
        )
        assert r.returncode == 2, r.stderr
        assert r.stderr.strip().splitlines() == [line]
