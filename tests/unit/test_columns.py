"""engine.evaluate._evaluate: every column of a screen over all rows at once, as each
column's own evaluation gives it, with the running fraction of the counters it reads."""

from __future__ import annotations

import numpy as np

from tiptop.cells import Code
from tiptop.engine.evaluate import _evaluate
from tiptop.screens.expr import compile_column

OK, DIV0, UNR = Code.OK, Code.DIV0, Code.UNREADABLE

ENV = {
    "delta(A)": (np.array([6.0, 5.0, 4.0]), np.array([OK, OK, UNR], np.uint8)),
    "delta(B)": (np.array([3.0, 0.0, 2.0]), np.array([OK, OK, OK], np.uint8)),
    "CPU_TOT": (np.array([50.0, 0.0, 10.0]), np.array([OK, OK, OK], np.uint8)),
}
TEXTS = ["delta(A) / delta(B)", "7", None, "CPU_TOT", "delta(A) + delta(B)", "delta(B) / 2"]
COLUMNS = [None if t is None else compile_column(t) for t in TEXTS]
# Aliases A (0) and B (1); per row their running fractions (nan: not read).
RUNNING = np.array([[0.5, 0.25], [np.nan, 0.75], [np.nan, np.nan]])
READS = [np.array([0, 1]), None, None, np.zeros(0, np.int64), np.array([1, 0]), np.array([1])]


def test_columns_as_each_evaluates_alone_blank_where_not_ok() -> None:
    values, status, _ = _evaluate(COLUMNS, READS, ENV, RUNNING, 3)
    for c, ce in enumerate(COLUMNS):
        if ce is None:
            assert np.isnan(values[:, c]).all() and (status[:, c] == UNR).all()
            continue
        v, s = ce.evaluate(ENV, 3)
        assert status[:, c].tolist() == s.tolist()
        np.testing.assert_array_equal(values[:, c], v)
    assert status[:, 0].tolist() == [OK, DIV0, UNR]
    assert values[0, 0] == 2.0 and np.isnan(values[1:, 0]).all()  # '-' and '?' hold no value
    assert values[:, 1].tolist() == [7.0] * 3 and values[:, 5].tolist() == [1.5, 0.0, 1.0]


def test_a_column_runs_as_little_as_the_least_counted_counter_it_reads() -> None:
    _, _, running = _evaluate(COLUMNS, READS, ENV, RUNNING, 3)
    assert running[:, 0].tolist() == [0.25, 0.75, 1.0]  # unread counters do not count
    assert running[:, 4].tolist() == [0.25, 0.75, 1.0]
    assert running[:, 5].tolist() == [0.25, 0.75, 1.0]
    for c in (1, 2, 3):  # no counter read: fully counted
        assert running[:, c].tolist() == [1.0] * 3


def test_no_rows() -> None:
    values, status, running = _evaluate(COLUMNS, READS, ENV, np.zeros((0, 2)), 0)
    assert values.shape == status.shape == running.shape == (0, len(COLUMNS))
