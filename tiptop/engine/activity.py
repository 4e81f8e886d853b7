"""What the counters said of the last scan's tasks, handed to the next scan: one record.

The sampler reads every task's counters before it looks at ``/proc`` again
(``docs/architecture.md``, "One refresh"), and what that read learned saves the scan most
of its reads. :class:`Activity` carries it, with the rules that use it as its methods; the
scanner (``engine.scan.tasks``, ``engine.scan.threadscan``) reads it and calls nothing back.

*Why a task that did not run need not be read.* A task-bound event's ``time_enabled``
advances only while its task is on a CPU (perf_event_open(2), "time_enabled"), so a task
whose every group read fine with no enabled time did not run (:attr:`did_not_run`). Its
``stat`` cannot have changed: CPU times, state, CPU and thread count stay, and an exit,
an exec or a rename is done by the task itself, so it would have run. Its %CPU is 0 for
the interval.

Two things can hide a change from the counters, and the rules cover both:

- *Its identity.* A task that exited and whose PID was reused within one clock tick
  looks like one that slept. A pidfd says the exit (``engine.count.exits``: :attr:`exited`
  then holds the identity, and the task is not among :attr:`did_not_run`); a task
  without one is watched by its ``/proc/TID`` mark (inode and owner, ``task.dir_mark``),
  which must still hold (:attr:`marks`) unless no PID was made since the last scan (the
  listing then stands for it, ``engine.scan.listing``: a task gone since shows at the next
  refresh, its counters having moved as it ran to exit).
- *Counters that stopped counting.* A set-user-ID exec ends them (fs/exec.c
  ``begin_new_exec()``), and the task then looks asleep for good. So the tasks that did
  not run are still looked at in turns, one sweep group per refresh: :attr:`not_due`
  are those whose turn it is not, whose run time is not even read; the others' ``stat``
  is read only when their run time moved since (``task.slept``; read as
  ``task.run_time_reader`` says: a process's CPU-time clock, or a ``schedstat``).
  Only thread-group leaders (tid == pid: every process row, a process's first thread
  with ``-H``) are swept: an exec by any other thread first makes it the leader (fs/exec.c
  ``de_thread()``: it takes the leader's PID) and ends every other thread, whose exits
  their pidfds or counters show; so the row left counting nothing is the leader's
  (``engine.count.counters.Counts.activity``). A process row whose process's CPU-time
  clock was read before its counters (``engine.count.counters.RunClocks``) needs no
  turn: it is due exactly when that clock moved while its counters stood.

A task without counters (waiting for fds, refused: :attr:`uncounted`) is read when its
run time moved, while no PID was made since the last scan (where that run time is a
``schedstat``, in process mode single-threaded processes only: a process's ``schedstat``
is its main thread's).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import field

from tiptop.engine.scan.task import Identity, RunTime, Task, holds, slept
from tiptop.readonly import readonly

#: A ``/proc/TID`` entry's ``(inode, owner)`` (``task.dir_mark``).
Mark = tuple[int, int]


@readonly
class Activity:
    """What one read of the counters said of the last scan's tasks (see the module doc).
    The default is knowing nothing: every task is read."""

    #: tids of the tasks whose counters say they did not run since the last scan.
    did_not_run: set[int] | frozenset[int] = frozenset()
    #: Of :attr:`did_not_run`, those whose sweep turn it is not: not looked at at all.
    not_due: Set[int] = frozenset()
    #: tids of the tasks without counters (waiting for fds, refused).
    uncounted: Set[int] = frozenset()
    #: Identities of the tasks whose pidfd said they exited.
    exited: Set[Identity] = frozenset()
    #: tid -> ``/proc/TID`` mark of the tasks of :attr:`did_not_run` without a pidfd.
    marks: Mapping[int, Mark] = field(default_factory=dict)

    def rested(self, t: Task, root: str, run_time: RunTime, marks_proven: bool = False) -> bool:
        """Whether ``t`` (of the last scan, under ``/proc`` at ``root``) did not run and is
        the same task: its counters say so, its mark holds (or ``marks_proven``: a listing
        stands for it), and it is not due a look, or its ``run_time`` did not move."""
        tid = t.tid
        if tid not in self.did_not_run:
            return False
        marks = self.marks
        if not marks_proven and marks and tid in marks and not holds(root, str(tid), marks[tid]):
            return False
        return tid in self.not_due or slept(t, run_time(t))

    def uncounted_slept(self, t: Task, run_time: RunTime, again: bool = False) -> bool:
        """Whether ``t`` has no counters and its ``run_time`` did not move. ``again``: the
        scan looks at ``t`` again when it did move (with ``-H``, a single-threaded
        process's row, then its thread's: the same task), so this look keeps the
        reference it compared with for that one."""
        if t.tid not in self.uncounted:
            return False
        if again:
            ran = run_time(t)
            return ran != 0 and ran == t.runtime
        return slept(t, run_time(t))

    def none_ran(self, tids: Iterable[int]) -> bool:
        """Whether the counters say that none of ``tids`` ran, none of them watched by
        a mark (which would have to be checked): a process's threads (``-H``)."""
        tids = list(tids)
        if not tids or not self.did_not_run.issuperset(tids):
            return False
        return not self.marks or self.marks.keys().isdisjoint(tids)


__all__ = ["Activity", "Identity", "Mark"]
