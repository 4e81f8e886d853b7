"""The reads kept across refreshes: each unit's words in a row of a shared ``Store``
(engine.count.units), the flat order of a refresh's reads kept while nothing changes
(``readout.Reading``, ``readout.RowReading``). Over the FAKE backend and a fake /proc."""

from __future__ import annotations

import errno

import numpy as np
import pytest

from tests.support.fake_backend import FakeBackend, failing_read, fake_group
from tests.support.sampling import CY, IN, PF, FakeEnv, make, row
from tiptop.engine.count.units import WORD, FdReads, Store, Stores, Unit, read_all
from tiptop.errors import TaskGone
from tiptop.kernel.attr import Attr


def _words(*values: int) -> bytes:
    return np.array(values, WORD).tobytes()


def test_a_slot_given_back_is_taken_again_and_growth_keeps_the_rows() -> None:
    st = Store(2, FakeBackend())
    slots = [st.put(_words(i, 10 * i)) for i in range(20)]  # past the first 16 rows
    assert len(set(slots)) == 20
    assert st.base[slots].tolist() == [[i, 10 * i] for i in range(20)]
    st.last[slots[3]] = (7, 70)
    st.release(slots[3])
    again = st.put(_words(5, 50))
    assert again == slots[3]
    assert (st.base[again].tolist(), st.last[again].tolist()) == ([5, 50], [5, 50])


def test_the_reading_is_kept_while_nothing_changes_and_made_anew_after(env: FakeEnv) -> None:
    """Refreshes over the same tasks reuse the reading; a task that starts or ends makes
    a new one, and every interval's counts stay right through both."""
    fp, b = env
    fp.add(10, "app")
    b.script(10, CY, 1e9)
    b.script(10, IN, 2e9)
    b.script(10, PF, 10)
    s = make(env)
    s.start()
    b.clock.advance(1.0)
    s.refresh()
    first = s._attacher._reading
    b.clock.advance(1.0)
    f = s.refresh()
    assert s._attacher._reading is first
    assert f.counter_delta[row(f, 10)].tolist() == [1e9, 2e9, 10]
    fp.add(20, "new")
    b.script(20, CY, 3e9)
    b.clock.advance(1.0)
    s.refresh()  # 20 found: its groups open after this refresh's read
    b.clock.advance(1.0)
    f = s.refresh()
    assert s._attacher._reading is not first
    assert f.counter_delta[row(f, 20), 0] == 3e9
    assert f.counter_delta[row(f, 10)].tolist() == [1e9, 2e9, 10]


def test_a_slot_freed_by_an_ended_task_serves_the_next_one(env: FakeEnv) -> None:
    """The slots of an ended task's groups go to the next task's: its first interval
    counts from its own opening read, never from the ended task's last one."""
    fp, b = env
    fp.add(10, "old")
    b.script(10, CY, 5e9)
    s = make(env)
    s.start()
    b.clock.advance(1.0)
    s.refresh()
    slots = {u.slot for u in s._attacher._counters[(10, 1000)].units}
    fp.remove(10)
    b.clock.advance(1.0)
    s.refresh()  # 10's last interval, then its groups close
    fp.add(30, "next")
    b.script(30, CY, 1e9)
    b.clock.advance(1.0)
    s.refresh()
    assert {u.slot for u in s._attacher._counters[(30, 1000)].units} == slots
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.counter_delta[row(f, 30), 0] == 1e9
    assert f.values[row(f, 30), 4] == 1e9  # since its attach


def test_after_a_failed_read_the_closed_group_is_not_read_again(
    env: FakeEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group whose read failed is closed and its counts kept once: the next refresh,
    over the same rows, makes a new reading without it (a kept one would read the closed
    group again, fail again and keep its counts twice)."""
    fp, b = env
    fp.add(10, "app", tids=(11,))
    b.script(10, CY, 1e9)
    b.script(11, CY, 3e9)
    s = make(env)
    s.start()
    b.clock.advance(1.0)
    s.refresh()
    units = s._attacher._counters[(10, 1000)].units
    (bad,) = [u for u in units if u.gdef == 0 and fake_group(u.group).tid == 11]
    monkeypatch.setattr(bad.group, "read", failing_read(errno.EIO, "gone bad"))
    for total in (5e9, 6e9, 7e9):  # 4e9, then thread 10's 1e9 a second; 11's 3e9 kept once
        b.clock.advance(1.0)
        f = s.refresh()
        assert f.values[0, 4] == total


@pytest.mark.parametrize("field", ["units", "exit_fd", "mark", "spawned"])
def test_a_change_to_one_task_s_counters_makes_the_reading_anew(env: FakeEnv, field: str) -> None:
    """The rows stay the same, but one task's units, pidfd, mark or spawned flag is set
    (as the attacher does when a read fails, pidfds are given up or a spawned command's
    counters are adopted): the kept reading is stale, the next refresh makes a new one."""
    fp, b = env
    fp.add(10, "app")
    b.script(10, CY, 1e9)
    s = make(env)
    s.start()
    b.clock.advance(1.0)
    s.refresh()
    first = s._attacher._reading
    st = s._attacher._counters[(10, 1000)]
    setattr(st, field, getattr(st, field) if field != "units" else list(st.units))
    b.clock.advance(1.0)
    f = s.refresh()
    assert s._attacher._reading is not first
    assert f.counter_delta[row(f, 10), 0] == 1e9


def test_a_task_renamed_by_an_exec_shows_its_new_name_in_the_kept_rows(env: FakeEnv) -> None:
    """The rows' labels are kept while the rows stay (``Sampler._row_labels``); an exec
    (a new ``comm``) on the same rows makes them anew."""
    fp, b = env
    fp.add(10, "app")
    b.script(10, CY, 1e9)
    s = make(env)
    s.start()
    for _ in range(2):
        b.clock.advance(1.0)
        assert s.refresh().name == ["app"]
    fp.set_stat(10, "other", utime=50)
    b.clock.advance(1.0)
    assert s.refresh().name == ["other"]


def _units(b: FakeBackend, stores: Stores, *tids: int) -> list[Unit]:
    """One unit (task-clock, page-faults) on each of ``tids``, each counting ``10 * tid``
    page faults a second."""
    for t in tids:
        b.script(t, PF, 10 * t)
    return [
        Unit(b.open_group(t, [Attr(type=1, config=1), Attr(type=1, config=2)]), 0, stores)
        for t in tids
    ]


def _faults(words: bytes) -> int:
    return int(np.frombuffer(words, WORD)[5])  # nr, enabled, running, {value, id} * 2


def test_one_call_over_the_leaders_reads_each_unit_s_own_group() -> None:
    b = FakeBackend()
    units = _units(b, Stores(b), 1, 2, 3)
    b.clock.advance(1.0)
    got = FdReads(units, 7 * 8).read()
    assert got is not None and [_faults(w) for w in got] == [10, 20, 30]
    assert got == [u.read() for u in units]


def test_a_closed_unit_s_number_is_not_read_again() -> None:
    """Closing one unit ends the one-call reads made before over its store: the group
    opened next takes the closed leader's fd number (the lowest free, as open(2) gives),
    and the kept number would read that group as the closed unit's. A close in another
    owner's stores leaves the reads alone (none of their numbers is freed)."""
    b = FakeBackend()
    stores = Stores(b)
    units = _units(b, stores, 1, 2, 3)
    others = _units(b, Stores(b), 5)
    reads = FdReads(units, 7 * 8)
    others[0].close()
    b.clock.advance(1.0)
    assert reads.read() is not None
    closed_fd = units[1].group.fds[0]
    units[1].close()
    (new,) = _units(b, stores, 4)
    assert new.group.fds[0] == closed_fd
    assert reads.read() is None
    kept = [units[0], units[2], new]
    assert [_faults(w) for w in FdReads(kept, 7 * 8).read() or []] == [10, 30, 0]


def test_a_failing_or_short_read_hands_over_to_the_reads_one_by_one() -> None:
    """An error (ESRCH: the task is gone) or a short read (0 bytes: a pinned event in error
    state) among the leaders' reads ends the one call; read one by one, that unit fails
    alone with its error's kind and the others keep their words."""
    b = FakeBackend()
    units = _units(b, Stores(b), 1, 2, 3)
    b.clock.advance(1.0)
    for err, kind in ((errno.ESRCH, TaskGone), (errno.EIO, OSError)):
        b.read_errors[2] = err
        assert FdReads(units, 7 * 8).read() is None
        failed: list[tuple[int, Unit, OSError]] = []
        bufs, rows, _ = read_all(units, np.arange(3), failed, 7 * 8)
        assert ([_faults(w) for w in bufs], rows.tolist()) == ([10, 30], [0, 2])
        ((i, u, e),) = failed
        assert (i, u, e.errno, isinstance(e, kind)) == (1, units[1], err, True)
