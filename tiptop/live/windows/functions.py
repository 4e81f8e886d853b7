"""The ``f`` window: the highlighted task's hottest functions as a call tree beside its
top-down tree, the task sampled while the window is open and for that task only
(:class:`tiptop.live.where.Hottest` owns the profiler; it is released when the window
closes or another task is highlighted, and opened again when the live delay changes,
which sizes its buffers).

Its own keys: ``b`` shows the other view of the call tree (bottom-up, each function then
its callers; top-down, callers then callees); Tab moves the keys into the tree, where Up
and Down move its cursor, Right (or Enter, ``+``) opens the node under it and Left (or
``-``) closes it, until Tab again gives Up and Down back to the table's highlight."""

from __future__ import annotations

from collections.abc import Sequence

import urwid

from tiptop.live import palette as P
from tiptop.live.reaction import NOTHING, Reaction
from tiptop.live.session import Session
from tiptop.live.text import Scrolled
from tiptop.live.where import Hottest
from tiptop.live.window import Place, boxed, room
from tiptop.live.windows.tree import TreeWindow

#: The functions' box title begins so (``Hottest.title``).
TITLE = "Hottest functions"
#: The key that shows the other view of the call tree, and the one that moves the keys
#: into it and back.
VIEW_KEY = "b"
FOCUS_KEY = "tab"
#: In the tree: what each key does to its cursor (rows down, or a node opened or closed).
MOVES = {"up": -1, "down": 1}
OPENS = {"right": True, "enter": True, "+": True, "left": False, "-": False}
#: The status line while the keys are the tree's.
IN_TREE = "call tree: Up/Down, Right/Left open/close, b: other view, Tab: back"


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
        """``b`` and Tab (see the module's docstring); in the call tree, its cursor keys;
        else as the top-down tree: Esc and its keys close it, Up/Down are the table's."""
        hottest = self.hottest
        if key == VIEW_KEY:
            hottest.cursor.toggle_view()
        elif key == FOCUS_KEY:
            hottest.focused = not hottest.focused
        elif hottest.focused and key in MOVES:
            hottest.cursor.move(hottest.nodes(), MOVES[key])
        elif hottest.focused and key in OPENS:
            hottest.cursor.open(hottest.nodes(), OPENS[key])
        else:
            return self.tree.key(key, session)
        self._show()
        return NOTHING

    def draw(self, body: urwid.Widget, cols: int, rows: int) -> urwid.Widget:
        """The tree and the functions side by side, above the footer, as high as the
        taller of them."""
        half = cols // 2
        tall = max(self.tree.text.body.rows_at(half - 2), self.body.rows_at(cols - half - 2))
        height = min(tall + 2, room(rows, Place.ABOVE_FOOTER))
        pair = urwid.Columns(
            [
                (half, boxed(self.tree.text.body, self.tree.text.title)),
                boxed(self.body, self.hottest.title()),
            ]
        )
        top = max(rows - height - 1, 0)
        return urwid.Overlay(pair, body, "left", cols, ("fixed top", top), height)

    def status(self) -> str | None:
        """The call tree's keys while they are its; else it leaves the line alone."""
        return IN_TREE if self.hottest.focused else None

    def refresh(self, session: Session) -> None:
        """The tree's extra frame and the profiler's samples since the last refresh."""
        self.tree.refresh(session)
        self.hottest.refresh()

    def update(self, session: Session) -> None:
        """The tree, then the functions of the highlighted task (opening its profiler when
        it changed, or the delay did)."""
        self.tree.update(session)
        self.hottest.follow(self.tree.pid, self.tree.bottleneck, session.state.delay)
        self._show()

    def _show(self) -> None:
        """The call tree's lines, the cursor's highlighted and in sight."""
        marked = self.hottest.marked_lines()
        self.body.set_lines([(P.WINDOW_REVERSE, t) if here else t for t, here in marked])
        at = next((i for i, (_t, here) in enumerate(marked) if here), None)
        if at is not None:  # in sight: the text scrolled so that its row shows
            room = max(self.body.height - 2, 1)
            self.body.top = min(self.body.top, at) if at < self.body.top + room else at - room


__all__ = ["TITLE", "FunctionsWindow"]
