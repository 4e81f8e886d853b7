"""``--check`` and ``--list-screens`` as an unprivileged user: kernel-only software events
(context switches, migrations) are reported as not countable instead of "runs here", since
user-only counting would always read 0 for them (kernel/events/core.c perf_exclude_event())."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from tests.helpers import TIPTOP, nobody_command
from tiptop.host import Host


def _as_nobody(*args: str) -> subprocess.CompletedProcess[str]:
    cmd, env = nobody_command(["-m", "tiptop", *args])
    return subprocess.run(cmd, env=env, capture_output=True, text=True, cwd="/tmp", timeout=60)


def test_sched_screen_status_names_kernel_only_events(root_only: None) -> None:
    if Host.read().paranoid != 2:
        pytest.skip(f"expects perf_event_paranoid 2, found {Host.read().paranoid}")
    r = _as_nobody("--list-screens")
    assert r.returncode == 0, r.stderr
    (line,) = [x for x in r.stdout.splitlines() if "'sched'" in x]
    assert line.endswith(
        "[2 of 4 counters here; CS: kernel-only event: needs root, CAP_PERFMON or "
        "perf_event_paranoid < 2 (it is 2)]"
    ), line
    r = _as_nobody("--check")
    assert r.returncode == 0, r.stderr
    (advice,) = [x for x in r.stdout.splitlines() if x.startswith("to get more: ")]
    assert "run as root (or with CAP_PERFMON) to watch every task" in advice
    assert "perf_event_paranoid=1 allows -K" in advice


def test_sched_screen_runs_here_for_root(root_only: None) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "tiptop", "--list-screens"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    (line,) = [x for x in r.stdout.splitlines() if "'sched'" in x]
    assert line.endswith("[runs here]"), line


def test_check_says_when_the_fd_limit_limits_counting() -> None:
    """Under ``ulimit -n 64`` the reserve shrinks (46-ish fds stay for counters, not 0)
    and --check says the limit is what keeps tasks uncounted, with the limit to ask for."""

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    r = subprocess.run(
        [*TIPTOP, "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=low_limit,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0, r.stderr
    (room,) = [x for x in r.stdout.splitlines() if x.startswith("fds for counters:")]
    budget = int(room.split()[3].rstrip(","))
    assert 30 <= budget <= 56, room  # 64 less a reserve of 8 less what Python holds open
    # Each counted task takes 4 events' fds and a pidfd, given up when fds run short.
    assert f"room for {budget // 5} tasks of 4 events and a pidfd each, {budget // 4} " in room
    assert "the fd limit is what limits counting here" in r.stdout
