"""The one evaluator: a screen's columns computed from counter cells and row facts.

Every source of frames goes through :class:`Evaluator`: the sampler (``tiptop.engine``), a
replayed recording (``tiptop.recording``) and rows summed by cgroup (``tiptop.sources``), so a
screen shows the same numbers for the same counts whatever reads them.

An :class:`Evaluator` is a screen's column records (``tiptop.screens.columns``, compiled
once) bound to one order of counter cells (which index of :class:`CounterCells` each alias
reads). It is stale when the screen or that order changes, and its owner makes a new one
then (the sampler at each plan, a replay per recorded screen and counter order).

Columns read two things per counter (docs/screens.md, "Expressions"): ``alias``, its running
total since the task was first counted, and ``delta(alias)``, its interval delta scaled for
multiplexing; both are NaN where their status is not OK, and the status travels with them
(``tiptop.cells``). A cell's running fraction is the smallest ``Δrunning/Δenabled`` of the
counters its column reads: with split groups each counter carries its own group's.

*Bottlenecks.* A ``bottleneck(...)`` column (tiptop/screens/bottleneck.py) reads the
other columns' values, statuses and running fractions, and the rows' time level
(tiptop/screens/timetree.py, from the row facts' ``time``), so it is computed last, here,
for every source alike; its cells' nodes are their own array (``ColumnCells.node``).

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

import functools
from collections.abc import Mapping, Sequence

import numpy as np

from tiptop.cells import STATUS_DTYPE, Code
from tiptop.readonly import readonly
from tiptop.screens.bottleneck import NO_NODE, NODE_DTYPE
from tiptop.screens.columns import screen_columns
from tiptop.screens.model import ScreenSpec, delta_key
from tiptop.screens.timetree import time_level
from tiptop.screens.variables import TIME_NAMES, RowFacts, environment

__all__ = [
    "BREAKDOWN_MIN_CPU",
    "BREAKDOWN_TOLERANCE",
    "ColumnCells",
    "CounterCells",
    "Evaluator",
    "judge_breakdown",
]


@readonly
class CounterCells:
    """What the columns read of the counters: ``(n, k)`` arrays, one column per counter in
    the order the :class:`Evaluator` was bound to."""

    #: ``delta(alias)``: the interval delta scaled for multiplexing; NaN where not OK.
    scaled: np.ndarray
    status: np.ndarray
    #: ``alias``: the running total (groups closed earlier included); NaN where not OK.
    total: np.ndarray
    total_status: np.ndarray
    #: ``Δrunning/Δenabled`` of each counter's group; NaN where unread.
    running: np.ndarray

    @classmethod
    def empty(cls, n: int, k: int = 0) -> CounterCells:
        """Cells of ``n`` rows and ``k`` counters, none read."""
        nan, unread = np.full((n, k), np.nan), np.full((n, k), Code.UNREADABLE, STATUS_DTYPE)
        return cls(nan, unread, nan, unread, nan)


@readonly
class ColumnCells:
    """A screen's evaluated columns: ``(n, columns)`` values, statuses, running
    fractions (the smallest of the counters each column reads; 1.0 where none) and nodes
    (a bottleneck cell's node, tiptop/screens/bottleneck.py; -1 for none and elsewhere)."""

    values: np.ndarray
    status: np.ndarray
    running: np.ndarray
    node: np.ndarray


class Evaluator:
    """``screen``'s columns, compiled once, over counter cells in one order.

    ``where`` maps each counter alias to its column in the :class:`CounterCells` given to
    :meth:`evaluate` (a sequence of aliases means their positions); an alias of the screen
    that it lacks reads ``?``. A column that does not compile reads ``?``."""

    def __init__(self, screen: ScreenSpec, where: Mapping[str, int] | Sequence[str]) -> None:
        if not isinstance(where, Mapping):
            where = {a: j for j, a in enumerate(where)}
        self.screen = screen
        records = screen_columns(screen)
        #: Per column, its compiled expression (None: a bottleneck, or not compiled).
        self.columns = [c.compiled for c in records]
        #: alias -> counter column read, for the screen's counters that have one.
        self.where = {c.alias: where[c.alias] for c in screen.counters if c.alias in where}
        self._missing = [c.alias for c in screen.counters if c.alias not in self.where]
        #: Per column: the counter columns it reads (None where it did not compile).
        self.col_aliases = [
            None
            if ce is None
            else np.array(sorted(self.where[a] for a in ce.aliases if a in self.where), np.int64)
            for ce in self.columns
        ]
        self.builtins = frozenset().union(*(ce.builtins for ce in self.columns if ce))
        self.breakdown = screen.breakdown_columns()
        self._gather = _gather_index(self.col_aliases)
        #: The ``bottleneck(...)`` columns, computed from the others after them.
        self.paths = records.paths

    @property
    def reads_time(self) -> bool:
        """Whether a column reads where the rows' time went (a ``TIME_*`` variable or
        ``CPU_LIMIT``), or is a bottleneck, whose path starts from it."""
        return bool(self.builtins & TIME_NAMES) or bool(self.paths)

    @property
    def headers(self) -> tuple[str, ...]:
        """The screen's column headers."""
        return tuple(c.header for c in self.screen.columns)

    def evaluate(self, facts: RowFacts, counters: CounterCells) -> ColumnCells:
        """Every column over the rows of ``facts`` and ``counters``, breakdowns judged.
        The columns are filled in place under one ``np.errstate`` and blanked where not
        OK at once, so a refresh's numpy calls do not grow with its columns beyond their
        expressions' own."""
        n = facts.n
        env = environment(facts, self.builtins)
        for a, j in self.where.items():
            env[a] = (counters.total[:, j], counters.total_status[:, j])
            env[delta_key(a)] = (counters.scaled[:, j], counters.status[:, j])
        if self._missing:
            missing = (np.full(n, np.nan), np.full(n, Code.UNREADABLE, STATUS_DTYPE))
            for a in self._missing:
                env[a] = env[delta_key(a)] = missing
        nc = len(self.columns)
        values = np.full((n, nc), np.nan)
        status = np.full((n, nc), Code.UNREADABLE, STATUS_DTYPE)
        if n:
            with np.errstate(all="ignore"):
                for c, ce in enumerate(self.columns):
                    if ce is not None:
                        values[:, c], status[:, c] = ce.parts(env)  # scalars broadcast
            values[status != Code.OK] = np.nan
        judge_breakdown(values, status, self.breakdown, facts.cpu_total, facts.interval)
        running = self._running(counters.running, n)
        node = np.full((n, nc), NO_NODE, NODE_DTYPE)
        level = None
        if self.paths and facts.time is not None:  # the time level, above every tree
            t = facts.time
            level = time_level(t.percent, t.status, t.threads)
        for j, bp in self.paths:
            values[:, j], status[:, j], running[:, j], node[:, j] = bp.evaluate(
                values, status, running, level
            )
        return ColumnCells(values, status, running, node)

    def _running(self, c_running: np.ndarray, n: int) -> np.ndarray:
        """Per row and column, the smallest running fraction of the counters the column
        reads; 1.0 where it reads none or none was read (NaN, unread). One gather over
        the columns' counter indices, padded with a column of 1.0."""
        k = c_running.shape[1]
        ext = np.ones((n, k + 1))
        ext[:, :k] = np.fmin(c_running, 1.0)  # nan (unread) -> 1.0; a fraction is <= 1.0
        pad = np.where(self._gather < 0, k, self._gather)
        return ext[:, pad].min(axis=2)


@functools.lru_cache(maxsize=32)
def evaluator_for(screen: ScreenSpec, where: tuple[tuple[str, int], ...]) -> Evaluator:
    """The :class:`Evaluator` of ``screen`` over counter cells ordered by ``where``
    (``(alias, column)`` pairs), kept for the sources that learn their counter order with
    each frame (a replay, the cgroup rows). Never stale: a screen is frozen, and the key
    is all an evaluator is made of; ``evaluate`` changes nothing in it."""
    return Evaluator(screen, dict(where))


def _gather_index(col_aliases: Sequence[np.ndarray | None]) -> np.ndarray:
    """The counter columns of each screen column, padded to one width with -1 (the
    all-ones column, whose place depends on the cells' width)."""
    picks = [[] if a is None else a.tolist() for a in col_aliases]
    width = max(map(len, picks), default=0) or 1
    return np.array([p + [-1] * (width - len(p)) for p in picks], np.intp).reshape(-1, width)


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
