"""The task table of live mode: a box widget that builds only its visible lines
(:class:`Scroller`), the task rows' markup, and :class:`TaskTable`, the rows of the last
refresh formatted when drawn. Nothing is kept from one render to the next: only the lines
on screen are built (benchmarks/README.md says why no row memo). Imports nothing from
tiptop but the palette, the windows' scrolling rule and ``tiptop.table``'s RowList (the
rows come from ``tiptop.table``)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import urwid

from tiptop import table
from tiptop.live import palette as P
from tiptop.live.text import Markup, Segment, Size, box_size, scrolled
from tiptop.table import RowList

#: urwid text markup: a string, an ``(attr, text)`` pair, or a list of those.
#: A plain line's bytes and attribute runs (:func:`plain_line`).
Plain = tuple[bytes, list[tuple[str | None, int]]]


def row_markup(row: table.Row, line: str, tagged: bool = False) -> list[Markup]:
    """One task row: the whole line yellow (tagged), green (watched) or red (dead), and
    each cell over its threshold or scaled by multiplexing in its own attribute.

    ``line`` is ``table.format_row(row, view)`` already cut to the screen; cells are found
    in it in order, so the layout stays the table's alone. Every row carries its own
    attribute, so a dead row's red cannot leak onto the next (docs/original.md 8, defect 17).
    """
    base = P.TAGGED if tagged else P.DEAD if row.dead else P.WATCHED if row.watched else None
    spans: list[tuple[int, int, str]] = []
    over, scaled = row.over_threshold, row.multiplexed
    if any(over) or any(scaled):
        pos = 0
        for i, cell in enumerate(row.cells):
            j = line.find(cell, pos) if cell else -1
            if j < 0:
                break
            pos = j + len(cell)
            attr = P.OVER if over[i] else P.SCALED if scaled[i] else None
            if attr:
                spans.append((j, pos, attr))
    out: list[Markup] = []
    pos = 0
    for lo, hi, attr in spans:
        if lo > pos:
            out.append((base, line[pos:lo]))
        out.append((attr, line[lo:hi]))
        pos = hi
    if pos < len(line) or not out:
        out.append((base, line[pos:]))
    return out


def _stack(canvases: list[urwid.Canvas], cols: int, rows: int) -> urwid.Canvas:
    have = sum(c.rows() for c in canvases)
    if have < rows:
        canvases.append(urwid.SolidCanvas(" ", cols, rows - have))
    return urwid.CanvasCombine([(c, None, False) for c in canvases])


class Scroller(urwid.Widget):
    """A box widget showing lines ``top .. top+height`` of ``count`` lazily built lines.

    ``line(i, cols)`` gives line ``i``'s markup; only visible lines are ever built. Up/Down,
    PgUp/PgDn and Home/End move the view (the original cannot show more tasks than the
    terminal has lines; we can).
    """

    _sizing = frozenset([urwid.Sizing.BOX])
    ignore_focus = True

    def __init__(self, line: Callable[[int, int], Markup], count: int = 0) -> None:
        super().__init__()
        self.line = line
        self.count = count
        self.top = 0
        self.height = 1

    def set_count(self, count: int) -> None:
        """Change the number of lines, keeping the view where it was when possible."""
        self.count = count
        self._invalidate()

    def clamp(self) -> None:
        """Keep ``top`` inside ``0 .. count - height``."""
        self.top = max(0, min(self.top, self.count - self.height))

    def scroll(self, key: str) -> bool:
        """Move the view for a navigation key; False when the key is not one."""
        top = scrolled(self.top, key, self.count, self.height - 1)
        if top is None:
            return False
        self.top = top
        self.clamp()
        self._invalidate()
        return True

    def render(self, size: Size, focus: bool = False) -> urwid.Canvas:
        cols, rows = box_size(size)
        self.height = rows
        self.clamp()
        canvases: list[urwid.Canvas] = []
        texts: list[bytes] = []
        runs: list[list[tuple[Hashable, int]]] = []
        for i in range(self.top, min(self.top + rows, self.count)):
            markup = self.line(i, cols)
            plain = plain_line(markup, cols)
            if plain is not None:  # consecutive plain lines: one canvas
                texts.append(plain[0])
                runs.append(list(plain[1]))  # a copy: TextCanvas pads it in place
                continue
            if texts:
                canvases.append(urwid.TextCanvas(texts, runs, maxcol=cols))
                texts, runs = [], []
            canvases.append(urwid.Text(markup, wrap="clip").render((cols,)))
        if texts:
            canvases.append(urwid.TextCanvas(texts, runs, maxcol=cols))
        return _stack(canvases, cols, rows)


def plain_line(markup: Markup, cols: int) -> Plain | None:
    """A line of plain ASCII segments (almost every task row) clipped to ``cols``, as its
    bytes and attribute runs: one column per byte, so there is no urwid text layout to
    compute (the bulk of a live refresh's drawing); None for anything else."""
    if isinstance(markup, str):
        if not _plain(markup):
            return None
        segs: list[Segment] = [(None, markup)]
    elif isinstance(markup, list):
        segs = []
        for s in markup:
            if not isinstance(s, tuple) or not _plain(s[1]):
                return None
            segs.append(s)
    else:
        return None
    runs: list[tuple[str | None, int]] = []
    used = 0
    for attr, text in segs:
        n = min(len(text), cols - used)
        if n > 0:
            runs.append((attr, n))
            used += n
    return "".join(t for _, t in segs)[:cols].encode("ascii"), runs


def _plain(text: str) -> bool:
    """One screen column per character: printable ASCII (no tab, no control character)."""
    return text.isascii() and text.isprintable()


class TaskTable(Scroller):
    """The task rows: ``table.Row`` objects formatted by ``format_row`` only when shown,
    cut to COLS-1 like the original's rows, with a selection cursor as in htop: Up/Down,
    PgUp/PgDn and Home/End move a highlighted row, the view scrolls to keep it in sight,
    and the highlight follows its task (its tid) across refreshes and sorts; when that
    task has no row any more, the row now at its place is selected."""

    def __init__(self, format_row: Callable[[table.Row], str]) -> None:
        super().__init__(self._row_line)
        self.format_row = format_row
        self.rows: Sequence[table.Row] = ()
        #: ``squeeze(cols)``: the span of columns to leave out at that width, so that
        #: COMMAND stays in sight (:func:`user_squeeze`); the header leaves out the same.
        self.squeeze: Callable[[int], tuple[int, int] | None] = lambda _cols: None
        #: The highlighted row's index, and the task it shows (None before any row).
        self.selected = 0
        self.selected_tid: int | None = None
        #: The tasks tagged with Space (the session's set), drawn so.
        self.tagged: set[int] = set()

    def set_rows(self, rows: Sequence[table.Row], format_row: Callable[[table.Row], str]) -> None:
        """Show new rows (formatted lazily with ``format_row``); the highlight stays on
        its task where it still has a row."""
        self.rows = rows
        self.format_row = format_row
        self.set_count(len(rows))
        found = None if self.selected_tid is None else row_position(rows, self.selected_tid)
        self._select(self.selected if found is None else found)

    def selected_row(self) -> table.Row | None:
        """The highlighted row, or None when there is no row."""
        return self.rows[self.selected] if self.rows else None

    def select(self, index: int) -> None:
        """Highlight row ``index`` (clamped) and follow its task from now on."""
        self._select(index)

    def position(self, tid: int) -> int | None:
        """The display position of task ``tid``'s row, or None."""
        return row_position(self.rows, tid)

    def select_task(self, tid: int) -> bool:
        """Highlight the row of task ``tid``; False when it has none."""
        found = row_position(self.rows, tid)
        if found is not None:
            self._select(found)
        return found is not None

    def _select(self, index: int) -> None:
        """Highlight row ``index`` (clamped) and follow its task from now on."""
        self.selected = max(0, min(index, len(self.rows) - 1))
        if self.rows:
            self.selected_tid = int(self.rows[self.selected].tid)
        self._invalidate()

    def scroll(self, key: str) -> bool:
        """Move the highlight for a navigation key (the view follows at render); False
        when the key is not one."""
        moved = scrolled(self.selected, key, self.count, self.height - 1)
        if moved is None:
            return False
        self._select(moved)
        return True

    def clamp(self) -> None:
        """Keep ``top`` inside ``0 .. count - height`` with the highlighted row in view."""
        if self.selected < self.top:
            self.top = self.selected
        elif self.selected >= self.top + self.height:
            self.top = self.selected - self.height + 1
        super().clamp()

    def visible(self) -> Sequence[table.Row]:
        """The rows currently on screen (after the last render)."""
        return self.rows[self.top : self.top + self.height]

    def _row_line(self, i: int, cols: int) -> Markup:
        row = self.rows[i]
        line = squeezed(self.format_row(row), self.squeeze(cols))[: max(cols - 1, 0)]
        if i == self.selected:  # the whole row in the cursor's attribute, as htop draws it
            return [(P.SELECTED, line.ljust(max(cols - 1, 0)))]
        return row_markup(row, line, row.tid in self.tagged)


def row_position(rows: Sequence[table.Row], tid: int) -> int | None:
    """The index of the row of task ``tid`` in ``rows``, or None: from the frame's tid
    array when ``rows`` is a ``tiptop.table.RowList`` (no row is built), else by looking."""
    if isinstance(rows, RowList):
        return rows.position_of(tid)
    return next((k for k, r in enumerate(rows) if r.tid == tid), None)


#: Characters of the ``-U`` user column always kept when it is narrowed.
USER_KEPT = 3
#: The ``-U`` column's width (``"%-10s "``, docs/original.md 6.2) and where it starts
#: after the PID and its marker.
USER_WIDTH = 10


def user_squeeze(
    header_len: int, cols: int, pid_width: int, show_user: bool
) -> tuple[int, int] | None:
    """The span of the ``-U`` user column to leave out so that a header of
    ``header_len`` characters (it ends with a separator) fits ``cols`` with COMMAND
    whole: at most all but :data:`USER_KEPT` of its characters; None when it fits or
    there is no user column. The original cut COMMAND off instead (issue 39)."""
    over = header_len - cols
    if not show_user or over <= 0:
        return None
    start = pid_width + 2 + USER_KEPT
    return start, start + min(over, USER_WIDTH - USER_KEPT)


def squeezed(line: str, span: tuple[int, int] | None) -> str:
    """``line`` without the columns of ``span`` (:func:`user_squeeze`)."""
    return line if span is None else line[: span[0]] + line[span[1] :]
