"""Groups read only when their process ran (``engine.count.counters.RunClocks``): over the
FAKE backend, whose counts move with the fake time whatever its FAKE CPU-time clocks say,
so a group left unread shows as counts that stood; the clocks are told to stand or move
by each test (``FakeBackend.run_clocks``). The real kernel's side: tests/system/
test_skipped_reads.py."""

from __future__ import annotations

import errno
from collections.abc import Sequence

import numpy as np
import pytest

from tests.support.fake_backend import FakeBackend
from tests.support.sampling import CY, PF, FakeEnv, make, row
from tiptop.cells import Status
from tiptop.engine.sampler import Sampler
from tiptop.frame import Frame

#: FAKE_SCREEN's column of C's total since attach (tests/support/sampling.py).
TOTAL = 4


@pytest.fixture(autouse=True)
def clocked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake /proc is no PID namespace's: the sampler is told its clocks stand for the
    groups anyway (what ``Sampler._run_clocks`` says under this namespace's /proc)."""
    monkeypatch.setattr(Sampler, "_run_clocks", lambda self: True)


class Asked:
    """Wraps the fake backend's ``run_times`` to keep each call's pids."""

    def __init__(self, b: FakeBackend) -> None:
        self.inner = b.run_times
        self.calls: list[list[int]] = []
        b.run_times = self  # type: ignore[method-assign]

    def __call__(self, pids: Sequence[int]) -> list[int]:
        self.calls.append(list(pids))
        return self.inner(pids)


def cycles(f: Frame, tid: int) -> tuple[float, float]:
    """``tid``'s cycles over the interval and since attach."""
    i = row(f, tid)
    return float(f.counter_delta[i, 0]), float(f.values[i, TOTAL])


def one_app(env: FakeEnv, clock: int = 0) -> tuple[Sampler, Frame]:
    """Process 10 counting 1e9 cycles a second, its FAKE clock at ``clock`` (0: unset, it
    cannot say), sampled once: the sampler and its first frame (its groups read)."""
    fp, b = env
    fp.add(10, "app")
    b.script(10, CY, 1e9)
    if clock:
        b.run_clocks[10] = clock
    s = make(env)
    s.start()
    b.clock.advance(1.0)
    return s, s.refresh()


def test_a_process_whose_clock_stands_is_not_read_and_loses_nothing(env: FakeEnv) -> None:
    """While its clock stands, its groups are not read: its counts stand (0 over the
    interval, its total kept, status OK) though the fake's moved; once the clock moves,
    one read gives everything since the last one. A process whose clock cannot be read
    (0) is read every time."""
    fp, b = env
    for pid in (10, 20):
        fp.add(pid, "app")
        b.script(pid, CY, 1e9)
    b.run_clocks[10] = 5_000
    s = make(env)
    s.start()
    b.clock.advance(1.0)
    f = s.refresh()  # nothing to go by yet: read
    assert cycles(f, 10) == (1e9, 1e9)
    for seconds in (2, 3):
        b.clock.advance(1.0)
        f = s.refresh()
        assert cycles(f, 10) == (0.0, 1e9)  # stood: the last read's words
        assert f.counter_status[row(f, 10)].tolist() == [Status.OK] * 3
        assert cycles(f, 20) == (1e9, seconds * 1e9)  # no clock to go by: read
    b.run_clocks[10] = 5_001
    b.clock.advance(1.0)
    f = s.refresh()
    assert cycles(f, 10) == (3e9, 4e9)  # the three intervals since its last read
    assert cycles(f, 20)[1] == 4e9


def test_a_standing_clock_s_row_is_not_read_when_the_reading_is_made_anew(
    env: FakeEnv,
) -> None:
    """A new task makes a new reading (another row set), which has no sums of its own to
    keep: the rows whose clock stood still are not read, their totals made from their
    groups' last words."""
    fp, b = env
    s, _ = one_app(env, clock=5)
    first = s._attacher._reading
    fp.add(20, "new")
    b.script(20, CY, 2e9)
    for _ in range(2):  # 20 found, then its groups read with 10's in a new reading
        b.clock.advance(1.0)
        f = s.refresh()
        assert cycles(f, 10) == (0.0, 1e9)
    assert s._attacher._reading is not first
    b.run_clocks[10] = 6
    b.clock.advance(1.0)
    f = s.refresh()
    assert cycles(f, 10) == (3e9, 4e9)
    assert cycles(f, 20) == (2e9, 4e9)


def test_a_reading_made_anew_where_no_row_ran_keeps_every_total(env: FakeEnv) -> None:
    """Another row set (a process gone) makes a new reading; where no row of it ran, none
    is read, and each row's total is still made from its groups' last words (a reading
    with sums of its own skips them then: ``Reading.read``)."""
    fp, b = env
    for pid, clock in ((10, 5), (20, 7)):
        fp.add(pid, "app")
        b.script(pid, CY, 1e9)
        b.run_clocks[pid] = clock
    s = make(env)
    s.start()
    b.clock.advance(1.0)
    s.refresh()
    first = s._attacher._reading
    fp.remove(20)
    for _ in range(3):  # 20 shown gone, then 10 alone in a new reading, then kept
        b.clock.advance(1.0)
        f = s.refresh()
        assert cycles(f, 10) == (0.0, 1e9)
    assert s._attacher._reading is not first


def test_one_clock_a_process_for_its_thread_rows(env: FakeEnv) -> None:
    """-H: the process's clock is read once for all its thread rows, and when it moves
    every thread's groups are read (which thread ran, it cannot say)."""
    fp, b = env
    fp.add(10, "app", tids=(11, 12))
    for tid in (10, 11, 12):
        b.script(tid, PF, 10)
    b.run_clocks[10] = 7
    asked = Asked(b)
    s = make(env, threads=True)
    s.start()
    b.clock.advance(1.0)
    s.refresh()
    b.clock.advance(1.0)
    f = s.refresh()
    assert asked.calls == [[10], [10]]
    assert [f.counter_delta[row(f, t), 2] for t in (10, 11, 12)] == [0, 0, 0]
    b.run_clocks[10] = 8
    b.clock.advance(1.0)
    f = s.refresh()
    assert [f.counter_delta[row(f, t), 2] for t in (10, 11, 12)] == [20, 20, 20]


def test_after_a_failed_read_the_group_is_read_again_though_the_clock_stood(
    env: FakeEnv,
) -> None:
    """A read that failed while the group stays open (still changing after every try,
    ECHILD) leaves nothing to go by: the next refresh reads it though the clock stood,
    and gets what it counted over both intervals."""
    _, b = env
    s, _ = one_app(env)
    b.run_clocks[10] = 1_000
    b.read_errors[10] = errno.ECHILD
    b.clock.advance(1.0)
    f = s.refresh()  # the clock moved (0 -> 1000): read, and it fails
    assert f.status[row(f, 10), 1] == Status.UNREADABLE
    del b.read_errors[10]
    b.clock.advance(1.0)
    f = s.refresh()
    assert cycles(f, 10) == (2e9, 3e9)


def test_a_spawned_command_s_tree_is_read_at_every_refresh(env: FakeEnv) -> None:
    """A spawned command's row counts its process tree: a child's counts fold in while
    its time is on its own clock, so the root's standing clock says nothing."""
    fp, b = env
    fp.add(10, "cmd")
    b.script(10, CY, 1e9)
    b.run_clocks[10] = 3
    s = make(env)
    s.attach_spawned(10)
    s.start()
    for _ in range(3):
        b.clock.advance(1.0)
        f = s.refresh()
    assert cycles(f, 10)[0] == 1e9
    assert np.all(f.counter_status[row(f, 10)] == Status.OK)


def test_counters_that_stood_while_the_clock_moved_are_looked_at_at_once(env: FakeEnv) -> None:
    """Process rows: counters that end under a running process (a set-user-ID exec ends
    them) are found at the next refresh, not in the sweep's turn (1 in 16): its clock
    moved while they stood, so its ``stat`` is read, shows CPU time, and the interval's
    counts are '?'."""
    fp, b = env
    s, f = one_app(env, clock=1)
    assert f.counter_status[row(f, 10)].tolist() == [Status.OK] * 3
    b.kill(10)  # FAKE: its counters keep their final counts, as ended ones do...
    b.run_clocks[10] = 2  # ...while it runs on
    fp.set_stat(10, "app", utime=50)
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.counter_status[row(f, 10)].tolist() == [Status.UNREADABLE] * 3
