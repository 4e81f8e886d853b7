"""The sampler on the real kernel around a task's start and end: counting from exec on a
spawned child, a task busy right up to its exit, and a task its parent reaps before we
look (its last interval from its counters)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from tests.support.builders import screen
from tests.system.scripted_child import SOFTWARE, only
from tiptop.cells import Status
from tiptop.engine.sampler import Sampler, SamplerConfig


def test_attach_spawned_counts_from_exec_only() -> None:
    """enable_on_exec: the forked child's work before execve is not counted, after is."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: wait, burn 0.4 s before exec (not counted), exec a 0.2 s burner
        try:
            os.close(w)
            os.read(r, 1)
            end = time.process_time() + 0.4
            while time.process_time() < end:
                pass
            prog = "import time\ne = time.process_time() + 0.2\nwhile time.process_time() < e: pass"
            os.execv(sys.executable, [sys.executable, "-c", prog])
        finally:
            os._exit(127)
    os.close(r)
    s = Sampler(SOFTWARE, SamplerConfig(only_pid=pid, sticky=True))
    try:
        s.attach_spawned(pid)
        os.write(w, b"g")
        os.close(w)
        s.start()
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # a zombie: still in /proc
        f = s.refresh()
        i = only(f, pid)
        assert f.dead[i]
        tc = f.values[i, 3]
        assert 0.2e9 <= tc < 0.2e9 + 0.25e9, tc  # the 0.4 s before exec is not in it
        assert s.fds_used == 0
    finally:
        s.close()
        os.waitpid(pid, 0)


def test_task_busy_until_exit_shows_its_last_interval_once() -> None:
    """A task (no sticky) that spins ~0.6 s right up to its exit between two refreshes
    1 s apart: its row appears once, dead, with that interval's task-clock and a %CPU
    from its zombie's final times that agrees with it; then it is gone, fds closed."""
    spin = "e = time.process_time() + 0.6\nwhile time.process_time() < e: pass"
    prog = f"import sys, time\nprint(flush=True)\nsys.stdin.readline()\n{spin}"
    p = subprocess.Popen(
        [sys.executable, "-c", prog], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert p.stdin is not None and p.stdout is not None
    s = Sampler(SOFTWARE, SamplerConfig(only_pid=p.pid))
    try:
        p.stdout.readline()  # up, about to block on stdin
        s.start()
        f = s.refresh()
        assert f.tid.tolist() == [p.pid] and not f.dead.any()
        t0 = time.monotonic()
        p.stdin.write(b"go\n")
        p.stdin.flush()
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)  # a zombie: not reaped yet
        time.sleep(max(0.0, 1.0 - (time.monotonic() - t0)))
        f = s.refresh()
        assert f.tid.tolist() == [p.pid], f.tid
        assert f.dead.tolist() == [True]
        cpu, tc = f.values[0, 0], f.values[0, 2] / 1e9
        assert 0.55 <= tc <= 0.75, tc  # the spin (and the exit) in this interval
        # %CPU (from /proc, clock ticks) and task-clock tell the same story, however
        # long the spin took on a loaded machine (margin: a few USER_HZ ticks).
        assert abs(cpu / 100 * f.interval - tc) <= 0.05, (cpu, f.interval, tc)
        assert s.fds_used == 0
        f = s.refresh()  # shown once: without sticky the dead row is not repeated
        assert len(f) == 0
    finally:
        s.close()
        p.kill()
        p.wait()


def test_task_reaped_by_its_parent_gets_its_cpu_from_its_counters() -> None:
    """A task its parent reaps at once (a shell's command, most short jobs) is gone from
    /proc before we look: its last interval's %CPU comes from its counters' on-CPU time
    (Δtime_enabled), not the stale previous value, and the sys/user split shows '?'."""
    spin = "e = time.process_time() + 0.6\nwhile time.process_time() < e: pass"
    worker = f"import sys, time\nprint(flush=True)\nsys.stdin.readline()\n{spin}"
    # The parent starts the worker, reports its pid, and reaps it the moment it exits;
    # the worker says when it is up, the parent when it has reaped it (no guessed sleeps).
    parent = (
        "import subprocess, sys\n"
        f"w = subprocess.Popen([sys.executable, '-c', {worker!r}], stdin=subprocess.PIPE)\n"
        "print(w.pid, flush=True)\n"
        "sys.stdin.readline(); w.stdin.write(b'go\\n'); w.stdin.flush(); w.wait()\n"
        "print('reaped', flush=True)\n"
        "sys.stdin.readline()\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", parent], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert p.stdin is not None and p.stdout is not None
    # The pid, and the worker's empty line once it is up (about to block on stdin), in
    # whichever order the two processes wrote them.
    first, second = (p.stdout.readline() for _ in range(2))
    pid = int(first.strip() or second)
    cpu_screen = screen(
        "cpu",
        counters={"TC": "task-clock"},
        columns=[
            (" %CPU", "%5.1f", "CPU_TOT"),
            (" %SYS", "%5.1f", "CPU_SYS"),
            ("  TC", "%6.3f", "delta(TC)/1e9"),
        ],
    )
    s = Sampler(cpu_screen, SamplerConfig(only_pid=pid))
    try:
        s.start()
        f = s.refresh()
        assert f.tid.tolist() == [pid] and not f.dead.any()
        p.stdin.write(b"go\n")
        p.stdin.flush()
        assert p.stdout.readline() == b"reaped\n"
        assert not os.path.exists(f"/proc/{pid}")  # reaped by its parent, unseen by us
        f = s.refresh()
        assert f.tid.tolist() == [pid] and f.dead.tolist() == [True]
        cpu, tc = f.values[0, 0], f.values[0, 2]
        assert 0.55 <= tc <= 0.75, tc
        # %CPU is the counters' on-CPU time over the interval, however long the spin
        # took on a loaded machine.
        assert f.status[0, 0] == Status.OK and cpu > 0, (cpu, f.status[0])
        assert abs(cpu / 100 * f.interval - tc) <= 0.05, (cpu, f.interval, tc)
        assert f.status[0, 1] == Status.UNREADABLE  # the sys/user split died with it
    finally:
        s.close()
        p.stdin.write(b"\n")
        p.stdin.close()
        p.wait()
