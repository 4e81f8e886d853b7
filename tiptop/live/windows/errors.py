"""The ``e`` window: the message log (docs/original.md 5.5): ``BEGIN`` (or ``.....`` when
scrolled), the messages, each wrapped at spaces to the window's width (the original cut
them), ``END`` (or ``.....``), and the scroll position; at the bottom of the screen,
``LINES - displayed_rows - 5`` high, at least 10. Its title counts the errors apart from
the notices (``tiptop.messages.Message.notice``: the no-PMU news is no error)."""

from __future__ import annotations

from collections.abc import Sequence

import urwid

from tiptop.live.reaction import NOTHING, Effect, Reaction
from tiptop.live.session import Session
from tiptop.live.text import Size, box_size, scrolled
from tiptop.live.window import NAV_KEYS, boxed


class ErrorLog(urwid.Widget):
    """The ``e`` window's body: ``BEGIN`` (or ``.....`` when scrolled), the error lines,
    ``END`` (or ``.....``), and the scroll position ``%d %`` on the last line. A message
    longer than the window is wide is wrapped onto the next lines (the original cut it)."""

    _sizing = frozenset([urwid.Sizing.BOX])
    ignore_focus = True

    def __init__(self) -> None:
        super().__init__()
        self.messages: Sequence[str] = ()
        self.top = 0
        self.height = 3
        self.cols = 80

    def set_messages(self, messages: Sequence[str]) -> None:
        """Show this list of messages (the sampler's error log)."""
        self.messages = messages
        self._invalidate()

    def _room(self) -> int:
        """Rows for messages: all but the BEGIN, END and percentage lines."""
        return max(self.height - 3, 1)

    def _wrapped(self, i: int) -> urwid.Canvas:
        return urwid.Text(self.messages[i], wrap="space").render((self.cols,))

    def _last_top(self) -> int:
        """The first message shown when scrolled to the end: the last ones that fit."""
        used, top = 0, len(self.messages)
        while top > 0:
            used += self._wrapped(top - 1).rows()
            if used > self._room():
                break
            top -= 1
        return min(top, max(len(self.messages) - 1, 0))

    def scroll(self, key: str) -> bool:
        """Scroll by messages for a navigation key; False when the key is not one."""
        top = scrolled(self.top, key, len(self.messages), self._room())
        if top is None:
            return False
        self.top = max(0, min(top, self._last_top()))
        self._invalidate()
        return True

    def render(self, size: Size, focus: bool = False) -> urwid.Canvas:
        cols, rows = box_size(size)
        self.height, self.cols = rows, cols
        n = len(self.messages)
        self.top = max(0, min(self.top, self._last_top()))
        canvases: list[urwid.Canvas] = [
            urwid.Text("BEGIN" if self.top == 0 else ".....").render((cols,))
        ]
        used, end = 0, self.top
        while end < n:
            c = self._wrapped(end)
            if used + c.rows() > self._room():
                if end == self.top:  # taller than the window: what fits of it
                    c = urwid.CompositeCanvas(c)
                    c.trim_end(c.rows() - self._room())
                    canvases.append(c)
                    end += 1
                break
            canvases.append(c)
            used += c.rows()
            end += 1
        canvases.append(urwid.Text("END" if end >= n else ".....").render((cols,)))
        pct = 100 if end >= n else round(100 * end / n)
        canvases = canvases[: rows - 1]
        taken = sum(c.rows() for c in canvases)
        if taken < rows - 1:
            canvases.append(urwid.SolidCanvas(" ", cols, rows - 1 - taken))
        canvases.append(urwid.Text(f" {pct} % ", align="right", wrap="clip").render((cols,)))
        return urwid.CanvasCombine([(c, None, False) for c in canvases])


def error_title(errors: int, notices: int) -> str:
    """`` %d errors detected (e to close) `` (the original's), and the notices apart."""
    also = f", {notices} notice{'s' if notices != 1 else ''}" if notices else ""
    return f"{errors} errors detected{also} (e to close)"


class ErrorWindow:
    """The ``e`` window (see the module's docstring); ``keys`` toggle it."""

    modal = False

    def __init__(self, keys: Sequence[str]) -> None:
        self.name = "errors"
        self.log = ErrorLog()
        self.closing = frozenset({"esc", *keys})
        self.title = error_title(0, 0)
        #: Rows shown in the task table (the window's height leaves them room).
        self.shown = 0

    def open(self, session: Session) -> None:
        """Take the log's messages."""
        self.update(session)

    def close(self) -> None:
        """Nothing to release."""
        self.log.set_messages(())

    def key(self, key: str, session: Session) -> Reaction | None:
        """Esc and ``e`` close it; navigation keys scroll it by messages."""
        if key in self.closing:
            return Reaction(Effect.CLOSE)
        if key in NAV_KEYS and self.log.scroll(key):
            return NOTHING
        return None

    def draw(self, body: urwid.Widget, cols: int, rows: int) -> urwid.Widget:
        """At the bottom, full width (docs/original.md 5.5)."""
        h = min(max(rows - self.shown - 5, 10), rows)
        window = boxed(self.log, self.title)
        return urwid.Overlay(window, body, "left", cols, ("fixed top", rows - h), h)

    def status(self) -> str | None:
        """It leaves the status line alone."""
        return None

    def refresh(self, session: Session) -> None:
        """Nothing of its own: the log is read again by :meth:`update`."""
        return None

    def update(self, session: Session) -> None:
        """The log's messages, and the rows shown."""
        log = session.messages
        self.log.set_messages(log.explained())
        notices = sum(1 for m in log if m.notice)
        self.title = error_title(len(log) - notices, notices)
        self.shown = len(session.rows())


__all__ = ["ErrorLog", "ErrorWindow", "error_title"]
