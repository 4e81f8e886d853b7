"""What the attacher keeps per watched task (:class:`TaskCounters`: its open units, retired
counts, pidfd or ``/proc`` mark), the rows of one read kept between refreshes while nothing
changes (:class:`RowReading`), and what one refresh read for its rows (:class:`Counts`).
The reading itself, and the numbers, are ``engine.count.readout``'s."""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import field

import numpy as np

from tiptop.engine.activity import Activity
from tiptop.engine.count.readout import CounterPlan, Reading, Readout, unit_totals
from tiptop.engine.count.units import Unit
from tiptop.engine.scan.task import Identity, Task, same_tasks
from tiptop.readonly import mutable


class Changes:
    """How many times the attacher's per-task counters changed: a task's units, pidfd,
    mark or spawned flag set (by :class:`TaskCounters` itself, as each is assigned). A
    :class:`RowReading` made at one count is stale once it moved; the attacher owns one."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


class TaskCounters:
    """The counters of one watched task. Setting ``units``, ``exit_fd``, ``mark`` or
    ``spawned`` counts a change in ``changes`` (what a kept :class:`RowReading` holds)."""

    __slots__ = (
        "_exit_fd",
        "_mark",
        "_spawned",
        "_units",
        "changes",
        "denied",
        "ran",
        "retired",
        "tries",
    )

    def __init__(self, changes: Changes) -> None:
        self.changes = changes
        self._units: list[Unit] = []
        self._spawned = False
        self._exit_fd: int | None = None
        self._mark: tuple[int, int] | None = None
        #: Counts of groups closed while the task lived (reclaim, read error), per alias.
        self.retired: np.ndarray | None = None
        #: Refused for good (EACCES...): never retried for this identity.
        self.denied = False
        #: Failed attaches in a row that look like a race with the task (``_raced``).
        self.tries = 0
        #: Its process's CPU-time clock (ns) when its units were last read, where the
        #: clock stands for them (:class:`RunClocks`); 0: none to go by. Set by the
        #: reading; stale when its units change (the setter sets it to 0).
        self.ran = 0

    @property
    def units(self) -> list[Unit]:
        """Its open groups (set a new list: a list changed in place counts no change)."""
        return self._units

    @units.setter
    def units(self, units: list[Unit]) -> None:
        self._units = units
        self.ran = 0
        self.changes.n += 1

    @property
    def spawned(self) -> bool:
        """Its counters were opened before its exec (``enable_on_exec``): disabled until
        then, so an interval without enabled time does not mean it did not run."""
        return self._spawned

    @spawned.setter
    def spawned(self, spawned: bool) -> None:
        self._spawned = spawned
        self.changes.n += 1

    @property
    def exit_fd(self) -> int | None:
        """A pidfd of the task, readable once it has exited (``ExitWatch``), or None."""
        return self._exit_fd

    @exit_fd.setter
    def exit_fd(self, fd: int | None) -> None:
        self._exit_fd = fd
        self.changes.n += 1

    @property
    def mark(self) -> tuple[int, int] | None:
        """Its ``/proc/PID`` mark when it has no pidfd (``engine.count.exits``), or None."""
        return self._mark

    @mark.setter
    def mark(self, mark: tuple[int, int] | None) -> None:
        self._mark = mark
        self.changes.n += 1

    def retire(self, plan: CounterPlan, units: Sequence[Unit]) -> None:
        """Keep what ``units`` counted (to their last read) in the task's total, before
        they are closed while the task lives."""
        kept = unit_totals(plan, units)
        self.retired = kept if self.retired is None else self.retired + kept


#: Which rows' groups a process's CPU-time clock stands for (:class:`RunClocks`): the
#: attacher's rule, asked of each row with counters when a reading is made.
Clocked = Callable[[Task, TaskCounters], bool]


class RunClocks:
    """The rows of a :class:`RowReading` whose groups are read only when their process ran,
    and their processes' CPU-time clocks at their last read (``TaskCounters.ran``).

    *Why a group need not be read while its process's clock stands.* A task-bound event
    counts, and its times advance, only while its task is on a CPU (perf_event_open(2),
    "time_enabled"; kernel/events/core.c ``update_context_time()``), and a process's
    CPU-time clock (clock_getcpuclockid(3)) is its threads' time on a CPU, the exited
    ones' included (kernel/sched/cputime.c ``thread_group_cputime()``). While the clock of
    a row's process stands, no thread of it ran, so a read of the row's groups would give
    the words of their last read: those are taken instead, one system call for the process
    in place of a ``read(2)`` per group (benchmarks/README.md has both costs). Its counts
    are never lost: a group read later gives all it counted since its last read.

    One exception, and what it costs. The clock read from another process leaves out the
    time a thread now on a CPU ran since the scheduler last charged it (at its last tick
    or switch: ``thread_group_cputime()`` adds only the caller's own pending time, since
    Linux 4.8's "sched/cputime: Improve scalability by not accounting thread group tasks
    pending runtime"). So a process that slept all the interval, then woke less than a
    tick before the read and is still on a CPU, reads as stood: that run's counts are
    taken at its next read, with that interval's, as its CPU time is by ``/proc`` (its
    ``stat`` times are the same clock's). A test that needs a run's counts in its own
    interval waits for the task off its CPU (tests/system/scripted_child.py
    ``Child.settle``; commit 27c8a53 has the measure). Where some CPUs run without
    the tick (``nohz_full``), the scheduler charges a lone running task there about once a
    second: a whole refresh's run could be late, so the sampler reads every group there
    (``Host.tickless``).

    That holds for groups on the process's own threads only, which is the attacher's rule
    (:data:`Clocked`): per-thread groups (``-H``) and process rows' groups with
    ``inherit_thread`` (a thread made later counts into its creator's group, and its time
    is on the clock); not a spawned command's tree, whose child processes' counts fold in at
    their exit (kernel/events/core.c ``perf_event_exit_task()``) while their time is on
    their own clocks, nor groups disabled until an exec. A clock that cannot be read (0:
    gone) and a read that failed leave nothing to go by: the row is read next time."""

    def __init__(
        self, rows: Sequence[Task], states: Sequence[TaskCounters], clocked: Clocked
    ) -> None:
        self.n = len(rows)
        picked = [i for i, (t, st) in enumerate(zip(rows, states, strict=True)) if clocked(t, st)]
        #: The rows it covers, their counters and where each row's process is in ``pids``.
        self.rows = np.array(picked, np.intp)
        self._states = [states[i] for i in picked]
        first: dict[int, int] = {}
        pids = (rows[i].pid for i in picked)
        self._at = np.fromiter((first.setdefault(p, len(first)) for p in pids), np.intp)
        #: The processes whose clocks are read (one each, also for many ``-H`` rows).
        self.pids = list(first)
        self._last = np.fromiter((st.ran for st in self._states), np.int64, len(picked))
        self._now = self._last
        self._told = np.zeros(len(picked), bool)

    def moved(self, run_times: Callable[[Sequence[int]], list[int]]) -> np.ndarray:
        """Per row of the reading: whether its groups are to be read now, its process's
        clock (``run_times``, ``Backend.run_times``) having moved since their last read or
        not covered here."""
        now = np.array(run_times(self.pids), np.int64)[self._at]
        self._now = now
        #: Rows whose clock was read now and at their groups' last read.
        self._told = (now != 0) & (self._last != 0)
        moved = np.ones(self.n, bool)
        moved[self.rows[self._told & (now == self._last)]] = False
        return moved

    def told(self) -> np.ndarray:
        """Per row of the reading: whether the last :meth:`moved` said from its process's
        clock whether it ran: covered here, the clock read then and at its groups' last
        read (not the first read after their opening; a clock that reads 0, a kernel
        thread's that never ran, says nothing)."""
        told = np.zeros(self.n, bool)
        told[self.rows[self._told]] = True
        return told

    def read(self, failed: Iterable[int]) -> None:
        """The rows' groups were read as :meth:`moved` said, those of the rows ``failed``
        not all fine: each other row keeps the clock read before its groups."""
        now = self._now
        changed = np.flatnonzero(now != self._last).tolist()
        states = self._states
        for j, ns in zip(changed, now[changed].tolist(), strict=True):
            states[j].ran = ns
        self._last = now
        for row in failed:
            for j in np.flatnonzero(self.rows == row).tolist():
                states[j].ran = now[j] = 0


class RowReading:
    """The counters of the rows of one read, kept by ``engine.count.attach.Attacher`` for the
    next while nothing changes: the same rows (the scanner's ``Task`` objects, in order)
    and no change counted in ``changes`` since (:class:`Changes`): a refresh then looks up
    no task's state and orders no unit (:class:`Reading`)."""

    def __init__(
        self,
        plan: CounterPlan,
        rows: Sequence[Task],
        counters: dict[Identity, TaskCounters],
        changes: Changes,
        clocked: Clocked | None = None,
        trees: Container[int] = (),
    ) -> None:
        self.rows = list(rows)
        self.tids = np.fromiter((t.tid for t in rows), np.int64, len(rows))
        #: Rows whose task leads its thread group (tid == pid): every process row.
        self.leaders = np.fromiter((t.tid == t.pid for t in rows), bool, len(rows))
        self._changes, self._made_at = changes, changes.n
        none = TaskCounters(Changes())  # a row without counters
        self.states = [counters.get(t.key) or none for t in rows]
        self.reading = Reading(plan, [s.units for s in self.states])
        #: Rows that stand for a process tree (``trees``: their pids): their groups are
        #: inherited, so one unit's time adds its children's, which may run side by side.
        self.inherited = np.fromiter((t.pid in trees for t in rows), bool, len(rows))
        #: The rows read only when their process ran, where ``clocked`` says so of some.
        self.clocks = None if clocked is None else RunClocks(rows, self.states, clocked)
        # Rows without a pidfd or spawned, whose idleness says less (``Attacher.read``):
        # those it says nothing of (spawned, or without a mark either), and those watched
        # by their /proc mark (their tids and marks), fixed while the reading is kept.
        unsure: list[int] = []
        marked: list[int] = []
        #: The marks of the rows in ``marked``.
        self.marks: list[tuple[int, int]] = []
        for i, st in enumerate(self.states):
            if st.spawned or (st.exit_fd is None and st.mark is None):
                unsure.append(i)
            elif st.exit_fd is None and st.mark is not None:
                marked.append(i)
                self.marks.append(st.mark)
        self.unsure = np.array(unsure, np.intp)
        self.marked = np.array(marked, np.intp)
        self.marked_tids = self.tids[self.marked]

    def holds(self, rows: Sequence[Task]) -> bool:
        """Whether ``rows`` are this reading's rows, in the same order, and no task's
        counters changed since it was made."""
        return self._changes.n == self._made_at and same_tasks(rows, self.rows)

    def watched_marks(self, idle: np.ndarray) -> dict[int, tuple[int, int]]:
        """tid -> ``/proc/TID`` mark of the rows watched by their mark that ``idle`` says
        did not run (none has a pidfd, so none is among those a pidfd said ended)."""
        sel = np.flatnonzero(idle[self.marked])
        tids = self.marked_tids[sel].tolist()
        return dict(zip(tids, map(self.marks.__getitem__, sel.tolist()), strict=True))

    def retired(self) -> list[np.ndarray | None]:
        """Each row's counts of groups closed while it lived (``TaskCounters.retired``)."""
        return [s.retired for s in self.states]


@mutable
class Counts:
    """What one refresh read for its rows: the readout, each row's retired totals, and
    what it says of each row's task for the next scan (:meth:`activity`)."""

    readout: Readout
    retired: list[np.ndarray | None]
    #: Rows known not to have run: every read fine, no enabled time, and the task's exit
    #: would have been seen (a pidfd or a mark; not a spawned command's counters, which
    #: are disabled until its exec).
    did_not_run: np.ndarray
    #: Identities of the rows whose task has exited (their pidfd said so).
    exited: set[Identity]
    #: tid -> ``/proc/TID`` mark of the rows that did not run, watched without a pidfd.
    marks: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: Each row's tid (int64).
    tids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: Seconds between the previous read of the counters and this one (0: the first).
    window: float = 0.0
    #: Rows whose task leads its thread group (tid == pid), the only ones a sweep looks at
    #: (:meth:`activity`); None: every row.
    leaders: np.ndarray | None = None
    #: Process rows whose process's CPU-time clock was read before their groups
    #: (``RunClocks.told``), which no sweep looks at (:meth:`activity`); None: none.
    clocked: np.ndarray | None = None
    #: Per row, whether its groups were read: its clock moved, or none to go by; None:
    #: every row's were.
    moved: np.ndarray | None = None

    def take(self, rows: Sequence[int]) -> Counts:
        """The counts of some rows, in the given order."""
        idx = list(rows)
        return Counts(
            self.readout.take(idx),
            [self.retired[i] for i in idx],
            self.did_not_run[idx],
            self.exited,
            self.marks,
            self.tids[idx],
            self.window,
            None if self.leaders is None else self.leaders[idx],
            None if self.clocked is None else self.clocked[idx],
            None if self.moved is None else self.moved[idx],
        )

    def activity(self, sweep: int, turn: int) -> Activity:
        """What these counts say of the tasks for the next scan (``engine.activity``): the
        thread-group leaders that did not run whose tid is ``turn`` modulo ``sweep`` are
        due a look (why leaders only: ``engine.activity``, "Counters that stopped"); but a
        process row whose clock was read is due exactly when its clock moved while its
        counters say it did not run (counters that ended, or it ran just before their
        last read), never by turn."""
        tids, still = self.tids, self.did_not_run
        due = still & (tids % sweep == turn)
        if self.leaders is not None:
            due &= self.leaders
        if self.clocked is not None and self.moved is not None:
            due = np.where(self.clocked, still & self.moved, due)
        return Activity(
            did_not_run=set(tids[still].tolist()),
            not_due=set(tids[still & ~due].tolist()),
            uncounted=set(tids[self.readout.nread.sum(axis=1) == 0].tolist()),
            exited=self.exited,
            marks=self.marks,
        )
