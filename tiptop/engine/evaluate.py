"""Row assembly: one refresh's counter readout and task facts become a :class:`Frame`.

The sampler reads the counters (``tiptop.engine.readout.read_units``); this module turns that
readout into cells, all rows at once with numpy: an interval delta is shown only where its
status is OK (``-`` and ``?`` come from the status matrix, ``tiptop.cells``), totals add
the counts of groups closed while the task lived (reclaim), every column expression is
evaluated over the whole row set (``tiptop.screens.expr``), and a cell's running fraction is
the smallest ``Δrunning/Δenabled`` of the counters it reads: with split groups
(``tiptop.engine.plan``) each counter carries its own group's fraction.

*Breakdowns.* A screen's ``breakdown`` columns (a top-down level 1: retiring, bad
speculation, front end, back end... in % of slots) split one whole, so for each task their
values must add up to 100 and each lie in [0, 100]. :func:`judge_breakdown` marks a task's
breakdown cells ``SUSPECT`` (values kept) when they miss that by more than
:data:`BREAKDOWN_TOLERANCE` points, provided the task was on a CPU for at least
:data:`BREAKDOWN_MIN_CPU` seconds of the interval; shorter runs are not judged. Why that
long: the counts of groups the kernel time-multiplexes are each scaled from the part of
the time they ran, and the kernel rotates the groups once per
``perf_event_mux_interval_ms`` (one tick by default, 4 ms at HZ=250; kernel/events/core.c
``PERF_CPU_HRTIMER``): 50 ms on a CPU is a dozen rotations, enough for the scaled parts to
sample the same mix of phases, while a task seen for a rotation or two would be flagged
for its phases, not for its counters. It is also 5 ticks of ``/proc/PID/stat`` times
(proc(5), ``utime``), where the %CPU this is read from is known to 20%. Tasks sharing one
group are never skewed by multiplexing, and the kernel's own metrics round each part to
1/255 (8 bits per metric in ``PERF_METRICS``, arch/x86/events/intel/core.c), far below 5
points.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import is_not

import numpy as np

from tiptop.cells import STATUS_DTYPE, Code
from tiptop.engine.readout import CounterPlan, Readout, on_cpu_seconds
from tiptop.engine.tasks import Task
from tiptop.frame import Frame
from tiptop.screens.expr import ColumnExpr
from tiptop.screens.model import delta_key
from tiptop.screens.variables import RowFacts, environment


@dataclass(frozen=True)
class RowLabels:
    """What a frame shows of its rows that only an exec or a rename changes: ids, user,
    name and command line (``Sampler`` keeps them while its rows do not change)."""

    tid: np.ndarray  # int64
    pid: np.ndarray  # int64
    user: list[str]
    name: list[str]
    cmdline: list[str]

    @classmethod
    def of(cls, rows: Sequence[Task]) -> RowLabels:
        """The labels of ``rows`` now."""
        return cls(
            np.array([t.tid for t in rows], np.int64),
            np.array([t.pid for t in rows], np.int64),
            [t.user for t in rows],
            [t.name for t in rows],
            [t.cmdline for t in rows],
        )


def markers(tid: np.ndarray, pid: np.ndarray, num_threads: np.ndarray) -> list[str]:
    """The original's row markers: ``-`` other thread, ``+`` multi-threaded process, ``" "``
    (one array expression, not a call per row)."""
    return np.where(tid != pid, "-", np.where(num_threads > 1, "+", " ")).tolist()


def assemble(
    rows: Sequence[Task],
    plan: CounterPlan,
    readout: Readout,
    retired: Sequence[np.ndarray | None],
    columns: Sequence[ColumnExpr | None],
    col_aliases: Sequence[np.ndarray | None],
    *,
    iteration: int,
    interval: float,
    threads: bool,
    headers: tuple[str, ...],
    tasks_total: int,
    reaped: np.ndarray | None = None,
    dead: np.ndarray | None = None,
    breakdown: Sequence[int] = (),
    labels: RowLabels | None = None,
) -> Frame:
    """The frame of ``rows``: their facts, the evaluated ``columns`` and counter cells.

    ``readout`` has one row per task of ``rows``; ``retired[i]`` (or None) is the per-alias
    total of task ``i``'s groups closed earlier; ``col_aliases[c]`` the alias indices column
    ``c`` reads (for its running fraction).
    ``reaped[i]`` marks a task gone without its final CPU times (reaped before we saw its
    zombie, or an exited thread): its %CPU comes from its counters' on-CPU time instead,
    and its system/user split is unknown (``?``). ``dead[i]`` marks a task that has
    exited: this is its last interval. ``breakdown`` are the indices of the columns
    :func:`judge_breakdown` checks. ``labels``: the rows' :class:`RowLabels` when the
    caller kept them (else read from ``rows``)."""
    n, k = len(rows), len(plan.aliases)
    status = readout.statuses(plan)
    total_status = readout.statuses(plan, cumulative=True)
    total = readout.total
    if any(map(is_not, retired, repeat(None))):  # not a generator: ~0.1 us a row less
        total = total + np.stack([np.zeros(k) if r is None else r for r in retired])
    delta = np.where(status == Code.OK, readout.delta, np.nan)
    total = np.where(total_status == Code.OK, total, np.nan)
    c_running = readout.running_fraction(plan)

    labels = labels or RowLabels.of(rows)
    tid, pid = labels.tid, labels.pid
    num_threads = np.array([t.num_threads for t in rows], np.int64)
    facts = row_facts(rows, readout, plan, interval, reaped, threads, num_threads)
    env = environment(facts, _builtins(columns))
    for j, a in enumerate(plan.aliases):
        env[a] = (total[:, j], total_status[:, j])
        env[delta_key(a)] = (delta[:, j], status[:, j])
    values, cstatus, running = _evaluate(columns, col_aliases, env, c_running, n)
    judge_breakdown(values, cstatus, breakdown, facts.cpu_total, interval)
    return Frame(
        iteration=iteration,
        timestamp=time.time(),
        interval=interval,
        threads=threads,
        headers=headers,
        counters=plan.aliases,
        tid=tid,
        pid=pid,
        marker=markers(tid, pid, num_threads),
        user=labels.user,
        name=labels.name,
        cmdline=labels.cmdline,
        num_threads=num_threads,
        dead=np.zeros(n, bool) if dead is None else dead,
        cpu_total=facts.cpu_total,
        values=values,
        status=cstatus,
        running=running,
        counter_delta=np.where(status == Code.UNREADABLE, np.nan, readout.raw),
        counter_running=c_running,
        counter_status=status,
        tasks_total=tasks_total,
        cpu_user=facts.cpu_user,
        cpu_sys=facts.cpu_sys,
        processor=facts.processor,
        cpu_status=np.stack([facts.total_status, facts.split_status], axis=1),
        counter_scaled=delta,
        counter_total=total,
        counter_total_status=total_status,
    )


def _builtins(columns: Sequence[ColumnExpr | None]) -> frozenset[str]:
    """The built-in variables the columns read."""
    return frozenset().union(*(ce.builtins for ce in columns if ce is not None))


def floats(values: list[float]) -> np.ndarray:
    """A float64 array of a list of Python numbers, through ``array('d')``: half the cost
    of ``np.array(values, np.float64)``, which looks at each item's type (~95 against
    ~195 us for 2064 task facts here)."""
    return np.frombuffer(array("d", values), np.float64)


def row_facts(
    rows: Sequence[Task],
    readout: Readout,
    plan: CounterPlan,
    interval: float,
    reaped: np.ndarray | None,
    threads: bool = False,
    num_threads: np.ndarray | None = None,
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
    caller has them as an array (else read from ``rows``)."""
    n = len(rows)
    ok = np.zeros(n, STATUS_DTYPE)
    ticks = floats([t.cpu_total for t in rows])
    if threads:
        cap = np.full(n, 100.0)
    else:
        if num_threads is None:
            num_threads = np.array([t.num_threads for t in rows], np.int64)
        cap = 100.0 * np.maximum(num_threads, 1)
    est = 100.0 * on_cpu_seconds(readout, plan) / interval if interval > 0 else np.full(n, np.nan)
    counted = ~np.isnan(est)
    est0 = np.where(counted, est, 0.0)  # not np.nan_to_num: a Python function, ~8 us
    best = np.where(counted, np.minimum(est0, cap), cap)
    cpu_total = np.where(ticks > cap, best, ticks)
    reaped = np.zeros(n, bool) if reaped is None else reaped
    cpu_total = np.where(reaped, est0, cpu_total)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(ticks > 0, cpu_total / ticks, 0.0)
    user = share * floats([t.cpu_user for t in rows])
    system = share * floats([t.cpu_sys for t in rows])
    unknown = np.where(reaped, Code.UNREADABLE, Code.OK).astype(STATUS_DTYPE)
    tot_st = np.where(reaped & ~counted, unknown, ok).astype(STATUS_DTYPE)
    split_st = unknown
    return RowFacts(
        cpu_total=cpu_total,
        cpu_sys=system,
        cpu_user=user,
        processor=floats([t.processor for t in rows]),
        interval=interval,
        total_status=tot_st,
        split_status=split_st,
    )


def _evaluate(
    columns: Sequence[ColumnExpr | None],
    col_aliases: Sequence[np.ndarray | None],
    env: dict[str, tuple[np.ndarray, np.ndarray]],
    c_running: np.ndarray,
    n: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every column over the ``n`` rows: values, statuses and running fractions (the
    smallest of the counters the column reads). The columns are filled in place under one
    ``np.errstate`` and blanked where not OK at once: the numpy calls of a refresh do not
    grow with a screen's columns beyond its expressions' own (each call costs microseconds
    whatever the rows)."""
    nc = len(columns)
    values = np.full((n, nc), np.nan)
    cstatus = np.full((n, nc), Code.UNREADABLE, STATUS_DTYPE)
    if n:
        with np.errstate(all="ignore"):
            for c, ce in enumerate(columns):
                if ce is not None:
                    values[:, c], cstatus[:, c] = ce.parts(env)  # scalars broadcast
        values[cstatus != Code.OK] = np.nan
    return values, cstatus, _columns_running(col_aliases, c_running, n)


def _columns_running(
    col_aliases: Sequence[np.ndarray | None], c_running: np.ndarray, n: int
) -> np.ndarray:
    """Per row and column, the smallest running fraction of the counters the column reads
    (``c_running``: per row and counter, nan where unread); 1.0 where it reads none or none
    was read. One gather over the columns' counter indices, padded with a column of 1.0."""
    k = c_running.shape[1]
    picks = [[] if a is None else a.tolist() for a in col_aliases]
    width = max(map(len, picks), default=0) or 1
    pad = np.array([p + [k] * (width - len(p)) for p in picks], np.intp).reshape(-1, width)
    ext = np.ones((n, k + 1))
    ext[:, :k] = np.fmin(c_running, 1.0)  # nan (unread) -> 1.0; a fraction is <= 1.0
    return ext[:, pad].min(axis=2)


#: Percentage points a breakdown may miss 100 by (and each part [0, 100]) before it is
#: suspect: 5 points, the 1 +- 0.05 of the fractions.
BREAKDOWN_TOLERANCE = 5.0
#: Seconds on a CPU in the interval below which a task's breakdown is not judged (see the
#: module doc).
BREAKDOWN_MIN_CPU = 0.05


def judge_breakdown(
    values: np.ndarray,
    status: np.ndarray,
    columns: Sequence[int],
    cpu_total: np.ndarray,
    interval: float,
) -> None:
    """Mark ``SUSPECT``, in ``status``, the breakdown cells (``columns``) of the rows whose
    parts do not add up to 100 +- :data:`BREAKDOWN_TOLERANCE` or fall outside [0, 100]
    by more than that, among the rows on a CPU for :data:`BREAKDOWN_MIN_CPU` seconds or
    more (``cpu_total`` %CPU over ``interval`` s) whose parts are all OK."""
    cols = np.asarray(columns, np.int64)
    if cols.size < 2 or not len(values):
        return
    parts = values[:, cols]
    tol = BREAKDOWN_TOLERANCE
    with np.errstate(invalid="ignore"):
        judged = (status[:, cols] == Code.OK).all(axis=1) & np.isfinite(parts).all(axis=1)
        judged &= np.nan_to_num(cpu_total, nan=0.0) * interval / 100.0 >= BREAKDOWN_MIN_CPU
        off = np.abs(parts.sum(axis=1) - 100.0) > tol
        off |= ((parts < -tol) | (parts > 100.0 + tol)).any(axis=1)
    bad = np.flatnonzero(judged & off)
    if bad.size:
        status[np.ix_(bad, cols)] = Code.SUSPECT
