"""The live mode's pop-up windows: ``h`` (help) and ``e`` (error log), docs/original.md
sections 5.4 and 5.5. Each is a box drawn over the screen by
:class:`tiptop.live.widgets.LiveScreen`; the help text is handed in finished, the error log
scrolls like the task table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import urwid

from tiptop import table
from tiptop.live import palette as P

#: urwid text markup: a string, an ``(attr, text)`` pair, or a list of those.
Markup = Any


def scrolled(top: int, key: str, count: int, page: int) -> int | None:
    """The first line shown after navigation ``key`` (up/down by one, page up/down by
    ``page``, home/end), before clamping; None when ``key`` does not navigate."""
    page = max(page, 1)
    moves = {"up": -1, "down": 1, "page up": -page, "page down": page}
    if key in moves:
        return top + moves[key]
    return {"home": 0, "end": count}.get(key)


def help_lines(
    target: str,
    desc: str,
    columns: Sequence[tuple[str, str]],
    variables: Sequence[tuple[str, str]] | None = None,
) -> list[Markup]:
    """The help window's text: the target line (reverse), the screen description, then
    ``header: description`` per column, headers stripped and padded to the widest, then a
    legend of the colours and the built-in variables of expressions (``variables``,
    by default :func:`tiptop.table.builtin_variables`), last since a short terminal
    clips the window's end (our additions)."""
    heads = [h.strip() for h, _ in columns]
    width = max((len(h) for h in heads), default=0)
    lines: list[Markup] = [(P.WINDOW_REVERSE, target), desc]
    lines += [f"{h.ljust(width)}: {d}" for h, (_, d) in zip(heads, columns, strict=True)]
    lines += [
        "",
        [
            (P.WATCHED, "watched"),
            "  ",
            (P.DEAD, "dead"),
            "  ",
            (P.OVER, "over threshold"),
            "  ",
            (P.SCALED, "scaled"),
            " (counters multiplexed)",
        ],
    ]
    names = table.builtin_variables() if variables is None else variables
    width = max((len(n) for n, _ in names), default=0)
    lines += ["", "Built-in variables of expressions:"]
    lines += [f"{n.ljust(width)}: {d}" for n, d in names]
    return lines


def help_window(lines: Sequence[Markup]) -> urwid.Widget:
    """The ``h`` window: a box titled `` Help (h to close)``."""
    body = urwid.Pile([urwid.Text(m, wrap="clip") for m in lines])
    return urwid.AttrMap(urwid.LineBox(body, title="Help (h to close)"), P.WINDOW)


class ErrorLog(urwid.Widget):
    """The ``e`` window's body: ``BEGIN`` (or ``.....`` when scrolled), the error lines,
    ``END`` (or ``.....``), and the scroll position ``%d %`` on the last line."""

    _sizing = frozenset([urwid.Sizing.BOX])
    ignore_focus = True

    def __init__(self) -> None:
        super().__init__()
        self.messages: Sequence[str] = ()
        self.top = 0
        self.height = 3

    def set_messages(self, messages: Sequence[str]) -> None:
        """Show this list of messages (the sampler's error log)."""
        self.messages = messages
        self._invalidate()

    def _room(self) -> int:
        return max(self.height - 3, 1)

    def scroll(self, key: str) -> bool:
        """Scroll for a navigation key; False when the key is not one."""
        room, n = self._room(), len(self.messages)
        top = scrolled(self.top, key, n, room)
        if top is None:
            return False
        self.top = max(0, min(top, n - room))
        self._invalidate()
        return True

    def render(self, size: tuple[int, int], focus: bool = False) -> urwid.Canvas:
        cols, rows = size
        self.height = rows
        room, n = self._room(), len(self.messages)
        self.top = max(0, min(self.top, n - room))
        end = min(self.top + room, n)
        lines = ["BEGIN" if self.top == 0 else "....."]
        lines += list(self.messages[self.top : end])
        lines.append("END" if end >= n else ".....")
        pct = 100 if n <= room else round(100 * end / n)
        canvases = [urwid.Text(t, wrap="clip").render((cols,)) for t in lines[: rows - 1]]
        if len(canvases) < rows - 1:
            canvases.append(urwid.SolidCanvas(" ", cols, rows - 1 - len(canvases)))
        canvases.append(urwid.Text(f" {pct} % ", align="right", wrap="clip").render((cols,)))
        return urwid.CanvasCombine([(c, None, False) for c in canvases])


def error_window(log: ErrorLog) -> urwid.Widget:
    """The ``e`` window: a box titled `` %d errors detected (e to close) ``."""
    # urwid's LineBox adds the spaces around the title.
    title = f"{len(log.messages)} errors detected (e to close)"
    return urwid.AttrMap(urwid.LineBox(log, title=title), P.WINDOW)
