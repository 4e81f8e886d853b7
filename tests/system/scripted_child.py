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
        """Wait until every thread of the child sleeps off its CPU: after ``ready`` or
        ``done`` it still runs on to its next read of stdin, later still on a loaded machine.

        Off its CPU, not only in state ``S``: a thread shows ``S`` from the moment it
        sets its state, before it leaves its CPU, and the time it ran since its last
        scheduler tick is charged to its process's CPU-time clock only when it leaves
        (``RunClocks`` in tiptop/engine/count/counters.py skips a process whose clock
        stood). Its ``wchan`` (proc(5)) names where it sleeps only once it is off its run
        queue (kernel/sched/core.c ``get_wchan()``), and reads ``0`` before. A kernel whose
        ``wchan`` names nothing (no kallsyms) leaves only the state: ``S`` for half a
        second, far longer than any thread takes to leave its CPU, does then."""
        start = time.monotonic()
        asleep_since = None
        while True:
            states = []
            for tid in os.listdir(f"/proc/{self.pid}/task"):
                with contextlib.suppress(FileNotFoundError):
                    states.append(_off_cpu_state(f"/proc/{self.pid}/task/{tid}"))
            if states and all(st == "S" for st in states):
                return
            now = time.monotonic()
            if not states or any(st not in ("S", "on-cpu") for st in states):
                asleep_since = None
            elif asleep_since is None:
                asleep_since = now
            elif now - asleep_since > 0.5:
                return
            assert now - start < timeout, f"child {self.pid} still runs: {states}"
            time.sleep(0.001)

    def close(self) -> None:
        """Kill and reap the child."""
        self.p.kill()
        self.p.wait()


def _off_cpu_state(task_dir: str) -> str:
    """A task's state (``stat``), or ``on-cpu`` while it is ``S`` but its ``wchan`` is
    still ``0`` (where the kernel has no ``wchan`` file: its state alone)."""
    with open(f"{task_dir}/stat") as f:
        state = f.read().rpartition(")")[2].split()[0]
    if state != "S":
        return state
    try:
        with open(f"{task_dir}/wchan") as f:
            return "S" if f.read().strip() not in ("", "0") else "on-cpu"
    except FileNotFoundError:
        return state


def only(frame: Frame, tid: int) -> int:
    """The index of ``tid``'s row in ``frame`` (there must be exactly one)."""
    (i,) = np.flatnonzero(frame.tid == tid)
    return int(i)
