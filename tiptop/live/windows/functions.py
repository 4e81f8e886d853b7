"""The ``f`` window: the highlighted task's hottest functions beside its top-down tree, the
task sampled while the window is open and for that task only (:class:`tiptop.live.where.
Hottest` owns the profiler; it is released when the window closes or another task is
highlighted, and opened again when the live delay changes, which sizes its buffers)."""

from __future__ import annotations

from collections.abc import Sequence

import urwid

from tiptop.live.reaction import Reaction
from tiptop.live.session import Session
from tiptop.live.text import Scrolled
from tiptop.live.where import Hottest
from tiptop.live.window import Place, boxed, room
from tiptop.live.windows.tree import TreeWindow

#: The functions' box title.
TITLE = "Hottest functions (f or Esc to close)"


class FunctionsWindow:
    """The ``f`` window (see the module's docstring); ``keys`` toggle it."""

    modal = False

    def __init__(self, keys: Sequence[str]) -> None:
        self.name = "functions"
        #: The left half: the tree, which gives the bottleneck that chooses the event.
        self.tree = TreeWindow(keys)
        self.hottest = Hottest(None, "")
        self.body = Scrolled((), "PgUp/PgDn scroll")

    def open(self, session: Session) -> None:
        """Take the cli's profiler factory, and start sampling the highlighted task."""
        services = session.services
        self.hottest = Hottest(services.where, services.where_event)
        self.tree.open(session)
        self.update(session)

    def close(self) -> None:
        """Stop sampling; release the tree's extra source."""
        self.hottest.close()
        self.tree.close()

    def key(self, key: str, session: Session) -> Reaction | None:
        """As the tree: Esc and its keys close it; Up/Down are the table's."""
        return self.tree.key(key, session)

    def draw(self, body: urwid.Widget, cols: int, rows: int) -> urwid.Widget:
        """The tree and the functions side by side, above the footer, as high as the
        taller of them."""
        half = cols // 2
        tall = max(self.tree.text.body.rows_at(half - 2), self.body.rows_at(cols - half - 2))
        height = min(tall + 2, room(rows, Place.ABOVE_FOOTER))
        pair = urwid.Columns(
            [
                (half, boxed(self.tree.text.body, self.tree.text.title)),
                boxed(self.body, TITLE),
            ]
        )
        top = max(rows - height - 1, 0)
        return urwid.Overlay(pair, body, "left", cols, ("fixed top", top), height)

    def status(self) -> str | None:
        """It leaves the status line alone."""
        return None

    def refresh(self, session: Session) -> None:
        """The tree's extra frame and the profiler's samples since the last refresh."""
        self.tree.refresh(session)
        self.hottest.refresh()

    def update(self, session: Session) -> None:
        """The tree, then the functions of the highlighted task (opening its profiler when
        it changed, or the delay did)."""
        self.tree.update(session)
        self.hottest.follow(self.tree.pid, self.tree.bottleneck, session.state.delay)
        self.body.set_lines(self.hottest.lines())


__all__ = ["TITLE", "FunctionsWindow"]
