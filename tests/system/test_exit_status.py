"""Exit statuses as docs/tiptop.1 ("EXIT STATUS") gives them, from a real batch run
signalled as a user or a service manager would: SIGINT 130, SIGTERM 143; with ``-- CMD``,
the command's own status, or 143 when it outlives a second SIGTERM or 5 s (it is then
left running). The live view's SIGTERM is tests/system/test_cli_run.py's."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import TIPTOP
from tiptop.cli.ending import COMMAND_GRACE

#: A command that writes its pid to a file, then ignores SIGTERM for a minute.
STUBBORN = (
    "import os, signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
    "time.sleep(60)\n"
)


def started(*args: str) -> subprocess.Popen[str]:
    """``tiptop -b`` on the software-event screen, once it has printed a first refresh."""
    p = subprocess.Popen(
        [*TIPTOP, "-b", "-d", "0.2", "-S", "sched", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert p.stdout is not None
    while "PID" not in p.stdout.readline():  # the first block's header
        assert p.poll() is None, p.stderr.read() if p.stderr else ""
    return p


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_batch_signal_exit_status(sig: int, status: int) -> None:
    p = started("-i")
    p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    assert p.returncode == status, err
    assert "Traceback" not in err


def test_a_command_that_ends_on_sigterm_gives_its_status() -> None:
    p = started("--", sys.executable, "-c", "import time; time.sleep(60)")
    p.send_signal(signal.SIGTERM)  # passed on: the command dies of it, 128 + 15
    p.communicate(timeout=30)
    assert p.returncode == 143


@pytest.mark.parametrize("second", [False, True])
def test_a_command_ignoring_sigterm_is_left_after_5_s_or_a_second_one(
    tmp_path: Path, second: bool
) -> None:
    pidfile = tmp_path / "pid"
    p = started("--", sys.executable, "-c", STUBBORN, str(pidfile))
    while not pidfile.exists() or not pidfile.read_text():
        time.sleep(0.05)
    cmd = int(pidfile.read_text())
    try:
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        if second:
            time.sleep(0.5)
            p.send_signal(signal.SIGTERM)
        # wait(), not communicate(): the command left running holds the output pipes.
        p.wait(timeout=60)
        took = time.monotonic() - t0
        assert p.returncode == 143
        if second:
            assert took < COMMAND_GRACE - 1, took  # the second signal ended the wait
        else:
            assert took >= COMMAND_GRACE - 0.1, took
        os.kill(cmd, 0)  # left to its own fate: still running
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(cmd, signal.SIGKILL)
