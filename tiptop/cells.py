"""Cell status codes, kept apart from cell values (never marker numbers); a leaf module.

Every evaluated cell carries a value (float64) and a :class:`Status`. Statuses are ordered
so that combining the statuses of an expression's operands is ``numpy.maximum``: any
unreadable operand wins over a zero divisor, which wins over OK.
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


#: The text shown in place of a value, per status (right-aligned to the header width).
PLACEHOLDER = {Status.DIV0: "-", Status.NOT_COUNTED: "?", Status.UNREADABLE: "?"}

#: Stable lower-case names used by the csv and json outputs.
STATUS_NAME = {
    Status.OK: "ok",
    Status.DIV0: "div0",
    Status.NOT_COUNTED: "not_counted",
    Status.UNREADABLE: "unreadable",
}

STATUS_DTYPE = np.uint8
