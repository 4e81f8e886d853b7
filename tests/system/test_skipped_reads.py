"""The skipped-read path on the real kernel: a task whose counters say it did not run keeps
its facts without a new ``/proc/PID/stat`` read, and is right again the moment it runs
(its %CPU and counts after many refreshes of sleep; a new name within one refresh); a
process whose CPU-time clock stands has its groups left unread, and loses nothing."""

from __future__ import annotations

import dataclasses
import textwrap
import time
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from tests.system.scripted_child import Child
from tiptop.cells import Status
from tiptop.engine.sampler import SWEEP, Sampler, SamplerConfig
from tiptop.frame import Frame
from tiptop.host import Host
from tiptop.kernel.attr import Attr
from tiptop.kernel.backend import Group
from tiptop.kernel.group import PerfBackend
from tiptop.kernel.procfs import Stat, process_cpu_ns
from tiptop.screens.model import ColumnSpec, CounterSpec, NamedEvent, ScreenSpec

CHILD = textwrap.dedent(
    """
    import ctypes, os, sys, time
    libc = ctypes.CDLL(None, use_errno=True)
    print("ready", flush=True)
    for line in sys.stdin:
        cmd, arg = line.split()
        if cmd == "spin":
            end = time.thread_time() + float(arg)
            while time.thread_time() < end:
                pass
        elif cmd == "name":
            libc.prctl(15, arg.encode(), 0, 0, 0)  # PR_SET_NAME, prctl(2)
        elif cmd == "threads":
            import threading
            for _ in range(int(arg)):
                threading.Thread(target=time.sleep, args=(1000,), daemon=True).start()
        elif cmd == "exec":
            print("done", flush=True)
            os.execvp(arg, [arg, "1000"])
        elif cmd == "texec":  # a thread that does not lead the process execs a spinner
            import threading
            print("done", flush=True)
            spin = [sys.executable, "-c", "while 1: pass"]
            threading.Thread(target=os.execv, args=(spin[0], spin)).start()
            time.sleep(1000)
        print("done", flush=True)
    """
)


def screen() -> ScreenSpec:
    return ScreenSpec(
        "sw",
        "software",
        counters=(CounterSpec("TC", NamedEvent("task-clock"), "task-clock"),),
        columns=(
            ColumnSpec(" %CPU", "%5.1f", "CPU_TOT"),
            ColumnSpec("   TC", "%8.0f", "delta(TC)"),
        ),
    )


@pytest.fixture
def child() -> Iterator[Child]:
    c = Child(CHILD)
    yield c
    c.p.kill()
    c.p.wait()


class CountingReads:
    """Wraps the scanner's stat reader to count reads of one pid's stat file."""

    def __init__(self, s: Sampler, pid: int) -> None:
        self.inner = s._scanner._read_stat
        self.pid = pid
        self.reads = 0
        s._scanner._read_stat = self

    def __call__(self, path: str) -> Stat:
        if path.split("/")[-2] == str(self.pid):
            self.reads += 1
        return self.inner(path)


class ReadsSeen:
    """The real backend, keeping the leader fds its one call a refresh reads and the pids
    whose CPU-time clocks it reads."""

    def __init__(self) -> None:
        self.real = PerfBackend()
        self.fds: list[int] = []
        self.pids: list[list[int]] = []

    def open_group(self, tid: int, attrs: Sequence[Attr]) -> Group:
        return self.real.open_group(tid, attrs)

    def read_leaders(self, fds: Sequence[int], nbytes: int) -> list[bytes]:
        self.fds += fds
        return self.real.read_leaders(fds, nbytes)

    def open_pidfd(self, tid: int, thread: bool) -> int | None:
        return self.real.open_pidfd(tid, thread)

    def run_times(self, pids: Sequence[int]) -> list[int]:
        self.pids.append(list(pids))
        return self.real.run_times(pids)

    def open_from(self, cpu: int | None) -> None:
        self.real.open_from(cpu)


def leaders(s: Sampler) -> set[int]:
    """The leader fds of every group the sampler holds open."""
    return {u.group.fds[0] for st in s._attacher._counters.values() for u in st.units}


def row(f: Frame, pid: int) -> int:
    (i,) = np.flatnonzero(f.tid == pid)
    return int(i)


def test_wakes_after_many_sleeping_refreshes_with_the_right_cpu(child: Child) -> None:
    s = Sampler(screen(), SamplerConfig(only_pid=child.pid))
    try:
        s.start()
        child.settle()  # asleep in read(), whatever the machine's load
        s.refresh()
        reads = CountingReads(s, child.pid)
        for _ in range(6):  # asleep in read(): no stat read, 0 %CPU, 0 task-clock
            time.sleep(0.05)
            f = s.refresh()
            i = row(f, child.pid)
            assert f.values[i].tolist() == [0.0, 0.0]
            assert f.status[i].tolist() == [Status.OK, Status.OK]
        assert reads.reads <= 1  # at most the sweep's one look in 16 refreshes (not 6)
        reads.reads = 0
        t0 = time.monotonic()
        child.do("spin 0.4")
        f = s.refresh()
        wall = time.monotonic() - t0
        i = row(f, child.pid)
        assert reads.reads == 1  # it ran: read again at once
        # task-clock (ns): the 0.4 s of thread CPU time the child spun, within 1% below
        # (the clocks are read at different moments) and its command handling above.
        assert 0.396e9 <= f.values[i, 1] < 0.4e9 + 0.1e9, f.values[i]
        # %CPU from /proc ticks over the whole interval: about 0.4 s of it.
        assert f.values[i, 0] == pytest.approx(100 * 0.4 / f.interval, abs=6), (f.values, wall)
    finally:
        s.close()


def test_a_new_name_shows_within_one_refresh(child: Child) -> None:
    s = Sampler(screen(), SamplerConfig(only_pid=child.pid))
    try:
        s.start()
        for _ in range(3):
            s.refresh()
        child.do("name renamed")  # prctl(PR_SET_NAME) by the task itself
        f = s.refresh()
        assert f.name[row(f, child.pid)] == "renamed"
        for _ in range(2):
            f = s.refresh()
        assert f.name[row(f, child.pid)] == "renamed"
        child.do("exec sleep")
        time.sleep(0.1)
        f = s.refresh()
        i = row(f, child.pid)
        assert f.name[i] == "sleep" and f.cmdline[i] == "sleep 1000"
    finally:
        s.close()


def test_a_new_thread_of_a_long_quiet_process_shows_within_one_refresh(child: Child) -> None:
    """-H: while none of its threads run, the process's thread list is not read again; a
    thread it then makes (the making thread runs) is found by the next refresh's scan."""
    s = Sampler(screen(), SamplerConfig(only_pid=child.pid, threads=True))
    try:
        child.do("threads 3")
        s.start()
        for _ in range(4):
            f = s.refresh()
            time.sleep(0.05)
        assert len(f) == 4, f.tid
        before = set(f.tid.tolist())
        child.do("threads 2")
        s.refresh()  # found by this refresh's scan, shown once counted (as any new task)
        assert len(s._scanner.tasks) == 6
        f = s.refresh()
        assert len(f) == 6 and before < set(f.tid.tolist()), f.tid
    finally:
        s.close()


def test_counters_ended_by_an_exec_under_a_running_task_are_reopened(child: Child) -> None:
    """-H: a thread other than the leader execs a spinner. It takes the leader's PID and
    ends the other threads (fs/exec.c de_thread()), so the leader's row keeps the old
    leader's counters, ended: they say it never runs. The sweep's look at the leader
    (only leaders are swept, ``engine.activity``) finds its run time moved: that
    interval's counts are '?' and the counters are opened again, on the spinner, whose
    task-clock then counts again (a tenth of the interval at least, busy neighbours or
    not)."""
    s = Sampler(screen(), SamplerConfig(only_pid=child.pid, threads=True))
    try:
        child.do("threads 1")
        s.start()
        for _ in range(3):
            f = s.refresh()
        assert len(f) == 2 and child.pid in f.tid.tolist(), f.tid
        child.do("texec spin")
        seen: list[tuple[float, int]] = []  # (task-clock, its status) of the leader's row
        for _ in range(SWEEP + 6):
            time.sleep(0.05)
            f = s.refresh()
            if f.tid.tolist() == [child.pid]:  # the old threads' rows gone
                seen.append((float(f.values[0, 1]), int(f.status[0, 1])))
                if len(seen) > 2 and seen[-1][0] > 0:
                    break
        # Until the sweep's look, the ended counters say it slept (0, valid); the interval
        # of the look shows '?'.
        assert Status.UNREADABLE in [c for _, c in seen], seen
        first = [c for _, c in seen].index(Status.UNREADABLE)
        assert all(x == (0.0, Status.OK) for x in seen[:first]), seen
        assert len(seen) <= SWEEP + 4, seen  # within one sweep, then reopened
        # Reopened on the spinner: it counts again (ended counters read exactly 0), a good
        # part of the interval even with other busy tasks on the CPUs.
        assert seen[-1][0] > 0.1 * f.interval * 1e9, (seen, f.interval)
    finally:
        s.close()


def quiet_refreshes(s: Sampler, pid: int, n: int) -> None:
    """``n`` refreshes 20 ms apart, each showing ``pid``'s row with 0 %CPU and 0 task-clock,
    both valid (it sleeps)."""
    for _ in range(n):
        time.sleep(0.02)
        f = s.refresh()
        i = row(f, pid)
        assert f.values[i].tolist() == [0.0, 0.0]
        assert f.status[i].tolist() == [Status.OK, Status.OK]


def test_a_quiet_process_s_group_is_left_unread_and_its_run_counted_whole(child: Child) -> None:
    """While the child sleeps its CPU-time clock stands, and its group is not read
    (``RunClocks``): 0 task-clock, status OK. Once it spins, the next read gives the whole
    spin; over the run, its task-clock deltas add up to its clock's advance since its
    counters opened (both count its time on a CPU, in ns: perf's clock and the
    scheduler's, within 1%), so no interval's counts were lost by the reads left out."""
    b = ReadsSeen()
    s = Sampler(screen(), SamplerConfig(only_pid=child.pid), backend=b)
    try:
        child.settle()
        began = process_cpu_ns(child.pid)
        s.start()
        counted = sum(float(s.refresh().values[0, 1]) for _ in range(2))
        (leader,) = leaders(s)
        b.fds.clear()
        quiet_refreshes(s, child.pid, 5)
        assert b.fds == [] and b.pids[-5:] == [[child.pid]] * 5
        child.do("spin 0.3")
        child.settle()
        f = s.refresh()
        assert b.fds == [leader]
        spin = float(f.values[row(f, child.pid), 1])
        assert 0.297e9 <= spin < 0.4e9, spin
        counted += spin + float(s.refresh().values[0, 1])
        ran = process_cpu_ns(child.pid) - began
        assert counted == pytest.approx(ran, rel=0.01), (counted, ran)
    finally:
        s.close()


def test_where_cpus_run_tickless_a_quiet_process_s_group_is_read(child: Child) -> None:
    """On a host with ``nohz_full`` CPUs (``Host.tickless``) a running task's time may be
    off its clock for a second, so no clock is read and the quiet child's group is read at
    every refresh, as the C original reads every counter: 0 task-clock, status OK."""
    b = ReadsSeen()
    host = dataclasses.replace(Host.read(raise_fds=False), tickless=True)
    s = Sampler(screen(), SamplerConfig(only_pid=child.pid), host=host, backend=b)
    try:
        child.settle()
        s.start()
        for _ in range(2):
            s.refresh()
        (leader,) = leaders(s)
        b.fds.clear()
        quiet_refreshes(s, child.pid, 3)
        assert b.fds == [leader] * 3 and b.pids == []
    finally:
        s.close()


def test_a_quiet_process_s_thread_rows_take_one_clock_read(child: Child) -> None:
    """-H: the four thread rows of a quiet process cost one clock read a refresh and no
    group read; once one thread runs, all four groups are read (which one ran, the
    process's clock cannot say) and the spinning one shows its spin."""
    b = ReadsSeen()
    s = Sampler(screen(), SamplerConfig(only_pid=child.pid, threads=True), backend=b)
    try:
        child.do("threads 3")
        child.settle()
        s.start()
        for _ in range(2):
            s.refresh()
        opened = leaders(s)
        assert len(opened) == 4
        b.fds.clear()
        b.pids.clear()
        for _ in range(4):
            time.sleep(0.02)
            f = s.refresh()
            assert len(f) == 4 and not f.values[:, 1].any(), f.values
        assert b.fds == [] and b.pids == [[child.pid]] * 4
        child.do("spin 0.2")
        f = s.refresh()
        assert sorted(b.fds) == sorted(opened)
        assert 0.198e9 <= f.values[row(f, child.pid), 1] < 0.3e9, f.values
    finally:
        s.close()
