"""tiptop.engine.scan.tasks: stat parsing, ownership, identity by (tid, starttime), %CPU,
on fake and real /proc."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.fakeproc import FakeProc, stat_line
from tests.support import spying
from tiptop.engine.activity import Activity
from tiptop.engine.scan.tasks import CLK_TCK, Stat, TaskScanner, parse_stat, read_stat
from tiptop.errors import TaskGone


def test_parse_stat_comm_with_spaces_and_parens() -> None:
    line = stat_line(
        42, "a) (b c)", state="R", utime=7, stime=3, threads=4, starttime=99, processor=5
    )
    st = parse_stat(line.encode())
    assert st == ("a) (b c)", "R", 7, 3, 4, 99, 5, 0, 0, 0, 0)
    # ppid (4), cutime (16), cstime (17): what process trees are summed from.
    f = line.split(") ")[-1].split()  # f[0] is field 3
    f[1], f[13], f[14], f[39] = "17", "11", "13", "23"
    st = parse_stat(f"42 (a) (b c)) {' '.join(f)}".encode())
    assert (st.ppid, st.cutime, st.cstime, st.utime, st.stime) == (17, 11, 13, 7, 3)
    assert st.blkio == 23  # (42) delayacct_blkio_ticks


def test_parse_stat_real_self() -> None:
    st = read_stat(f"/proc/{os.getpid()}/stat")
    assert st.state == "R"
    assert st.comm == Path("/proc/self/comm").read_text().strip()
    assert 0 <= st.processor < os.cpu_count()  # type: ignore[operator]


def test_read_stat_of_vanished_task_is_taskgone() -> None:
    with pytest.raises(TaskGone):
        read_stat("/proc/999999999/stat")


def test_ownership_non_root_sees_own_real_uid_only(tmp_path: Path) -> None:
    fp = FakeProc(tmp_path)
    fp.add(10, "mine", uid=1000)
    fp.add(11, "root", uid=0)
    fp.add(12, "other", uid=1001)
    names = {t.name for t in TaskScanner(str(tmp_path), euid=1000).scan().tasks}
    assert names == {"mine"}
    everyone = {t.name for t in TaskScanner(str(tmp_path), euid=0).scan().tasks}
    assert everyone == {"mine", "root", "other"}
    # -u filters for real (the original's -u did nothing).
    only = {t.name for t in TaskScanner(str(tmp_path), euid=0, uid=1001).scan().tasks}
    assert only == {"other"}


def test_root_without_u_marks_no_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mark (``dir_mark``: a stat(2) of ``/proc/PID``) is kept for another user's
    process only: root without ``-u`` owns all and takes none; a user, or root with
    ``-u``, takes one for each process examined."""
    from tiptop.engine.scan import tasks

    fp = FakeProc(tmp_path)
    for pid, owner in ((10, 1000), (11, 0), (12, 1001)):
        fp.add(pid, f"p{pid}", uid=owner)
    marked: list[str] = []
    real = tasks.dir_mark

    def counted(path: str) -> tuple[int, int] | None:
        marked.append(path)
        return real(path)

    monkeypatch.setattr(tasks, "dir_mark", counted)
    cases: list[tuple[int, int | None, int]] = [(0, None, 0), (0, 1001, 3), (1000, None, 3)]
    for euid, uid, marks in cases:
        marked.clear()
        TaskScanner(str(tmp_path), euid=euid, uid=uid).scan()
        assert len(marked) == marks, (euid, uid)


def test_name_and_cmdline_full_and_safe(tmp_path: Path) -> None:
    fp = FakeProc(tmp_path)
    fp.add(10, "tmux: server", cmdline=b"tmux\0new\0-s\0a b\nc\0")
    fp.add(11, "kworker/0:1")
    t10, t11 = sorted(TaskScanner(str(tmp_path)).scan().tasks, key=lambda t: t.tid)
    assert t10.name == "tmux: server"
    assert t10.cmdline == "tmux new -s a b\\nc"
    assert t11.cmdline == "[kworker/0:1]"


def test_pid_reuse_is_a_new_task(tmp_path: Path) -> None:
    fp = FakeProc(tmp_path)
    fp.add(10, "first", starttime=500, utime=1000)
    sc = TaskScanner(str(tmp_path))
    (a,) = sc.scan().new
    fp.remove(10)
    fp.add(10, "second", starttime=900, utime=5)
    scan = sc.scan()
    (b,) = scan.tasks
    assert scan.gone == [a]
    assert scan.new == [b]
    assert (b.name, b.starttime) == ("second", 900)
    # The new task's CPU is not a delta against the old one's 1000 ticks.
    assert b.cpu_total == 0.0
    scan = sc.scan()
    assert scan.tasks[0] is b and not scan.new


def test_cpu_percent_from_deltas(tmp_path: Path) -> None:
    fp = FakeProc(tmp_path)
    fp.add(10, "busy", utime=100, stime=50)
    sc = TaskScanner(str(tmp_path))
    sc.scan()
    t0 = time.monotonic()
    time.sleep(0.2)
    fp.set_stat(10, "busy", utime=100 + 15, stime=50 + 5)
    scan = sc.scan()
    (t,) = scan.tasks
    want = 100 * 20 / (scan.interval * CLK_TCK)
    assert t.cpu_total == pytest.approx(want)
    assert t.cpu_user == pytest.approx(want * 15 / 20)
    assert t.cpu_sys == pytest.approx(want * 5 / 20)
    assert 0.19 < scan.interval < time.monotonic() - t0 + 0.01


def test_vanished_and_zombie(tmp_path: Path) -> None:
    fp = FakeProc(tmp_path)
    fp.add(10, "a")
    fp.add(11, "b")
    fp.add(12, "leader", tids=(13,))
    sc = TaskScanner(str(tmp_path))
    sc.scan()
    fp.remove(10)
    fp.set_stat(11, "b", state="Z")
    # A zombie leader whose thread still runs keeps its process alive.
    fp.set_stat(12, "leader", state="Z", threads=2)
    scan = sc.scan()
    assert sorted(t.tid for t in scan.gone) == [10, 11]
    assert [t.tid for t in scan.tasks] == [12]


def test_threads_mode_lists_threads(tmp_path: Path) -> None:
    fp = FakeProc(tmp_path)
    fp.add(20, "app", tids=(21, 22))
    sc = TaskScanner(str(tmp_path), threads=True)
    scan = sc.scan()
    assert sorted((t.tid, t.pid) for t in scan.tasks) == [(20, 20), (21, 20), (22, 20)]
    fp.remove(20, 22)
    assert [t.tid for t in sc.scan().gone] == [22]


def test_exec_refreshes_name_and_cmdline(tmp_path: Path) -> None:
    fp = FakeProc(tmp_path)
    fp.add(10, "sh", cmdline=b"sh\0")
    sc = TaskScanner(str(tmp_path))
    (t,) = sc.scan().tasks
    (tmp_path / "10" / "cmdline").write_bytes(b"python3\0x.py\0")
    fp.set_stat(10, "python3")
    (t2,) = sc.scan().tasks
    assert t2 is t and (t.name, t.cmdline) == ("python3", "python3 x.py")


def test_threads_mode_unreadable_thread_is_dropped_not_raised(tmp_path: Path) -> None:
    """-H: a thread whose stat cannot be read for permission reasons (EACCES: another
    user's hidepid /proc, a setuid transition) is left out; the scan goes on."""
    fp = FakeProc(tmp_path)
    fp.add(20, "app", tids=(21, 22))
    fp.add(30, "other")
    denied = f"{tmp_path}/20/task/21/stat"

    def reader(path: str) -> Stat:
        if path == denied:
            raise PermissionError(13, "Permission denied", path)
        return read_stat(path)

    sc = TaskScanner(str(tmp_path), threads=True, stat_reader=reader)
    scan = sc.scan()
    assert sorted(t.tid for t in scan.tasks) == [20, 22, 30]


def _set_family(root: Path, pid: int, ppid: int, cutime: int = 0, cstime: int = 0) -> None:
    """Give a fake stat line its ppid (field 4) and cutime/cstime (16, 17)."""
    path = root / str(pid) / "stat"
    head, _, rest = path.read_text().rpartition(") ")
    f = rest.split()  # f[0] is field 3
    f[1], f[13], f[14] = str(ppid), str(cutime), str(cstime)
    path.write_text(f"{head}) {' '.join(f)}\n")


def test_tree_root_sums_live_descendants_and_reaped_children(tmp_path: Path) -> None:
    """A tree root's row: CPU of itself + reaped children (cutime/cstime) + every live
    descendant (with their own reaped children); descendants get no rows."""
    fp = FakeProc(tmp_path)
    fp.add(10, "sh", utime=5, stime=1, starttime=500)
    fp.add(11, "make", utime=3, stime=1)
    fp.add(12, "cc", utime=2, stime=3)
    fp.add(13, "unrelated", utime=50, stime=50)
    _set_family(tmp_path, 10, 1, cutime=7, cstime=2)
    _set_family(tmp_path, 11, 10, cutime=1, cstime=1)
    _set_family(tmp_path, 12, 11)
    _set_family(tmp_path, 13, 1)
    sc = TaskScanner(str(tmp_path))
    sc.add_tree_root(10, 500)
    scan = sc.scan()
    assert sorted(t.tid for t in scan.tasks) == [10, 13]
    (root,) = [t for t in scan.tasks if t.tid == 10]
    assert (root.utime, root.stime) == (5 + 7 + 3 + 1 + 2, 1 + 2 + 1 + 1 + 3)
    assert sorted(sc.tree[10]) == [11, 12]
    # cc (12) ends and is reaped by make: its 2+3 ticks move into make's cutime/cstime;
    # sh (10) burns 10 user and 4 system ticks. The root's delta is exactly sh's.
    fp.remove(12)
    fp.set_stat(11, "make", utime=3, stime=1)
    _set_family(tmp_path, 11, 10, cutime=1 + 2, cstime=1 + 3)
    fp.set_stat(10, "sh", utime=15, stime=5, starttime=500)
    _set_family(tmp_path, 10, 1, cutime=7, cstime=2)
    scan = sc.scan()
    (root,) = [t for t in scan.tasks if t.tid == 10]
    assert root.cpu_user == pytest.approx(100 * 10 / (scan.interval * CLK_TCK))
    assert root.cpu_sys == pytest.approx(100 * 4 / (scan.interval * CLK_TCK))
    assert sc.tree[10] == [11]


def test_zombie_final_times_give_its_last_interval(tmp_path: Path) -> None:
    """A task seen as a zombie (not reaped yet) is gone, with the %CPU of its final
    interval from its final stat; one reaped before we looked keeps its previous value.
    A zombie tree root counts its waited-for children's final times too; with -H the
    zombie leader's own thread stat is used."""
    fp = FakeProc(tmp_path)
    fp.add(10, "spin", utime=0, stime=0)
    fp.add(11, "gone", utime=0, stime=0)
    fp.add(12, "sh", utime=1, stime=0, starttime=500)
    _set_family(tmp_path, 12, 1)
    sc = TaskScanner(str(tmp_path))
    sc.add_tree_root(12, 500)
    sc.scan()
    fp.set_stat(10, "spin", state="Z", utime=30, stime=6)
    fp.remove(11)
    fp.set_stat(12, "sh", state="Z", utime=3, stime=1, starttime=500)
    _set_family(tmp_path, 12, 1, cutime=40, cstime=2)
    scan = sc.scan()
    assert scan.tasks == []
    by = {t.tid: t for t in scan.gone}
    assert sorted(by) == [10, 11, 12]
    tick = 100 / (scan.interval * CLK_TCK)
    assert by[10].cpu_user == pytest.approx(30 * tick)
    assert by[10].cpu_total == pytest.approx(36 * tick)
    assert by[10].state == "Z"
    assert by[11].cpu_total == 0.0  # reaped first: nothing more to know
    assert by[12].cpu_total == pytest.approx((2 + 1 + 40 + 2) * tick)
    # -H: a multi-threaded process's last thread ends; the process stat sums every
    # thread, the leader's row takes its own.
    fp.add(20, "app", tids=(21,))
    sc = TaskScanner(str(tmp_path), threads=True, only_pid=20)
    sc.scan()
    fp.remove(20, tid=21)
    fp.set_stat(20, "app", state="Z", threads=1, utime=99, stime=99)
    fp.set_stat(20, "app", tid=20, state="Z", threads=1, utime=8, stime=2)
    scan = sc.scan()
    by = {t.tid: t for t in scan.gone}
    assert sorted(by) == [20, 21]
    assert by[20].cpu_total == pytest.approx(10 * 100 / (scan.interval * CLK_TCK))


def test_threads_of_a_quiet_process_are_not_listed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With -H, a process none of whose listed threads ran (all ``quiet``) cannot have made
    a thread: its ``task/`` listing is reused. One that ran is listed again, and a thread
    it created shows up in that scan."""
    from tiptop.engine.scan import threadscan

    fp = FakeProc(tmp_path)
    fp.add(20, "pool", tids=(21, 22))
    listed: list[int] = []
    real = threadscan.list_threads
    monkeypatch.setattr(
        threadscan, "list_threads", spying(real, lambda root, pid: listed.append(pid))
    )
    sc = TaskScanner(str(tmp_path), threads=True)
    sc.scan()
    assert listed == [20]
    fp.add(20, "pool", tids=(21, 22, 23))  # (impossible: a thread made while none ran)
    sc.scan(Activity(not_due={20, 21, 22}, did_not_run={20, 21, 22}))
    assert listed == [20]  # all quiet: not listed, so 23 is not seen (it could not exist)
    sc.scan(Activity(not_due={20, 22}, did_not_run={20, 22}))  # 21 ran: listed again, 23 found
    assert listed == [20, 20]
    assert sorted(t.tid for t in sc.tasks) == [20, 21, 22, 23]
    sc.scan(
        Activity(not_due={20, 21, 22}, did_not_run={20, 21, 22})
    )  # 23 has no counters yet: not quiet
    assert listed == [20, 20, 20]


def test_a_thread_that_ran_keeps_its_place_among_its_process_s_threads(tmp_path: Path) -> None:
    """With -H the rows follow each process's task/ listing whether a thread was read
    afresh or kept (it did not run): the same rows in the same order, so the engine keeps
    its readings between refreshes (``same_tasks``)."""
    fp = FakeProc(tmp_path)
    fp.add(20, "pool", tids=(21, 22, 23))
    sc = TaskScanner(str(tmp_path), threads=True)
    first = [t.tid for t in sc.scan().tasks]
    assert sorted(first) == [20, 21, 22, 23]
    # 22 ran (not quiet): its stat is read again, the others are kept as they were.
    again = sc.scan(Activity(not_due={20, 21, 23}, did_not_run={20, 21, 23}))
    assert [t.tid for t in again.tasks] == first
    assert not again.new and not again.gone


def test_a_quiet_process_s_threads_are_kept_whole_and_at_rest(tmp_path: Path) -> None:
    """With -H, a process none of whose threads ran nor is due a look keeps its rows
    without a look at each (``ThreadRows.at_rest``): 0 %CPU each, a runnable one still
    queued; one that ran then is read again, and at rest again after."""
    fp = FakeProc(tmp_path)
    fp.add(20, "pool", tids=(21, 22), utime=5)
    (tmp_path / "20" / "task" / "20" / "schedstat").write_text("500 0 1\n")
    sc = TaskScanner(str(tmp_path), threads=True)
    sc.scan()
    fp.set_stat(20, "pool", tid=21, state="R", threads=3, utime=9)  # 21 ran, now runnable
    ran = sc.scan(Activity(not_due={20, 22}, did_not_run={20, 22}))
    by = {t.tid: t for t in ran.tasks}
    assert by[21].cpu_total > 0 and by[21].state == "R"
    quiet = Activity(not_due={20, 21, 22}, did_not_run={20, 21, 22})
    for _ in range(2):  # the second scan takes what the first kept
        rested = sc.scan(quiet)
        assert [t.tid for t in rested.tasks] == [t.tid for t in ran.tasks]
        assert [t.cpu_total for t in rested.tasks] == [0.0, 0.0, 0.0]
        assert [t.tid for t in rested.queued] == [21] and not rested.looked
        assert rested.threads_total == 3
    fp.set_stat(20, "pool", tid=22, threads=3, utime=9)  # 22 ran: looked at, kept no more
    again = sc.scan(Activity(not_due={20, 21}, did_not_run={20, 21}))
    assert [t.tid for t in again.looked] == [22] and again.looked[0].cpu_total > 0
    assert [t.cpu_total for t in sc.scan(quiet).tasks] == [0.0, 0.0, 0.0]
    # The leader due a look (the sweep), its run time moved: read, not kept whole, with
    # no new listing; at rest again at the next quiet scan.
    sc.scan(quiet)
    (tmp_path / "20" / "task" / "20" / "schedstat").write_text("900 0 1\n")
    fp.set_stat(20, "pool", tid=20, threads=3, utime=9)
    swept = sc.scan(Activity(not_due={21, 22}, did_not_run={20, 21, 22}))
    assert [t.tid for t in swept.looked] == [20] and swept.looked[0].cpu_total > 0
    assert [t.cpu_total for t in sc.scan(quiet).tasks] == [0.0, 0.0, 0.0]


def test_other_users_processes_are_not_read_again_until_their_mark_changes(
    tmp_path: Path,
) -> None:
    """Not root: another user's process is examined once; while its /proc/PID inode and
    owner stay, its stat is not read again. A PID reused (new directory, new inode) or an
    owner change (setuid then exec) makes it examined again, and it shows when it is ours."""
    fp = FakeProc(tmp_path)
    fp.add(10, "mine", uid=1000)
    fp.add(20, "theirs", uid=0)
    reads: list[str] = []

    def reader(path: str) -> Stat:
        reads.append(path.split("/")[-2])
        return read_stat(path)

    sc = TaskScanner(str(tmp_path), euid=1000, stat_reader=reader)
    assert [t.tid for t in sc.scan().tasks] == [10]
    assert sorted(reads) == ["10", "20"]
    reads.clear()
    sc.scan()
    assert reads == ["10"]  # 20: its mark is unchanged
    # The owner changes (a setuid, then an exec: proc(5) owns /proc/PID by the euid).
    fp.add(20, "nowmine", uid=1000)
    os.chown(tmp_path / "20", 1000, -1)
    reads.clear()
    assert sorted(t.tid for t in sc.scan().tasks) == [10, 20]
    assert sorted(reads) == ["10", "20"]
    # PID 30 of another user exits and the PID is reused by one of ours: a new inode.
    fp.add(30, "theirs", uid=0)
    sc.scan()
    fp.remove(30)
    fp.add(30, "reused", uid=1000, starttime=777)
    os.chown(tmp_path / "30", 1000, -1)  # procfs: a new inode and our uid
    assert 30 in [t.tid for t in sc.scan().tasks]


def test_only_pid_reads_no_other_process(tmp_path: Path) -> None:
    """-p PID: no other process can ever be watched, so none is read (only listed)."""
    fp = FakeProc(tmp_path)
    for pid in (10, 20, 30):
        fp.add(pid, f"p{pid}")
    reads: list[str] = []

    def reader(path: str) -> Stat:
        reads.append(path.split("/")[-2])
        return read_stat(path)

    sc = TaskScanner(str(tmp_path), only_pid=20, stat_reader=reader)
    for _ in range(2):
        assert [t.tid for t in sc.scan().tasks] == [20]
    assert reads == ["20", "20"]


def test_descendants_follow_parents_and_go_to_the_first_root() -> None:
    from tiptop.engine.scan.trees import descendants

    parents = {1: 0, 2: 1, 3: 2, 4: 1, 9: 1, 5: 9, 7: 8, 8: 7}
    fam = {pid: (ppid, 0, 0) for pid, ppid in parents.items()}  # (ppid, user, system ticks)
    got = descendants(fam, [9, 1, 7])  # 9 is under 1 but listed first: its child is its own
    assert {k: sorted(v) for k, v in got.items()} == {9: [5], 1: [2, 3, 4, 9], 7: [8]}


def test_the_scan_says_which_tasks_it_read_afresh_and_which_stayed_queued(
    tmp_path: Path,
) -> None:
    """``Scan.looked``: the tasks seen before whose stat was read again; ``Scan.queued``:
    those kept as they were (they did not run) while runnable when last seen (state R),
    which ``engine.scan.times`` counts as waiting all along."""
    fp = FakeProc(tmp_path)
    fp.add(10, "busy", state="R")
    fp.add(20, "queued", state="R")
    fp.add(30, "asleep", state="S")
    scanner = TaskScanner(str(tmp_path), euid=0, cpu_clock=False)
    first = scanner.scan()
    assert first.looked == [] and first.queued == []  # all new: nothing seen before
    fp.set_stat(10, "busy", state="R", utime=5)
    quiet = frozenset({20, 30})
    scan = scanner.scan(Activity(did_not_run=quiet, not_due=quiet))
    assert [t.pid for t in scan.looked] == [10]
    assert [t.pid for t in scan.queued] == [20]
