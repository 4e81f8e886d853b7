"""Which watched tasks have exited, learnt for all of them with one ``epoll_wait(2)``.

A task is known by ``(tid, starttime)``; ``starttime`` counts clock ticks (proc(5)), so a
PID reused within one tick looks like the same task, and a task that exited looks, to
counters that read the same values, like one that slept. A pidfd (pidfd_open(2)) refers to
one process (or, with ``PIDFD_THREAD``, one thread) and turns readable once it has exited.

A pidfd costs an fd of the budget that counters draw from too. When counters need the room,
pidfds are given up (:meth:`ExitWatch.give_up`), and a task without one (also where none can
be had: ``-H`` before Linux 6.9) is told from a new task under its id by its ``/proc/TID``
mark (``engine.scan.task.dir_mark``: a new task instance gets a new inode), one ``stat(2)`` a
refresh while it sleeps instead of a pidfd. Its exit is still seen: the exiting
task runs (its counters move), so its ``stat`` is read and shows the zombie, or ``/proc`` no
longer lists it.
"""

from __future__ import annotations

import contextlib
import os
import select
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from tiptop.engine.scan.task import Identity, Task, dir_mark

if TYPE_CHECKING:
    from tiptop.engine.count.counters import TaskCounters


class ExitWatch:
    """The pidfds of watched tasks, in one epoll set (see the module doc). It tells a task
    that slept from one that exited and whose PID was reused within the same clock tick.
    ``open_pidfd(tid, thread)`` is the backend's; a backend without it (the test fake)
    watches nothing.

    An epoll set, not ``poll(2)``: poll asks every pidfd at every call, epoll_wait(2)
    hands over the ready ones only (epoll(7)), so a refresh where nothing exited costs the
    same at any count."""

    def __init__(self, open_pidfd: Callable[[int, bool], int | None] | None) -> None:
        self._open = open_pidfd
        self._epoll: select.epoll | None = None  # one fd for the watch's life
        if open_pidfd is not None:
            with contextlib.suppress(OSError):  # EMFILE: tried again at the first watch
                self._epoll = select.epoll()
        self._owner: dict[int, Identity] = {}

    def watch(self, t: Task, thread: bool) -> int | None:
        """A pidfd for ``t``, registered; None when none can be had (nor the epoll set)."""
        fd = self._open(t.tid, thread) if self._open is not None else None
        if fd is not None:
            try:
                if self._epoll is None:
                    self._epoll = select.epoll()
                self._epoll.register(fd, select.EPOLLIN)
            except OSError:  # EMFILE, ENOMEM: watched by its mark instead
                os.close(fd)
                return None
            self._owner[fd] = t.key
        return fd

    @property
    def able(self) -> bool:
        """Whether pidfds can be asked for at all (the test fake's backend has none)."""
        return self._open is not None

    def __len__(self) -> int:
        """The pidfds held."""
        return len(self._owner)

    def give_up(
        self, states: Iterable[tuple[Identity, TaskCounters]], short: int, proc_root: str
    ) -> int:
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
        """Stop watching and close ``fd`` (once the epoll set is closed: only close it)."""
        if self._epoll is not None:
            self._epoll.unregister(fd)
        del self._owner[fd]
        os.close(fd)

    def ended(self) -> set[Identity]:
        """Identities of the watched tasks that have exited."""
        owner = self._owner
        if not owner or self._epoll is None:
            return set()
        # maxevents: every pidfd may be ready (its default, FD_SETSIZE - 1, would leave some)
        return {owner[fd] for fd, _ in self._epoll.poll(0, len(owner)) if fd in owner}

    def close(self) -> None:
        """Close the epoll set; its pidfds stay open until their owners forget them. Closing
        the set first takes them all out of it at once (the kernel frees its interest list
        with it, epoll(7)), where forgetting them first was one ``EPOLL_CTL_DEL`` each. A
        later :meth:`watch` makes a new set."""
        if self._epoll is not None:
            self._epoll.close()
            self._epoll = None
