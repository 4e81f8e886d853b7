"""The sweep's look at a quiet task (``engine.scan.task.slept``): its
``schedstat`` run time first, its ``stat`` only when that moved since its discovery or its
last sweep, on a fake /proc."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.fakeproc import FakeProc
from tests.support import spying
from tiptop.engine.activity import Activity
from tiptop.engine.count.counters import Counts
from tiptop.engine.count.readout import Readout
from tiptop.engine.scan.listing import ProcListing
from tiptop.engine.scan.tasks import Stat, TaskScanner, read_stat


class Counting:
    """A stat reader counting its reads (with ``threads``, of thread stat files only)."""

    def __init__(self, threads: bool = False) -> None:
        self.reads = 0
        self.threads = threads

    def __call__(self, path: str) -> Stat:
        self.reads += not self.threads or "/task/" in path
        return read_stat(path)


def _ran(root: Path, ns: int | None) -> None:
    """Task 10's run time under ``root`` (``root/10/schedstat``); None: no such file."""
    path = root / "10" / "schedstat"
    if ns is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text(f"{ns} 0 1\n")


def _discovered(
    tmp_path: Path, ns: int, threads: bool = False
) -> tuple[FakeProc, Counting, TaskScanner]:
    """Process 10 ("app", 5 user ticks, run time ``ns``) in a fake /proc, found by a
    first scan of a scanner whose stat reads are counted."""
    fp = FakeProc(tmp_path)
    fp.add(10, "app", utime=5)
    _ran(tmp_path / "10" / "task" if threads else tmp_path, ns)
    reads = Counting(threads)
    sc = TaskScanner(str(tmp_path), euid=0, threads=threads, stat_reader=reads)
    sc.scan()  # discovery: a stat read, and the run time seen then
    return fp, reads, sc


@pytest.mark.parametrize("threads", [False, True])
def test_a_swept_task_is_read_only_when_its_run_time_moved(tmp_path: Path, threads: bool) -> None:
    fp, reads, sc = _discovered(tmp_path, 500, threads)
    where = tmp_path / "10" / "task" if threads else tmp_path  # its schedstat's
    swept = {10}  # quiet, and its turn in the sweep: not in ``idle``
    for _ in range(2):
        (t,) = sc.scan(Activity(did_not_run=swept)).tasks
        assert (reads.reads, t.cpu_total) == (1, 0.0)  # same run time: no stat read
    fp.set_stat(10, "app", utime=55, **({"tid": 10} if threads else {}))  # it ran
    _ran(where, 900)
    time_read = reads.reads
    (t,) = sc.scan(Activity(did_not_run=swept)).tasks
    assert reads.reads == time_read + 1 and t.cpu_total > 0
    _ran(where, None)  # no scheduler statistics: read as before
    sc.scan(Activity(did_not_run=swept))
    assert reads.reads == time_read + 2


def test_a_zero_run_time_never_stands_for_asleep(tmp_path: Path) -> None:
    _, reads, sc = _discovered(tmp_path, 0)  # "0 0 0": the kernel keeps no run times
    for _ in range(3):
        sc.scan(Activity(did_not_run={10}))
    assert reads.reads == 4


def test_a_run_between_discovery_and_the_first_sweep_is_read(tmp_path: Path) -> None:
    _, reads, sc = _discovered(tmp_path, 500)
    _ran(tmp_path, 700)
    sc.scan(Activity(did_not_run={10}))
    sc.scan(Activity(did_not_run={10}))
    assert reads.reads == 2  # read at the first sweep only


def test_a_task_without_counters_is_read_when_it_ran_or_a_pid_was_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task without counters (``blind``) is read only when its run time moved, while
    loadavg's last PID stays (no PID made: none reused); a PID made, or a second thread
    (whose run time the main thread's file does not hold), reads it at every scan."""
    last = [b"7"]
    monkeypatch.setattr(ProcListing, "_last_made", lambda self: last[0])
    fp, reads, sc = _discovered(tmp_path, 500)
    for _ in range(2):
        sc.scan(Activity(uncounted={10}))
    assert reads.reads == 1  # discovery only
    _ran(tmp_path, 600)
    sc.scan(Activity(uncounted={10}))
    assert reads.reads == 2  # it ran
    last[0] = b"8"
    sc.scan(Activity(uncounted={10}))
    assert reads.reads == 3  # a PID was made since the last scan
    fp.add(10, "app", tids=(11,))
    last[0] = b"9"
    sc.scan(Activity(uncounted={10}))  # now 2 threads (a PID was made for the second)
    sc.scan(Activity(uncounted={10}))
    sc.scan(Activity(uncounted={10}))
    assert reads.reads == 6


class ProcessReads(Counting):
    """A stat reader counting the reads of processes' own stat files only (-H)."""

    def __call__(self, path: str) -> Stat:
        self.reads += "/task/" not in path
        return read_stat(path)


def test_with_threads_a_process_none_of_whose_threads_ran_is_not_read(tmp_path: Path) -> None:
    """-H: a process's own stat is read again only when one of its threads ran (or is
    watched by a mark, not a pidfd); its rows and the thread total stay."""
    fp = FakeProc(tmp_path)
    fp.add(10, "app", tids=(11, 12))
    reads = ProcessReads()
    sc = TaskScanner(str(tmp_path), euid=0, threads=True, stat_reader=reads)
    sc.scan()
    all_quiet = {10, 11, 12}
    for _ in range(2):
        scan = sc.scan(Activity(not_due=all_quiet, did_not_run=all_quiet))
        assert reads.reads == 1 and scan.threads_total == 3
        assert sorted(t.tid for t in scan.tasks) == [10, 11, 12]
    sc.scan(Activity(not_due={10, 11}, did_not_run={10, 11}))  # thread 12 ran
    assert reads.reads == 2
    sc.scan(
        Activity(not_due=all_quiet, did_not_run=all_quiet, marks={11: (1, 0)})
    )  # 11 has no pidfd
    assert reads.reads == 3
    fp.remove(10, tid=12)  # 12 exited: its pidfd says so, it is not quiet
    scan = sc.scan(Activity(not_due={10, 11}, did_not_run={10, 11}))
    assert reads.reads == 4 and sorted(t.tid for t in scan.tasks) == [10, 11]


def test_with_threads_a_thread_without_counters_is_read_when_its_run_time_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """-H: a thread without counters (``blind``) is read only when its own schedstat run
    time moved (each thread has its file), while no PID was made; the others as before."""
    last = [b"7"]
    monkeypatch.setattr(ProcListing, "_last_made", lambda self: last[0])
    fp = FakeProc(tmp_path)
    fp.add(10, "app", tids=(11,))
    ran = tmp_path / "10" / "task" / "11" / "schedstat"
    ran.write_text("500 0 1\n")
    reads = ThreadReads()
    sc = TaskScanner(str(tmp_path), euid=0, threads=True, stat_reader=reads)
    sc.scan()
    reads.tids.clear()
    for _ in range(2):
        sc.scan(Activity(uncounted={11}))
    assert reads.tids == [10, 10]  # 10 is neither quiet nor blind: read at each scan
    ran.write_text("900 0 1\n")
    sc.scan(Activity(uncounted={11}))
    assert sorted(reads.tids[2:]) == [10, 11]  # 11 ran
    last[0] = b"8"
    sc.scan(Activity(uncounted={11}))
    assert sorted(reads.tids[4:]) == [10, 11]  # a PID was made since the last scan


class ThreadReads:
    """A stat reader noting which thread's stat file it read (-H)."""

    def __init__(self) -> None:
        self.tids: list[int] = []

    def __call__(self, path: str) -> Stat:
        if "/task/" in path:
            self.tids.append(int(path.rsplit("/", 2)[1]))
        return read_stat(path)


def test_with_threads_a_listing_while_no_pid_was_made_stands_for_the_marks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """-H: idle threads watched by their /proc marks (no pidfd) are not stat(2)ed when the
    process's task/ listing was read while no PID was made; when one was, each mark is
    checked (here they do not hold: those threads are read again)."""
    import tiptop.engine.activity as activity

    last = [b"7"]
    monkeypatch.setattr(ProcListing, "_last_made", lambda self: last[0])
    checked: list[str] = []
    real = activity.holds
    monkeypatch.setattr(
        activity,
        "holds",
        spying(real, lambda root, name, mark: checked.append(name)),
    )
    fp = FakeProc(tmp_path)
    fp.add(10, "app", tids=(11, 12))
    reads = ThreadReads()
    sc = TaskScanner(str(tmp_path), euid=0, threads=True, stat_reader=reads)
    sc.scan()
    sc.scan()  # the listing is steady from here (the same last PID at two calls)
    reads.tids.clear()
    marks = {11: (1, 0), 12: (1, 0)}  # not theirs: a check would fail
    sc.scan(
        Activity(not_due={11, 12}, did_not_run={11, 12}, marks=marks)
    )  # 10 ran: task/ is listed
    assert checked == [] and reads.tids == [10]
    last[0] = b"8"  # a PID was made
    sc.scan(Activity(not_due={11, 12}, did_not_run={11, 12}, marks=marks))
    assert sorted(checked) == ["11", "12"] and sorted(reads.tids[1:]) == [10, 11, 12]


def test_with_threads_a_single_threaded_process_without_counters_is_read_when_it_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """-H: a single-threaded process whose only thread has no counters is neither listed
    nor read while its run time stays (its thread's schedstat, which is the process's),
    as in process mode."""
    monkeypatch.setattr(ProcListing, "_last_made", lambda self: b"7")
    _, _, sc = _discovered(tmp_path, 500, threads=True)
    read: list[str] = []
    sc._read_stat = spying(read_stat, lambda path: read.append(path[len(str(tmp_path)) :]))
    thread = tmp_path / "10" / "task"  # its only thread's schedstat: the process's too
    for root in (tmp_path, thread):
        _ran(root, 500)
    sc.scan(Activity(uncounted={10}))
    (t,) = sc.scan(Activity(uncounted={10})).tasks
    assert read == [] and t.tid == 10
    for root in (tmp_path, thread):
        _ran(root, 800)
    sc.scan(Activity(uncounted={10}))
    assert read == ["/10/stat", "/10/task/10/stat"]


def test_only_thread_group_leaders_are_due_a_sweep() -> None:
    """A quiet thread whose tid falls on the sweep's turn is not due when it does not
    lead its process (an exec by it would make it the leader: ``engine.activity``);
    the leader on its turn is, and taking rows keeps each one's place."""
    tids = np.array([32, 33, 48, 49], np.int64)  # turns 0, 1, 0, 1 of 16
    leaders = np.array([True, False, False, True])
    ones = np.ones((4, 1))
    readout = Readout(*(ones,) * 8, longest=np.ones(4))
    counts = Counts(readout, [None] * 4, np.ones(4, bool), set(), {}, tids, 0.0, leaders)
    act = counts.activity(16, 0)
    assert (act.did_not_run, act.not_due) == ({32, 33, 48, 49}, {33, 48, 49})
    assert counts.activity(16, 1).not_due == {32, 33, 48}  # 33's turn too, not a leader
    assert counts.take([2, 0]).activity(16, 0).not_due == {48}
    every = Counts(readout, [None] * 4, np.ones(4, bool), set(), {}, tids, 0.0)
    assert every.activity(16, 0).not_due == {33, 49}  # no leaders said: every row swept
