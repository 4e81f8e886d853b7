"""%CPU that cannot be right (issue: one thread at 200% with -d 0.01): ticks of /proc are
10 ms, so over a short interval a thread row is clamped to 100% (a process to 100% per
thread), and the counters' on-CPU time replaces the value where the counters were read."""

from __future__ import annotations

import numpy as np

from tests.support.fake_backend import FakeBackend
from tiptop.engine.assemble import row_facts
from tiptop.engine.count.readout import CounterPlan, GroupDef, Readout, _ran, read_units
from tiptop.engine.count.units import Stores, Unit
from tiptop.engine.scan.task import Task
from tiptop.kernel.attr import Attr
from tiptop.kernel.backend import GroupReading
from tiptop.vocab import PerfType, SwId


def task(tid: int, pid: int, threads: int, user: float, system: float) -> Task:
    t = Task(tid, pid, 1000, 0, "root", "t", "t", threads, "R", 0, 0, 0)
    t.cpu_user, t.cpu_sys, t.cpu_total = user, system, user + system
    t.new = False
    return t


def readout(enabled_ns: list[float]) -> tuple[Readout, CounterPlan]:
    """One counter per row; nan enabled = nothing read."""
    n = len(enabled_ns)
    read = np.array([[0.0] if np.isnan(e) else [1.0] for e in enabled_ns])
    ena = np.nan_to_num(np.array(enabled_ns, np.float64))[:, None]
    z = np.zeros((n, 1))
    r = Readout(
        raw=z,
        delta=z,
        enabled=ena,
        running=ena,
        total=z,
        total_enabled=ena,
        total_running=ena,
        nread=read,
        longest=ena[:, 0],
    )
    return r, plan_of(Attr(PerfType.SOFTWARE, SwId.TASK_CLOCK))


def plan_of(attr: Attr) -> CounterPlan:
    """A plan of one software counter, alias ``TC``."""
    return CounterPlan(
        ("TC",), [GroupDef("", (attr,), np.array([0]))], np.array([True]), np.array([False])
    )


def test_a_thread_over_100_takes_its_counters_time_or_is_clamped() -> None:
    rows = [task(11, 10, 1, 150.0, 50.0), task(12, 10, 1, 150.0, 50.0), task(13, 10, 1, 40, 0)]
    r, plan = readout([6e6, np.nan, 4e6])  # 6 ms and 4 ms on a CPU in 10 ms
    f = row_facts(rows, r, plan, 0.01, None, threads=True)
    assert f.cpu_total.tolist() == [60.0, 100.0, 40.0]  # counters; clamp; ticks kept
    assert f.cpu_user.tolist() == [45.0, 75.0, 40.0]  # the split follows the total
    assert f.cpu_sys.tolist() == [15.0, 25.0, 0.0]


def test_a_process_may_use_one_cpu_per_thread() -> None:
    rows = [task(10, 10, 2, 180.0, 0.0), task(20, 20, 2, 300.0, 0.0)]
    r, plan = readout([np.nan, np.nan])
    f = row_facts(rows, r, plan, 0.01, None, threads=False)
    assert f.cpu_total.tolist() == [180.0, 200.0]


def test_a_rows_window_is_at_least_its_longest_thread() -> None:
    """A thread cannot run longer than its window; a process's threads run side by side,
    so the floor is its longest thread's time (``Readout.longest``), not their sum: two
    busy threads over 10 ms sum 20 ms (a floor at the sum read %TASK 100 for them)."""
    rows = [task(10, 10, 2, 200.0, 0.0), task(20, 20, 1, 100.0, 0.0)]
    r, plan = readout([20.0e6, 10.2e6])
    r.longest = np.array([10.0e6, 10.2e6])  # process 10: 2 threads of 10 ms
    f = row_facts(rows, r, plan, 0.01, None, threads=False, window=0.01)
    assert f.window is not None
    assert f.window.tolist() == [0.01, 0.0102]


def test_a_unit_ran_as_long_as_its_task_clock_says() -> None:
    """A read stamps time_enabled before it reads the task-clock (kernel/events/core.c,
    ``__perf_event_read``), so a vCPU stopped by its host between the two reads the clock
    ahead (a full CI run read %TASK 100.93 at -d 0.01): a unit ran the larger of the two;
    a count of context switches is no clock."""
    ena = np.array([[10.0e6, 50.0e6], [5.0e6, 9.0e6]])  # (units, interval/total)
    v = np.array([[[10.093e6, 7.0]], [[4.9e6, 3.0]]]).reshape(2, 1, 2)  # TC, CS
    v = np.concatenate([v, v], axis=1)  # the same words since attach: unused here
    counts = (v, v, ena, ena)
    assert _ran(counts, np.array([True, False])).tolist() == [10.093e6, 5.0e6]
    assert _ran(counts, np.array([False, False])).tolist() == [10.0e6, 5.0e6]
    clock = plan_of(Attr(PerfType.SOFTWARE, SwId.TASK_CLOCK)).on_cpu_clocks
    switches = plan_of(Attr(PerfType.SOFTWARE, SwId.CONTEXT_SWITCHES)).on_cpu_clocks
    assert (clock.tolist(), switches.tolist()) == ([True], [False])


def test_a_rows_longest_is_its_longest_unit_read() -> None:
    """``Readout.longest`` from real reads (fake groups): a row of two threads that ran
    10 and 30 ms takes 30 (their sum 40 is no bound), a row of one thread 20; a
    task-clock read 5 ms ahead of time_enabled gives its own count; with a switch count
    instead of a clock, time_enabled alone. Several units a row or one each: alike."""

    def units(plan: CounterPlan, *ran: tuple[int, int]) -> list[Unit]:
        """A unit per ``(Δtime_enabled, Δcount)`` in ms, its first read all zeros."""
        made = []
        for enabled, count in ran:
            g = b.open_group(1, [plan.groups[0].attrs[0]])
            ms = 10**6
            first = GroupReading(np.zeros(1, np.uint64), 0, 0)
            then = GroupReading(np.array([count * ms], np.uint64), enabled * ms, enabled * ms)
            g.read = iter([first, then]).__next__  # type: ignore[method-assign]
            made.append(Unit(g, 0, stores))
        return made

    b = FakeBackend()
    stores = Stores(b)
    clock = plan_of(Attr(PerfType.SOFTWARE, SwId.TASK_CLOCK))
    switches = plan_of(Attr(PerfType.SOFTWARE, SwId.CONTEXT_SWITCHES))
    r, _ = read_units(clock, [units(clock, (10, 10), (30, 30)), units(clock, (20, 20))])
    assert r.longest.tolist() == [30e6, 20e6]
    r, _ = read_units(clock, [units(clock, (10, 15)), units(clock, (20, 20))])
    assert r.longest.tolist() == [15e6, 20e6]  # one unit a row: the other way to the cells
    r, _ = read_units(switches, [units(switches, (10, 15), (12, 3)), units(switches, (20, 9))])
    assert r.longest.tolist() == [12e6, 20e6]
