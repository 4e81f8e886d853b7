"""Attaching counters while a task changes under us (issue: a process uncounted for life):
an errno met on a task after its events opened fine on ourselves is a race with the task,
retried at the next refresh and never explained as missing hardware; and the fd reserve
scales down with a small fd limit so the busiest tasks are still counted."""

from __future__ import annotations

import errno
import struct

import numpy as np

from tests.support import spying
from tests.support.fake_backend import FakeBackend, FakeGroup
from tests.support.sampling import FakeEnv, make, row
from tiptop.cells import Status
from tiptop.engine.count import units
from tiptop.engine.count.attach import RACE_TRIES
from tiptop.engine.count.readout import CounterPlan, GroupDef, read_units
from tiptop.engine.count.units import Stores, Unit, read_all
from tiptop.host import Host, fd_reserve
from tiptop.kernel.attr import Attr
from tiptop.kernel.backend import GroupReading
from tiptop.kernel.errors import translate


def test_a_thread_failing_with_enodev_is_dropped_not_the_process(env: FakeEnv) -> None:
    fp, b = env
    fp.add(10, "churner", tids=(11,))
    b.tid_errors[11] = errno.ENODEV  # thread 11 exiting while its group is opened
    b.script(10, (1, 2), 5)
    s = make(env)
    s.start()
    assert {g.tid for g in b.groups} == {10}
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.status[row(f, 10), 3] == Status.OK and f.values[row(f, 10), 3] == 5.0
    assert not any("not supported" in m for m in s.messages.lines()), s.messages.lines()


def test_the_task_itself_failing_is_retried_next_refresh(env: FakeEnv) -> None:
    fp, b = env
    fp.add(10, "execing")
    b.tid_errors[10] = errno.ENODEV
    b.script(10, (1, 2), 7)
    s = make(env)
    s.start()
    assert not b.groups
    (line,) = s.messages.lines()
    assert "ENODEV while attaching counters" in line and "retried" in line
    assert "CPU" not in line  # never blamed on the hardware
    del b.tid_errors[10]
    b.clock.advance(1.0)
    s.refresh()  # retried here: counters open now
    assert {g.tid for g in b.groups} == {10}
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.status[0, 3] == Status.OK and f.values[0, 3] == 7.0


def test_a_task_that_always_fails_is_given_up_after_some_tries(env: FakeEnv) -> None:
    fp, b = env
    fp.add(10, "odd")
    b.tid_errors[10] = errno.EINVAL
    tries = []
    real_open = b.open_group
    b.open_group = spying(real_open, lambda tid, attrs: tries.append(tid))  # type: ignore[method-assign]
    s = make(env)
    s.start()
    for _ in range(RACE_TRIES + 2):
        b.clock.advance(1.0)
        s.refresh()
    # The first group fails each time, tried 3 times at once per refresh; then given up.
    assert tries.count(10) == 3 * RACE_TRIES
    assert any(f"{RACE_TRIES} times in a row" in m for m in s.messages.lines())


def test_fd_reserve_scales_with_a_small_limit() -> None:
    assert fd_reserve(20000) == 64 and fd_reserve(1024) == 64
    assert fd_reserve(256) == 32 and fd_reserve(64) == 8 and fd_reserve(16) == 8
    # ulimit -n 64 with 10 fds in use: 46 fds for counters, not 0.
    assert Host(fd_soft=64, fd_hard=64, fds_in_use=10).fd_budget == 46


def test_pid_reused_within_one_tick_is_a_new_task(env: FakeEnv) -> None:
    """Process 10 exits and a new process gets PID 10 in the same clock tick (same
    starttime, same name): its pidfd tells, so the old row ends (dead) with its own
    counts and the newcomer is a new task with counters of its own, never the old ones."""
    fp, b = env
    b.pidfds = True
    fp.add(10, "worker")
    b.script(10, (1, 2), 5)
    s = make(env)
    s.start()
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.tid.tolist() == [10] and f.values[0, 3] == 5.0
    old_groups = set(b.groups)
    b.exit_task(10)  # the worker exits; /proc shows PID 10 again, same starttime
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.tid.tolist() == [10] and f.dead.tolist() == [True]  # the old one's last row
    assert not old_groups & b.groups  # its counters are closed
    assert len(b.groups) == 2  # the newcomer's own (hardware, software)
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.tid.tolist() == [10] and f.dead.tolist() == [False]
    assert s.fds_used == b.open_fds + 1  # and its pidfd


def test_a_group_changing_under_the_read_is_read_again_not_closed(env: FakeEnv) -> None:
    """ECHILD from a group read (an inherited group read while a thread joins or leaves it,
    kernel/events/core.c __perf_read_group_add) is read again at once, then again after
    each pause (``units.CHANGING_PAUSES``); still failing, the group is kept and the next
    refresh's delta covers both intervals."""
    fp, b = env
    fp.add(10, "churner")
    b.script(10, (1, 2), 5)  # 5 page faults a second
    s = make(env)
    s.start()
    (soft,) = [g for g in b.groups if g.tid == 10 and g.keys == [(1, 2)]]
    real = soft.read
    fails = [1]  # the next read fails once, then works

    def flaky() -> GroupReading:
        if fails:
            fails.pop()
            raise translate(OSError(errno.ECHILD, "No child processes"))
        return real()

    soft.read = flaky  # type: ignore[method-assign]
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.status[0, 3] == Status.OK and f.values[0, 3] == 5.0  # read again at once
    # The one-call read of the refresh's units fails first (``FdReads``), then each unit
    # is read 8 times at once and 8 times after each pause: read after the last pause.
    fails[:] = [1] * (1 + 8 * len(units.CHANGING_PAUSES))
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.status[0, 3] == Status.OK and f.values[0, 3] == 5.0
    # Still changing after every pause: not read this refresh, kept open.
    fails[:] = [1] * (1 + 8 * (1 + len(units.CHANGING_PAUSES)))
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.status[0, 3] == Status.UNREADABLE and soft in b.groups
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.status[0, 3] == Status.OK and f.values[0, 3] == 10.0  # two intervals' faults
    assert s.messages.lines() == []


def _scripted(b: FakeBackend, tid: int, *script: int | str) -> FakeGroup:
    """A fake group of one counter whose reads are scripted: a count, or an errno to
    raise (ECHILD is the kernel's "group changing", read again); ``reads`` counts them."""
    g = b.open_group(tid, [Attr(type=1, config=2)])
    steps = list(script)
    g.reads = 0  # type: ignore[attr-defined]

    def read() -> GroupReading:
        g.reads += 1  # type: ignore[attr-defined]
        step = steps.pop(0) if len(steps) > 1 else steps[0]
        if isinstance(step, str):
            raise translate(OSError(getattr(errno, step), step))
        return GroupReading(np.array([step], np.uint64), 100, 100)

    g.read = read  # type: ignore[method-assign]
    return g


def _count(words: bytes) -> int:
    return struct.unpack("5Q", words)[3]


def test_one_failing_read_among_many_keeps_the_others_in_order() -> None:
    """The read of every unit in one pass; from the first error on, unit by unit: units
    before and after a failing one keep their reads and rows, a group changing under the
    read is read again, the failing one goes to ``failed``."""
    b = FakeBackend()
    groups = [
        _scripted(b, 1, 0, 1),
        _scripted(b, 2, 0, "ECHILD", 2),
        _scripted(b, 3, 0, "EIO"),
        _scripted(b, 4, 0, 3),
    ]
    stores = Stores(b)
    units = [Unit(g, 0, stores) for g in groups]  # each first read (the base) is the 0
    failed: list[tuple[int, Unit, OSError]] = []
    bufs, rows, ok = read_all(units, np.arange(4), failed, 5 * 8)
    assert ([_count(w) for w in bufs], rows.tolist(), ok) == (
        [1, 2, 3],
        [0, 1, 3],
        [units[0], units[1], units[3]],
    )
    assert [(i, u, e.errno) for i, u, e in failed] == [(2, units[2], errno.EIO)]
    # Each read once after its first (the base), the changing group once more: none twice.
    assert [g.reads for g in groups] == [2, 3, 2, 2]  # type: ignore[attr-defined]


def test_a_short_bare_read_is_read_again_and_fails_alone() -> None:
    """The bare reads of a refresh are checked by their total length: one short read (a
    pinned event in error state reads 0 bytes) sends the refresh unit by unit, where that
    unit fails with EIO and the others keep theirs."""
    b = FakeBackend()
    groups = [_scripted(b, 1, 0, 1), _scripted(b, 2, 0, 2), _scripted(b, 3, 0, 3)]
    stores = Stores(b)
    units = [Unit(g, 0, stores) for g in groups]
    b.read_errors[2] = errno.EIO
    failed: list[tuple[int, Unit, OSError]] = []
    bufs, rows, ok = read_all(units, np.arange(3), failed, 5 * 8)
    assert ([_count(w) for w in bufs], rows.tolist(), ok) == ([1, 3], [0, 2], [units[0], units[2]])
    assert [(i, e.errno) for i, _, e in failed] == [(1, errno.EIO)]


def test_one_unit_a_row_and_several_a_row_sum_alike() -> None:
    """read_units' two ways to the (row, alias) cells: one unit a row, every read good
    (each cell set from its unit), and several units a row or a failed read (summed per
    cell) give the same sums."""
    plan = CounterPlan(
        ("A",),
        [GroupDef("software", (Attr(type=1, config=0),), np.array([0]))],
        np.ones(1, bool),
        np.zeros(1, bool),
    )

    b = FakeBackend()
    stores = Stores(b)

    def units(*scripts: tuple[int | str, ...]) -> list[Unit]:
        return [Unit(_scripted(b, 1, 0, *s), 0, stores) for s in scripts]

    one, _ = read_units(plan, [units((5,)), units((7,))])
    assert (one.raw.tolist(), one.nread.tolist()) == ([[5.0], [7.0]], [[1.0], [1.0]])
    two, _ = read_units(plan, [units((5,), (2,)), units((7,))])
    assert (two.raw.tolist(), two.nread.tolist()) == ([[7.0], [7.0]], [[2.0], [1.0]])
    bad, failed = read_units(plan, [units((5,)), units(("EIO",))])
    assert (bad.raw.tolist(), bad.nread.tolist()) == ([[5.0], [0.0]], [[1.0], [0.0]])
    assert [(i, e.errno) for i, _, e in failed] == [(1, errno.EIO)]
    # as many units as rows, but not one each: still summed per row
    uneven, _ = read_units(plan, [units((5,), (2,)), units()])
    assert (uneven.raw.tolist(), uneven.nread.tolist()) == ([[7.0], [0.0]], [[2.0], [0.0]])
