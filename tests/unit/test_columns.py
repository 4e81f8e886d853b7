"""screens.evaluate.Evaluator: every column of a screen over all rows at once, as each
column's own evaluation gives it, with the running fraction of the counters it reads."""

from __future__ import annotations

import numpy as np

from tiptop.cells import Code
from tiptop.screens.evaluate import CounterCells, Evaluator
from tiptop.screens.model import ColumnSpec, CounterSpec, NamedEvent, ScreenSpec
from tiptop.screens.variables import RowFacts

OK, DIV0, UNR = Code.OK, Code.DIV0, Code.UNREADABLE

TEXTS = ["delta(A) / delta(B)", "7", "delta(", "CPU_TOT", "delta(A) + delta(B)", "delta(B) / 2"]
SCREEN = ScreenSpec(
    "t",
    "",
    tuple(CounterSpec(a, NamedEvent(e), e) for a, e in (("A", "x"), ("B", "y"))),
    tuple(ColumnSpec(f"C{i}", "%5.1f", t) for i, t in enumerate(TEXTS)),
)
ST = np.array([[OK, OK], [OK, OK], [UNR, OK]], np.uint8)
# Counter cells in the order B, A (the evaluator maps aliases to their columns).
CELLS = CounterCells(
    scaled=np.array([[3.0, 6.0], [0.0, 5.0], [2.0, np.nan]]),
    status=ST[:, ::-1].copy(),
    total=np.full((3, 2), np.nan),
    total_status=np.full((3, 2), UNR, np.uint8),
    # Per row their running fractions (nan: not read).
    running=np.array([[0.25, 0.5], [0.75, np.nan], [np.nan, np.nan]]),
)
FACTS = RowFacts(
    cpu_total=np.array([50.0, 0.0, 10.0]),
    cpu_sys=np.zeros(3),
    cpu_user=np.zeros(3),
    processor=np.zeros(3),
    interval=1.0,
    total_status=np.zeros(3, np.uint8),
    split_status=np.zeros(3, np.uint8),
)
ENV = {
    "delta(A)": (np.array([6.0, 5.0, np.nan]), ST[:, 0]),
    "delta(B)": (np.array([3.0, 0.0, 2.0]), ST[:, 1]),
    "CPU_TOT": (FACTS.cpu_total, np.zeros(3, np.uint8)),
}


def evaluator() -> Evaluator:
    return Evaluator(SCREEN, ("B", "A"))


def test_columns_as_each_evaluates_alone_blank_where_not_ok() -> None:
    ev = evaluator()
    out = ev.evaluate(FACTS, CELLS)
    values, status = out.values, out.status
    for c, ce in enumerate(ev.columns):
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
    running = evaluator().evaluate(FACTS, CELLS).running
    assert running[:, 0].tolist() == [0.25, 0.75, 1.0]  # unread counters do not count
    assert running[:, 4].tolist() == [0.25, 0.75, 1.0]
    assert running[:, 5].tolist() == [0.25, 0.75, 1.0]
    for c in (1, 2, 3):  # no counter read: fully counted
        assert running[:, c].tolist() == [1.0] * 3


def test_an_alias_without_cells_reads_unreadable() -> None:
    ev = Evaluator(SCREEN, ("B",))
    out = ev.evaluate(FACTS, CounterCells(*(x[:, :1] for x in vars(CELLS).values())))
    assert out.status[:, 0].tolist() == [UNR] * 3 and out.status[:, 5].tolist() == [OK] * 3


def test_no_rows() -> None:
    none = np.zeros(0)
    empty = RowFacts(none, none, none, none, 1.0, np.zeros(0, np.uint8), np.zeros(0, np.uint8))
    out = evaluator().evaluate(empty, CounterCells.empty(0, 2))
    assert out.values.shape == out.status.shape == out.running.shape == (0, len(TEXTS))
    assert out.node.shape == (0, len(TEXTS))
