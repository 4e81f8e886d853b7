"""A screen's columns compiled once into records: what each column is, read by everyone.

A :class:`Column` carries what a column means, so that nothing outside ``tiptop.screens``
reads expression text (tests/unit/test_columns_records.py checks it): its :class:`Kind`
(a plain value, a rate of counter deltas, or the bottleneck over named top-down nodes),
the counter aliases it reads bare (their running totals) and as ``delta()``, its header
and printf format, the compiled expression the evaluator runs, and for a bottleneck
column its parsed tree (tiptop/screens/bottleneck.py). The recorder asks it which totals
to record, the table and the printf formats which cells are bottlenecks, ``--plot`` which
columns are rates, the evaluator what to run.

Compiled once: :func:`compiled` keeps each expression text's :class:`ColumnExpr` (the
loader's check of a screen fills it, so the plan and every evaluator get the same one),
and :func:`screen_columns` keeps each screen's records.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterator

from tiptop.errors import SpecError
from tiptop.readonly import readonly
from tiptop.screens.bottleneck import BoundPath, PathSpec, is_path, well_formed
from tiptop.screens.expr import ColumnExpr, compile_column
from tiptop.screens.model import ColumnSpec, ScreenSpec

__all__ = ["Column", "Kind", "ScreenColumns", "column_record", "compiled", "screen_columns"]


class Kind(enum.Enum):
    """What a column's value is."""

    #: A value of the row's facts, counters' running totals or constants.
    PLAIN = "plain"
    #: Reads at least one counter's interval delta (``delta(alias)``): a rate or a ratio.
    RATE = "rate"
    #: ``bottleneck(TREE: ...)``: a top-down node (the cell's node) and its share.
    BOTTLENECK = "bottleneck"


@readonly
class Column:
    """One column of a screen, compiled (see the module doc)."""

    header: str
    #: The printf format of its value (a bottleneck column's: of the node's share).
    format: str
    kind: Kind
    #: Counter aliases read bare (their running total since first counted).
    bare: frozenset[str]
    #: Counter aliases read as ``delta(alias)`` (the interval's delta).
    deltas: frozenset[str]
    #: What the evaluator runs; None for a bottleneck column (computed from the others)
    #: and for one that does not compile (its cells read ``?``).
    compiled: ColumnExpr | None
    #: A bottleneck column's tree and node columns; None when not well formed.
    path: PathSpec | None = None
    #: Why the expression does not compile (the loader said it with its place), or None.
    error: SpecError | None = None

    @property
    def aliases(self) -> frozenset[str]:
        """Every counter alias the column reads."""
        return self.bare | self.deltas

    @property
    def labels(self) -> tuple[str, ...]:
        """A bottleneck column's node labels (a cell's node indexes them); () otherwise."""
        return () if self.path is None else self.path.labels


@functools.lru_cache(maxsize=1024)
def compiled(text: str) -> ColumnExpr:
    """``text`` compiled (``tiptop.screens.expr.compile_column``), kept: never stale, an
    expression's meaning is its text. Raises SpecError, unplaced (the loader places it)."""
    return compile_column(text)


def column_record(spec: ColumnSpec) -> Column:
    """The record of one column."""
    try:
        expr: ColumnExpr | None = compiled(spec.expr)
        error = None
    except SpecError as err:
        expr, error = None, err
    bare = deltas = frozenset[str]()
    if expr is not None:
        bare, deltas = expr.bare, expr.deltas
    if is_path(spec.expr):
        path = well_formed(spec.expr)  # not well formed: the loader said why; cells '?'
        return Column(spec.header, spec.format, Kind.BOTTLENECK, bare, deltas, None, path, error)
    kind = Kind.RATE if deltas else Kind.PLAIN
    return Column(spec.header, spec.format, kind, bare, deltas, expr, None, error)


@readonly
class ScreenColumns:
    """A screen's column records, in screen order, and its bottleneck columns bound to
    the screen's headers (``(index, BoundPath)``, computed after the others)."""

    columns: tuple[Column, ...]
    paths: tuple[tuple[int, BoundPath], ...]

    def __iter__(self) -> Iterator[Column]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    def __getitem__(self, j: int) -> Column:
        return self.columns[j]

    @property
    def bare(self) -> frozenset[str]:
        """The aliases any column reads bare."""
        return frozenset().union(*(c.bare for c in self.columns))


@functools.lru_cache(maxsize=64)
def screen_columns(screen: ScreenSpec) -> ScreenColumns:
    """``screen``'s columns compiled into records, kept per screen: a screen is frozen and
    a record is not changed after it is made, so never stale."""
    columns = tuple(column_record(c) for c in screen.columns)
    headers = [c.header for c in screen.columns]
    paths = tuple(
        (j, BoundPath(c.path, headers)) for j, c in enumerate(columns) if c.path is not None
    )
    return ScreenColumns(columns, paths)
