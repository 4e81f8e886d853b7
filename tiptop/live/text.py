"""Text in the live screen's boxes: urwid markup as tiptop writes it, the sizes urwid hands
a widget, the scrolling rule of every list and text, and :class:`Scrolled`, a box of lines
wrapped at spaces to its width that scrolls when taller than it (a reason is read whole at
any terminal width, never cut at its edge). Imports nothing from tiptop."""

from __future__ import annotations

from collections.abc import Sequence

import urwid

#: One run of text in a palette attribute (``tiptop.live.palette``; None: the default).
Segment = tuple[str | None, str]
#: urwid text markup as tiptop writes it: a string, a :data:`Segment`, or a list of markups.
Markup = str | Segment | list["Markup"]
#: What urwid hands a widget's ``render``: () fixed, ``(cols,)`` flow, ``(cols, rows)`` box.
Size = tuple[()] | tuple[int] | tuple[int, int]


def box_size(size: Size) -> tuple[int, int]:
    """``(cols, rows)`` of a box widget's ``size`` (urwid gives a box widget both)."""
    if len(size) != 2:
        raise ValueError(f"a box widget rendered with size {size}")
    return size


def flow_cols(size: Size) -> int:
    """The columns of a flow widget's ``size``."""
    if not size:
        raise ValueError("a flow widget rendered with no size")
    return size[0]


def scrolled(top: int, key: str, count: int, page: int) -> int | None:
    """The first line shown after navigation ``key`` (up/down by one, page up/down by
    ``page``, home/end), before clamping; None when ``key`` does not navigate."""
    page = max(page, 1)
    moves = {"up": -1, "down": 1, "page up": -page, "page down": page}
    if key in moves:
        return top + moves[key]
    return {"home": 0, "end": count}.get(key)


def fit_rows(canvas: urwid.Canvas, rows: int) -> urwid.Canvas:
    """``canvas`` made exactly ``rows`` high: cut at the bottom, or padded below."""
    canvas = urwid.CompositeCanvas(canvas)
    extra = canvas.rows() - rows
    if extra > 0:
        canvas.trim_end(extra)
    elif extra < 0:
        canvas.pad_trim_top_bottom(0, -extra)
    return canvas


class Scrolled(urwid.Widget):
    """A box of lines, each wrapped at spaces to its width; taller than the box, it
    scrolls (:meth:`scroll`) and its last line says how far, and with which keys
    (``hint``)."""

    _sizing = frozenset([urwid.Sizing.BOX])
    ignore_focus = True

    def __init__(self, lines: Sequence[Markup] = (), hint: str = "Up/Down scroll") -> None:
        super().__init__()
        self.lines: Sequence[Markup] = ()
        self.hint = hint
        self.pile = urwid.Pile([])
        self.top = 0
        self.height = 1
        self.set_lines(lines)

    def set_lines(self, lines: Sequence[Markup]) -> None:
        """Show ``lines`` (a new text goes back to its top)."""
        if list(lines) == list(self.lines):
            return
        self.lines = list(lines)
        self.pile = urwid.Pile([urwid.Text(m, wrap="space") for m in self.lines])
        self.top = 0
        self._invalidate()

    def rows_at(self, cols: int) -> int:
        """The rows the lines take wrapped at ``cols``."""
        return self.pile.rows((max(cols, 1),)) if self.lines else 0

    def scroll(self, key: str) -> bool:
        """Move the text for a navigation key; False when the key is not one."""
        top = scrolled(self.top, key, 1 << 30, self.height - 2)
        if top is None:
            return False
        self.top = max(top, 0)  # the end is clamped at render, where the width is known
        self._invalidate()
        return True

    def render(self, size: Size, focus: bool = False) -> urwid.Canvas:
        cols, rows = box_size(size)
        self.height = rows
        canvas = urwid.CompositeCanvas(self.pile.render((cols,)))
        total = canvas.rows()
        if total <= rows:
            self.top = 0
            return fit_rows(canvas, rows)
        self.top = min(self.top, total - (rows - 1))
        canvas.trim(self.top, rows - 1)
        shown = min(self.top + rows - 1, total)
        more = "END" if shown >= total else f"{round(100 * shown / total)} % ({self.hint})"
        tail = urwid.Text(f" {more} ", align="right", wrap="clip").render((cols,))
        return urwid.CanvasCombine([(canvas, None, False), (tail, None, False)])


__all__ = [
    "Markup",
    "Scrolled",
    "Segment",
    "Size",
    "box_size",
    "fit_rows",
    "flow_cols",
    "scrolled",
]
