"""Real children in the real /proc: the scanner's %CPU of a busy and a sleeping child
against the scheduler's own time, and ``read_facts`` of a child with an odd command line and
of a zombie."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tiptop.engine.scan.tasks import CLK_TCK, Facts, TaskScanner
from tiptop.errors import TaskGone
from tiptop.kernel.procfs import CMDLINE_READ, read_facts

#: Above the largest pid_max (2^22, proc(5) /proc/sys/kernel/pid_max): never a live pid.
NO_PID = 4194305


def _wait_cmdline(pid: int, part: bytes) -> None:
    """Until ``pid`` has exec'd (its cmdline holds ``part``)."""
    for _ in range(500):
        if part in Path(f"/proc/{pid}/cmdline").read_bytes():
            return
        time.sleep(0.01)


def test_real_child_cmdline_is_one_safe_line() -> None:
    """Arguments with a space, a newline and a byte that is not UTF-8: one line, the
    newline escaped, the byte shown as its escape (``tiptop.outside``)."""
    code = "import time; time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", code, "a b\nc", b"\xffz"])
    try:
        _wait_cmdline(child.pid, b"a b\nc")
        f = read_facts("/proc", child.pid, "python3")
        assert f.cmdline == f"{sys.executable} -c {code} a b\\nc \\xffz"
        assert (f.uid, f.user) == (os.getuid(), pwd.getpwuid(os.getuid()).pw_name)
    finally:
        child.kill()
        child.wait()


def test_real_child_cmdline_longer_than_one_read() -> None:
    """A command line longer than one read (``procfs.CMDLINE_READ``) is read whole, to
    its last byte; one of exactly that length too, whose full first read is followed by
    an empty one."""
    code = "import time; time.sleep(30)"
    argv = [sys.executable, "-c", code]
    for size in (3 * CMDLINE_READ + 123, CMDLINE_READ):
        # /proc/PID/cmdline holds each argument and its NUL: arguments of at most 60000
        # bytes (one may not exceed 32 pages: execve(2), "Limits on size of arguments").
        args: list[str] = []
        left = size - sum(len(a.encode()) + 1 for a in argv)
        while left > 0:
            n = min(60000, left) - 1
            args.append("x" * (n - 1) + "Z" if n > 0 else "")
            left -= n + 1
        child = subprocess.Popen([*argv, *args])
        try:
            _wait_cmdline(child.pid, args[-1].encode() + b"\0")
            assert len(Path(f"/proc/{child.pid}/cmdline").read_bytes()) == size
            f = read_facts("/proc", child.pid, "python3")
            assert f.cmdline == " ".join([*argv, *args])
        finally:
            child.kill()
            child.wait()


def test_zombie_and_vanished() -> None:
    """A zombie (exited, not reaped) still has its uid; its command line is empty, so it
    shows as ``[comm]``. Once reaped, or for a pid that cannot exist, ``TaskGone``."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    for _ in range(500):
        if Path(f"/proc/{child.pid}/stat").read_text().split(") ")[1][0] == "Z":
            break
        time.sleep(0.01)
    try:
        f = read_facts("/proc", child.pid, "python3")
        assert f == Facts(os.getuid(), pwd.getpwuid(os.getuid()).pw_name, "[python3]")
    finally:
        child.wait()
    with pytest.raises(TaskGone):
        read_facts("/proc", child.pid, "python3")
    with pytest.raises(TaskGone):
        read_facts("/proc", NO_PID, "x")


def on_cpu_seconds(pid: int) -> float:
    """CPU time of ``pid`` by a measure independent of /proc/PID/stat's ticks: the
    scheduler's on-CPU nanoseconds (``/proc/PID/schedstat`` field 1, sched-stats.rst);
    psutil's times where the kernel has no schedstat."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        import psutil

        c = psutil.Process(pid).cpu_times()
        return c.user + c.system


def test_real_busy_and_sleeping_children() -> None:
    """%CPU of a real busy child agrees with the scheduler's own on-CPU time over the same
    window (within a few points), whatever the load; a wrong clock tick (x10) or a wrong
    interval (the 0.6 s window taken as 1 s) would be 40+ points off."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        time.sleep(0.3)
        sc = TaskScanner()
        # The first scan examines every process (status, cmdline): with hundreds running
        # it reads the child's stat tens of ms later in the scan than the next scans do.
        # The window is taken between two scans that both only read stat files.
        sc.scan()
        c0, t0 = on_cpu_seconds(busy.pid), time.monotonic()
        sc.scan()
        time.sleep(0.6)
        # A loaded machine gives the child less: the window grows until it ran 0.3 s, so
        # that a wrong tick or interval stays far outside the margin below.
        while on_cpu_seconds(busy.pid) - c0 < 0.3 and time.monotonic() - t0 < 30:
            time.sleep(0.1)
        scan = sc.scan()
        c1, t1 = on_cpu_seconds(busy.pid), time.monotonic()
        got = {t.tid: t for t in scan.tasks}
        b = got[busy.pid]
        # The scans' own window is inside [t0, t1], and a few ms shorter.
        assert 0.6 <= scan.interval <= t1 - t0
        seen = 100 * (c1 - c0) / (t1 - t0)
        # utime/stime are whole ticks: +-1 tick per end of the window.
        tick = 100 * 2 / (CLK_TCK * scan.interval)
        assert abs(b.cpu_total - seen) <= tick + 3, (b.cpu_total, seen)
        assert b.cpu_total > 0 and seen * (t1 - t0) >= 30  # 0.3 s of the window's CPU
        assert b.cpu_total == pytest.approx(b.cpu_user + b.cpu_sys)
        assert got[sleeper.pid].cpu_total < 5
        assert got[sleeper.pid].name == "sleep" and got[sleeper.pid].cmdline == "sleep 30"
    finally:
        for p in (busy, sleeper):
            p.kill()
            p.wait()


def test_real_proc_sees_a_new_process_at_once() -> None:
    """On this machine's ``/proc``: the listing is kept while no PID is made, and a process
    started since shows at the next call (its fork made a PID)."""
    from tiptop.engine.scan.listing import ProcListing

    listing = ProcListing("/proc")
    first = listing.names()
    assert str(os.getpid()) in first
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert str(child.pid) in listing.names()
    finally:
        child.kill()
        child.wait()
    assert listing._usable is True
