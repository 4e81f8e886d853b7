"""The urwid widgets of live mode: fixed-position lines, the task table, and the open
windows drawn over them.

Pure projection: every widget is handed finished text (table rows, messages) and decides
only where it goes and with which attribute. Positions follow the original's ncurses
layout (docs/original.md section 5.1). The task table is a box widget that formats only
the lines that are visible, so thousands of rows cost nothing to draw (:mod:`.rows`);
each window draws itself (``tiptop.live.window.Window.draw``). Imports nothing from
tiptop but the palette, the rows and the window interface (the rows' text comes from
``tiptop.table``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from typing import TYPE_CHECKING, Literal

import urwid

from tiptop.frame import Context
from tiptop.live import palette as P
from tiptop.live.rows import TaskTable
from tiptop.live.text import Markup, Size, box_size, fit_rows, flow_cols

if TYPE_CHECKING:
    from tiptop.live.window import Window

#: Below this size the screen says it is too small instead of drawing (4 fixed lines, the
#: footer and at least two task rows; 20 columns hold ``tiptop -`` and a short message).
MIN_COLS = 20
MIN_ROWS = 7

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
    "[rec]": 6,  # ours: --record is writing (after [idle], which ends at COLS-7)
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


def context_brief(c: Context | None) -> str:
    """What the whole machine did over the refresh, short, for the title line (the frame's
    :class:`~tiptop.frame.Context`, read where the screen reads where the time goes):
    steal and the pressure of each resource, PSI some/full in % of the interval, e.g.
    ``steal 0%  PSI cpu 52/0 io 3/0 mem 0/0``; empty without one."""
    if c is None:
        return ""
    out = [] if c.steal is None else [f"steal {100 * c.steal:.0f}%"]
    pairs = [
        f"{_SHORT.get(p.resource, p.resource)} {_pct(p.some)}/{_pct(p.full)}" for p in c.pressure
    ]
    if pairs:
        out.append("PSI " + " ".join(pairs))
    return "  ".join(out)


#: Shorter names of the resources for the title line.
_SHORT = {"memory": "mem"}


def _pct(x: float | None) -> str:
    return "?" if x is None else f"{100 * x:.0f}"


class RowKind(Enum):
    """What one row of the table is: its name, one and many."""

    PROCESS = ("process", "processes")
    THREAD = ("thread", "threads")
    CGROUP = ("cgroup", "cgroups")

    def named(self, n: int) -> str:
        """The kind's name for ``n`` rows of it."""
        one, many = self.value
        return one if n == 1 else many


def tasks_text(
    total: int, displayed: int, dead: int | None, kind: RowKind = RowKind.PROCESS
) -> str:
    """``Tasks: %3d processes, %3d displayed`` and, in sticky mode, ``, %3d dead``: the
    rows' ``kind`` (processes, threads, cgroups), all counted and shown. The original's
    ``Tasks: %3d total`` counted threads beside displayed processes (issue 50: ``114
    total, 2015 displayed`` once); both count one kind here, named."""
    text = f"Tasks: {total:3d} {kind.named(total)}, {displayed:3d} displayed"
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


#: The sort direction's marks (htop marks its sort column so): largest first, smallest first.
DESCENDING, ASCENDING = "\u25bc", "\u25b2"


def header_markup(cols: int, header: str, descending: bool = True) -> list[Markup]:
    """The column header in reverse video, padded to COLS-1, the sort column ``[ ]`` bold
    and its direction marked (:data:`DESCENDING`, :data:`ASCENDING`) on a blank next to
    it: after it where two blanks follow, else before it where two come first (the mark
    then glued to no other header), else on the one blank after or before."""
    text = header[: cols - 1].ljust(cols - 1)
    lo, hi = text.find("["), text.find("]")
    if not 0 <= lo < hi:
        return [(P.HEADER, text)]
    mark = DESCENDING if descending else ASCENDING
    after, before = text[hi + 1 : hi + 3], text[max(lo - 2, 0) : lo]
    if after == "  " or (before != "  " and after[:1] == " "):
        text, hi = f"{text[: hi + 1]}{mark}{text[hi + 2 :]}", hi + 1
    elif before[-1:] == " ":
        text, lo = f"{text[: lo - 1]}{mark}{text[lo:]}", lo - 1
    return [(P.HEADER, text[:lo]), (P.HEADER_SORT, text[lo : hi + 1]), (P.HEADER, text[hi + 1 :])]


class Line(urwid.Widget):
    """A flow widget whose markup is recomputed from the width at each render: one line
    cut at the edge, or, with ``max_rows`` over 1, wrapped at spaces onto up to that many
    lines (a long message is read whole, not cut at the terminal's width)."""

    _sizing = frozenset([urwid.Sizing.FLOW])
    ignore_focus = True

    def __init__(self, compose: Callable[[int], Markup | None], max_rows: int = 1) -> None:
        super().__init__()
        self.compose = compose
        self.max_rows = max_rows
        #: (markup, cols, max_rows) of the last render and its canvas: most refreshes
        #: compose the same line again, and urwid lays out a Text anew at each render.
        self._last: tuple[Markup, int, int, urwid.Canvas] | None = None

    def _canvas(self, cols: int) -> urwid.Canvas:
        """The line at width ``cols``: laid out again only when its markup, the width or
        ``max_rows`` changed; one row, or wrapped onto at most ``max_rows``."""
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

    def rows(self, size: tuple[int], focus: bool = False) -> int:
        return 1 if self.max_rows <= 1 else self._canvas(size[0]).rows()

    def render(self, size: Size, focus: bool = False) -> urwid.Canvas:
        return self._canvas(flow_cols(size))


def first_words(text: str, cols: int, more: str) -> str:
    """``text`` on one line of ``cols``: whole when it fits, else its first words and
    ``more`` (the key that shows the whole text), cut at a space where one is in the
    second half, never inside a word that would read as another."""
    if len(text) < cols:
        return text
    room = max(cols - 1 - len(more), 1)
    cut = text[:room]
    space = cut.rfind(" ")
    if space > room // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + more


def too_small(cols: int, rows: int) -> urwid.Canvas:
    """What a terminal below ``MIN_COLS`` x ``MIN_ROWS`` shows instead of the screen."""
    text = f"Terminal too small:\n{cols}x{rows} < {MIN_COLS}x{MIN_ROWS}\nq quits"
    return fit_rows(urwid.Text(text, wrap="any").render((cols,)), rows)


class LiveScreen(urwid.Widget):
    """The whole live screen, laid out afresh for the size of every render (so a resize
    simply re-lays it): title, tasks line, message line, header, rows, an optional notice,
    the footer, and the open windows on top.

    ``lines`` maps ``title``, ``tasks``, ``message``, ``header``, ``notice`` and ``footer``
    to a function of the width giving that line's markup (``notice`` may give ``None``:
    no notice line).
    """

    _sizing = frozenset([urwid.Sizing.BOX])
    ignore_focus = True

    def __init__(self, lines: dict[str, Callable[[int], Markup | None]], table: TaskTable) -> None:
        super().__init__()
        self.lines = {k: Line(f) for k, f in lines.items()}
        self.table = table
        #: The open windows, bottom first (the controller's list): each drawn over what
        #: is below it.
        self.windows: Sequence[Window] = ()
        #: The lines and the table stacked, with and without the notice line (made once:
        #: making a Pile costs more than the rest of a quiet refresh's layout).
        self._piles: dict[bool, urwid.Pile] = {}

    def changed(self) -> None:
        """Ask urwid to draw again."""
        # Each line's text is computed at render time, so urwid's canvas cache must not
        # keep an old one.
        for w in (*self.lines.values(), self.table, self):
            w._invalidate()

    def _pile(self, notice: bool) -> urwid.Pile:
        pile = self._piles.get(notice)
        if pile is None:
            parts: list[urwid.Widget | tuple[Literal["pack"], urwid.Widget]] = [
                ("pack", self.lines[k]) for k in ("title", "tasks", "message")
            ]
            parts += [("pack", self.lines["header"]), self.table]
            if notice:
                parts.append(("pack", self.lines["notice"]))
            parts.append(("pack", self.lines["footer"]))
            pile = self._piles[notice] = urwid.Pile(parts)
        return pile

    def render(self, size: Size, focus: bool = False) -> urwid.Canvas:
        cols, rows = box_size(size)
        if cols < MIN_COLS or rows < MIN_ROWS:
            return too_small(cols, rows)
        body: urwid.Widget = self._pile(self.lines["notice"].compose(cols) is not None)
        for window in self.windows:
            body = window.draw(body, cols, rows)
        return body.render(size)
