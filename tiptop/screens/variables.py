"""The built-in variables of column expressions: one registry, read by the expression
compiler (which names are built-ins), the engine (how each is computed), the live help
window and the tests that check docs/screens.md's list.

Each :class:`Variable` computes its ``(values, status)`` column from :class:`RowFacts`, what
the engine knows of every row at one refresh besides its counters. Adding a variable is one
entry of :data:`VARIABLES` (and its case in tests/test_variables.py); a fact the engine does
not gather yet is one more field of :class:`RowFacts`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import numpy as np

from tiptop.cells import STATUS_DTYPE, Code
from tiptop.readonly import readonly

__all__ = [
    "BUILTINS",
    "TIME_NAMES",
    "TIME_PARTS",
    "TIME_VARIABLES",
    "VARIABLES",
    "RowFacts",
    "TimeFacts",
    "Variable",
    "environment",
]

#: A variable's column: ``(values float64[n], status uint8[n])``, as ``ColumnExpr`` reads.
Column = tuple[np.ndarray, np.ndarray]


#: The parts of a row's time that :class:`TimeFacts` holds, in its columns' order.
TIME_PARTS = ("run", "wait", "throttled", "io")
RUN, WAIT, THROTTLED, IO = range(len(TIME_PARTS))


@readonly
class TimeFacts:
    """Where each row's time went over the interval (``tiptop.engine.scan.times`` reads it;
    docs/screens.md, "Where the time goes"): per row, the % of the interval on a CPU,
    waiting on a run queue, of that wait throttled by its cgroup's CPU limit, and blocked
    on block I/O (:data:`TIME_PARTS`), summed over the threads the row stands for (so, as
    %CPU, a process's may pass 100), with a status each (UNREADABLE where the source is
    absent: no ``schedstat``, no delay accounting). In % rather than seconds, so that rows
    of refreshes of other lengths (a plot's batch, rows by cgroup) read the same."""

    #: float64 ``(n, 4)``: each part in % of the interval; NaN where unknown.
    percent: np.ndarray
    #: uint8 ``(n, 4)``: each part's status.
    status: np.ndarray
    #: float64: the threads each row's sums cover (1 for a thread row).
    threads: np.ndarray
    #: float64: the CPUs its cgroup may use at most (its CPU limit); NaN for none.
    limit: np.ndarray
    #: float64: the CPUs it may run on (its affinity), read for the rows that waited; NaN
    #: where not read.
    cpus: np.ndarray

    @classmethod
    def unknown(cls, n: int) -> TimeFacts:
        """``n`` rows of which nothing is known (a source that does not read them)."""
        nan = np.full(n, np.nan)
        unread = np.full((n, len(TIME_PARTS)), Code.UNREADABLE, STATUS_DTYPE)
        return cls(np.full((n, len(TIME_PARTS)), np.nan), unread, np.ones(n), nan, nan)


@readonly
class RowFacts:
    """Per-row facts of one refresh, ``n`` rows each (``tiptop.engine.assemble`` builds it).

    The %CPU fields are percent of one CPU over the interval, from the utime/stime deltas
    of proc(5) ``/proc/PID/stat`` fields 14 and 15. ``total_status``/``split_status`` are
    ``tiptop.cells.Status`` codes: UNREADABLE where a task was reaped before its last CPU
    times could be read (its total then comes from its counters' on-CPU time, its
    user/system split is unknown).
    """

    cpu_total: np.ndarray
    cpu_sys: np.ndarray
    cpu_user: np.ndarray
    #: The CPU each task last ran on (proc(5) field 39, ``processor``).
    processor: np.ndarray
    #: Seconds since the previous refresh.
    interval: float
    total_status: np.ndarray
    split_status: np.ndarray
    #: Per row, the seconds its counters' deltas cover (``INTERVAL``); None: ``interval``.
    window: np.ndarray | None = None
    #: Where each row's time went (``TIME_*``); None: unknown (not read).
    time: TimeFacts | None = None

    @property
    def n(self) -> int:
        """The number of rows."""
        return len(self.cpu_total)

    def ok(self) -> np.ndarray:
        """An all-OK status column."""
        return np.zeros(self.n, STATUS_DTYPE)


@readonly
class Variable:
    """One built-in: its name in expressions, a one-line description (the docs and the help
    window show it), and how its column is computed from the row facts."""

    name: str
    description: str
    compute: Callable[[RowFacts], Column]


def _times(f: RowFacts) -> TimeFacts:
    return f.time if f.time is not None else TimeFacts.unknown(f.n)


def _share(part: int) -> Callable[[RowFacts], Column]:
    """The variable of one part of a row's time, in % of the interval."""

    def compute(f: RowFacts) -> Column:
        t = _times(f)
        return t.percent[:, part], t.status[:, part]

    return compute


def _sleep(f: RowFacts) -> Column:
    """The rest of the row's time: its threads' time not on a CPU, not waiting for one and
    not blocked on I/O where delay accounting counts that (where it does not, the I/O is
    part of this rest and ``TIME_IO`` is unknown)."""
    t = _times(f)
    io = np.where(t.status[:, IO] == Code.OK, t.percent[:, IO], 0.0)
    busy = t.percent[:, RUN] + t.percent[:, WAIT] + io
    status = np.maximum(t.status[:, RUN], t.status[:, WAIT])
    return np.maximum(100.0 * t.threads - busy, 0.0), status


def _limit(f: RowFacts) -> Column:
    limit = _times(f).limit
    return limit, np.where(np.isnan(limit), Code.DIV0, Code.OK).astype(STATUS_DTYPE)


#: The variables of where a row's time went (``tiptop.engine.scan.times`` reads them only
#: for a screen that uses one, or has a ``bottleneck(...)`` column).
TIME_VARIABLES: tuple[Variable, ...] = (
    Variable(
        "TIME_RUN",
        "% of the interval on a CPU (schedstat; a process: the sum of its threads')",
        _share(RUN),
    ),
    Variable(
        "TIME_WAIT",
        "% of the interval waiting for a CPU on a run queue (schedstat), throttled included",
        _share(WAIT),
    ),
    Variable(
        "TIME_THROTTLED",
        "% of the interval held by its cgroup's CPU limit (of TIME_WAIT; cpu.stat)",
        _share(THROTTLED),
    ),
    Variable(
        "TIME_IO",
        "% of the interval blocked on block I/O (delay accounting; ? where it is off)",
        _share(IO),
    ),
    Variable(
        "TIME_SLEEP",
        "% of the interval asleep: the rest (100 per thread in all)",
        _sleep,
    ),
    Variable(
        "CPU_LIMIT",
        "the CPUs its cgroup may use at most (cpu.max, cfs_quota_us); - for no limit",
        _limit,
    ),
)

#: The names of :data:`TIME_VARIABLES`.
TIME_NAMES = frozenset(v.name for v in TIME_VARIABLES)

#: Every built-in variable (docs/screens.md, "Built-in variables"): the original's four,
#: INTERVAL and where the time went.
VARIABLES: tuple[Variable, ...] = (
    Variable(
        "CPU_TOT",
        "%CPU over the interval, user plus system (100 = one CPU)",
        lambda f: (f.cpu_total, f.total_status),
    ),
    Variable(
        "CPU_SYS",
        "%CPU in system (kernel) mode over the interval",
        lambda f: (f.cpu_sys, f.split_status),
    ),
    Variable(
        "CPU_USER",
        "%CPU in user mode over the interval",
        lambda f: (f.cpu_user, f.split_status),
    ),
    Variable(
        "PROC_ID",
        "the CPU the task last ran on",
        lambda f: (np.asarray(f.processor, np.float64), f.ok()),
    ),
    Variable(
        "INTERVAL",
        "seconds the row's counter deltas cover",
        lambda f: (
            np.full(f.n, float(f.interval)) if f.window is None else f.window,
            f.ok(),
        ),
    ),
    *TIME_VARIABLES,
)

#: The built-in names, in registry order.
BUILTINS: tuple[str, ...] = tuple(v.name for v in VARIABLES)


def environment(facts: RowFacts, names: Collection[str] | None = None) -> dict[str, Column]:
    """Every built-in's column for ``facts`` (or those in ``names``: the ones a screen's
    expressions read, ``ColumnExpr.builtins``): the part of an expression environment that
    does not come from counters."""
    return {v.name: v.compute(facts) for v in VARIABLES if names is None or v.name in names}
