"""Batch's line memo (``table.text.LineMemo``): a row showing what it showed at the last
refresh keeps its line, and each thing that makes an entry stale (the layout, each row
fact, a task not among the last rows) gives the line a memo-less call prints."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import spying
from tests.support.builders import BOTTLENECK_SCREEN, SCREEN, frame, screen, task
from tiptop.cells import Status
from tiptop.screens.bottleneck import OFFSET
from tiptop.screens.printf import RowFormat
from tiptop.table import View, text_lines
from tiptop.table.text import LineMemo

BEFORE = [
    task(1, 0.0, 0, 0, name="idle"),
    task(2, 3.0, 1.5, 2.0, name="busy", cmdline="busy --x"),
    task(3, 0.0, 0, 0, name="other"),
]
#: SCREEN with the %CPU cell printed otherwise (same headers, same number of columns).
OTHER_FORMAT = screen(
    "default",
    counters={"CYCLE": "cycles", "INSN": "instructions"},
    columns=[
        (" %CPU", "%5.2f", "CPU_TOT"),
        *((c.header, c.format, c.expr) for c in SCREEN.columns[1:]),
    ],
)


def _with(k: int, **changes: Any) -> list[dict[str, Any]]:
    """BEFORE with row ``k`` changed."""
    return [r | changes if i == k else r for i, r in enumerate(BEFORE)]


def test_only_rows_that_changed_are_formatted(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a memo, a row shown as at the last call is not formatted again, and the lines
    are the same as without one: a changed value, command (exec) or death, a new row."""
    view = View(show_idle=True, watch="watch")
    tasks = [
        task(1, 0.0, 0, 0, name="idle"),
        task(2, 3.0, 1.5, 2.0, name="busy"),
        task(3, 0.0, 0, 0, name="watched", status=[Status.OK, Status.DIV0, Status.UNREADABLE]),
    ]
    formatted: list[list[float]] = []
    real_text = RowFormat.text
    monkeypatch.setattr(
        RowFormat,
        "text",
        spying(real_text, lambda self, v, c, n=(): formatted.append(v)),
    )
    memo = LineMemo()
    first = text_lines(frame(tasks), SCREEN, view, memo)
    assert len(formatted) == 3 and len(memo.lines) == 3
    formatted.clear()
    assert text_lines(frame(tasks), SCREEN, view, memo) == first
    assert formatted == []  # every row as it was: nothing formatted
    changed = [
        task(1, 0.0, 0, 0, name="idle-exec"),
        task(2, 3.5, 1.5, 2.0, name="busy"),
        task(3, 0.0, 0, 0, name="watched", status=[Status.OK, Status.DIV0, Status.UNREADABLE]),
        task(4, -0.0, 0, 0, name="new", dead=True),
    ]
    want = text_lines(frame(changed), SCREEN, view)
    formatted.clear()
    got = text_lines(frame(changed), SCREEN, view, memo)
    assert got == want
    assert len(formatted) == 3 and len(memo.lines) == 4  # rows 1, 2 and 4; row 3 was kept
    assert got[-1].endswith(" DEAD")
    # The same rows in the same order (compared in place): only the changed value is new.
    moved = [changed[0], task(2, 3.5, 1.5, 2.5, name="busy"), *changed[2:]]
    want = text_lines(frame(moved), SCREEN, view)
    formatted.clear()
    assert text_lines(frame(moved), SCREEN, view, memo) == want
    assert formatted == [[3.5, 1.5, 2.5]]
    # -0.0 equals 0.0 but prints otherwise: a row going from one to the other is new text.
    signed = [task(1, -0.0, 0, 0, name="idle-exec")]
    assert text_lines(frame(signed), SCREEN, view, memo) == text_lines(frame(signed), SCREEN, view)
    assert "-0.0" in text_lines(frame(signed), SCREEN, view, memo)[0]


#: (what changes, the rows after, the view before, the view after, the screen after)
STALE = [
    ("value", _with(1, cells=[3.5, 1.5, 2.0]), View(), View(), SCREEN),
    ("value bits", _with(0, cells=[-0.0, 0, 0]), View(), View(), SCREEN),
    ("status", _with(0, status=[Status.OK, Status.OK, Status.DIV0]), View(), View(), SCREEN),
    ("death", _with(1, dead=True), View(), View(), SCREEN),
    ("command", _with(1, name="busy2"), View(), View(), SCREEN),
    (
        "command line",
        _with(1, cmdline="busy --y"),
        View(show_cmdline=True),
        View(show_cmdline=True),
        SCREEN,
    ),
    ("marker", _with(1, marker="+"), View(), View(), SCREEN),
    ("user", _with(1, user="nobody"), View(show_user=True), View(show_user=True), SCREEN),
    ("task id", [*BEFORE, BEFORE[2] | {"tid": 4}], View(), View(), SCREEN),
    ("id width", BEFORE, View(), View(pid_width=7), SCREEN),
    ("user column", BEFORE, View(), View(show_user=True), SCREEN),
    ("columns", BEFORE, View(), View(), OTHER_FORMAT),
    ("watch", BEFORE, View(), View(watch="busy"), SCREEN),
]


@pytest.mark.parametrize(
    ("after", "view", "view_after", "screen_after"),
    [case[1:] for case in STALE],
    ids=[case[0] for case in STALE],
)
def test_a_stale_entry_gives_the_line_printed_without_a_memo(
    after: list[dict[str, Any]], view: View, view_after: View, screen_after: Any
) -> None:
    """Each staleness rule of LineMemo, alone: the call after the change prints what a
    call without the memo prints, which differs from the line before."""
    view = View(**{**vars(view), "show_idle": True, "sort_column": -1})
    view_after = View(**{**vars(view_after), "show_idle": True, "sort_column": -1})
    memo = LineMemo()
    before = text_lines(frame(BEFORE), SCREEN, view, memo)
    got = text_lines(frame(after, screen_after), screen_after, view_after, memo)
    want = text_lines(frame(after, screen_after), screen_after, view_after)
    assert got == want
    assert got != before


def test_order_and_filter_make_nothing_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    """Entries are found by task id: another sort or a row hidden formats no row again."""
    formatted: list[list[float]] = []
    real_text = RowFormat.text
    monkeypatch.setattr(
        RowFormat,
        "text",
        spying(real_text, lambda self, v, c, n=(): formatted.append(v)),
    )
    memo = LineMemo()
    text_lines(frame(BEFORE), SCREEN, View(show_idle=True), memo)
    assert len(formatted) == 3
    formatted.clear()
    by_pid = View(show_idle=True, sort_column=-1, descending=False)
    got = text_lines(frame(BEFORE), SCREEN, by_pid, memo)
    assert formatted == []
    assert got == text_lines(frame(BEFORE), SCREEN, by_pid)
    formatted.clear()
    busy_only = View(sort_column=-1)
    assert text_lines(frame(BEFORE), SCREEN, busy_only, memo) == [
        "    2    3.0     1.50  2.00 busy"
    ]
    assert formatted == []


def test_a_bottleneck_cell_whose_node_changed_is_new_text() -> None:
    """Same share, another node (``Frame.node``): the memo formats the row again."""
    td = BOTTLENECK_SCREEN
    view = View(show_idle=True)
    memo = LineMemo()
    rows = [
        {"tid": 1, "cells": [9.0, 41.0, 41.0, 41.0], "node": [-1, -1, -1, OFFSET + 2], "name": "a"}
    ]
    before = text_lines(frame(rows, td), td, view, memo)
    rows[0]["node"] = [-1, -1, -1, OFFSET]
    got = text_lines(frame(rows, td), td, view, memo)
    assert got == text_lines(frame(rows, td), td, view) != before
    assert "BE 41%" in before[0] and "FE 41%" in got[0]
