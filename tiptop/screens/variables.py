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

from tiptop.cells import STATUS_DTYPE
from tiptop.readonly import readonly

__all__ = ["BUILTINS", "VARIABLES", "RowFacts", "Variable", "environment"]

#: A variable's column: ``(values float64[n], status uint8[n])``, as ``ColumnExpr`` reads.
Column = tuple[np.ndarray, np.ndarray]


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


#: Every built-in variable (docs/screens.md, "Built-in variables"): the original's four and
#: INTERVAL.
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
)

#: The built-in names, in registry order.
BUILTINS: tuple[str, ...] = tuple(v.name for v in VARIABLES)


def environment(facts: RowFacts, names: Collection[str] | None = None) -> dict[str, Column]:
    """Every built-in's column for ``facts`` (or those in ``names``: the ones a screen's
    expressions read, ``ColumnExpr.builtins``): the part of an expression environment that
    does not come from counters."""
    return {v.name: v.compute(facts) for v in VARIABLES if names is None or v.name in names}
