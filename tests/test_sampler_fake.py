"""The sampler over the FAKE backend and a fake /proc: scaling, statuses, once-only
messages, fd budget, reclaim and retry, sticky rows, PID reuse. Deterministic."""

from __future__ import annotations

import errno
from pathlib import Path

import numpy as np
import pytest

from tests.fakeproc import FakeProc
from tiptop.cells import Status
from tiptop.perf.fake import FakeBackend
from tiptop.sampler import Sampler, SamplerConfig
from tiptop.spec.model import ColumnSpec, CounterSpec, NumericEvent, ScreenSpec

CY, IN, PF = (0, 0), (0, 1), (1, 2)  # cycles, instructions, page-faults (type, config)


def screen() -> ScreenSpec:
    return ScreenSpec(
        "t",
        "test",
        counters=(
            CounterSpec("C", NumericEvent(*CY), "CPU_CYCLES", "HARDWARE"),
            CounterSpec("I", NumericEvent(*IN), "INSTRUCTIONS", "HARDWARE"),
            CounterSpec("F", NumericEvent(*PF), "2", "SOFTWARE"),
        ),
        columns=(
            ColumnSpec(" %CPU", "%5.1f", "CPU_TOT"),
            ColumnSpec("  Mcyc", "%6.2f", "delta(C)/1e6"),
            ColumnSpec(" IPC", "%4.2f", "delta(I)/delta(C)"),
            ColumnSpec("  flt", "%5.0f", "delta(F)"),
            ColumnSpec("  tot", "%5.0f", "C"),
        ),
    )


@pytest.fixture
def env(tmp_path: Path) -> tuple[FakeProc, FakeBackend]:
    fp = FakeProc(tmp_path / "proc")
    return fp, FakeBackend()


def make(env: tuple[FakeProc, FakeBackend], **cfg: object) -> Sampler:
    fp, b = env
    return Sampler(
        screen(), SamplerConfig(**cfg), backend=b, proc_root=str(fp.root),  # type: ignore[arg-type]
        sysfs_root=str(fp.root.parent / "nosys"),
    )  # fmt: skip


def row(frame, tid: int) -> int:  # type: ignore[no-untyped-def]
    (i,) = np.flatnonzero(frame.tid == tid)
    return int(i)


def test_deltas_ratios_and_absolute(env) -> None:  # type: ignore[no-untyped-def]
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


def test_multiplexing_scaled_and_not_counted(env) -> None:  # type: ignore[no-untyped-def]
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


def test_unavailable_event_reported_once(env) -> None:  # type: ignore[no-untyped-def]
    fp, b = env
    for pid in (10, 11, 12):
        fp.add(pid, f"p{pid}")
        b.script(pid, PF, 10)
    b.event_errors[CY] = errno.ENOENT
    s = make(env)
    s.start()
    msgs = [m for m in s.messages if "ENOENT" in m]
    assert len(msgs) == 1 and msgs[0].startswith("cycles: ENOENT")
    for k in range(3):
        b.clock.advance(1.0)
        f = s.refresh()
        # The first frame carries what start() found; later ones repeat nothing.
        assert [m for m in f.messages if "ENOENT" in m] == (msgs if k == 0 else [])
    assert [m for m in s.messages if "ENOENT" in m] == msgs
    # Never opened per task; its cells are unreadable, the others fine.
    assert all((a.type, a.config) != CY for tid, attrs in b.opens if tid for a in attrs)
    i = row(f, 11)
    assert f.status[i, 1] == Status.UNREADABLE and f.status[i, 2] == Status.UNREADABLE
    assert f.status[i, 3] == Status.OK and f.values[i, 3] == 10.0


def test_denied_task_once_and_not_retried(env) -> None:  # type: ignore[no-untyped-def]
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
    assert len([m for m in s.messages if "EACCES" in m or "permission" in m]) == 1


def test_vanished_task_no_message_fds_closed(env) -> None:  # type: ignore[no-untyped-def]
    fp, b = env
    fp.add(10, "short")
    fp.add(11, "stays")
    s = make(env)
    s.start()
    assert b.open_fds == 2 * 3
    fp.remove(10)
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.tid.tolist() == [11]
    assert b.open_fds == 3 == s.fds_used
    assert f.messages == [] and s.messages == []


def test_sticky_dead_rows_keep_last_values(env) -> None:  # type: ignore[no-untyped-def]
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


def test_pid_reuse_never_mixes(env) -> None:  # type: ignore[no-untyped-def]
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
    assert len(f) == 0  # the new one is shown from the next refresh
    # Two groups (cpu, software) for the old process, two more for the new one.
    assert [tid for tid, _ in b.opens if tid == 10] == [10] * 4
    b.clock.advance(1.0)
    f = s.refresh()
    assert f.name == ["new"]
    # Its counts start at its own attach, not at the old process's totals.
    assert f.values[0, 3] == 1000.0 and f.values[0, 4] == 0.0


def test_fd_budget_busy_first_reclaim_and_retry(env) -> None:  # type: ignore[no-untyped-def]
    fp, b = env
    fp.add(10, "idle", utime=0)
    fp.add(11, "busy", utime=9000)  # lifetime average: busy
    s = make(env)
    s.fd_budget = 3  # room for one task (3 events)
    s.start()
    assert s.fds_used == 3 and {g.tid for g in b.groups} == {11}
    assert any("out of file descriptors" in m for m in s.messages)
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


def test_no_collect_never_reclaims(env) -> None:  # type: ignore[no-untyped-def]
    fp, b = env
    fp.add(10, "idle")
    s = make(env, collect=False)
    s.fd_budget = 3
    s.start()
    fp.add(12, "newbusy", utime=9000)
    b.clock.advance(1.0)
    s.refresh()
    assert {g.tid for g in b.groups} == {10}


def test_reconfigure_and_close(env) -> None:  # type: ignore[no-untyped-def]
    fp, b = env
    fp.add(10, "app")
    s = make(env)
    s.start()
    b.clock.advance(1.0)
    assert s.refresh().iteration == 0
    assert s.refresh().iteration == 1
    s.reconfigure(threads=True)
    assert b.open_fds == 0
    f = s.refresh()  # implicit start: empty
    assert len(f) == 0 and f.threads
    f = s.refresh()
    assert f.iteration == 0 and f.threads and f.tid.tolist() == [10]
    assert all(not a.inherit for _, attrs in b.opens[-3:] for a in attrs)
    s.close()
    assert b.open_fds == 0
