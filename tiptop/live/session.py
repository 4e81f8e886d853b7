"""What the live keys and windows act on: one :class:`Session`.

The controller (:class:`tiptop.live.app.LiveApp`) owns it and keeps its frame current; a
key handler (``tiptop.live.registry``) or a window (``tiptop.live.window``) reads it and
changes its state, and returns what must be redone (``tiptop.live.reaction``). Neither
knows the controller: the session is all they are handed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tiptop import table
from tiptop.frame import Frame, FrameSource
from tiptop.host import Host
from tiptop.live.rows import TaskTable
from tiptop.live.services import Services
from tiptop.live.state import LiveState

if TYPE_CHECKING:
    from tiptop.messages import MessageLog


class Session:
    """A live session's state, its source, its services and the task table on display."""

    def __init__(
        self,
        state: LiveState,
        source: FrameSource,
        services: Services,
        host: Host,
        rows: TaskTable,
    ) -> None:
        #: What the keys change: settings, screen, sort, status line, tags, filter.
        self.state = state
        #: The frame source (a replay's and the cgroup rows' keys go to it).
        self.source = source
        #: What the command line handed the session (``W``'s writer, the windows'
        #: factories, the ``--`` command).
        self.services = services
        #: What this machine allows (the ``K`` key).
        self.host = host
        #: The task table: its rows and the highlighted one; it draws the tagged tasks.
        self.table = rows
        rows.tagged = state.tagged
        #: The frame on display (the controller sets it at each refresh).
        self.frame = Frame.empty(tuple(c.header for c in state.screen.columns), iteration=0)

    @property
    def messages(self) -> MessageLog:
        """The source's message log (the ``e`` window, the reasons of ``?`` cells)."""
        return self.source.messages

    @property
    def clock(self) -> Callable[[], float]:
        """Monotonic seconds (how long a word stays on the status line)."""
        return self.host.clock.monotonic

    def rows(self) -> Sequence[table.Row]:
        """The rows on display, in their order."""
        return self.table.rows

    def selected(self) -> table.Row | None:
        """The highlighted row, or None when no row is shown."""
        return self.table.selected_row()


__all__ = ["Session"]
