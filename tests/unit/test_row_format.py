"""table's compiled row format: one ``str.format`` per row gives exactly the cells the
cell-by-cell path gives; rows are formatted only when asked for; statuses stay ints."""

from __future__ import annotations

import math
from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from tests.support.builders import SCREEN, frame, task
from tiptop.cells import PLACEHOLDER, Status
from tiptop.screens.model import ColumnSpec
from tiptop.screens.printf import RowFormat, compile_format, row_format
from tiptop.table import View, format_row, rows


def cell_by_cell(columns: list[ColumnSpec], values: list[float], codes: bytes) -> str:
    """The row's middle as each cell alone gives it (docs/original.md 6.2: cell, space)."""
    out = []
    for col, v, c in zip(columns, values, codes, strict=True):
        w = len(col.header)
        text = compile_format(col.format)(v) if c == 0 else PLACEHOLDER[Status(c)]
        out.append(text.rjust(w) + " ")
    return "".join(out)


literal = st.text(alphabet="ab {}%|", max_size=3).map(lambda t: t.replace("%", "%%"))
conversion = st.builds(
    lambda flags, width, prec, conv: f"%{flags}{width}{prec}{conv}",
    st.sampled_from(["", "-", "+", " ", "#", "0", "-+", "0+", "- #"]),
    st.sampled_from(["", "1", "3", "5", "8", "12"]),
    st.sampled_from(["", ".", ".0", ".2", ".6"]),
    st.sampled_from("fFeEgG"),
)
column = st.builds(
    lambda pre, conv, post, width: ColumnSpec(" " * width, pre + conv + post, "CPU_TOT"),
    literal,
    conversion,
    literal,
    st.integers(1, 16),
)
value = st.one_of(
    st.floats(allow_nan=False, width=64),
    st.sampled_from([0.0, -0.0, 0.5, -2.5, 1e6, math.inf, -math.inf]),
)


@given(st.data())
def test_template_equals_cell_by_cell(data: st.DataObject) -> None:
    columns = data.draw(st.lists(column, min_size=1, max_size=5))
    n = len(columns)
    values = data.draw(st.lists(value, min_size=n, max_size=n))
    codes = bytes(data.draw(st.lists(st.sampled_from([0, 0, 1, 2, 3]), min_size=n, max_size=n)))
    fmt = RowFormat(columns)
    expected = cell_by_cell(columns, values, codes)
    assert fmt.text(values, codes) == expected
    assert "".join(c + " " for c in fmt.cells(values, codes)) == expected


def test_usual_formats_fold_into_one_template() -> None:
    fmt = RowFormat(
        [
            ColumnSpec(" %CPU", "%5.1f", "CPU_TOT"),
            ColumnSpec("  IPC", " %4.2f", "CPU_TOT"),
            ColumnSpec("  %CPU", "%4.1f", "CPU_TOT"),  # narrower than its header: widened
            ColumnSpec("  x", "%-2.0f", "CPU_TOT"),  # left-aligned under a wider header
        ]
    )
    assert fmt.fields[:3] == ["{0:5.1f}", " {1:4.2f}", "{2:6.1f}"]
    assert fmt.fields[3] is None  # padded on the left of a left-aligned value: cell by cell
    assert fmt.text([1.0, 2.0, 3.0, 4.0], bytes(4)) == "  1.0  2.00    3.0  4  "
    assert fmt.text([1.0, 2.0, 3.0, 4.0], bytes([0, 1, 3, 2])) == "  1.0     -      ?   ? "


def test_rows_format_nothing_until_asked() -> None:
    f = frame([task(t, 1.0 + t, 1.0, 0.5) for t in range(1, 6)])
    fmt = row_format(SCREEN.columns)
    assert fmt is row_format(SCREEN.columns)  # compiled once per screen
    calls = 0
    text = fmt.text

    def counting(values: list[float], codes: bytes, nodes: Sequence[int] = ()) -> str:
        nonlocal calls
        calls += 1
        return text(values, codes, nodes)

    fmt.text = counting  # type: ignore[method-assign]
    try:
        out = rows(f, SCREEN, View())
        assert calls == 0
        assert format_row(out[0], View()) == "    5    6.0     1.00  0.50 proc"
        format_row(out[0], View(show_user=True))  # formatted once, whatever the view
        assert calls == 1
    finally:
        del fmt.text


def test_status_codes_are_ints() -> None:
    f = frame([task(1, 1.0, 0, 0, status=[0, 0, Status.DIV0])])
    (r,) = rows(f, SCREEN, View())
    assert r.status == [Status.OK, Status.OK, Status.DIV0]
    assert [type(s) for s in r.status] == [int, int, int]
    assert r.cells == ["  1.0", "    0.00", "    -"]
    assert r.multiplexed == [False] * 3 and r.over_threshold == [False] * 3
