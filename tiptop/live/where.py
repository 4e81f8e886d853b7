"""The ``f`` window's data: the selected task's hottest functions, beside its top-down tree
(the window is ``tiptop.live.windows.functions``).

:class:`Hottest` owns the profiler (``tiptop.where.TaskProfiler``, made by the cli's
factory) of the task selected while the window is open: it is opened when the window
opens, refreshed with each refresh of the main source, and closed, its events and ring
buffers released, when the window closes, the selected task changes or live mode ends, so
at most one task is sampled at a time. What cannot be sampled (another user's task) is the
window's one line, as in batch. The window's first line names the event sampled: with a
hardware PMU the one that shows where the task meets its top-down bottleneck when it was
selected (``tiptop.where.event_for``), kept while it stays selected so that its samples add
up; without a PMU ``cpu-clock``, and the line says why.

The functions are a call tree (``tiptop.where.calltree``): bottom-up (each function, then
its callers) or top-down, one key toggling (:meth:`Hottest.toggle_view`); its first level
shown, a node's children when the cursor opened it (:class:`TreeCursor`). What it keeps
is bounded however long the window stays open: the last refresh's profile, and at most
:data:`OPENED` opened paths (the oldest forgotten first).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

from tiptop.errors import TiptopError
from tiptop.where import RATE_HZ, Profile, SampledEvent
from tiptop.where.calltree import Path, TreeRow, View
from tiptop.where.report import (
    TreeCut,
    profile_head,
    profile_stacks,
    profile_tree,
    row_text,
    waiting_tree,
)


class Profiler(Protocol):
    """What the window reads: ``tiptop.where.TaskProfiler``."""

    #: The event sampled.
    event: SampledEvent

    def refresh(self) -> Profile:
        """The samples since the last refresh, named."""
        ...

    def close(self) -> None:
        """Release the events and buffers."""
        ...


#: ``factory(pid, node, delay) -> Profiler`` (``node``: the task's bottleneck, None without
#: one; ``delay``: the live delay, which sizes its buffers for the samples of a refresh);
#: raises TiptopError (one line) when it cannot sample.
ProfilerFactory = Callable[[int, str | None, float], Profiler]

#: Functions of the first level the window shows.
WINDOW_TOP = 15
#: The most opened paths kept.
OPENED = 256


class TreeCursor:
    """Which nodes of the window's tree are opened, and the row the cursor is on (by its
    path, so that it stays on its function when a refresh moves the rows)."""

    def __init__(self) -> None:
        self.view = View.BOTTOM_UP
        self._opened: OrderedDict[Path, None] = OrderedDict()
        self.at: Path | None = None

    def opened(self, path: Path) -> bool:
        """Whether ``path``'s children are shown."""
        return path in self._opened

    def index(self, rows: list[TreeRow]) -> int:
        """The cursor's row in ``rows`` (the first when its path is gone)."""
        return next((i for i, r in enumerate(rows) if r.path == self.at), 0)

    def move(self, rows: list[TreeRow], by: int) -> None:
        """The cursor ``by`` rows down (up when negative), within ``rows``."""
        if rows:
            i = min(max(self.index(rows) + by, 0), len(rows) - 1)
            self.at = rows[i].path

    def open(self, rows: list[TreeRow], shown: bool) -> None:
        """Open (``shown``) or close the cursor's node; closing a closed one goes to its
        parent."""
        if not rows:
            return
        row = rows[self.index(rows)]
        if shown and row.branches:
            self._opened[row.path] = None
            self._opened.move_to_end(row.path)
            while len(self._opened) > OPENED:
                self._opened.popitem(last=False)
        elif not shown and row.path in self._opened:
            del self._opened[row.path]
        elif not shown and len(row.path) > 1:
            self.at = row.path[:-1]

    def toggle_view(self) -> None:
        """The other view, every node closed, the cursor on the first row."""
        self.view = self.view.other()
        self._opened.clear()
        self.at = None


class Hottest:
    """The window's data (see the module's docstring). ``event_line``, when not empty, is
    its first line (without a PMU: that it samples ``cpu-clock`` for that reason); else
    the first line names the profiler's event and why it was chosen."""

    def __init__(self, factory: ProfilerFactory | None, event_line: str) -> None:
        self.factory = factory
        self.event_line = event_line
        self.pid: int | None = None
        #: The delay the profiler's buffers were sized for.
        self.delay = 0.0
        self.profiler: Profiler | None = None
        self.profile: Profile | None = None
        self.error: str | None = None
        self.cursor = TreeCursor()
        #: Whether the keys move the tree's cursor (else the table's highlight).
        self.focused = False

    def follow(self, pid: int | None, node: str | None, delay: float) -> None:
        """Sample ``pid`` (the selected task, whose bottleneck is ``node``) from now on,
        closing the previous one's; opened again when the live ``delay`` changed, so that
        its buffers hold a refresh's samples (``tiptop.where.profile.data_pages``: sized
        for two intervals, a longer delay would lose samples)."""
        same = pid == self.pid and delay == self.delay
        if same and (self.profiler is not None or self.error is not None):
            return
        self.close()
        self.pid, self.delay = pid, delay
        if pid is None or self.factory is None:
            return
        try:
            self.profiler = self.factory(pid, node, delay)
        except TiptopError as exc:
            self.error = str(exc)

    def refresh(self) -> None:
        """Take the samples since the last refresh (with the main source's refresh). Once
        the process exited, its last refresh stays shown, saying so: the profiler follows
        the process, not its PID, and another process that takes the PID is not sampled
        under its name."""
        if self.profiler is not None and not (self.profile is not None and self.profile.exited):
            self.profile = self.profiler.refresh()

    def rows(self) -> list[TreeRow | tuple[float, str, str]]:
        """The tree's rows as opened: the first level, and the children of each opened
        node (the last row adds up the functions past :data:`WINDOW_TOP`)."""
        if self.profile is None:
            return []
        stacks = profile_stacks(self.profile)
        c = self.cursor
        cut = TreeCut(c.view, depth=0, min_share=0.0)
        running = profile_tree(stacks, cut, c.opened, WINDOW_TOP)
        waiting = waiting_tree(self.profile, cut, c.opened, WINDOW_TOP)
        return running + waiting

    def nodes(self) -> list[TreeRow]:
        """The rows the cursor moves over (the tree's nodes, not the last ``[other]``)."""
        return [r for r in self.rows() if isinstance(r, TreeRow)]

    def lines(self) -> list[str]:
        """The window's text: the event line, then the head, the view and the tree of the
        last refresh, or the one line saying why there are none."""
        return [text for text, _cursor in self.marked_lines()]

    def marked_lines(self) -> list[tuple[str, bool]]:
        """:meth:`lines`, each with whether the cursor is on it (only while focused)."""
        if self.factory is None:
            return [("sampling is not available in this session", False)]
        if self.pid is None:
            return [("no task selected", False)]
        if self.error is not None:
            return [(self.error, False)]
        out = [(self.event_line or self._event_words(), False)]
        p = self.profile
        if p is None:
            first = f"PID {self.pid}: sampling; the first functions come at the next refresh"
            return [*out, (first, False)]
        out.append((profile_head(p) + (" (exited)" if p.exited else ""), False))
        rows = self.rows()
        at = self.cursor.index([r for r in rows if isinstance(r, TreeRow)])
        nodes = 0
        for row in rows:
            here = self.focused and isinstance(row, TreeRow) and nodes == at
            nodes += isinstance(row, TreeRow)
            out.append((row_text(row, marks=True), here))
        return out

    def title(self) -> str:
        """The window's title: its view, and the keys that change it."""
        tab = "Tab: back to the tasks" if self.focused else "Tab: into the tree"
        return f"Hottest functions, {self.cursor.view.words} (b, {tab}; f or Esc to close)"

    def _event_words(self) -> str:
        """``sampling cache-misses (its bottleneck BE/Mem) at 1000 Hz``."""
        if self.profiler is None:
            return ""
        event = self.profiler.event
        return f"sampling {event.name} ({event.means}) at {RATE_HZ} Hz"

    def close(self) -> None:
        """Stop sampling (the window closed, another task selected, live mode ends)."""
        if self.profiler is not None:
            self.profiler.close()
        self.pid, self.profiler, self.profile, self.error = None, None, None, None


__all__ = ["OPENED", "WINDOW_TOP", "Hottest", "Profiler", "ProfilerFactory", "TreeCursor"]
