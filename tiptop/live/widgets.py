"""The urwid widgets of live mode: fixed-position lines, the task table, help and error logs.

Pure projection: every widget is handed finished text (table rows, messages) and decides
only where it goes and with which attribute. Positions follow the original's ncurses
layout (docs/original.md section 5.1). The task table and the error log are box widgets
that format only the lines that are visible, so thousands of rows cost nothing to draw.
The help and error windows are in :mod:`.windows`. Imports nothing from tiptop but the
palette and the windows (the rows come from ``tiptop.table``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import urwid

from tiptop.live import palette as P
from tiptop.live.windows import ErrorLog, error_window, help_window, scrolled

#: urwid text markup: a string, an ``(attr, text)`` pair, or a list of those.
Markup = Any
#: A plain line's bytes and attribute runs (:func:`plain_line`).
Plain = tuple[bytes, list[tuple[Any, int]]]

#: Below this size the screen says it is too small instead of drawing (4 fixed lines, the
#: footer and at least two task rows; 20 columns hold ``tiptop -`` and a short message).
MIN_COLS = 20
MIN_ROWS = 7

#: The most lines a wrapped message or notice takes (the rest is in the ``e`` window).
WRAPPED_ROWS = 3

#: Title-line indicators and their offsets from the right edge (the original's
#: ``mvprintw(0, COLS - n, ...)`` positions; docs/original.md section 5.1).
INDICATOR_OFFSETS = {
    "[conf]": 60,
    "[root]": 54,
    "[uid]": 48,
    "[pid]": 43,
    "[kernel]": 38,
    "[sticky]": 30,
    "[threads]": 22,
    "[idle]": 13,
}


def place(width: int, pieces: Sequence[tuple[int, str, str | None]]) -> list[Markup]:
    """Markup for one line of ``width`` columns with each ``(column, text, attr)`` piece at
    its column. A piece that would start inside an earlier one moves right after it; text
    past the right edge is cut (the original drops or clips what does not fit)."""
    out: list[Markup] = []
    pos = 0
    for col, text, attr in sorted(pieces, key=lambda p: p[0]):
        col = max(col, pos)
        if col >= width or not text:
            continue
        if col > pos:
            out.append(" " * (col - pos))
        text = text[: width - col]
        out.append((attr, text) if attr else text)
        pos = col + len(text)
    return out or [""]


def title_markup(cols: int, indicators: Sequence[str], label: str = "") -> list[Markup]:
    """Line 0: ``tiptop -``, ``label`` (a replay's recorded time) and the mode indicators,
    each drawn only where it fits."""
    title = f"tiptop - {label}" if label else "tiptop -"
    pieces: list[tuple[int, str, str | None]] = [(0, title, P.TITLE)]
    for ind in indicators:
        col = cols - INDICATOR_OFFSETS.get(ind, 7)
        if col >= len(title) + 1 and col + len(ind) <= cols:
            pieces.append((col, ind, None))
    return place(cols, pieces)


def tasks_text(total: int, displayed: int, dead: int | None) -> str:
    """``Tasks: %3d total, %3d displayed`` and, in sticky mode, ``, %3d dead``."""
    text = f"Tasks: {total:3d} total, {displayed:3d} displayed"
    if dead is not None:
        text += f", {dead:3d} dead"
    return text


def tasks_markup(cols: int, left: str, screen_index: int, screen_name: str) -> list[Markup]:
    """Line 1: the task counts, and ``screen %2d: name`` ending at the right edge."""
    right = f"screen {screen_index:2d}: {screen_name}"
    start = max(cols - len(right), len(left) + 1)
    return place(cols, [(0, left, None), (start, right, None)])


def footer_markup(
    cols: int,
    iteration: int | None,
    errors: bool,
    epoch: int | None,
    scaled: bool,
) -> list[Markup]:
    """The last line: ``Iteration: %u`` at 0 (--timestamp), ``[errors]`` at 30, our
    ``[scaled]`` legend at 39 when a visible cell was multiplexed, ``Epoch: %ju`` at
    COLS-18 (--epoch)."""
    pieces: list[tuple[int, str, str | None]] = []
    if iteration is not None:
        pieces.append((0, f"Iteration: {iteration}", None))
    if errors:
        pieces.append((30, "[errors]", P.ERRORS))
    if scaled:
        pieces.append((39, "[scaled]", P.SCALED))
    if epoch is not None:
        pieces.append((max(cols - 18, 0), f"Epoch: {epoch}", None))
    return place(cols, pieces)


def header_markup(cols: int, header: str) -> list[Markup]:
    """The column header in reverse video, padded to COLS-1, the sort column ``[ ]`` bold."""
    text = header[: cols - 1].ljust(cols - 1)
    lo, hi = text.find("["), text.find("]")
    if 0 <= lo < hi:
        return [
            (P.HEADER, text[:lo]),
            (P.HEADER_SORT, text[lo : hi + 1]),
            (P.HEADER, text[hi + 1 :]),
        ]
    return [(P.HEADER, text)]


def row_markup(row: Any, line: str) -> list[Markup]:
    """One task row: the whole line green (watched) or red (dead), and each cell over its
    threshold or scaled by multiplexing in its own attribute.

    ``line`` is ``table.format_row(row, view)`` already cut to the screen; cells are found
    in it in order, so the layout stays the table's alone. Every row carries its own
    attribute, so a dead row's red cannot leak onto the next (docs/original.md 8, defect 17).
    """
    base = P.DEAD if row.dead else P.WATCHED if row.watched else None
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


class Line(urwid.Widget):
    """A flow widget whose markup is recomputed from the width at each render: one line
    cut at the edge, or, with ``max_rows`` over 1, wrapped at spaces onto up to that many
    lines (a long message is read whole, not cut at the terminal's width)."""

    _sizing = frozenset([urwid.Sizing.FLOW])
    ignore_focus = True

    def __init__(self, compose: Callable[[int], Markup], max_rows: int = 1) -> None:
        super().__init__()
        self.compose = compose
        self.max_rows = max_rows
        #: (markup, cols, max_rows) of the last render and its canvas: most refreshes
        #: compose the same line again (urwid lays out a Text anew: ~0.15 ms a line).
        self._last: tuple[Markup, int, int, urwid.Canvas] | None = None

    def _text(self, cols: int) -> urwid.Text:
        wrap = "clip" if self.max_rows <= 1 else "space"
        return urwid.Text(self.compose(cols) or "", wrap=wrap)

    def rows(self, size: tuple[int], focus: bool = False) -> int:
        if self.max_rows <= 1:
            return 1
        (cols,) = size
        return max(1, min(self._text(cols).rows((cols,)), self.max_rows))

    def render(self, size: tuple[int], focus: bool = False) -> urwid.Canvas:
        (cols,) = size
        markup = self.compose(cols) or ""
        last = self._last
        if last is not None and last[:3] == (markup, cols, self.max_rows):
            return last[3]  # urwid wraps a canvas it finalized before (cached_render)
        text = urwid.Text(markup, wrap="clip" if self.max_rows <= 1 else "space")
        canvas = urwid.CompositeCanvas(text.render((cols,)))
        extra = canvas.rows() - max(1, min(text.rows((cols,)), self.max_rows))
        if extra > 0:
            canvas.trim_end(extra)
        self._last = (markup, cols, self.max_rows, canvas)
        return canvas


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

    def line_at(self, i: int, cols: int) -> tuple[Markup, Plain | None]:
        """Line ``i``'s markup and, when it is plain, its :func:`plain_line`."""
        markup = self.line(i, cols)
        return markup, plain_line(markup, cols)

    def render(self, size: tuple[int, int], focus: bool = False) -> urwid.Canvas:
        cols, rows = size
        self.height = rows
        self.clamp()
        canvases: list[urwid.Canvas] = []
        texts: list[bytes] = []
        runs: list[list[tuple[Any, int]]] = []
        for i in range(self.top, min(self.top + rows, self.count)):
            markup, plain = self.line_at(i, cols)
            if plain is not None:  # consecutive plain lines: one canvas
                texts.append(plain[0])
                runs.append(plain[1])
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
    segs = [(None, markup)] if isinstance(markup, str) else markup
    if not isinstance(segs, list) or not all(
        isinstance(s, tuple) and len(s) == 2 and isinstance(s[1], str) and _plain(s[1])
        for s in segs
    ):
        return None
    runs: list[tuple[Any, int]] = []
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
    cut to COLS-1 like the original's rows."""

    def __init__(self, format_row: Callable[[Any], str]) -> None:
        super().__init__(self._row_line)
        self.format_row = format_row
        self.rows: Sequence[Any] = ()
        #: What the lines depend on beyond each row (``set_rows``).
        self.style: Any = None
        #: A row's ``shows()`` and width -> its line, for the rows of the last render:
        #: a row showing what it showed is not formatted again (most rows, most refreshes).
        self._lines: dict[tuple[Any, int], tuple[Markup, Plain | None]] = {}
        self._drawn: dict[tuple[Any, int], tuple[Markup, Plain | None]] = {}

    def set_rows(
        self, rows: Sequence[Any], format_row: Callable[[Any], str], style: Any = None
    ) -> None:
        """Show new rows (formatted lazily with ``format_row``); ``style``: what, beyond
        a row's ``shows()``, its line depends on (the view's id width, user column)."""
        if (format_row, style) != (self.format_row, self.style):
            self._lines = {}
        self.style = style
        self.rows = rows
        self.format_row = format_row
        self.set_count(len(rows))

    def visible(self) -> Sequence[Any]:
        """The rows currently on screen (after the last render)."""
        return self.rows[self.top : self.top + self.height]

    def _row_line(self, i: int, cols: int) -> Markup:
        row = self.rows[i]
        return row_markup(row, self.format_row(row)[: max(cols - 1, 0)])

    def line_at(self, i: int, cols: int) -> tuple[Markup, Plain | None]:
        key = (self.rows[i].shows(), cols)
        got = self._lines.get(key)
        if got is None:
            got = super().line_at(i, cols)
        self._drawn[key] = got
        return got

    def render(self, size: tuple[int, int], focus: bool = False) -> urwid.Canvas:
        self._drawn = {}
        canvas = super().render(size, focus)
        self._lines = self._drawn  # only what is on screen is kept
        return canvas


def too_small(cols: int, rows: int) -> urwid.Canvas:
    """What a terminal below ``MIN_COLS`` x ``MIN_ROWS`` shows instead of the screen."""
    text = f"Terminal too small:\n{cols}x{rows} < {MIN_COLS}x{MIN_ROWS}\nq quits"
    canvas = urwid.CompositeCanvas(urwid.Text(text, wrap="any").render((cols,)))
    extra = canvas.rows() - rows
    if extra > 0:
        canvas.trim_end(extra)
    elif extra < 0:
        canvas.pad_trim_top_bottom(0, -extra)
    return canvas


class LiveScreen(urwid.Widget):
    """The whole live screen, laid out afresh for the size of every render (so a resize
    simply re-lays it): title, tasks line, message line, header, rows, an optional notice,
    the footer, and the help or error window on top.

    ``lines`` maps ``title``, ``tasks``, ``message``, ``header``, ``notice`` and ``footer``
    to a function of the width giving that line's markup (``notice`` may give ``None``:
    no notice line).
    """

    _sizing = frozenset([urwid.Sizing.BOX])
    ignore_focus = True

    def __init__(self, lines: dict[str, Callable[[int], Markup]], table: TaskTable) -> None:
        super().__init__()
        self.lines = {k: Line(f) for k, f in lines.items()}
        #: Long messages and notices wrap (up to :data:`WRAPPED_ROWS` lines each).
        for k in ("message", "notice"):
            self.lines[k].max_rows = WRAPPED_ROWS
        self.table = table
        self.errors = ErrorLog()
        #: ``None``, ``"help"`` or ``"errors"``.
        self.window: str | None = None
        self.help: Sequence[Markup] = ()
        #: The lines and the table stacked, with and without the notice line (made once:
        #: a Pile costs ~0.3 ms to make, more than the rest of a quiet refresh's layout).
        self._piles: dict[bool, urwid.Pile] = {}

    def changed(self) -> None:
        """Ask urwid to draw again."""
        # Each line's text is computed at render time, so urwid's canvas cache must not
        # keep an old one.
        for w in (*self.lines.values(), self.table, self.errors, self):
            w._invalidate()

    def _pile(self, notice: bool) -> urwid.Pile:
        pile = self._piles.get(notice)
        if pile is None:
            parts: list[Any] = [("pack", self.lines[k]) for k in ("title", "tasks", "message")]
            parts += [("pack", self.lines["header"]), self.table]
            if notice:
                parts.append(("pack", self.lines["notice"]))
            parts.append(("pack", self.lines["footer"]))
            pile = self._piles[notice] = urwid.Pile(parts)
        return pile

    def render(self, size: tuple[int, int], focus: bool = False) -> urwid.Canvas:
        cols, rows = size
        if cols < MIN_COLS or rows < MIN_ROWS:
            return too_small(cols, rows)
        # Wrapped lines may not take the table's last rows on a short terminal.
        for k in ("message", "notice"):
            line = self.lines[k]
            most = max(1, min(WRAPPED_ROWS, rows - MIN_ROWS))
            if line.max_rows != most:  # urwid's canvas cache must not give the old one
                line.max_rows = most
                line._invalidate()
        body: urwid.Widget = self._pile(self.lines["notice"].compose(cols) is not None)
        if self.window == "help":
            h = min(len(self.help) + 2, rows)
            w = min(70, cols - 5)
            y = max(rows - h - 2, 0)
            # A help longer than the terminal is cut at the bottom (a Pile cannot overflow).
            body = urwid.Overlay(
                help_window(self.help[: h - 2]), body, ("fixed left", 5), w, ("fixed top", y), h
            )
        elif self.window == "errors":
            # docs/original.md 5.5: LINES - displayed_rows - 5 high, at least 10, at most LINES.
            h = min(max(rows - len(self.table.rows) - 5, 10), rows)
            body = urwid.Overlay(
                error_window(self.errors), body, "left", cols, ("fixed top", rows - h), h
            )
        return body.render(size)
