"""Cell status codes, kept apart from cell values (never marker numbers); a leaf module.

Every evaluated cell carries a value (float64) and a :class:`Status`. Statuses are ordered
so that combining the statuses of an expression's operands is ``numpy.maximum``: any
unreadable operand wins over a zero divisor, which wins over OK. ``SUSPECT`` is never an
operand's: it is given to finished column cells only (a breakdown that does not add up,
``tiptop.screens.evaluate.judge_breakdown``), and such a cell keeps its value.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np


class Status(IntEnum):
    """What a cell holds, independent of its value."""

    OK = 0
    #: A divisor was zero: shown as ``-`` (the original's "empty" cell).
    DIV0 = 1
    #: The counter ran for none of the interval (time_running did not advance): ``?``.
    NOT_COUNTED = 2
    #: A counter could not be opened or read, or a built-in value is unknown: ``?``.
    UNREADABLE = 3
    #: The value is shown but not to be trusted: the screen's breakdown columns do not add
    #: up to 100% for this task although it ran long enough to tell (docs/screens.md,
    #: "breakdown"). Shown as the value followed by :data:`SUSPECT_MARK`.
    SUSPECT = 4


class Code:
    """:class:`Status` values as plain ints, for numpy expressions. numpy takes an ``IntEnum``
    member through its generic object path, which a plain int skips, and a refresh makes
    dozens of such compares."""

    OK = int(Status.OK)
    DIV0 = int(Status.DIV0)
    NOT_COUNTED = int(Status.NOT_COUNTED)
    UNREADABLE = int(Status.UNREADABLE)
    SUSPECT = int(Status.SUSPECT)


#: The text shown in place of a value, per status (right-aligned to the header width).
PLACEHOLDER = {Status.DIV0: "-", Status.NOT_COUNTED: "?", Status.UNREADABLE: "?"}

#: Written right after a SUSPECT cell's value (the value moves one place left to make room).
SUSPECT_MARK = "!"

#: The statuses whose cell holds a value to show, sort and export.
VALUED = (Status.OK, Status.SUSPECT)


def valued(status: np.ndarray) -> np.ndarray:
    """Where ``status`` is one of :data:`VALUED` (two compares: cheaper than ``isin``)."""
    return (status == Code.OK) | (status == Code.SUSPECT)


#: Stable lower-case names used by the csv and json outputs.
STATUS_NAME: dict[int, str] = {
    Status.OK: "ok",
    Status.DIV0: "div0",
    Status.NOT_COUNTED: "not_counted",
    Status.UNREADABLE: "unreadable",
    Status.SUSPECT: "suspect",
}

STATUS_DTYPE = np.uint8
