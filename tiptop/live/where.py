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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from tiptop.errors import TiptopError
from tiptop.outside import printable
from tiptop.where import RATE_HZ, Profile, SampledEvent
from tiptop.where.report import profile_head, profile_lines


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

#: Rows of functions the window shows.
WINDOW_TOP = 15


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

    def lines(self) -> list[str]:
        """The window's text: the event line, then the head and the hottest functions of
        the last refresh, or the one line saying why there are none."""
        if self.factory is None:
            return ["sampling is not available in this session"]
        if self.pid is None:
            return ["no task selected"]
        if self.error is not None:
            return [self.error]
        out = [self.event_line or self._event_words()]
        p = self.profile
        if p is None:
            return [*out, f"PID {self.pid}: sampling; the first functions come at the next refresh"]
        out.append(profile_head(p) + (" (exited)" if p.exited else ""))
        for share, symbol, module in profile_lines(p, WINDOW_TOP):
            out.append(f"{share:5.1f}%  {printable(symbol)}  {printable(module)}")
        return out

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


__all__ = ["WINDOW_TOP", "Hottest", "Profiler", "ProfilerFactory"]
