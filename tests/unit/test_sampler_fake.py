"""The sampler over the FAKE backend and a fake /proc: scaling, statuses, once-only
messages, fd budget, reclaim and retry, sticky rows, PID reuse. Deterministic. Counter
groups split to fit the PMU and hybrid CPUs are in test_sampler_groups.py."""

from __future__ import annotations

import errno

import numpy as np
import pytest

from tests.support import spying
from tests.support.fake_backend import failing_read, fake_group
from tests.support.sampling import CY, IN, PF, FakeEnv, make, row
from tiptop.cells import Status
from tiptop.engine.count import attach
from tiptop.frame import SamplerConfig
from tiptop.kernel.explain import NO_PMU_COLUMNS, no_pmu_line


def test_deltas_ratios_and_absolute(env: FakeEnv) -> None:
    fp, b = env
    fp.add(10, "app")
    b.script(10, CY, 2e9)
    b.script(10, IN, 3e9)
    b.script(10, PF, 50)
    s = make(env)
    s.start()
    b.clock.advance(2.0)
    f = s.refresh()
    i = row(f, 10)
    assert f.values[i, 1:].tolist() == [4000.0, 1.5, 100.0, 4e9]
    assert f.status[i].tolist() == [Status.OK] * 5
    assert f.counter_delta[i].tolist() == [4e9, 6e9, 100]
    assert not f.multiplexed().any()
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.values[row(f, 10), [1, 4]].tolist() == [2000.0, 6e9]  # absolute = since attach


def test_multiplexing_scaled_and_not_counted(env: FakeEnv) -> None:
    fp, b = env
    fp.add(10, "muxed")
    fp.add(11, "starved")
    b.script(10, CY, 1e9, mux=0.25)
    b.script(10, IN, 1e9, mux=0.25)
    b.script(11, CY, 1e9, mux=0.0)
    s = make(env)
    s.start()
    b.clock.advance(4.0)
    f = s.refresh()
    i, j = row(f, 10), row(f, 11)
    # raw 1e9/s * 4 s * 0.25 = 1e9 counted; scaled by enabled/running = 4e9 estimated.
    assert f.counter_delta[i, 0] == 1e9
    assert f.values[i, 1] == pytest.approx(4000.0)
    assert f.running[i, 1] == pytest.approx(0.25)
    assert f.counter_running[i, :2].tolist() == [0.25, 0.25]
    assert f.multiplexed()[i, 1] and f.multiplexed()[i, 2]
    assert f.values[i, 2] == pytest.approx(1.0)  # a ratio in one group needs no scaling
    # Enabled time advanced (the task ran) but running did not: not counted, '?'.
    assert f.status[j, 1] == Status.NOT_COUNTED
    assert np.isnan(f.values[j, 1])
    assert f.status[j, 3] == Status.OK  # the software group is its own group
    # Said once, for the hardware PMU only.
    said = [m for m in s.messages.lines() if "never ran" in m]
    assert len(said) == 1 and "PMU cpu" in said[0], s.messages.lines()
    assert s.messages.about("C") is not None and s.messages.about("TC") is None
    n = len(s.messages)
    b.clock.advance(1.0)
    s.refresh()
    assert s.messages.since(n)[0] == []


def test_unavailable_event_reported_once(env: FakeEnv) -> None:
    fp, b = env
    for pid in (10, 11, 12):
        fp.add(pid, f"p{pid}")
        b.script(pid, PF, 10)
    b.event_errors[CY] = errno.ENOENT
    s = make(env)
    s.start()
    # No core PMU in this fake sysfs: the one short no-PMU line, about the cycles alias.
    msgs = [m for m in s.messages.lines() if "PMU" in m]
    assert msgs == [no_pmu_line(NO_PMU_COLUMNS)] and s.messages.about("C") is not None
    n = len(s.messages)
    for _ in range(3):
        b.clock.advance(1.0)
        f = s.refresh()
        # Said at start; later refreshes repeat nothing.
        assert s.messages.since(n)[0] == []
    assert [m for m in s.messages.lines() if "PMU" in m] == msgs
    # Never opened per task; its cells are unreadable, the others fine.
    assert all((a.type, a.config) != CY for tid, attrs in b.opens if tid for a in attrs)
    i = row(f, 11)
    assert f.status[i, 1] == Status.UNREADABLE and f.status[i, 2] == Status.UNREADABLE
    assert f.status[i, 3] == Status.OK and f.values[i, 3] == 10.0


def test_denied_task_once_and_not_retried(env: FakeEnv) -> None:
    fp, b = env
    fp.add(10, "theirs")
    fp.add(11, "theirs2")
    b.tid_errors[10] = b.tid_errors[11] = errno.EACCES
    s = make(env)
    s.start()
    opens = len(b.opens)
    for _ in range(2):
        b.clock.advance(1.0)
        f = s.refresh()
    assert len(b.opens) == opens
    assert (f.status[:, 1:] == Status.UNREADABLE).all()
    assert len([m for m in s.messages.lines() if "EACCES" in m or "permission" in m]) == 1


def test_vanished_task_no_message_fds_closed(env: FakeEnv) -> None:
    fp, b = env
    fp.add(10, "short")
    fp.add(11, "stays")
    s = make(env)
    s.start()
    assert b.open_fds == 2 * 3
    fp.remove(10)
    b.clock.advance(1.0)
    f = s.refresh()
    # Read one last time, shown once, dead; its fds closed at once.
    assert f.tid.tolist() == [11, 10] and f.dead.tolist() == [False, True]
    assert b.open_fds == 3 == s.fds_used
    assert s.messages.lines() == []
    b.clock.advance(1.0)
    assert s.refresh().tid.tolist() == [11]


def test_sticky_dead_rows_keep_last_values(env: FakeEnv) -> None:
    fp, b = env
    fp.add(10, "dies")
    b.script(10, PF, 7)
    s = make(env, sticky=True)
    s.start()
    b.clock.advance(1.0)
    s.refresh()
    b.clock.advance(1.0)
    fp.remove(10)
    f = s.refresh()
    assert f.tid.tolist() == [10] and f.dead.tolist() == [True]
    assert f.values[0, 3] == 7.0
    assert b.open_fds == 0
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.dead.tolist() == [True] and f.values[0, 3] == 7.0


def test_pid_reuse_never_mixes(env: FakeEnv) -> None:
    fp, b = env
    fp.add(10, "old", starttime=100)
    b.script(10, PF, 1000)
    s = make(env)
    s.start()
    b.clock.advance(1.0)
    s.refresh()
    fp.remove(10)
    fp.add(10, "new", starttime=200)
    b.clock.advance(1.0)
    f = s.refresh()
    # The old process's last interval, dead; the new one is shown from the next refresh.
    assert f.name == ["old"] and f.dead.tolist() == [True]
    # Two groups (cpu, software) for the old process, two more for the new one.
    assert [tid for tid, _ in b.opens if tid == 10] == [10] * 4
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.name == ["new"]
    # Its counts start at its own attach, not at the old process's totals.
    assert f.values[0, 3] == 1000.0 and f.values[0, 4] == 0.0


def test_fd_budget_busy_first_reclaim_and_retry(env: FakeEnv) -> None:
    fp, b = env
    fp.add(10, "idle", utime=0)
    fp.add(11, "busy", utime=9000)  # lifetime average: busy
    s = make(env, fd_budget=3)  # room for one task (3 events)
    s.start()
    assert s.fds_used == 3 and {g.tid for g in b.groups} == {11}
    assert any("out of file descriptors" in m for m in s.messages.lines())
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.status[row(f, 10), 3] == Status.UNREADABLE
    assert f.status[row(f, 11), 3] == Status.OK
    # The busy one exits: its fds are freed and the idle one gets them (a retry).
    fp.remove(11)
    b.clock.advance(1.0)
    s.refresh()
    assert {g.tid for g in b.groups} == {10}
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.status[row(f, 10), 3] == Status.OK
    # A newly found busy task reclaims the idle task's fds (collect on).
    fp.add(12, "newbusy", utime=9000)
    b.clock.advance(1.0)
    s.refresh()
    assert {g.tid for g in b.groups} == {12}


def test_a_fruitless_reclaim_is_not_tried_again_in_the_same_round(
    env: FakeEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of fds, each new task (busy: it is new) may reclaim idle tasks' fds; once a
    reclaim finds nothing to close, the others of that attach round do not try again (each
    try walks every task: at 5000 new tasks, 1000 of them waiting, 2 s of CPU at start)."""
    fp, _ = env
    for tid in range(10, 30):
        fp.add(tid, f"new{tid}", utime=0)
    s = make(env, fd_budget=3)  # room for one task: 19 wait
    tries: list[int] = []
    real = attach.Attacher._reclaim
    monkeypatch.setattr(attach.Attacher, "_reclaim", spying(real, lambda self, *a: tries.append(1)))
    s.start()
    assert s.fds_used == 3 and len(tries) == 1  # not 19


def test_no_collect_never_reclaims(env: FakeEnv) -> None:
    fp, b = env
    fp.add(10, "idle")
    s = make(env, fd_budget=3, collect=False)
    s.start()
    fp.add(12, "newbusy", utime=9000)
    b.clock.advance(1.0)
    s.refresh()
    assert {g.tid for g in b.groups} == {10}


def test_tasks_waiting_for_fds_are_not_listed_again(
    env: FakeEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the budget spent and nothing to reclaim, a waiting idle task is put back to wait
    without reading its thread list (at 5000 tasks that was ~1700 directory reads per
    refresh); it is still counted once fds free up."""
    fp, b = env
    for tid in range(10, 16):
        fp.add(tid, f"idle{tid}", utime=0)
    s = make(env, fd_budget=3)  # room for one task
    s.start()
    listed: list[int] = []
    real = attach.list_threads
    monkeypatch.setattr(attach, "list_threads", spying(real, lambda root, pid: listed.append(pid)))
    b.clock.advance(1.0)
    s.refresh()
    assert listed == []
    (counted,) = {g.tid for g in b.groups}
    fp.remove(counted)
    b.clock.advance(1.0)
    s.refresh()
    assert len(listed) == 1 and {g.tid for g in b.groups} == {listed[0]}


def test_waiting_idle_tasks_are_not_tried_until_one_is_busy(
    env: FakeEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of fds with no pidfd to give up, a waiting task that is not busy could neither
    fit nor reclaim: it is not tried at all (at 5000 tasks ~1000 such tries per refresh);
    one that turns busy is, and reclaims an idle task's fds."""
    fp, b = env
    for tid in range(10, 16):
        fp.add(tid, f"idle{tid}", utime=0)
    s = make(env, fd_budget=3)  # room for one task: five wait
    s.start()
    tried: list[int] = []
    real = attach.Attacher._open_task
    monkeypatch.setattr(
        attach.Attacher, "_open_task", spying(real, lambda self, t, *a: tried.append(t.tid))
    )
    b.clock.advance(1.0)
    s.refresh()
    assert tried == []
    (counted,) = {g.tid for g in b.groups}
    busy = next(tid for tid in range(10, 16) if tid != counted)
    fp.set_stat(busy, f"idle{busy}", utime=90)  # 90 ticks in the next 1 s: busy
    b.clock.advance(1.0)
    s.refresh()
    assert tried == [busy] and {g.tid for g in b.groups} == {busy}


def test_reconfigure_and_close(env: FakeEnv) -> None:
    fp, b = env
    fp.add(10, "app")
    s = make(env)
    s.start()
    b.clock.advance(1.0)
    assert s.refresh().iteration == 0
    assert s.refresh().iteration == 1
    s.reconfigure(config=SamplerConfig(threads=True))
    assert b.open_fds == 0
    f = s.refresh()  # implicit start: empty
    assert len(f) == 0 and f.threads
    f = s.refresh()
    assert f.iteration == 0 and f.threads and f.tid.tolist() == [10]
    assert all(not a.inherit for _, attrs in b.opens[-3:] for a in attrs)
    s.close()
    assert b.open_fds == 0


def test_tasks_total_counts_every_thread_in_every_frame(env: FakeEnv) -> None:
    fp, b = env
    fp.add(10, "one")
    fp.add(11, "three", tids=(12, 13))
    for sticky in (False, True):
        s = make(env, sticky=sticky)
        first = s.refresh()  # an implicit start: no rows yet, but the count is known
        assert len(first) == 0 and first.tasks_total == 4
        b.clock.advance(1.0)
        assert s.refresh().tasks_total == 4
        fp.remove(10)
        b.clock.advance(1.0)
        f = s.refresh()
        assert f.tasks_total == 3 and f.dead.tolist() == [False, True]
        fp.remove(11)
        b.clock.advance(1.0)
        f = s.refresh()  # nothing alive: only dead rows, still the frame's count
        assert f.tasks_total == 0 and len(f) == (2 if sticky else 1) and f.dead.all()
        s.close()
        fp.add(10, "one")
        fp.add(11, "three", tids=(12, 13))


def test_dying_row_read_error_is_not_retried_on_a_reused_pid(env: FakeEnv) -> None:
    """A sticky row whose final read fails is not put back in the retry queue: it would
    be retried forever and, once its PID is reused, get groups opened on the new process
    for a row no one shows (fds never closed)."""
    fp, b = env
    fp.add(10, "dies", starttime=100)
    s = make(env, sticky=True)
    s.start()
    b.clock.advance(1.0)
    s.refresh()
    fp.remove(10)
    b.read_errors[10] = errno.EIO
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.dead.tolist() == [True] and s.fds_used == 0 == b.open_fds
    del b.read_errors[10]
    fp.add(10, "new", starttime=200)
    b.clock.advance(1.0)
    s.refresh()
    assert b.open_fds == s.fds_used == 3  # the new process's groups only
    s.close()
    assert b.open_fds == 0


def test_partial_read_failure_keeps_the_process_total(
    env: FakeEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One thread's group of a process failing to read (EIO) is dropped, but what it had
    counted stays in the process total ("a process total never goes down")."""
    fp, b = env
    fp.add(10, "app", tids=(11,))
    b.script(10, CY, 1e9)
    b.script(11, CY, 3e9)
    s = make(env)
    s.start()
    b.clock.advance(1.0)
    assert s.refresh().values[0, 4] == 4e9
    units = s._attacher._counters[(10, 1000)].units  # identity: (tid, starttime)
    (bad,) = [u for u in units if u.gdef == 0 and fake_group(u.group).tid == 11]
    monkeypatch.setattr(bad.group, "read", failing_read(errno.EIO, "gone bad"))
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.values[0, 1] == 1000.0  # this interval: thread 10's cycles only
    assert f.values[0, 4] == 5e9  # 4e9 before, + 1e9: thread 11's 3e9 are kept
    assert s.fds_used == b.open_fds == 3 + 1  # thread 10's groups, thread 11's sw one
    assert [m for m in s.messages.lines() if "EIO" in m] == []  # groups left: not reopened


def test_kept_counts_go_to_their_own_row(env: FakeEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """Of two processes, the one whose thread's group was dropped keeps that thread's
    counts in its total; the other's total is its own counts only."""
    fp, b = env
    fp.add(5, "other")
    fp.add(10, "app", tids=(11,))
    b.script(5, CY, 2e9)
    b.script(10, CY, 1e9)
    b.script(11, CY, 3e9)
    s = make(env)
    s.start()
    b.clock.advance(1.0)
    f = s.refresh()
    assert (f.values[row(f, 5), 4], f.values[row(f, 10), 4]) == (2e9, 4e9)
    units = s._attacher._counters[(10, 1000)].units
    (bad,) = [u for u in units if u.gdef == 0 and fake_group(u.group).tid == 11]
    monkeypatch.setattr(bad.group, "read", failing_read(errno.EIO, "gone bad"))
    for _ in range(2):
        b.clock.advance(1.0)
        f = s.refresh()
    assert (f.values[row(f, 5), 4], f.values[row(f, 10), 4]) == (6e9, 6e9)


def test_spawned_counters_of_another_identity_are_closed(env: FakeEnv) -> None:
    """Counters attached to a spawned child are adopted only by the same identity; when
    /proc shows another process under that PID they are closed, not leaked; attaching to
    a PID that is already gone is silent."""
    fp, b = env
    fp.add(10, "child", starttime=100)
    s = make(env)
    s.attach_spawned(10)
    assert b.open_fds == s.fds_used == 3
    s.attach_spawned(4242)  # no such process: nothing to attach, nothing raised
    fp.remove(10)
    fp.add(10, "other", starttime=300)
    s.start()
    assert b.open_fds == s.fds_used == 3  # the new identity's own groups only
    s.close()
    assert b.open_fds == 0


def test_spawned_counters_that_cannot_all_open_are_closed_and_said(env: FakeEnv) -> None:
    """A spawned child whose groups cannot all open (EMFILE at the second) keeps none: the
    ones opened are closed, no fd is counted, and one line says why, naming its PID."""
    fp, b = env
    fp.add(10, "child", starttime=100)
    s = make(env)
    b.max_fds = 2  # the first group opens, the next does not fit
    s.attach_spawned(10)
    assert b.open_fds == s.fds_used == 0
    assert [m for m in s.messages.lines() if "PID 10" in m and "EMFILE" in m]
