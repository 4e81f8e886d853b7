"""Which watched tasks have exited, learnt for all of them with one ``poll(2)``.

A task is known by ``(tid, starttime)``; ``starttime`` counts clock ticks (proc(5)), so a
PID reused within one tick looks like the same task, and a task that exited looks, to
counters that read the same values, like one that slept. A pidfd (pidfd_open(2)) refers to
one process (or, with ``PIDFD_THREAD``, one thread) and turns readable once it has exited.

A pidfd costs an fd of the budget that counters draw from too. When counters need the room,
pidfds are given up (:meth:`ExitWatch.give_up`), and a task without one (also where none can
be had: ``-H`` before Linux 6.9) is told from a new task under its id by its ``/proc/TID``
mark (``engine.task.dir_mark``: a new task instance gets a new inode), one ``stat(2)`` a
refresh while it sleeps instead of a ``poll(2)`` entry. Its exit is still seen: the exiting
task runs (its counters move), so its ``stat`` is read and shows the zombie, or ``/proc`` no
longer lists it.
"""

from __future__ import annotations

import os
import select
from collections.abc import Callable, Iterable
from typing import Any

from tiptop.engine.task import Task, dir_mark

#: Identity of a task: ``(tid, starttime)``.
Identity = tuple[int, int]


class ExitWatch:
    """The pidfds of watched tasks, polled together (see the module doc). It tells a task
    that slept from one that exited and whose PID was reused within the same clock tick.
    ``open_pidfd(tid, thread)`` is the backend's; a backend without it (the test fake)
    watches nothing."""

    def __init__(self, open_pidfd: Callable[[int, bool], int | None] | None) -> None:
        self._open = open_pidfd
        self._poll = select.poll()
        self._owner: dict[int, Identity] = {}

    def watch(self, t: Task, thread: bool) -> int | None:
        """A pidfd for ``t``, registered; None when none can be had."""
        fd = self._open(t.tid, thread) if self._open is not None else None
        if fd is not None:
            self._poll.register(fd, select.POLLIN)
            self._owner[fd] = t.key
        return fd

    @property
    def able(self) -> bool:
        """Whether pidfds can be asked for at all (the test fake's backend has none)."""
        return self._open is not None

    def __len__(self) -> int:
        """The pidfds held."""
        return len(self._owner)

    def give_up(self, states: Iterable[tuple[Identity, Any]], short: int, proc_root: str) -> int:
        """Give up to ``short`` pidfds (see the module doc), in ``states`` order: each
        ``(identity, TaskCounters)`` holding one whose task has not exited gets its
        ``/proc/PID`` mark as ``mark`` and None as ``exit_fd``. Returns how many went."""
        ended, freed = self.ended(), 0
        for key, st in states:
            if freed >= short:
                break
            if st.exit_fd is not None and key not in ended:
                st.mark = dir_mark(f"{proc_root}/{key[0]}")
                self.forget(st.exit_fd)
                st.exit_fd = None
                freed += 1
        return freed

    def forget(self, fd: int) -> None:
        """Stop watching and close ``fd``."""
        self._poll.unregister(fd)
        del self._owner[fd]
        os.close(fd)

    def ended(self) -> set[Identity]:
        """Identities of the watched tasks that have exited."""
        if not self._owner:
            return set()
        return {self._owner[fd] for fd, _ in self._poll.poll(0) if fd in self._owner}
