"""Batch mode end to end against the real kernel (skips until the sampler is present)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

import tiptop.sampler
from tests.helpers import nobody_command

pytestmark = pytest.mark.skipif(
    not hasattr(tiptop.sampler, "Sampler"), reason="tiptop.sampler.Sampler not implemented yet"
)
TIPTOP = [sys.executable, "-m", "tiptop"]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_three_iterations_structure() -> None:
    r = subprocess.run(
        [*TIPTOP, "-b", "-n", "3", "-d", "0.2", "-i", "--timestamp", "-S", "sched"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert lines[0].startswith("tiptop - up ")
    assert lines[2].startswith("delay: 0.20  idle: 1  threads: 0")
    head = lines.index("") + 1
    assert lines[head].startswith("timest   PID [")
    body = lines[head + 1 :]
    iters = [int(x.split()[0]) for x in body if x]
    assert sorted(set(iters)) == [0, 1, 2]
    assert body[-1] == "" and body[-2] == ""  # empty line after the last iteration


def test_head_closes_quietly() -> None:
    t0 = time.monotonic()
    r = subprocess.run(
        f"{sys.executable} -m tiptop -b -n 1000 -d 0.05 -S sched | head -3",
        shell=True,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert time.monotonic() - t0 < 1.0 + 1.0  # interpreter start-up allowance
    assert r.stderr == "" and len(r.stdout.splitlines()) == 3


def test_unprivileged_sees_only_own_rows(root_only: None) -> None:
    # uid 65534 with a world-readable copy of the dependencies (tests/helpers.py), since
    # this interpreter's site-packages may sit under a 0700 /root.
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        cmd, env = nobody_command(
            ["-m", "tiptop", "-b", "-n", "1", "-d", "0.2", "-i", "-U", "-S", "sched"]
        )
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env, cwd="/tmp")
        assert r.returncode == 0, r.stderr
        rows = [x for x in r.stdout.split("\n")[6:] if x.strip()]
        assert rows, r.stderr
        assert all(x.split()[1] == "nobody" for x in rows)
        assert str(sleeper.pid) not in [x.split()[0].rstrip("+-") for x in rows]
    finally:
        sleeper.kill()
        sleeper.wait()


def test_user_filter(root_only: None) -> None:
    r = subprocess.run(
        [*TIPTOP, "-b", "-n", "1", "-d", "0.2", "-i", "-U", "-u", "root", "-S", "sched"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    rows = [x for x in r.stdout.split("\n")[7:] if x.strip()]
    assert rows and all(x.split()[1] == "root" for x in rows)
    assert "watching uid 0 'root'" in r.stdout
    assert os.geteuid() == 0
