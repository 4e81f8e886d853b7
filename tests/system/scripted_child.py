"""A child process the sampler tests drive line by line (fresh pages, CPU burns in new or
attach-time threads, a thread's exit), and the software-event screen they count it with."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import time

import numpy as np

from tests.support.builders import screen
from tiptop.frame import Frame

#: page-faults and task-clock: software events, counted on every kernel without a PMU.
SOFTWARE = screen(
    "sw",
    "software",
    counters={"PF": "page-faults", "TC": "task-clock"},
    columns=[
        (" %CPU", "%5.1f", "CPU_TOT"),
        ("   PF", "%6.0f", "delta(PF)"),
        ("   TC", "%8.0f", "delta(TC)"),
        ("  TOT", "%8.0f", "TC"),
    ],
)

CHILD = textwrap.dedent(
    """
    import mmap, os, queue, sys, threading, time
    keep = []
    def reaped(th):
        # join() returns at CLONE_CHILD_CLEARTID, before do_exit() hands the thread's
        # inherited counts to its parent (perf_event_exit_task); its /proc/self/task entry
        # goes later still (release_task), so once that is gone its counts are the parent's.
        th.join()
        while os.path.exists(f"/proc/self/task/{th.native_id}"):
            time.sleep(0.001)
    def burn(s):
        end = time.thread_time() + s
        while time.thread_time() < end:
            pass
    t1q = queue.Queue()
    t1done = queue.Queue()
    def t1():
        while True:
            cmd, s = t1q.get()
            if cmd == "spawn":
                th = threading.Thread(target=burn, args=(s,)); th.start(); reaped(th)
            else:
                burn(s)
                t1done.put(1)
                return
            t1done.put(1)
    T1 = threading.Thread(target=t1, name="t1"); T1.start()
    print("ready", flush=True)
    for line in sys.stdin:
        cmd, arg = line.split()
        if cmd == "pages":
            n = int(arg)
            m = mmap.mmap(-1, n * 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            m.madvise(mmap.MADV_NOHUGEPAGE)
            for i in range(0, n * 4096, 4096):
                m[i] = 1
            keep.append(m)
        elif cmd == "burn":
            th = threading.Thread(target=burn, args=(float(arg),)); th.start(); reaped(th)
        elif cmd in ("t1spawn", "t1exit"):
            t1q.put(("spawn" if cmd == "t1spawn" else "exit", float(arg))); t1done.get()
            if cmd == "t1exit":
                reaped(T1)
        print("done", flush=True)
    """
)


class Child:
    """A scripted child (the one above unless ``script`` is given) that prints ``ready``,
    then ``done`` after each command, driven line by line."""

    def __init__(self, script: str = CHILD) -> None:
        self.p = subprocess.Popen(
            [sys.executable, "-c", script],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.p.stdout.readline().strip() == "ready"  # type: ignore[union-attr]
        self.pid = self.p.pid

    def do(self, cmd: str) -> None:
        """Send one command (``pages N``, ``burn S``, ``t1spawn S``, ``t1exit S``) and wait
        until the child has done it."""
        self.p.stdin.write(cmd + "\n")  # type: ignore[union-attr]
        self.p.stdin.flush()  # type: ignore[union-attr]
        assert self.p.stdout.readline().strip() == "done"  # type: ignore[union-attr]

    def settle(self, timeout: float = 30) -> None:
        """Wait until every thread of the child sleeps (state ``S`` in its
        ``/proc/PID/task/TID/stat``, proc(5)): after ``ready`` or ``done`` it still runs on
        to its next read of stdin, later still on a loaded machine."""
        deadline = time.monotonic() + timeout
        while True:
            states = []
            for tid in os.listdir(f"/proc/{self.pid}/task"):
                path = f"/proc/{self.pid}/task/{tid}/stat"
                with contextlib.suppress(FileNotFoundError), open(path) as f:
                    states.append(f.read().rpartition(")")[2].split()[0])
            if states and all(st == "S" for st in states):
                return
            assert time.monotonic() < deadline, f"child {self.pid} still runs: {states}"
            time.sleep(0.005)

    def close(self) -> None:
        """Kill and reap the child."""
        self.p.kill()
        self.p.wait()


def only(frame: Frame, tid: int) -> int:
    """The index of ``tid``'s row in ``frame`` (there must be exactly one)."""
    (i,) = np.flatnonzero(frame.tid == tid)
    return int(i)
