"""The ``t`` window's tree, and the one task that gets the deeper level's events.

While the window is open on a screen whose tree stops at level 1 (``topdown``) and a
deeper screen exists for this CPU (``topdown2``), :class:`Drill` asks the cli's factory
for a second frame source counting that screen's events on the highlighted process alone
(``-p PID``'s sampler: the scanner looks at that one ``/proc`` entry), refreshes it with
the main one, and shows its level 2. The main source's plan and every other task's
counters are unchanged. The extra source is closed, its counters released, when the
window closes, the selected task changes, the screen changes or live mode ends. Its counts
may be multiplexed (``topdown2`` on AMD: two groups), which the tree's first line says
with the part of the time they ran.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tiptop.frame import Frame, FrameSource, SamplerConfig
from tiptop.options import Options
from tiptop.table.why import DrillDown, drill_down
from tiptop.table.why import deeper as deeper_screen

if TYPE_CHECKING:
    from tiptop.messages import MessageLog
    from tiptop.screens.model import ScreenSpec

#: ``factory(settings, pid, screen) -> FrameSource``: a source counting ``screen`` on
#: ``pid`` only, with the live session's settings (a ``K`` toggled live counts there too).
Factory = Callable[[Options, int, "ScreenSpec"], FrameSource]


class Drill:
    """The drill-down's data; owns the extra source of one task while the window is open."""

    def __init__(self, factory: Factory | None) -> None:
        self.factory = factory
        #: ``(what is watched, pid, screen name)`` the extra source counts, and the source
        #: and its frame.
        self.key: tuple[SamplerConfig, int, str] | None = None
        self.source: FrameSource | None = None
        self.screen: ScreenSpec | None = None
        self.frame: Frame | None = None

    def view(
        self,
        settings: Options,
        frame: Frame,
        screen: ScreenSpec,
        screens: Sequence[ScreenSpec],
        pid: int | None,
        log: MessageLog,
    ) -> DrillDown:
        """The :class:`tiptop.table.why.DrillDown` to draw: the current screen's, or
        the deeper level's from the extra source once it has a frame for ``pid``, counted
        with ``settings`` (reopened when they change); ``log`` (the main source's message
        log) says why counts are missing."""
        drill = drill_down(frame, screen, screens, pid, _about(log))
        deeper = deeper_screen(screen, screens)
        if drill.tree is None or deeper is None or pid is None or self.factory is None:
            self._release()
            return drill
        self._open(settings, pid, next(s for s in screens if s.name == deeper))
        extra = None
        if self.frame is not None and len(self.frame) and self.screen is not None:
            about = _about(self.source.messages if self.source is not None else log)
            extra = drill_down(self.frame, self.screen, screens, pid, about)
        if extra is None or extra.tree is None:
            why = f": {extra.reason}" if extra is not None and extra.reason else ""
            note = f"level 2: counting screen '{deeper}' on PID {pid} alone{why}"
            return DrillDown(drill.tree, None, note, drill.missing)
        note = f"level 2 from screen '{deeper}', counted on PID {pid} alone"
        return DrillDown(extra.tree, None, note, extra.missing)

    def _open(self, settings: Options, pid: int, screen: ScreenSpec) -> None:
        key = (settings.sampler_config(), pid, screen.name)
        if self.key == key:
            return
        self._release()
        assert self.factory is not None
        self.source = self.factory(settings, pid, screen)
        self.source.start()
        self.key, self.screen = key, screen

    def refresh(self) -> None:
        """Take the extra source's frame (with the main one's refresh)."""
        if self.source is not None:
            self.frame = self.source.refresh()

    def close(self) -> None:
        """Release the extra source's counters (the window closed, the screen changed,
        live mode ends)."""
        self._release()

    def _release(self) -> None:
        if self.source is not None:
            self.source.close()
        self.source, self.key, self.screen, self.frame = None, None, None, None


def _about(log: MessageLog) -> Callable[[Sequence[str]], str | None]:
    """``about(aliases)``: the log's line about the first of them it has one about."""

    def about(aliases: Sequence[str]) -> str | None:
        m = next((m for m in map(log.about, aliases) if m is not None), None)
        return m.line if m is not None else None

    return about
