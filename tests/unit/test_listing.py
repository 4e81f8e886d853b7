"""tiptop.engine.scan.listing: ``/proc`` listed again only when ``/proc/loadavg``'s last PID
changed, on a fake tree (whose ``self`` names this process); the real ``/proc`` in
tests/system/test_tasks_real.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fakeproc import FakeProc
from tests.support import spying
from tiptop.engine.activity import Activity
from tiptop.engine.scan.listing import RELIST, ProcListing
from tiptop.engine.scan.task import Scan
from tiptop.engine.scan.tasks import Stat, TaskScanner, read_stat


def _made(root: Path, last_pid: int) -> None:
    (root / "loadavg").write_text(f"0.00 0.01 0.05 1/120 {last_pid}\n")


def _our_tree(root: Path, last_pid: int) -> FakeProc:
    """A fake /proc of this PID namespace (``self`` names us) holding process 10 ("a"),
    loadavg naming ``last_pid`` as the last PID made."""
    fp = FakeProc(root)
    (root / "self").symlink_to(str(os.getpid()))
    fp.add(10, "a")
    _made(root, last_pid)
    return fp


def _tids(sc: TaskScanner) -> list[int]:
    return sorted(t.tid for t in sc.scan().tasks)


def test_listed_again_only_when_a_pid_was_made(tmp_path: Path) -> None:
    """Kept once loadavg named the same PID at two listings in a row; a new entry shows once
    the last PID changes; one gone is gone at once (its stat read fails) and leaves the
    kept listing."""
    fp = FakeProc(tmp_path)
    (tmp_path / "self").symlink_to(str(os.getpid()))
    fp.add(10, "a")
    fp.add(12, "c")
    _made(tmp_path, 12)
    sc = TaskScanner(str(tmp_path))
    assert _tids(sc) == [10, 12]
    assert _tids(sc) == [10, 12]  # the same PID at two listings: kept from now on
    fp.add(11, "b")  # the same last PID: the kept listing (a kernel would have changed it)
    assert _tids(sc) == [10, 12]
    fp.remove(10)
    assert _tids(sc) == [12]
    assert sc._listing.names() == ["12"]
    _made(tmp_path, 11)
    assert _tids(sc) == [11, 12]


def test_a_pid_made_but_not_yet_shown_is_listed_at_the_next_call(tmp_path: Path) -> None:
    """loadavg names a PID whose task is not in /proc yet (alloc_pid() before attach_pid()):
    that listing is not trusted; the next call lists again and sees it."""
    fp = _our_tree(tmp_path, 10)
    listing = ProcListing(str(tmp_path))
    listing.names()
    listing.names()  # settled on PID 10
    _made(tmp_path, 11)
    assert listing.names() == ["10"]  # 11 taken, not shown yet
    fp.add(11, "b")
    assert sorted(listing.names()) == ["10", "11"]


def test_listed_at_least_every_relist_calls(tmp_path: Path) -> None:
    """A PID the caller chose (clone3 set_tid) does not move loadavg: listed anyway after
    RELIST calls answered from the kept listing."""
    fp = _our_tree(tmp_path, 10)
    listing = ProcListing(str(tmp_path))
    listing.names()
    listing.names()
    fp.add(500, "restored")
    seen = [("500" in listing.names()) for _ in range(RELIST + 1)]
    assert seen == [False] * RELIST + [True]


def test_a_kept_listing_stands_for_the_marks_while_no_pid_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No PID made since the call before: the kept listing is the listing (no listdir) and
    stands for the marks (``proves``); once a PID is made, /proc is listed afresh and proves
    nothing until a call finds no PID made since the one before."""
    fp = _our_tree(tmp_path, 10)
    listing = ProcListing(str(tmp_path))
    real, listed = os.listdir, []
    monkeypatch.setattr(os, "listdir", spying(real, lambda path: listed.append(path)))
    listing.names()
    assert not listing.proves  # nothing to compare with yet
    listing.names()  # settled on PID 10: kept from now on
    assert listing.proves and len(listed) == 2
    for _ in range(3):
        assert listing.names() == ["10"] and listing.proves
    assert len(listed) == 2
    fp.add(11, "b")
    _made(tmp_path, 11)
    assert sorted(listing.names()) == ["10", "11"] and not listing.proves
    assert sorted(listing.names()) == ["10", "11"] and listing.proves


def test_listed_every_time_in_another_namespace_or_without_loadavg(tmp_path: Path) -> None:
    """``self`` naming another PID (a ``/proc`` of another PID namespace) or no ``loadavg``:
    every call lists."""
    fp = FakeProc(tmp_path)
    (tmp_path / "self").symlink_to("1")
    _made(tmp_path, 10)
    fp.add(10, "a")
    other = ProcListing(str(tmp_path))
    assert other.names() == ["10"]
    fp.add(11, "b")
    assert sorted(other.names()) == ["10", "11"]
    bare = tmp_path / "bare"
    FakeProc(bare).add(20, "x")
    (bare / "self").symlink_to(str(os.getpid()))
    listing = ProcListing(str(bare))
    assert listing.names() == ["20"]
    FakeProc(bare).add(21, "y")
    assert sorted(listing.names()) == ["20", "21"]


def test_no_mark_is_checked_while_no_pid_is_made(tmp_path: Path) -> None:
    """While no PID was made since the last scan, an idle task the listing shows needs no
    mark check (no PID could be reused) and no stat read. Once a PID is made, the marks are
    checked again: these do not hold, so those tasks are read."""
    fp = FakeProc(tmp_path)
    (tmp_path / "self").symlink_to(str(os.getpid()))
    for pid in (10, 11, 12):
        fp.add(pid, "sleeper")
    _made(tmp_path, 12)
    reads: list[str] = []

    def reader(path: str) -> Stat:
        reads.append(path)
        return read_stat(path)

    sc = TaskScanner(str(tmp_path), stat_reader=reader)
    sc.scan()
    idle, stale = {10, 11, 12}, {10: (0, 0), 11: (0, 0)}  # marks that would not hold
    reads.clear()
    assert _tids_of(sc.scan(Activity(not_due=idle, did_not_run=idle, marks=stale))) == [10, 11, 12]
    assert reads == [] and sc._listing.proves
    _made(tmp_path, 13)
    reads.clear()
    assert _tids_of(sc.scan(Activity(not_due=idle, did_not_run=idle, marks=stale))) == [10, 11, 12]
    assert sorted(reads) == [f"{tmp_path}/10/stat", f"{tmp_path}/11/stat"]
    assert not sc._listing.proves


def test_an_idle_task_gone_while_no_pid_is_made_goes_when_its_counters_moved(
    tmp_path: Path,
) -> None:
    """A task whose counters said it did not run, gone (reaped) since, while no PID was
    made: the kept listing still shows it, so it stays one scan more, at rest; at the next,
    its counters moved (it ran to exit: ``Activity`` without it), its stat is read and
    it is gone."""
    fp = _our_tree(tmp_path, 12)
    fp.add(11, "sleeper")
    sc = TaskScanner(str(tmp_path))
    sc.scan()
    sc.scan()  # settled: the listing is kept from now on
    idle = {10, 11}
    fp.remove(11)
    scan = sc.scan(Activity(not_due=idle, did_not_run=idle, marks={10: (0, 0), 11: (0, 0)}))
    assert _tids_of(scan) == [10, 11] and scan.gone == []
    scan = sc.scan(Activity(not_due={10}, did_not_run={10}, marks={10: (0, 0)}))
    assert _tids_of(scan) == [10] and [t.tid for t in scan.gone] == [11]


def _tids_of(scan: Scan) -> list[int]:
    return sorted(t.tid for t in scan.tasks)


def test_a_pid_made_while_listing_proves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PID made between the loadavg read and the listing could be a reused one in that
    listing: loadavg is read again after it, and a change proves nothing."""
    _our_tree(tmp_path, 10)
    listing = ProcListing(str(tmp_path))
    listing.names()
    real = os.listdir

    def a_pid_made_meanwhile(path: str) -> list[str]:
        names = real(path)
        _made(tmp_path, 11)
        return names

    monkeypatch.setattr(os, "listdir", a_pid_made_meanwhile)
    listing.names()
    assert not listing.proves
    monkeypatch.setattr(os, "listdir", real)
    listing.names()  # 11 at both reads and at the call before: proves
    assert listing.proves
