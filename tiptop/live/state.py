"""What a live session's keys change: the settings, the screen on display, the sort and
the status line (:class:`Status`: what was said, how long it stays, what was said before).

One record, held by the session (``tiptop.live.session.Session``): the keys' handlers and
the windows change it, the controller draws from it. The settings are one read-only
:class:`~tiptop.options.Options` record, replaced whole when a key changes one of them;
the table view and what the sampler watches are derived from it, so each setting is held
in one place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING

from tiptop.frame import FrameSource
from tiptop.options import Options
from tiptop.readonly import mutable
from tiptop.table import Folding, View

if TYPE_CHECKING:
    from tiptop.screens.model import ScreenSpec


#: How many of the words said the status line keeps for the ``m`` window.
SAID_KEPT = 100


#: Refreshes the start-up notice stays (the no-PMU fallback), unless a key comes first.
START_REFRESHES = 3


@mutable
class Status:
    """The status line's words: shown until the next key, or for a time (a hint), or for
    some refreshes (the start-up notice); each one said is kept (the last
    :data:`SAID_KEPT`), newest last, so that the whole of a text cut to the line's width
    can be read again (the ``m`` window)."""

    text: str = ""
    #: When it goes (monotonic seconds); None: at the next key.
    until: float | None = None
    #: Refreshes it stays at most; None: any number.
    refreshes: int | None = None
    #: What was said, newest last.
    said: list[str] = field(default_factory=list)

    def say(self, text: str, until: float | None = None, refreshes: int | None = None) -> None:
        """Say ``text`` from now on (kept in :attr:`said` unless it lasts a time: a hint)."""
        self.text, self.until, self.refreshes = text, until, refreshes
        if text and until is None:
            self.said = [*self.said[-(SAID_KEPT - 1) :], text]

    def clear(self) -> None:
        """Nothing on the line (a key was pressed)."""
        self.text, self.until, self.refreshes = "", None, None

    def shown(self, now: float) -> str:
        """What the line shows at monotonic time ``now``."""
        return "" if self.until is not None and now >= self.until else self.text

    def refreshed(self) -> None:
        """One refresh more: a text said for some refreshes goes after the last one."""
        if self.refreshes is not None:
            self.refreshes -= 1
            if self.refreshes <= 0:
                self.clear()


@mutable
class LiveState:
    """The live session's changeable state (docs/original.md section 5.3, ``handle_key()``)."""

    #: The settings: the command line's, then each key's change (the title indicators,
    #: the view, the sampler's configuration and ``W`` read them).
    options: Options
    #: The ScreenSpecs Left/Right rotate through, and the index of the one on display.
    screens: list[ScreenSpec]
    screen_index: int
    #: The sort: -1 = PID, 0..k-1 = the screen's columns, k = COMMAND (``<``, ``>``, ``R``).
    sort_column: int = 0
    descending: bool = True
    #: The status line (line 2), shown when no prompt is open.
    status: Status = field(default_factory=Status)
    #: The line above the footer: why whole counters read ``?`` ("" when none do).
    notice: str = ""
    #: The ``\\`` filter: only the rows whose command holds it ("" for all).
    filter: str = ""
    #: The tasks tagged with Space (``k`` signals them), by tid.
    tagged: set[int] = field(default_factory=set)
    #: The task ``F`` follows (kept highlighted and shown), by tid.
    follow: int | None = None
    #: Which rows by cgroup show their tasks beneath them (``=``, ``*``).
    folding: Folding = field(default_factory=Folding)

    @classmethod
    def initial(
        cls,
        options: Options,
        source: FrameSource | None,
        screens: Sequence[ScreenSpec],
        screen_index: int | None = None,
        message: str = "",
    ) -> LiveState:
        """The state at start-up: ``options`` and ``screen_index`` (the source's screen,
        else the first, when not given or out of range: the caller resolved ``-S``)."""
        screens = list(screens)
        if screen_index is None or not 0 <= screen_index < len(screens):
            screen_index = _source_screen(source, screens)
        state = cls(options=options, screens=screens, screen_index=screen_index)
        state.status.say(message, refreshes=START_REFRESHES if message else None)
        return state

    @property
    def message(self) -> str:
        """What the status line says (its text, however long it stays)."""
        return self.status.text

    @property
    def screen(self) -> ScreenSpec:
        """The ScreenSpec on display."""
        return self.screens[self.screen_index]

    @property
    def view(self) -> View:
        """The table view: the settings' presentation, with this session's sort, filter,
        followed task (watched: shown although idle) and rows by cgroup as a tree."""
        view = self.options.view(self.sort_column, self.descending)
        watch = view.watch if self.follow is None else self.follow
        return dataclasses.replace(view, name_filter=self.filter, watch=watch, folding=self.folding)

    @property
    def delay(self) -> float:
        """Seconds between refreshes (the ``d`` key)."""
        return self.options.delay


def _source_screen(source: FrameSource | None, screens: Sequence[ScreenSpec]) -> int:
    """The index of the screen the source was built with; 0 when it is not offered."""
    current = None if source is None else source.screen
    if current is None:
        return 0
    for i, s in enumerate(screens):
        if s is current:
            return i
    return next((i for i, s in enumerate(screens) if s == current), 0)
