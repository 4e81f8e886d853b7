"""Batch mode end to end against the real kernel."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

from tests.helpers import nobody_command, run


def test_three_iterations_structure() -> None:
    r = run("-b", "-n", "3", "-d", "0.2", "-i", "--timestamp", "-S", "sched")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert lines[0].startswith("tiptop - up ")
    assert lines[2].startswith("delay: 0.20  idle: 1  threads: 0")
    head = lines.index("") + 1
    assert lines[head].startswith("timest   PID  [%CPU] ")
    body = lines[head + 1 :]
    iters = [int(x.split()[0]) for x in body if x]
    assert sorted(set(iters)) == [0, 1, 2]
    assert body[-1] == "" and body[-2] == ""  # empty line after the last iteration


#: ``-n 1000 -d 0.1``: a tiptop that did not stop at the closed pipe would run 100 s; one
#: that stops is done a refresh after start-up, seconds even on a loaded machine.
ENDLESS = "-b -n 1000 -d 0.1"


def test_head_closes_quietly() -> None:
    t0 = time.monotonic()
    r = subprocess.run(
        f"{sys.executable} -m tiptop {ENDLESS} -S sched | head -3",
        shell=True,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert time.monotonic() - t0 < 50  # half the run that ignored the closed pipe
    assert r.stderr == "" and len(r.stdout.splitlines()) == 3


#: The diagnostics a run may print besides its output: an event that cannot be opened
#: here (``tiptop: bus-cycles: ENOENT: ...``) or the fall back to the software screen.
DIAGNOSTIC = re.compile(
    r"tiptop: (\S+: E[A-Z]+: .+|screen '[^']+' cannot count here .+; starting on screen .+)"
)


def test_head_closes_quietly_on_the_default_screen() -> None:
    """``tiptop -b -n 1000 -d 0.1 | head -3`` as a user types it (the default screen,
    whose hardware events may be partly missing): done long before the 100 s the run
    would take (see ENDLESS), 3 lines, and nothing on stderr but one-line diagnostics (no
    traceback, no "Exception ignored" from a flush into the closed pipe)."""
    t0 = time.monotonic()
    r = subprocess.run(
        f"{sys.executable} -m tiptop {ENDLESS} | head -3",
        shell=True,
        capture_output=True,
        text=True,
        timeout=90,
    )
    took = time.monotonic() - t0
    assert took < 50, took
    assert len(r.stdout.splitlines()) == 3, r.stdout
    assert r.stdout.startswith("tiptop - up ")
    assert "Traceback" not in r.stderr and "Exception" not in r.stderr, r.stderr
    bad = [x for x in r.stderr.splitlines() if not DIAGNOSTIC.fullmatch(x)]
    assert bad == [], r.stderr


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
    r = run("-b", "-n", "1", "-d", "0.2", "-i", "-U", "-u", "root", "-S", "sched")
    rows = [x for x in r.stdout.split("\n")[7:] if x.strip()]
    assert rows and all(x.split()[1] == "root" for x in rows)
    assert "watching uid 0 'root'" in r.stdout
    assert os.geteuid() == 0
