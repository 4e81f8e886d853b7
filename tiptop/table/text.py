"""Batch mode's lines: every visible row as text, made without a :class:`Row` per row, and
a row that shows what it showed at the last refresh (a sleeping task: most rows of ``-i``)
not formatted again but taken from a :class:`LineMemo`."""

from __future__ import annotations

from collections.abc import Hashable
from operator import itemgetter

import numpy as np

from tiptop.cells import valued
from tiptop.frame import Frame
from tiptop.screens.model import ScreenSpec
from tiptop.screens.printf import row_format
from tiptop.table.rows import cell_code_array, row_line
from tiptop.table.select import View, is_watched, shown_rows


class LineMemo:
    """The lines of the last :func:`text_lines` call, by task id, and what each row showed
    there: the one "row shows what it showed" memo of tiptop, owned by one consumer (batch
    mode's ``TextWriter``).

    An entry is stale, and its row formatted again, when

    * the layout differs from the last call's (every entry): the screen's columns (their
      formats, and the header widths cells are padded to), the view's id width or its user
      column (``-U``); see :func:`line_layout`;
    * the row's facts differ (that entry): its cell values (by their bits: -0.0 prints apart
      from 0.0, and a NaN is itself), cell codes (statuses), cell nodes (a bottleneck
      cell's, ``Frame.node``), death (`` DEAD``), command (the
      name, or the command line with ``-c``), marker or user;
    * its task was not among the last call's rows (new, or shown again after being hidden):
      only the last call's rows are kept.

    Entries are found by task id, so the order (the view's sort) and the filter (idle
    rows, ``--cpu-min``) make nothing stale. The watch suffix `` <---`` is not kept: it is
    added to the lines after the memo."""

    def __init__(self) -> None:
        self.layout: Hashable = None
        self.tid = np.empty(0, np.int64)
        self.facts: tuple[np.ndarray, ...] = ()
        self.lines: list[str] = []
        self._sorter = np.empty(0, np.intp)  # argsort of tid

    def recall(
        self, layout: Hashable, tid: np.ndarray, facts: tuple[np.ndarray, ...]
    ) -> tuple[list[str | None], list[int]]:
        """Per row: its last line if the row shows exactly what it showed then, else None;
        and the rows given None. A new ``layout`` forgets every line. Compared as arrays
        (numpy), not row by row; the rows of the last call in the same order (a refresh
        with no change of order: the common case) are compared in place."""
        n = len(tid)
        if layout != self.layout:  # every entry is stale
            self.layout, self.tid, self.facts, self.lines = layout, np.empty(0, np.int64), (), []
        if not n or not len(self.tid):
            return [None] * n, list(range(n))
        pos = None
        if not np.array_equal(tid, self.tid):
            at = np.searchsorted(self.tid, tid, sorter=self._sorter).clip(max=len(self.tid) - 1)
            pos = self._sorter[at]
        same = np.ones(n, bool) if pos is None else self.tid[pos] == tid
        for mine, now in zip(self.facts, facts, strict=True):
            eq = (mine if pos is None else mine[pos]) == now
            same &= eq.all(axis=1) if eq.ndim == 2 else eq
        lines: list[str | None] = list(self.lines if pos is None else _pick(self.lines, pos))
        todo = np.flatnonzero(~same).tolist()
        for k in todo:
            lines[k] = None
        return lines, todo

    def keep(self, tid: np.ndarray, facts: tuple[np.ndarray, ...], lines: list[str]) -> None:
        """Remember this call's rows (and only them), in the layout last recalled."""
        if not np.array_equal(tid, self.tid):
            self._sorter = np.argsort(tid, kind="stable")
        self.tid, self.facts, self.lines = tid, facts, lines


def line_layout(screen: ScreenSpec, view: View) -> Hashable:
    """What a row's line depends on beyond the row's facts: the screen's columns, the
    view's id width and user column (:func:`~tiptop.table.rows.row_line`)."""
    return (screen.columns, view.pid_width, view.show_user)


def _pick(items: list[str], pos: np.ndarray) -> list[str]:
    """``[items[p] for p in pos]``, made by ``operator.itemgetter`` (one C call)."""
    if len(pos) < 2:
        return [items[p] for p in pos.tolist()]
    return list(itemgetter(*pos.tolist())(items))


def text_lines(
    frame: Frame, screen: ScreenSpec, view: View, memo: LineMemo | None = None
) -> list[str]:
    """The visible rows as :func:`~tiptop.table.rows.format_row` prints them, followed by
    `` DEAD`` and `` <---`` where they apply: batch mode's lines (every visible row is
    printed, so nothing is saved by formatting lazily). With ``memo``, a row showing what it
    showed at the last call keeps its line. Values compare by their bits (so -0.0 is not
    0.0, and a NaN is itself); cells not shown as values compare as 0.0."""
    frame, idx = shown_rows(frame, len(screen.columns), view)
    fmt = row_format(tuple(screen.columns))
    values = frame.values[idx]
    codes = cell_code_array(values, frame.status[idx])
    values = np.where(valued(codes), values, 0.0)
    tid = frame.tid[idx]
    nodes = frame.node[idx]
    facts = (values.view(np.uint64), codes, nodes, frame.dead[idx], *_texts(frame, idx, view))
    memo = memo if memo is not None else LineMemo()
    lines, todo = memo.recall(line_layout(screen, view), tid, facts)
    if todo:
        rows_values = values[todo].tolist()
        rows_codes = codes[todo].tobytes()
        rows_nodes = nodes[todo].tolist() if fmt.paths else [()] * len(todo)
        ncols, (dead, commands, markers, users) = codes.shape[1], facts[3:]
        for j, k in enumerate(todo):
            row_codes = rows_codes[j * ncols : (j + 1) * ncols]
            cells = fmt.text(rows_values[j], row_codes, rows_nodes[j])
            line = row_line(int(tid[k]), markers[k] or " ", users[k], cells, commands[k], view)
            lines[k] = line + " DEAD" if dead[k] else line
    memo.keep(tid, facts, lines)  # type: ignore[arg-type]  # every None was filled
    if view.watch is not None:
        lines = [
            line + " <---" if is_watched(frame, i, view) else line
            for i, line in zip(idx.tolist(), lines, strict=True)
        ]
    return lines  # type: ignore[return-value]


def _texts(frame: Frame, idx: np.ndarray, view: View) -> tuple[np.ndarray, ...]:
    """The rows' command (name, or command line with ``-c`` when it has one), marker and
    user, as object arrays."""
    name = np.array(frame.name, object)
    if view.show_cmdline:
        cmdline = np.array(frame.cmdline, object)
        name = np.where(cmdline != "", cmdline, name)
    return name[idx], np.array(frame.marker, object)[idx], np.array(frame.user, object)[idx]
