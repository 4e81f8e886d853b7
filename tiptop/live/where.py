"""The ``f`` window: the selected task's hottest functions, beside its top-down tree.

:class:`WhereWindow` owns the profiler (``tiptop.where.TaskProfiler``, made by the cli's
factory) of the task selected while the window is open: it is opened when the window
opens, refreshed with each refresh of the main source, and closed, its events and ring
buffers released, when the window closes, the selected task changes or live mode ends, so
at most one task is sampled at a time. What cannot be sampled (another user's task) is the
window's one line, as in batch. The window's first line names the event sampled; without a
hardware PMU it says so in that one line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from tiptop.errors import TiptopError, printable
from tiptop.where import Profile
from tiptop.where.report import profile_head, profile_lines


class Profiler(Protocol):
    """What the window reads: ``tiptop.where.TaskProfiler``."""

    def refresh(self) -> Profile:
        """The samples since the last refresh, named."""
        ...

    def close(self) -> None:
        """Release the events and buffers."""
        ...


#: ``factory(pid) -> Profiler``; raises TiptopError (one line) when it cannot sample.
ProfilerFactory = Callable[[int], Profiler]

#: Rows of functions the window shows.
WINDOW_TOP = 15


class WhereWindow:
    """The window's data (see the module's docstring). ``event_line`` is its first line:
    the event sampled and, without a PMU, that it is ``cpu-clock`` for that reason."""

    def __init__(self, factory: ProfilerFactory | None, event_line: str) -> None:
        self.factory = factory
        self.event_line = event_line
        self.pid: int | None = None
        self.profiler: Profiler | None = None
        self.profile: Profile | None = None
        self.error: str | None = None

    def follow(self, pid: int | None) -> None:
        """Sample ``pid`` (the selected task) from now on, closing the previous one's."""
        if pid == self.pid and (self.profiler is not None or self.error is not None):
            return
        self.close()
        self.pid = pid
        if pid is None or self.factory is None:
            return
        try:
            self.profiler = self.factory(pid)
        except TiptopError as exc:
            self.error = str(exc)

    def refresh(self) -> None:
        """Take the samples since the last refresh (with the main source's refresh)."""
        if self.profiler is not None:
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
        out = [self.event_line]
        p = self.profile
        if p is None:
            return [*out, f"PID {self.pid}: sampling; the first functions come at the next refresh"]
        out.append(profile_head(p) + (" (exited)" if p.exited else ""))
        for share, symbol, module in profile_lines(p, WINDOW_TOP):
            out.append(f"{share:5.1f}%  {printable(symbol)}  {printable(module)}")
        return out

    def close(self) -> None:
        """Stop sampling (the window closed, another task selected, live mode ends)."""
        if self.profiler is not None:
            self.profiler.close()
        self.pid, self.profiler, self.profile, self.error = None, None, None, None


__all__ = ["WINDOW_TOP", "Profiler", "ProfilerFactory", "WhereWindow"]
