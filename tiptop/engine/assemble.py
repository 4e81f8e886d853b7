"""Row assembly: one refresh's counter readout and task facts become a :class:`Frame`.

The sampler reads the counters (``tiptop.engine.count.readout``); this module turns that readout
into the cells the columns read, all rows at once with numpy: an interval delta is shown
only where its status is OK (``-`` and ``?`` come from the status matrix, ``tiptop.cells``),
totals add the counts of groups closed while the task lived (reclaim), and the row facts
(%CPU, last CPU) come from the scan. The columns are then computed by the one evaluator,
``tiptop.screens.evaluate``, as for every other source of frames.
"""

from __future__ import annotations

import dataclasses
from array import array
from collections.abc import Sequence
from itertools import repeat
from operator import is_not

import numpy as np

from tiptop.cells import STATUS_DTYPE, Code
from tiptop.engine.count.readout import CounterPlan, Readout, on_cpu_seconds
from tiptop.engine.scan.tasks import Task
from tiptop.frame import Context, Frame
from tiptop.screens.evaluate import CounterCells, Evaluator
from tiptop.screens.frames import FrameFacts, RowLabels, evaluated_frame
from tiptop.screens.variables import RowFacts, TimeFacts


def labels_of(rows: Sequence[Task]) -> RowLabels:
    """The labels of ``rows`` now (``Sampler`` keeps them while its rows do not change)."""
    return RowLabels(
        np.array([t.tid for t in rows], np.int64),
        np.array([t.pid for t in rows], np.int64),
        [t.user for t in rows],
        [t.name for t in rows],
        [t.cmdline for t in rows],
    )


def assemble(
    rows: Sequence[Task],
    plan: CounterPlan,
    readout: Readout,
    retired: Sequence[np.ndarray | None],
    evaluator: Evaluator,
    *,
    iteration: int,
    timestamp: float,
    interval: float,
    window: float = 0.0,
    threads: bool,
    tasks_total: int,
    reaped: np.ndarray | None = None,
    dead: np.ndarray | None = None,
    labels: RowLabels | None = None,
    time: TimeFacts | None = None,
    context: Context | None = None,
) -> Frame:
    """The frame of ``rows``: their facts, the evaluated ``columns`` and counter cells.

    ``readout`` has one row per task of ``rows``; ``retired[i]`` (or None) is the per-alias
    total of task ``i``'s groups closed earlier; ``evaluator`` computes the screen's
    columns (bound to ``plan.aliases``).
    ``reaped[i]`` marks a task gone without its final CPU times (reaped before we saw its
    zombie, or an exited thread): its %CPU comes from its counters' on-CPU time instead,
    and its system/user split is unknown (``?``). ``dead[i]`` marks a task that has
    exited: this is its last interval. ``timestamp``: when it was taken (Unix time, from
    ``Host.clock``). ``interval`` is the scan's (``stat`` times),
    ``window`` the counters' (seconds between their last two reads). ``labels``: the rows'
    :class:`~tiptop.screens.frames.RowLabels` when the caller kept them (else read from
    ``rows``); ``time``: where the rows' time went, ``context``: what the machine did
    (``engine.scan.times``; None: not read); the frame is built by
    ``tiptop.screens.frames``, as every source's."""
    cc = counter_cells(readout, plan, retired)
    num_threads = np.array([t.num_threads for t in rows], np.int64)
    facts = row_facts(rows, readout, plan, interval, reaped, threads, num_threads, window)
    if time is not None:
        facts = dataclasses.replace(facts, time=time)
    refresh = FrameFacts(iteration, timestamp, interval, threads, tasks_total, context=context)
    return evaluated_frame(
        evaluator,
        refresh,
        labels or labels_of(rows),
        facts,
        cc,
        aliases=plan.aliases,
        raw=np.where(cc.status == Code.UNREADABLE, np.nan, readout.raw),
        num_threads=num_threads,
        dead=np.zeros(len(rows), bool) if dead is None else dead,
    )


def counter_cells(
    readout: Readout, plan: CounterPlan, retired: Sequence[np.ndarray | None]
) -> CounterCells:
    """What the columns read of the counters: interval deltas (scaled) and running totals
    (the counts of groups closed while the task lived, ``retired``, added), NaN where their
    status is not OK, and each counter's running fraction."""
    status = readout.statuses(plan)
    total_status = readout.statuses(plan, cumulative=True)
    total = readout.total
    if any(map(is_not, retired, repeat(None))):  # most refreshes: none
        held = [i for i, r in enumerate(retired) if r is not None]  # a few rows, not all
        total = total.copy()
        total[held] += np.stack([r for r in retired if r is not None])
    return CounterCells(
        scaled=np.where(status == Code.OK, readout.delta, np.nan),
        status=status,
        total=np.where(total_status == Code.OK, total, np.nan),
        total_status=total_status,
        running=readout.running_fraction(plan),
    )


def floats(values: list[float]) -> np.ndarray:
    """A float64 array of a list of Python numbers, through ``array('d')``, which does not
    look at each item's type as ``np.array(values, np.float64)`` does."""
    return np.frombuffer(array("d", values), np.float64)


def row_facts(
    rows: Sequence[Task],
    readout: Readout,
    plan: CounterPlan,
    interval: float,
    reaped: np.ndarray | None,
    threads: bool = False,
    num_threads: np.ndarray | None = None,
    window: float = 0.0,
) -> RowFacts:
    """What the built-in variables read (``tiptop.screens.variables``) for ``rows``: their
    CPU times and last CPU.

    %CPU comes from the ``stat`` ticks (proc(5), as the original). A tick is 10 ms, so over
    a short interval one tick too many reads 200% for one thread: a thread row cannot
    exceed 100%, nor a process 100% per thread, and a value above that is replaced by the
    counters' on-CPU time where they were read (Δtime_enabled, in ns: a task-bound context
    clock ticks only while the task runs, perf_event_open(2)), else clamped; the
    system/user split is scaled to match. A reaped task's %CPU is its counters' on-CPU
    time, its split unknown (``?``). ``num_threads``: the rows' thread counts when the
    caller has them as an array (else read from ``rows``).

    Each row's counter ``window`` (what ``INTERVAL`` reads in the columns' rates) is the
    time between the counters' last two reads (``window``; the scan's ``interval`` before
    there were two), and never less than the longest one of its threads ran in it
    (``Readout.longest``): a row is read a little earlier or later within each pass over
    the groups, so the pass's window alone can be shorter than the row's, and a thread
    cannot run longer than its own window (one thread's task-clock rate stays within
    100%; a process's threads run side by side, so their sum is no bound)."""
    n = len(rows)
    ok = np.zeros(n, STATUS_DTYPE)
    ticks = floats([t.cpu_total for t in rows])
    if threads:
        cap = np.full(n, 100.0)
    else:
        if num_threads is None:
            num_threads = np.array([t.num_threads for t in rows], np.int64)
        cap = 100.0 * np.maximum(num_threads, 1)
    on_cpu = on_cpu_seconds(readout, plan)
    est = 100.0 * on_cpu / interval if interval > 0 else np.full(n, np.nan)
    counted = ~np.isnan(est)
    est0 = np.where(counted, est, 0.0)
    best = np.where(counted, np.minimum(est0, cap), cap)
    cpu_total = np.where(ticks > cap, best, ticks)
    reaped = np.zeros(n, bool) if reaped is None else reaped
    cpu_total = np.where(reaped, est0, cpu_total)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(ticks > 0, cpu_total / ticks, 0.0)
    user = share * floats([t.cpu_user for t in rows])
    system = share * floats([t.cpu_sys for t in rows])
    unknown = np.where(reaped, Code.UNREADABLE, Code.OK).astype(STATUS_DTYPE)
    return RowFacts(
        cpu_total=cpu_total,
        cpu_sys=system,
        cpu_user=user,
        processor=floats([t.processor for t in rows]),
        interval=interval,
        window=np.fmax(np.full(n, window if window > 0 else interval), readout.longest / 1e9),
        total_status=np.where(reaped & ~counted, unknown, ok).astype(STATUS_DTYPE),
        split_status=unknown,
    )
