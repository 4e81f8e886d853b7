"""What the hostile-task system tests share (issue 52): a run of tiptop measured from the
outside (its exit status, output, wall time, peak RSS and CPU time, from wait4(2)),
targets run as uid 65534, and files planted as that user. The attacks are those of
/work/shared/attacks/ (2026-11-29), kept bounded for a shared 2-core machine."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import REPO, TIPTOP

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
#: The peak RSS a run against a hostile task must stay under (issue 52, "Done when").
RSS_LIMIT_KB = 100 * 1024


def needs_root() -> None:
    """Skip unless root: the attacks are an unprivileged user's against root's tiptop."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv(1): the attacker runs as uid 65534")


@dataclass
class Run:
    """One tiptop run, measured."""

    rc: int
    out: str
    err: str
    wall: float
    maxrss_kb: int
    cpu: float

    def check_clean(self) -> None:
        """No traceback, memory within the bound."""
        assert "Traceback" not in self.err and "Error" not in self.err, self.err
        assert self.maxrss_kb < RSS_LIMIT_KB, f"peak RSS {self.maxrss_kb} kB"


#: Runs argv[2:] as its child and writes the child's PID, then its wait4(2) figures
#: (status, peak RSS in kB, CPU seconds), to the file argv[1]. A child forked straight from
#: the test would inherit the test's own peak RSS (the kernel keeps the high-water mark
#: of the memory an exec replaces), so a small interpreter forks it instead.
_WRAPPER = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
with open(sys.argv[1], "w") as f:
    f.write(f"{child.pid}\\n")
_pid, status, use = os.wait4(child.pid, 0)
with open(sys.argv[1], "a") as f:
    f.write(f"{status} {use.ru_maxrss} {use.ru_utime + use.ru_stime}\\n")
child.returncode = 0
"""


def run_measured(
    args: list[str],
    timeout: float = 60,
    term_after: float | None = None,
    env: dict[str, str] | None = None,
) -> Run:
    """``python -m tiptop args`` as root, measured; SIGTERM after ``term_after`` seconds
    when given, SIGKILL after ``timeout`` (then rc is -9)."""
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile("r") as figures,
    ):
        began = time.monotonic()
        wrapper = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WRAPPER, figures.name, *TIPTOP, *args],
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": REPO, **(env or {})},
        )
        while not figures.read(1) and wrapper.poll() is None:
            time.sleep(0.01)
        figures.seek(0)
        pid = int(figures.readline())
        timers = [threading.Timer(timeout, _signal, (pid, signal.SIGKILL))]
        if term_after is not None:
            timers.append(threading.Timer(term_after, _signal, (pid, signal.SIGTERM)))
        for t in timers:
            t.start()
        try:
            wrapper.wait()
        finally:
            for t in timers:
                t.cancel()
        wall = time.monotonic() - began
        status, maxrss, cpu = figures.readline().split()
        out.seek(0)
        err.seek(0)
        return Run(
            os.waitstatus_to_exitcode(int(status)),
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
            wall,
            int(maxrss),
            float(cpu),
        )


def run_beside(attack: Callable[[threading.Event], None], args: list[str], timeout: float) -> Run:
    """:func:`run_measured` of ``args`` while ``attack(done)`` runs in a thread, until the
    run ends and ``done`` is set."""
    done = threading.Event()
    thread = threading.Thread(target=attack, args=(done,))
    thread.start()
    try:
        return run_measured(args, timeout=timeout)
    finally:
        done.set()
        thread.join()


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


@contextmanager
def shared_dir(prefix: str) -> Iterator[Path]:
    """A sticky directory everyone may write (as /tmp), removed afterwards."""
    where = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(where, 0o1777)
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    """``argv`` run as uid 65534 (a file it makes is that user's)."""
    return subprocess.run([*NOBODY, *argv], check=True, capture_output=True, text=True, timeout=60)


class Target:
    """A running program (``NOBODY + argv``: uid 65534's): its PID, the first line it
    prints, and the lines after it."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.pid = int(self.proc.stdout.readline())
        self.stdout = self.proc.stdout

    def stop(self) -> None:
        """Kill it, and remove a JIT map planted for it."""
        self.proc.kill()
        self.proc.wait()
        with contextlib.suppress(OSError):
            os.unlink(f"/tmp/perf-{self.pid}.map")


def hotcold(where: Path) -> Path:
    """tests/data/hotcold.c built in ``where`` (which uid 65534 can reach)."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc)")
    program = where / "hotcold"
    source = Path(REPO) / "tests" / "data" / "hotcold.c"
    subprocess.run(["cc", "-O1", "-o", str(program), str(source)], check=True)
    return program
