"""The ``-H`` half of the task scan: the threads of each watched process, its ``task/``
directory listed again only when one of the threads it listed last time ran.

:class:`ThreadRows` is owned by :class:`tiptop.engine.tasks.TaskScanner` (whose module
doc, "Skipped reads", says when a task's ``stat`` is not read again); it keeps the threads
that did not run and hands the scanner the ones it read afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Set

from tiptop.engine.listing import ProcListing
from tiptop.engine.task import Proc, Task, holds, rest, slept
from tiptop.errors import TaskGone
from tiptop.kernel.procfs import Stat, list_threads

#: tid -> ``/proc/TID`` mark of the idle tasks watched without a pidfd (``engine.exits``).
Marks = dict[int, tuple[int, int]]
#: Takes a thread read afresh: ``take(tid, pid, proc, stat)``.
Take = Callable[[int, int, Proc, Stat], None]


class ThreadRows:
    """The thread rows of watched processes (``-H``), one scan at a time (:meth:`begin`)."""

    def __init__(self, proc_root: str, listing: ProcListing) -> None:
        self.proc_root = proc_root
        self.listing = listing
        #: pid -> the tids its ``task/`` directory listed at the last scan.
        self.listed: dict[int, list[int]] = {}
        self.begin({}, {}, {}, frozenset(), frozenset(), frozenset(), None, _no_read, _no_take)

    def begin(
        self,
        procs: dict[int, Proc],
        old: dict[int, Task],
        seen: dict[int, Task],
        quiet: Set[int],
        idle: Set[int],
        unseen: Set[int],
        marks: Marks | None,
        read_stat: Callable[[str], Stat],
        take: Take,
    ) -> None:
        """Start a scan: the processes' facts, the last scan's tasks (``old``), where the
        rows kept go (``seen``), what is known of the tasks that did not run (the scan's
        ``quiet``, ``idle``, ``unseen`` and ``marks``), how a ``stat`` is read, and who
        takes a thread read afresh."""
        self._procs, self._old, self._seen = procs, old, seen
        self._quiet, self._idle, self._unseen, self._marks = quiet, idle, unseen, marks
        self._read_stat, self._take = read_stat, take

    def unchanged(self, pid: int) -> list[int] | None:
        """The threads of watched process ``pid`` listed last time when none of them ran
        since (all quiet, none watched by a mark instead of a pidfd); None otherwise. Its
        ``stat`` is then not read again: an exec, a clone(2) or a rename (prctl(2)
        ``PR_SET_NAME``) is run by one of its threads, and its exit makes their pidfds
        readable (``engine.exits``), which keeps them out of the quiet ones."""
        known = self.listed.get(pid)
        p = self._procs.get(pid)
        if not known or p is None or not p.watched or not self._quiet.issuperset(known):
            return None
        marks = self._marks
        return known if not marks or marks.keys().isdisjoint(known) else None

    def scan(self, pid: int, p: Proc) -> None:
        """The live threads of watched process ``pid``, in their listing's order: each that
        did not run kept (quiet and, unless idle, its ``schedstat`` unmoved; or unseen,
        without counters, and its ``schedstat`` unmoved), the others' ``stat`` read and
        taken. The order is the rows': the same rows in the same order let the engine keep
        its readings (``same_tasks``).

        When none of the threads listed last time ran, none can have created a thread
        (clone(2) is run by one of them; the counters were read before that listing), so
        the listing is not read again: a 2000-thread process costs a 2000-entry directory
        read. A listing read while no PID was made stands for the marks of its threads
        (``ProcListing.unchanged``)."""
        root, quiet, marks = self.proc_root, self._quiet, self._marks
        known = self.listed.get(pid)
        if not known or not quiet.issuperset(known):
            try:
                known = self.listed[pid] = list_threads(root, pid)
            except (TaskGone, PermissionError):
                return
            if marks and not marks.keys().isdisjoint(known) and self.listing.unchanged():
                # That listing shows each TID's task of the last scan: no mark to check
                # (at 5000 threads, ~4000 gave up their pidfds: a stat(2) each).
                marks = None
        idle, unseen, seen, get = self._idle, self._unseen, self._seen, self._old.get
        for tid in known:
            if (
                tid in quiet
                and (t := get(tid)) is not None
                # without a pidfd (engine.exits): its mark still holds
                and (not marks or tid not in marks or holds(root, str(tid), marks[tid]))
                and (tid in idle or slept(t, f"{root}/{pid}/task/{tid}/schedstat"))
            ) or (
                tid in unseen  # without counters: read when its own run time moved
                and (t := get(tid)) is not None
                and slept(t, f"{root}/{pid}/task/{tid}/schedstat")
            ):
                rest(t)
                seen[tid] = t
                continue
            try:
                st = self._read_stat(f"{root}/{pid}/task/{tid}/stat")
            except (TaskGone, PermissionError):  # gone, or hidden from us: no row
                continue
            self._take(tid, pid, p, st)


def _no_read(path: str) -> Stat:
    raise TaskGone(path)


def _no_take(tid: int, pid: int, p: Proc, st: Stat) -> None:
    pass
