"""The protocol every counter backend follows: the real kernel one and the fake one.

A backend opens one *group* of events on one task and hands back a :class:`Group`. A
group is read as the kernel's ``PERF_FORMAT_GROUP | ID`` words (perf_event_open(2),
"read_format"): ``nr, time_enabled, time_running, {value, id} * nr``, u64 each, members in
open order (kernel/events/core.c ``perf_read_group()``), by the leader's fd. The engine
reads only these words (``engine.units``); ``Group.read`` parses them for the callers that
read a group once (probes, diagnostics). Errors are ``OSError`` carrying the kernel's real
errno, never a rewritten one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from tiptop.kernel.attr import Attr
from tiptop.readonly import readonly


@readonly
class GroupReading:
    """One read of a group: cumulative values (uint64, members in open order) and times (ns)."""

    values: np.ndarray
    time_enabled: int
    time_running: int


class Group(Protocol):
    """An open group of events on one task (one fd per member)."""

    #: Number of file descriptors the group holds (0 once closed).
    n_fds: int
    #: The fd numbers, the leader's first; empty once closed.
    fds: list[int]

    @property
    def ids(self) -> tuple[int, ...]:
        """The members' event ids (``PERF_EVENT_IOC_ID``), in open order."""
        ...

    def read_raw(self) -> bytes:
        """One read of the leader: the group's words, errors as their kinds
        (``tiptop.kernel.errors``), a short read an ``OSError`` (EIO)."""
        ...

    def bare_read(self) -> Callable[[], bytes]:
        """A read of the leader as a call with nothing around it: what ``os.read`` of its
        fd gives, errors untranslated and the length unchecked (the caller checks both).
        It reads by the fd's number, so it must not be called after :meth:`close`: it
        would read whatever took that number."""
        ...

    def read(self) -> GroupReading:
        """The cumulative counts since the group was opened (:meth:`read_raw`, parsed).
        Raises ``OSError``."""
        ...

    def close(self) -> None:
        """Release the fds; idempotent."""
        ...


class Backend(Protocol):
    """Opens groups. ``tid`` is a thread id (``0`` = the caller), ``cpu`` is always -1."""

    def open_group(self, tid: int, attrs: Sequence[Attr]) -> Group:
        """Open ``attrs[0]`` as leader and the rest as members on ``tid``.

        Raises ``OSError`` with the errno of the first member that failed; its index is in
        the exception's ``member`` attribute when known. Nothing stays open on failure.
        """
        ...

    def read_leaders(self, fds: Sequence[int], nbytes: int) -> list[bytes]:
        """One read of up to ``nbytes`` from each of ``fds`` (leaders of groups this backend
        opened), in order: what ``os.read`` gives each, lengths unchecked; the first error
        is raised untranslated and ends the reads. The caller makes sure none of ``fds``
        was closed (a closed number may be another file's by then)."""
        ...

    def open_pidfd(self, tid: int, thread: bool) -> int | None:
        """An fd that turns readable when ``tid`` exits (a pidfd, pidfd_open(2)), or None
        where none can be had."""
        ...

    def run_times(self, pids: Sequence[int]) -> list[int]:
        """Each of processes ``pids``'s time on a CPU so far, every thread's (ns), in order;
        0 where it cannot say. While it stands, no thread of the process ran, so no
        task-bound group on one of them counted anything (``engine.count.counters``,
        ``RunClocks``)."""
        ...

    def open_from(self, cpu: int | None) -> None:
        """Make the opens that follow from CPU ``cpu``, where the tasks to be opened last
        ran (a cheaper open there: :meth:`tiptop.kernel.group.PerfBackend.open_from`);
        None: back to every CPU the caller was allowed before. A no-op where nothing
        gains from it."""
        ...
