"""%CPU that cannot be right (issue: one thread at 200% with -d 0.01): ticks of /proc are
10 ms, so over a short interval a thread row is clamped to 100% (a process to 100% per
thread), and the counters' on-CPU time replaces the value where the counters were read."""

from __future__ import annotations

import numpy as np

from tiptop.engine.assemble import row_facts
from tiptop.engine.count.readout import CounterPlan, GroupDef, Readout
from tiptop.engine.scan.task import Task


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
    plan = CounterPlan(
        ("TC",), [GroupDef("", (), np.array([0]))], np.array([True]), np.array([False])
    )
    return r, plan


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
