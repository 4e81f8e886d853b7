"""A process's run time from its CPU-time clock (``procfs.process_cpu_ns``) on the real
kernel: every thread's time, readable by any user, and what lets the scanner skip the
``stat`` of a process without counters, whatever its thread count, while none of its
threads runs (``engine.activity``), and that of one filtered out while it does not run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import nobody_command
from tests.system.scripted_child import Child
from tests.system.test_skipped_reads import CHILD as NAMED_CHILD
from tiptop.engine.activity import Activity
from tiptop.engine.scan.listing import ProcListing
from tiptop.engine.scan.tasks import Task, TaskScanner
from tiptop.kernel.procfs import Stat, process_cpu_ns, process_cpu_times, read_stat

#: Above the largest pid_max (2^22, proc(5) /proc/sys/kernel/pid_max): never a live pid.
NO_PID = 4194305

#: Two threads, both asleep; each line on stdin makes the second one spin 50 ms of CPU.
CHILD = textwrap.dedent(
    """
    import sys, threading, time
    go, done = threading.Event(), threading.Event()
    def spinner():
        while True:
            go.wait()
            go.clear()
            end = time.thread_time() + 0.05
            while time.thread_time() < end:
                pass
            done.set()
    threading.Thread(target=spinner, daemon=True).start()
    print("ready", flush=True)
    for line in sys.stdin:
        go.set()
        done.wait()
        done.clear()
        print("done", flush=True)
    """
)


@pytest.fixture
def child() -> Iterator[subprocess.Popen[str]]:
    """The two-thread child, ready (both threads asleep)."""
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert p.stdout is not None and p.stdout.readline() == "ready\n"
    yield p
    p.kill()
    p.wait()


def _spin(child: subprocess.Popen[str]) -> None:
    """The child's second thread runs 50 ms of CPU, then sleeps again."""
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write("spin\n")
    child.stdin.flush()
    assert child.stdout.readline() == "done\n"


def _threads_ns(pid: int) -> int:
    """The sum of ``pid``'s threads' ``schedstat`` run times (sched-stats.rst)."""
    task = Path(f"/proc/{pid}/task")
    return sum(int((d / "schedstat").read_text().split()[0]) for d in task.iterdir())


def test_the_clock_is_every_threads_run_time(child: subprocess.Popen[str]) -> None:
    """While both threads sleep, the clock is the exact sum of their ``schedstat`` times;
    the second thread's spin moves it by its 50 ms; a PID that cannot exist reads 0."""
    before = process_cpu_ns(child.pid)
    assert before == _threads_ns(child.pid)
    main = int(Path(f"/proc/{child.pid}/schedstat").read_text().split()[0])
    _spin(child)
    after = process_cpu_ns(child.pid)
    assert after == _threads_ns(child.pid)
    assert after - before >= 50_000_000
    # the process's own schedstat is its main thread's: the spin is not in it
    assert int(Path(f"/proc/{child.pid}/schedstat").read_text().split()[0]) - main < 50_000_000
    assert process_cpu_ns(NO_PID) == 0


def test_the_clocks_of_many_read_on_past_a_gone_process(child: subprocess.Popen[str]) -> None:
    """``process_cpu_times``: each process's clock in order, 0 for a PID that cannot be,
    and the ones after it read (the loop takes up again after the error)."""
    ours, theirs = os.getpid(), child.pid
    got = process_cpu_times([theirs, NO_PID, ours, NO_PID, theirs])
    assert got[1] == got[3] == 0
    assert got[0] == got[4] == _threads_ns(theirs)  # asleep: its clock stands
    assert got[2] > 0


def test_another_users_process_clock_is_readable() -> None:
    """As uid 65534, the clock of PID 1 (root's) reads: no permission is needed, as for
    ``/proc/1/stat``."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    if os.geteuid() != 0:
        pytest.skip("setpriv needs root to become uid 65534")
    code = "from tiptop.kernel.procfs import process_cpu_ns; print(process_cpu_ns(1))"
    cmd, env = nobody_command(["-c", code])
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=True)
    assert int(out.stdout) > 0


def test_a_process_without_counters_is_read_only_when_a_thread_ran(
    child: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A two-thread process without counters: its ``stat`` is not read while both threads
    sleep (its clock stays), and is read at the scan after its *second* thread ran, with
    its %CPU then. A ``schedstat`` (its main thread's) would not see that thread: without
    the clock such a process is read at every scan."""
    monkeypatch.setattr(ProcListing, "_last_made", lambda self: b"7")  # no PID made
    reads: list[str] = []

    def reader(path: str) -> Stat:
        reads.append(path)
        return read_stat(path)

    sc = TaskScanner(only_pid=child.pid, stat_reader=reader)
    sc.scan()
    blind = Activity(uncounted={child.pid})
    reads.clear()
    for _ in range(3):
        (t,) = sc.scan(blind).tasks
        assert t.cpu_total == 0.0
    assert reads == []
    _spin(child)
    (t,) = sc.scan(blind).tasks
    assert reads == [f"/proc/{child.pid}/stat"] and t.cpu_total > 0
    assert t.num_threads == 2


def test_a_filtered_out_process_is_read_only_when_it_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    """One of ours that a name filter leaves out: its ``stat`` is not read while it sleeps
    and no PID is made; it is read after it ran (its clock moved); once it renames itself
    to match the filter, the next scan watches it. Without the clock (``cpu_clock=False``)
    it is read at every scan."""
    monkeypatch.setattr(ProcListing, "_last_made", lambda self: b"7")  # no PID made
    child = Child(NAMED_CHILD)
    try:
        reads: list[str] = []

        def reader(path: str) -> Stat:
            if path == f"/proc/{child.pid}/stat":
                reads.append(path)
            return read_stat(path)

        sc = TaskScanner(only_name="tpfiltered", stat_reader=reader)
        blind = TaskScanner(only_name="tpfiltered", stat_reader=reader, cpu_clock=False)
        for scanner in (sc, blind):
            scanner.scan()
        child.settle()
        for scanner in (sc, blind):
            scanner.scan()  # the clock seen asleep
        reads.clear()
        for _ in range(3):
            assert sc.scan().tasks == []
        assert reads == []
        blind.scan()
        assert len(reads) == 1
        child.do("spin 0.05")
        reads.clear()
        sc.scan()
        assert len(reads) == 1
        child.do("name tpfiltered")
        assert [t.tid for t in sc.scan().new] == [child.pid]
    finally:
        child.p.kill()
        child.p.wait()


def _never_ran() -> list[int]:
    """The processes whose CPU-time clock reads 0: kernel threads that never ran (the
    workqueues' rescuers, ``kworker/R-*``, on Linux 6.x; ``schedstat`` "0 0 N")."""
    pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
    return [
        p
        for p, ns in zip(pids, process_cpu_times(pids), strict=True)
        if ns == 0 and Path(f"/proc/{p}/schedstat").exists()
    ]


def test_a_kernel_thread_that_never_ran_is_not_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Filtered out by a name, a kernel thread whose clock reads 0 (it never ran) is read
    at its first looks and then no more while no PID is made: its 0 is a clock that
    stands, not one that cannot be read (a gone process's, -1 to ``stood``). Before,
    each such thread's ``stat`` was read at every refresh of ``-p NAME``."""
    monkeypatch.setattr(ProcListing, "_last_made", lambda self: b"7")  # no PID made
    idle = set(_never_ran())
    if not idle:
        pytest.skip("no kernel thread here whose CPU-time clock reads 0")
    reads: list[int] = []

    def reader(path: str) -> Stat:
        pid = int(path.split("/")[2])
        if pid in idle:
            reads.append(pid)
        return read_stat(path)

    sc = TaskScanner(only_name="tp-matches-nothing", stat_reader=reader)
    for _ in range(2):
        sc.scan()
    reads.clear()
    for _ in range(3):
        sc.scan()
    assert reads == []
    assert process_cpu_ns(NO_PID, gone=-1) == -1


def _asleep(pid: int) -> None:
    """Until ``pid``'s clock stands over 50 ms (every thread of it asleep)."""
    for _ in range(200):
        before = process_cpu_ns(pid)
        time.sleep(0.05)
        if process_cpu_ns(pid) == before:
            return
    raise AssertionError(f"{pid} never slept")


def test_with_threads_nothing_is_read_while_the_process_clock_stands(
    child: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """-H, a two-thread process whose threads have no counters: while its clock stands and
    no PID is made, neither its ``task/`` listing nor a thread's ``schedstat`` nor any
    ``stat`` is read; once its threads ran, the process and both threads are read, the
    spinner's row with its %CPU. Without the clock (``cpu_clock=False``) each thread's
    ``schedstat`` is read at every scan."""
    monkeypatch.setattr(ProcListing, "_last_made", lambda self: b"7")  # no PID made
    reads: list[str] = []

    def reader(path: str) -> Stat:
        reads.append(path)
        return read_stat(path)

    def counted(sc: TaskScanner) -> list[int]:
        """The tids whose run time ``sc`` reads, from now on."""
        looks: list[int] = []
        real = sc._run_time

        def run_time(t: Task) -> int:
            looks.append(t.tid)
            return real(t)

        sc._run_time = run_time
        return looks

    sc = TaskScanner(only_pid=child.pid, threads=True, stat_reader=reader)
    blind_sc = TaskScanner(only_pid=child.pid, threads=True, stat_reader=reader, cpu_clock=False)
    looks, blind_looks = counted(sc), counted(blind_sc)
    _asleep(child.pid)
    for scanner in (sc, blind_sc):
        scanner.scan()
    tids = sorted(t.tid for t in sc.tasks)
    assert len(tids) == 2
    blind = Activity(uncounted=set(tids))
    for scanner in (sc, blind_sc):
        scanner.scan(blind)  # the references: the clock, each thread's run time
    reads.clear()
    looks.clear()
    for _ in range(3):
        assert sorted(t.tid for t in sc.scan(blind).tasks) == tids
    assert (reads, looks) == ([], [])
    blind_sc.scan(blind)  # the process's stat, then each thread's run time
    assert sorted(blind_looks[-2:]) == tids and reads == [f"/proc/{child.pid}/stat"]
    _spin(child)
    scan = sc.scan(blind)
    spinner = max(tids)  # the thread made after the main one
    assert reads[0] == f"/proc/{child.pid}/stat"
    assert f"/proc/{child.pid}/task/{spinner}/stat" in reads
    assert [t.cpu_total > 0 for t in scan.tasks if t.tid == spinner] == [True]
