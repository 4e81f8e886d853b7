"""Where each row's time went, read from files (issue 47): ``tiptop.engine.scan.times`` over a
fake ``/proc`` and a fake ``cpu`` cgroup hierarchy, and the kernel-side readers
(``tiptop.kernel.cgroup``, ``tiptop.kernel.machine``, ``tiptop.host.cpu_cgroups``) on the
files' documented formats. The real kernel's numbers are tests/system/test_time_shares.py's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.fakeproc import FakeProc
from tiptop.cells import Status
from tiptop.engine.scan.tasks import TaskScanner
from tiptop.engine.scan.times import TimeReader
from tiptop.host import CpuCgroups, Host, cpu_cgroups
from tiptop.kernel import cgroup, machine

OK, UNR = int(Status.OK), int(Status.UNREADABLE)


class Clock:
    """Monotonic seconds that move only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def schedstat(proc: Path, pid: int, run_ns: float, wait_ns: float, tid: int | None = None) -> None:
    """Write a task's ``schedstat``: ns on a CPU, ns waiting, time slices."""
    line = f"{int(run_ns)} {int(wait_ns)} 7\n"
    (proc / str(pid) / "schedstat").write_text(line)
    (proc / str(pid) / "task" / str(tid or pid) / "schedstat").write_text(line)


@pytest.fixture
def world(tmp_path: Path) -> tuple[FakeProc, Path, Path]:
    """A fake /proc with a CPU loop (pid 10) in cgroup /box (0.2 CPU) and a sleeper (pid 20)
    in the root cgroup; the cgroup hierarchy's mount."""
    proc, cpu = tmp_path / "proc", tmp_path / "cpu"
    fp = FakeProc(proc)
    fp.add(10, "loop", utime=100)
    fp.add(20, "sleeper", utime=5)
    (proc / "10" / "cgroup").write_text("5:cpu,cpuacct:/box\n1:name=systemd:/x\n")
    (proc / "20" / "cgroup").write_text("5:cpu,cpuacct:/\n")
    schedstat(proc, 10, 5e9, 1e9)
    schedstat(proc, 20, 1e6, 0)
    box = cpu / "box"
    box.mkdir(parents=True)
    (box / "cpu.stat.local").write_text("throttled_time 2000000000\n")
    (box / "cpu.cfs_quota_us").write_text("20000\n")
    (box / "cpu.cfs_period_us").write_text("100000\n")
    return fp, proc, cpu


def test_parts_are_diffs_clamped_and_throttling_is_shared(
    world: tuple[FakeProc, Path, Path],
) -> None:
    fp, proc, cpu = world
    host = Host(
        proc_root=str(proc), cpus=2, delayacct=False, cpu_cgroups=CpuCgroups(str(cpu), False)
    )
    clock = Clock()
    scanner = TaskScanner(str(proc), euid=0, cpu_clock=False)
    reader = TimeReader(host, threads=False, clock=clock)
    tasks = {t.pid: t for t in scanner.scan().tasks}
    reader.begin(tasks.values())

    # 1 s later: the loop ran 0.2 s and waited 0.8 s (throttled 0.78 s); the sleeper slept
    fp.set_stat(10, "loop", utime=120)
    schedstat(proc, 10, 5.2e9, 1.8e9)
    (cpu / "box" / "cpu.stat.local").write_text("throttled_time 2780000000\n")
    clock.now += 1.0
    scan = scanner.scan()
    rows = sorted((t for t in scan.tasks if t.pid in (10, 20)), key=lambda t: t.pid)
    got = reader.read(rows, 1.0, scan.looked)
    assert got.percent[0, :2].tolist() == pytest.approx([20.0, 80.0])
    assert got.percent[1, :2].tolist() == [0.0, 0.0]
    # its cgroup read for the first time now: nothing to diff yet, said unknown
    assert got.status[0].tolist() == [OK, OK, UNR, UNR]  # I/O: delay accounting off
    assert got.status[1].tolist() == [OK, OK, OK, UNR]  # the root cgroup: never throttled
    assert got.limit[0] == pytest.approx(0.2) and np.isnan(got.limit[1])
    assert got.threads.tolist() == [1.0, 1.0]

    # 1 s later again, as before: throttled 0.78 s of its 0.8 s wait
    fp.set_stat(10, "loop", utime=140)
    schedstat(proc, 10, 5.4e9, 2.6e9)
    (cpu / "box" / "cpu.stat.local").write_text("throttled_time 3560000000\n")
    clock.now += 1.0
    scan = scanner.scan()
    rows = sorted((t for t in scan.tasks if t.pid in (10, 20)), key=lambda t: t.pid)
    got = reader.read(rows, 1.0, scan.looked)
    assert got.percent[0, :3].tolist() == pytest.approx([20.0, 80.0, 78.0])
    assert got.status[0, 2] == OK

    # A wait credited when it ended is clamped: 3 s of wait in a 1 s interval
    fp.set_stat(10, "loop", utime=141)
    schedstat(proc, 10, 5.41e9, 5.6e9)
    clock.now += 1.0
    scan = scanner.scan()
    rows = [t for t in scan.tasks if t.pid == 10]
    got = reader.read(rows, 1.0, scan.looked)
    assert got.percent[0, :2].tolist() == pytest.approx([1.0, 99.0])


def test_a_process_sums_its_threads_and_a_reaped_row_is_unknown(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    fp = FakeProc(proc)
    fp.add(30, "pool", tids=(31, 32), utime=10)
    for tid, (run, wait) in {30: (1e9, 0), 31: (2e9, 1e9), 32: (3e9, 0)}.items():
        (proc / "30" / "task" / str(tid) / "schedstat").write_text(f"{int(run)} {int(wait)} 1\n")
    host = Host(proc_root=str(proc), cpus=2, delayacct=False)
    scanner = TaskScanner(str(proc), euid=0, cpu_clock=False)
    reader = TimeReader(host, threads=False)
    (pool,) = scanner.scan().tasks
    reader.begin([pool])
    for tid, (run, wait) in {30: (1.1e9, 0), 31: (2.9e9, 1.1e9), 32: (3.5e9, 0.4e9)}.items():
        (proc / "30" / "task" / str(tid) / "schedstat").write_text(f"{int(run)} {int(wait)} 1\n")
    fp.set_stat(30, "pool", utime=20, threads=3)
    scan = scanner.scan()
    (pool,) = scan.tasks
    got = reader.read([pool], 1.0, scan.looked)
    # 0.1 + 0.9 + 0.5 s on a CPU, 0.1 + 0.4 s waiting (thread 31's clamped to 0.1 s)
    assert got.percent[0, :2].tolist() == pytest.approx([150.0, 50.0])
    assert got.threads.tolist() == [3.0]
    # the process has ended since, unseen: its last interval is unknown, never zeros
    fp.remove(30)
    got = reader.read([pool], 1.0, [], live=0)
    assert got.status[0, :2].tolist() == [UNR, UNR] and np.isnan(got.percent[0, :2]).all()


# --------------------------------------------------------------------- the kernel's files


def test_cpu_cgroup_paths_v1_v2_and_bind_mounts() -> None:
    text = b"12:pids:/a\n5:cpu,cpuacct:/kube/pod1\n0::/user.slice/x\n"
    assert cgroup.cpu_path_of(text, v2=False) == "/kube/pod1"
    assert cgroup.cpu_path_of(text, v2=True) == "/user.slice/x"
    assert cgroup.cpu_path_of(b"1:name=systemd:/\n", v2=False) is None
    assert cgroup.cpu_dir("/sys/fs/cgroup/cpu", "/", "/a/b") == "/sys/fs/cgroup/cpu/a/b"
    assert cgroup.cpu_dir("/mnt/cg", "/docker/x", "/docker/x/y") == "/mnt/cg/y"


def test_throttled_time_and_limits_v1_v2_and_ancestors(tmp_path: Path) -> None:
    v1 = tmp_path / "v1"
    (v1 / "a" / "b").mkdir(parents=True)
    (v1 / "a" / "cpu.cfs_quota_us").write_text("50000\n")
    (v1 / "a" / "cpu.cfs_period_us").write_text("100000\n")
    (v1 / "a" / "b" / "cpu.cfs_quota_us").write_text("-1\n")
    (v1 / "a" / "b" / "cpu.cfs_period_us").write_text("100000\n")
    (v1 / "a" / "cpu.stat").write_text("nr_periods 9\nnr_throttled 4\nthrottled_time 700\n")
    (v1 / "a" / "b" / "cpu.stat").write_text("nr_periods 0\nnr_throttled 0\nthrottled_time 0\n")
    # no cpu.stat.local (a kernel before 6.8): the ancestor's throttling holds the child
    assert cgroup.throttled_ns(str(v1), "/", "/a/b", v2=False) == 700
    assert cgroup.cpu_limit(str(v1), "/", "/a/b", v2=False) == pytest.approx(0.5)
    (v1 / "a" / "b" / "cpu.stat.local").write_text("throttled_time 650\n")
    assert cgroup.throttled_ns(str(v1), "/", "/a/b", v2=False) == 650
    assert cgroup.throttled_ns(str(v1), "/", "/", v2=False) is None  # the root: no limit
    v2 = tmp_path / "v2"
    (v2 / "svc").mkdir(parents=True)
    (v2 / "svc" / "cpu.max").write_text("150000 100000\n")
    (v2 / "svc" / "cpu.stat").write_text("usage_usec 9\nnr_throttled 2\nthrottled_usec 30\n")
    assert cgroup.throttled_ns(str(v2), "/", "/svc", v2=True) == 30_000
    assert cgroup.cpu_limit(str(v2), "/", "/svc", v2=True) == pytest.approx(1.5)
    (v2 / "svc" / "cpu.max").write_text("max 100000\n")
    assert cgroup.cpu_limit(str(v2), "/", "/svc", v2=True) is None


def where(c: CpuCgroups | None) -> tuple[str, bool, str] | None:
    return None if c is None else (c.mount, c.v2, c.root)


def test_the_cpu_hierarchy_from_mountinfo(tmp_path: Path) -> None:
    (tmp_path / "self").mkdir()
    unified = tmp_path / "unified"
    unified.mkdir()
    (unified / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    hybrid = (
        "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
        "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
        f"41 31 0:38 / {unified} rw - cgroup2 cgroup2 rw\n"
    )
    (tmp_path / "self" / "mountinfo").write_text(hybrid)
    assert where(cpu_cgroups(str(tmp_path))) == ("/sys/fs/cgroup/cpu,cpuacct", False, "/")
    only_v2 = f"41 31 0:38 /ns\\040x {unified} rw - cgroup2 cgroup2 rw,nsdelegate\n"
    (tmp_path / "self" / "mountinfo").write_text(only_v2)
    assert where(cpu_cgroups(str(tmp_path))) == (str(unified), True, "/ns x")
    (unified / "cgroup.controllers").write_text("memory pids\n")  # cpu not enabled
    assert cpu_cgroups(str(tmp_path)) is None


def test_the_machine_files(tmp_path: Path) -> None:
    (tmp_path / "stat").write_text("cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 1 2 3\n")
    assert machine.cpu_ticks(str(tmp_path)) == (40, 1000)
    (tmp_path / "pressure").mkdir()
    (tmp_path / "pressure" / "io").write_text(
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=1234\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=567\n"
    )
    (tmp_path / "pressure" / "cpu").write_text("some avg10=1.00 avg60=0 avg300=0 total=99\n")
    assert machine.pressure_totals(str(tmp_path), "io") == (1234, 567)
    assert machine.pressure_totals(str(tmp_path), "cpu") == (99, None)
    assert machine.pressure_totals(str(tmp_path), "memory") is None
    (tmp_path / "loadavg").write_text("0.50 0.40 0.30 3/250 12345\n")
    assert machine.runnable(str(tmp_path)) == 2  # the reader itself left out


def test_io_is_unknown_for_tasks_forked_before_delay_accounting_was_on(tmp_path: Path) -> None:
    """A task forked while ``kernel.task_delayacct`` was 0 is never counted
    (include/linux/delayacct.h ``delayacct_tsk_init``): where this run sees it turned on,
    the tasks older than that read ``?``, the younger ones their I/O."""
    proc = tmp_path / "proc"
    fp = FakeProc(proc, uptime=100.0)  # 100 s since boot: 10000 ticks
    fp.add(10, "old", starttime=1000)
    fp.add(20, "young", starttime=20000)
    for pid in (10, 20):
        schedstat(proc, pid, 1e9, 0)
    knob = proc / "sys" / "kernel" / "task_delayacct"
    knob.parent.mkdir(parents=True)
    knob.write_text("0\n")
    reader = TimeReader(Host(proc_root=str(proc), cpus=2, delayacct=False), threads=False)
    scanner = TaskScanner(str(proc), euid=0, cpu_clock=False)
    rows = sorted(scanner.scan().tasks, key=lambda t: t.pid)
    reader.begin(rows)
    assert reader.read(rows, 1.0, rows).status[:, 3].tolist() == [UNR, UNR]  # off
    knob.write_text("1\n")
    assert reader.read(rows, 1.0, rows).status[:, 3].tolist() == [UNR, OK]
    # on since before a run started: every task taken as counted
    fresh = TimeReader(Host(proc_root=str(proc), cpus=2, delayacct=True), threads=False)
    fresh.begin(rows)
    assert fresh.read(rows, 1.0, rows).status[:, 3].tolist() == [OK, OK]


def test_a_task_queued_all_along_waits_before_the_kernel_credits_it(tmp_path: Path) -> None:
    """Runnable when last seen (state R) and not run since: it waited the whole interval,
    shown then; the wait the kernel credits when it ends has that part taken off, so no
    second of it is shown twice (tiptop/engine/scan/times.py)."""
    proc = tmp_path / "proc"
    fp = FakeProc(proc)
    fp.add(10, "starved", state="R", utime=50)
    schedstat(proc, 10, 1e9, 2e9)
    reader = TimeReader(Host(proc_root=str(proc), cpus=2, delayacct=False), threads=False)
    scanner = TaskScanner(str(proc), euid=0, cpu_clock=False)
    rows = scanner.scan().tasks
    reader.begin(rows)
    # two intervals in which it did not run (its stat not read again: kept, runnable)
    for _ in range(2):
        got = reader.read(rows, 1.0, [], queued=rows)
        assert got.percent[0, :2].tolist() == [0.0, 100.0]
    # then it ran 0.1 s; the kernel credits the 2.5 s wait that just ended
    fp.set_stat(10, "starved", state="S", utime=60)
    schedstat(proc, 10, 1.1e9, 4.5e9)
    scan = scanner.scan()
    rows = scan.tasks
    got = reader.read(rows, 1.0, scan.looked)
    assert got.percent[0, :2].tolist() == pytest.approx([10.0, 50.0])  # 2.5 s less the 2 shown
    # asleep when last seen: nothing is shown for an interval it did not run
    assert reader.read(rows, 1.0, []).percent[0, :2].tolist() == [0.0, 0.0]
