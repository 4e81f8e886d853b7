"""One process followed, not a number: ``--where PID`` and the live ``f`` window watch the
process that had that PID when they began, and must never go on under its name with
another that took the number after it exited (issue 52, item 4).

A pidfd (pidfd_open(2)) refers to the process itself and turns readable once it has
exited (its whole thread group: a zombie is an exited process). Where there is none (a
kernel before 5.3, or a ``/proc`` that is not this PID namespace's: the tests' fake tree),
the process's start time (``/proc/PID/stat`` field 22, clock ticks after boot) tells it
from a later one: a process that started later under the same number is another, and so
is a zombie, or a PID no longer listed.
"""

from __future__ import annotations

import contextlib
import os
import select

from tiptop.errors import TaskGone
from tiptop.kernel.procfs import names_this_process, open_pidfd, read_stat


class FollowedProcess:
    """Process ``pid`` as it is now: :meth:`exited` says when it has, whatever takes its
    number afterwards. Holds one fd (its pidfd) until :meth:`close`."""

    def __init__(self, pid: int, proc_root: str = "/proc") -> None:
        self.pid = pid
        self._stat = f"{proc_root}/{pid}/stat"
        self._pidfd = open_pidfd(pid, False) if names_this_process(proc_root) else None
        self._start = self._starttime()

    def _starttime(self) -> int | None:
        """The start time of whatever has the PID now, None when nothing (or a zombie)."""
        try:
            st = read_stat(self._stat)
        except TaskGone:
            return None
        return None if st.state in ("Z", "X") else st.starttime

    def exited(self) -> bool:
        """Whether the process followed has exited (it may have been before it was
        followed: then at once)."""
        if self._pidfd is not None:
            poller = select.poll()
            poller.register(self._pidfd, select.POLLIN)
            return bool(poller.poll(0))
        return self._start is None or self._starttime() != self._start

    def close(self) -> None:
        """Release the pidfd."""
        if self._pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self._pidfd)
            self._pidfd = None


__all__ = ["FollowedProcess"]
