"""The ``-H`` half of the task scan: the threads of each watched process, its ``task/``
directory listed again only when one of the threads it listed last time ran.

:class:`ThreadRows` is owned by :class:`tiptop.engine.scan.tasks.TaskScanner` (whose module
doc, "Skipped reads", says when a task's ``stat`` is not read again); it keeps the threads
that did not run and hands the scanner the ones it read afresh.
"""

from __future__ import annotations

from collections.abc import Callable

from tiptop.engine.activity import Activity
from tiptop.engine.scan.listing import ProcListing
from tiptop.engine.scan.task import Proc, RunTime, Task, rest, stood
from tiptop.errors import TaskGone
from tiptop.kernel.procfs import Stat, list_threads
from tiptop.readonly import Slotted


class AtRest(Slotted):
    """The threads of a process none of which ran, kept whole (:meth:`ThreadRows.at_rest`):
    its listing (``tids``: the very list ``ThreadRows.listed`` holds), its rows in that
    order and those of them that were runnable when last looked at."""

    __slots__ = ("rows", "runnable", "tids")

    def __init__(self, tids: list[int], rows: list[tuple[int, Task]], runnable: list[Task]) -> None:
        self.tids = tids
        self.rows = rows
        self.runnable = runnable


class ThreadRows:
    """The thread rows of watched processes (``-H``), one scan at a time (:meth:`begin`)."""

    def __init__(self, proc_root: str, listing: ProcListing) -> None:
        self.proc_root = proc_root
        self.listing = listing
        #: pid -> the tids its ``task/`` directory listed at the last scan.
        self.listed: dict[int, list[int]] = {}
        #: This scan's processes none of whose threads ran, by their clock, or by their
        #: counters with none due a look (:meth:`unchanged`).
        self._stood: set[int] = set()
        #: pid -> its threads as :meth:`at_rest` kept them: stale once one of them is
        #: looked at (:meth:`scan`), its listing read again or the process forgotten
        #: (:meth:`forget`).
        self._at_rest: dict[int, AtRest] = {}
        self.begin(Activity(), {}, {}, _no_read, lambda t: 0)

    def begin(
        self,
        activity: Activity,
        procs: dict[int, Proc],
        old: dict[int, Task],
        read_stat: Callable[[str], Stat],
        run_time: RunTime,
        clocks: bool = False,
    ) -> None:
        """Start a scan: what the counters said of the last scan's tasks, the processes'
        facts, the last scan's tasks (``old``), how a ``stat`` is read and how a thread's
        run time is; ``clocks``: no PID was made since the last scan and a process's
        CPU-time clock may be read (``task.stood``)."""
        self._activity, self._procs, self._old = activity, procs, old
        self._read_stat, self._run_time, self._clocks = read_stat, run_time, clocks
        self._stood.clear()

    def unchanged(self, pid: int) -> list[int] | None:
        """The threads of watched process ``pid`` listed last time when none of them ran
        since: their counters say so (``Activity.none_ran``), or, when ``clocks``, the
        process's CPU-time clock stood (``task.stood``: threads without counters too, and
        then none of them is looked at, :meth:`at_rest`); None otherwise. Its ``stat`` is
        then not read again: an exec, a clone(2) or a rename (prctl(2) ``PR_SET_NAME``)
        is run by one of its threads, and its exit makes their pidfds readable
        (``engine.count.exits``), which keeps them out of the ones that did not run."""
        known = self.listed.get(pid)
        p = self._procs.get(pid)
        if not known or p is None or not p.watched:
            return None
        act = self._activity
        if act.none_ran(known):
            if all(map(act.not_due.__contains__, known)):  # each rested (Activity.rested)
                self._stood.add(pid)
            return known
        if self._clocks and stood(p) and all(map(self._old.__contains__, known)):
            self._stood.add(pid)
            return known
        return None

    def at_rest(self, pid: int) -> AtRest | None:
        """The threads of watched process ``pid`` when :meth:`unchanged` found that none of
        them ran and none is due a look: each at rest (``task.rest``), kept whole so that a
        process asleep since its last scan costs no step per thread; None otherwise (then
        :meth:`scan`)."""
        if pid not in self._stood:
            return None
        known = self.listed[pid]
        kept = self._at_rest.get(pid)
        if kept is None or kept.tids is not known:
            rows = [(tid, self._old[tid]) for tid in known]
            for _, t in rows:
                rest(t)
            runnable = [t for _, t in rows if t.state == "R"]
            kept = self._at_rest[pid] = AtRest(known, rows, runnable)
        return kept

    def forget(self, pid: int) -> None:
        """Process ``pid`` is no longer listed: nothing of it kept."""
        self.listed.pop(pid, None)
        self._at_rest.pop(pid, None)

    def scan(self, pid: int) -> list[tuple[int, Stat | None]]:
        """The live threads of watched process ``pid``, in their listing's order, each with
        its ``stat`` read afresh, or None when it did not run (``Activity.rested``; or
        without counters and its ``schedstat`` unmoved: its task is kept, at rest). The
        order is the rows': the same rows in the same order let the engine keep its
        readings (``same_tasks``).

        When none of the threads listed last time ran, none can have created a thread
        (clone(2) is run by one of them; the counters were read before that listing), so
        the listing is not read again: a 2000-thread process costs a 2000-entry directory
        read. A listing read while no PID was made stands for the marks of its threads
        (``ProcListing.unchanged``)."""
        root, act, run_time = self.proc_root, self._activity, self._run_time
        self._at_rest.pop(pid, None)  # some may be looked at
        known = self.listed.get(pid)
        proven = False
        if not known or not act.did_not_run.issuperset(known):
            try:
                known = self.listed[pid] = list_threads(root, pid)
            except (TaskGone, PermissionError):
                return []
            marks = act.marks
            if marks and not marks.keys().isdisjoint(known) and self.listing.unchanged():
                proven = True  # that listing shows each TID's task of the last scan
        get = self._old.get
        out: list[tuple[int, Stat | None]] = []
        for tid in known:
            t = get(tid)
            if t is not None and (
                act.rested(t, root, run_time, proven) or act.uncounted_slept(t, run_time)
            ):
                rest(t)
                out.append((tid, None))
                continue
            try:
                out.append((tid, self._read_stat(f"{root}/{pid}/task/{tid}/stat")))
            except (TaskGone, PermissionError):  # gone, or hidden from us: no row
                continue
        return out


def _no_read(path: str) -> Stat:
    raise TaskGone(path)
