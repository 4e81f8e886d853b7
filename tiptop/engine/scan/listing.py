"""Which ``/proc`` entries to look at: the directory listed again only when a PID was made.

Listing ``/proc`` walks every task in the kernel and returns a name per process, every
refresh. Nothing new can appear in it unless a PID was allocated since the last listing,
and ``/proc/loadavg`` says which PID was allocated last (proc(5): "the PID of the process
that was most recently created on the system", a thread's TID included). While
that number stays, the last listing, less the entries found gone since, is the listing
(exits need no listing: a scan that finds an entry gone says so, ``forget``).

Two gaps are closed. The kernel takes the PID (``alloc_pid()``) a moment before the task
shows in ``/proc`` (``attach_pid()``, later in ``copy_process()``, kernel/fork.c): a
listing taken in between lacks a PID that loadavg already names, so a listing is trusted
only once loadavg named the same PID at two listings in a row. And a PID chosen by the
caller (``clone3()`` with ``set_tid``, as CRIU restores) does not move the number: every
``RELIST``-th call lists anyway. The number is of the reader's PID namespace: it is used
only where ``/proc/self`` names this process, so the ``/proc`` read is of that namespace
too; a tree without ``loadavg`` (the tests' fake ``/proc``) is listed every time.

The same number stands in for ``/proc/PID`` marks (``engine.scan.task.dir_mark``), which tell an
idle task without a pidfd from a new one under its PID: when no PID was made since the last
call, none was reused, so every PID the listing gives still names the task it named at that
call, or a task since gone. ``proves`` says so, and the scan then checks no mark. A task gone
since is not told by its mark then but by its counters at the next refresh: it ran to exit,
so they moved, and its ``stat`` is read (``engine.count.exits``).
"""

from __future__ import annotations

import os

from tiptop.kernel.procfs import names_this_process
from tiptop.readonly import mutable

#: Calls between two listings at most, whatever loadavg says (a PID chosen by the caller).
RELIST = 16


@mutable
class _Kept:
    """A listing kept, and what it stands for: the last PID made when it was taken
    (``made``), whether that PID had shown by then (``settled``: the same one named at the
    listing before), and how many calls it has answered since."""

    names: list[str]
    made: bytes | None
    settled: bool
    answered: int = 0

    def serves(self, last: bytes | None) -> bool:
        """Whether it is the listing now (see the module doc): no PID made since it was
        taken (``last``), it was settled, and it answered fewer than ``RELIST`` calls."""
        return self.settled and last == self.made and self.answered < RELIST


class ProcListing:
    """The numeric entries of a ``/proc`` tree, listed again only when a PID was made. It
    owns the one listing kept (:class:`_Kept`), stale once a PID is made (see the module
    doc)."""

    __slots__ = ("_kept", "_prev", "_usable", "proves", "root", "steady")

    def __init__(self, root: str) -> None:
        self.root = root
        self._kept: _Kept | None = None
        self._usable: bool | None = None  # loadavg is this namespace's: decided once
        self._prev: bytes | None = None  # loadavg's last PID at the previous call
        #: No PID was made since the call before, nor while the last call listed: every
        #: entry it gave is the task that had that PID at the call before, or one gone
        #: since (no PID reused; see the module doc).
        self.proves = False
        #: No PID was made between the call before and this one (loadavg's last PID
        #: unchanged): no task seen then can have been replaced under its PID since.
        self.steady = False

    def names(self) -> list[str]:
        """The PID directories, as names; [] when ``/proc`` cannot be listed. ``proves``
        then tells whether they stand for the ``/proc/PID`` marks (see the module doc)."""
        last = self._last_made()
        unchanged = last is not None and last == self._prev
        self._prev, self.proves, self.steady = last, False, unchanged
        kept = self._kept
        if kept is not None and kept.serves(last):  # no PID made since it was taken
            kept.answered += 1
            self.proves = True
            return kept.names
        try:
            names = os.listdir(self.root)
        except OSError:
            self._kept = None
            return []
        settled = last is not None and kept is not None and last == kept.made
        self._kept = _Kept([n for n in names if n.isdigit()], last, settled)
        if unchanged:
            # and none made while listing: read again (a PID reused meanwhile is listed)
            self._prev = self._last_made()
            self.proves = self._prev == last
        return self._kept.names

    def unchanged(self) -> bool:
        """Whether no PID was made since the last :meth:`names` call, nor between the call
        before and it (``steady``): then a directory of tasks listed in between (a
        process's ``task/``) shows, under each TID, the task that had it at the call
        before, or one gone since, as a listing with ``proves`` does."""
        return self.steady and self._last_made() == self._prev

    def forget(self, gone: list[str]) -> None:
        """Entries a scan found gone: not in the kept listing any more."""
        if gone and self._kept is not None:
            drop = set(gone)
            self._kept.names = [n for n in self._kept.names if n not in drop]

    def _last_made(self) -> bytes | None:
        """The last PID allocated, as ``/proc/loadavg`` spells it; None when unusable."""
        if self._usable is None:
            self._usable = names_this_process(self.root)
        if not self._usable:
            return None
        try:  # not open(): a buffered file object costs more than the read
            fd = os.open(f"{self.root}/loadavg", os.O_RDONLY)
            try:
                return os.read(fd, 256).rsplit(None, 1)[-1]
            finally:
                os.close(fd)
        except (OSError, IndexError):
            return None
