"""%CPU that cannot be right (issue: one thread at 200% with -d 0.01): ticks of /proc are
10 ms, so over a short interval a thread row is clamped to 100% (a process to 100% per
thread), and the counters' on-CPU time replaces the value where the counters were read."""

from __future__ import annotations

import numpy as np

from tiptop.engine.assemble import row_facts
from tiptop.engine.count.readout import CounterPlan, GroupDef, Readout
from tiptop.engine.scan.task import Task
from tiptop.kernel.attr import Attr
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


def test_a_rows_window_reaches_its_task_clock() -> None:
    """A read stamps time_enabled before it reads the task-clock (kernel/events/core.c,
    ``__perf_event_read``), so a vCPU stopped by its host between the two reads the clock
    ahead (CI read 100.93% at -d 0.01): the row's window is never less than its
    task-clock's count, and its rate stays within 100%."""
    rows = [task(11, 10, 1, 100.0, 0.0), task(12, 10, 1, 50.0, 0.0)]
    r, plan = readout([10.0e6, 5.0e6])
    r.raw = np.array([[10.093e6], [4.9e6]])  # the first read 93 us late
    f = row_facts(rows, r, plan, 0.01, None, threads=True, window=0.01)
    assert f.window is not None
    assert f.window.tolist() == [0.010093, 0.01]
    assert (r.raw[:, 0] / 1e9 / f.window).tolist() == [1.0, 0.49]
    other = plan_of(Attr(PerfType.SOFTWARE, SwId.CONTEXT_SWITCHES))
    f = row_facts(rows, r, other, 0.01, None, threads=True, window=0.01)
    assert f.window is not None
    assert f.window.tolist() == [0.01, 0.01]  # a count of switches is no clock
