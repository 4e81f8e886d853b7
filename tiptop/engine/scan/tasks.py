"""The tasks a user may watch, read from ``/proc`` at every refresh (listed:
``engine.scan.listing``).

A task is identified by ``(tid, starttime)`` (proc(5): ``starttime`` is field 22 of
``/proc/PID/stat``, in clock ticks since boot), so a reused PID is a new task and two
processes are never mixed. Ownership follows the original (docs/original.md section 7.1):
a non-root user sees the processes whose *real* uid (``Uid:`` of ``/proc/PID/status``)
is its effective uid; root sees everything. ``-u`` filters on top of that.

A task that ran costs one ``stat`` read by hand (per process in process mode: its ``stat``
sums every thread's times, proc(5)). A process identity's real uid, user name and command line
are read (``facts_reader``) at discovery and when ``comm`` changes (an ``execve``).
%CPU comes from ``utime``/``stime`` deltas (fields 14 and 15, in ``sysconf(_SC_CLK_TCK)``
ticks), seeded at discovery so the first value covers a real interval. A task seen ended
(a zombie not reaped yet) has its final CPU times taken, so its last interval's %CPU is
right, and is then reported gone. A task that vanishes between two looks (ENOENT/ESRCH) is
dropped silently (a task reaped before we saw it a zombie has ``final`` unset: the sampler
then takes its last %CPU from its counters' on-CPU time), and so is one whose files we may
not read (EACCES). Reading the files is ``tiptop.kernel.procfs``.

*Skipped reads.* ``scan(activity)`` takes what the counters said of the last scan's tasks
(``engine.activity``: which did not run, which have no counters, which exited, which are
watched by their ``/proc`` mark) and reads no ``stat`` that cannot have changed; the rules
and why they hold are that module's. Not used for process trees (a tree root's row sums
its descendants' times); with ``-H`` a process none of whose threads ran is neither
listed nor read again, only its threads (``engine.scan.threadscan``). Another user's process
is not read again while its ``/proc/PID`` mark stays (``dir_mark``), nor one of ours that is
not watched (``-p``, a name filter) while its CPU-time clock stands and no PID was made
(``task.stood``: it did not run, so it did not exec nor rename itself).
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Set
from dataclasses import field
from functools import partial

from tiptop.engine.activity import Activity
from tiptop.engine.scan.listing import ProcListing
from tiptop.engine.scan.task import (
    Proc,
    RunTime,
    Scan,
    Task,
    account,
    dir_mark,
    holds,
    run_time_reader,
    stood,
)
from tiptop.engine.scan.threadscan import ThreadRows
from tiptop.engine.scan.trees import Family, Root, fold, tree_root
from tiptop.errors import TaskGone
from tiptop.kernel.procfs import (
    CLK_TCK,
    Facts,
    Stat,
    clocks_readable,
    list_threads,
    parse_stat,
    read_facts,
    read_file,
    read_stat,
    uptime_ticks,
)
from tiptop.readonly import mutable

__all__ = [
    "CLK_TCK",
    "Facts",
    "Scan",
    "Stat",
    "Task",
    "TaskScanner",
    "list_threads",
    "parse_stat",
    "read_facts",
    "read_file",
    "read_stat",
]


@mutable
class _Walk:
    """One scan's working state, shared by its steps (:meth:`TaskScanner.scan`). Made once
    a scan: a record that compiles nothing at import (``tiptop.readonly``)."""

    old: dict[int, Task]
    interval: float
    #: Tree roots (pid -> starttime); None with ``-H``.
    trees: dict[int, int] | None
    activity: Activity
    seen: dict[int, Task] = field(default_factory=dict)
    new: list[Task] = field(default_factory=list)
    #: PIDs still listed (their processes' facts are kept).
    live: set[int] = field(default_factory=set)
    vanished: list[str] = field(default_factory=list)
    #: Tree mode only: pid -> (ppid, user ticks, system ticks) of every process.
    fam: Family = field(default_factory=dict)
    roots: list[Root] = field(default_factory=list)
    threads_total: int = 0
    #: No PID was made since the last scan and clocks can be read, outside tree mode: one of
    #: our processes that is not watched is not read while its clock stands (``stood``).
    clocks: bool = False
    #: Tasks seen before and read afresh, and those kept as they were while runnable
    #: (``Scan.looked``, ``Scan.queued``).
    looked: list[Task] = field(default_factory=list)
    queued: list[Task] = field(default_factory=list)


class TaskScanner:
    """Finds the watched tasks at each :meth:`scan` and keeps their CPU accounting.

    ``threads`` selects thread rows (``-H``); ``uid`` keeps only that real uid;
    ``only_pid``/``only_name`` (substring of the name, or of the command line with
    ``match_cmdline``) restrict discovery as ``-p`` does. ``euid`` defaults to ours;
    0 means every process is visible. ``stat_reader`` reads one stat file (tests inject
    failures through it); ``facts_reader(pid, comm)`` reads the facts of a new process
    identity (by default :func:`~tiptop.kernel.procfs.read_facts` under ``proc_root``).
    ``cpu_clock``: processes' CPU-time clocks are read (``procfs.process_cpu_ns``): a
    process row's run time (``task.run_time_reader``; a ``-H`` row's is its thread's
    ``schedstat``), and whether one of ours that is not watched ran; by default where
    ``proc_root`` is ``/proc`` and of this PID namespace.

    *Process trees* (:meth:`add_tree_root`, for ``tiptop -- cmd``): in process mode a tree
    root's row stands for its whole process tree (``engine.scan.trees``).
    """

    def __init__(
        self,
        proc_root: str = "/proc",
        *,
        threads: bool = False,
        uid: int | None = None,
        only_pid: int | None = None,
        only_name: str | None = None,
        match_cmdline: bool = False,
        euid: int | None = None,
        stat_reader: Callable[[str], Stat] | None = None,
        facts_reader: Callable[[int, str], Facts] | None = None,
        clock: Callable[[], float] = time.monotonic,
        cpu_clock: bool | None = None,
    ) -> None:
        self.proc_root = proc_root
        #: Monotonic seconds, for the scan's interval (``Host.clock.monotonic``).
        self._clock = clock
        self._listing = ProcListing(proc_root)
        self._read_stat = stat_reader or read_stat
        self._read_facts = facts_reader or partial(read_facts, proc_root)
        #: pid -> starttime of the process-tree roots (see the class doc).
        self.tree_roots: dict[int, int] = {}
        #: Live descendants of each tree root present in the last scan.
        self.tree: dict[int, list[int]] = {}
        self.threads = threads
        if cpu_clock is None:
            cpu_clock = clocks_readable(proc_root)
        #: Processes' CPU-time clocks can be read (see the class doc).
        self._cpu_clock = cpu_clock
        #: A row's time on a CPU (``engine.activity``'s rules read it).
        self._run_time: RunTime = run_time_reader(proc_root, threads, cpu_clock and not threads)
        #: That time is every thread's (a process's CPU-time clock), not its main thread's.
        self._run_time_whole = cpu_clock and not threads
        self.uid = uid
        self.only_pid = only_pid
        self.only_name = only_name
        self.match_cmdline = match_cmdline
        self.euid = os.geteuid() if euid is None else euid
        # pid -> identity and facts of every process seen (watched or not), so that a
        # process is examined (status, cmdline) once per identity, not once per refresh.
        self._procs: dict[int, Proc] = {}
        self._tasks: dict[int, Task] = {}
        self._last: float | None = None
        self._exited: Set[tuple[int, int]] = frozenset()
        self._uptime: float | None = None
        #: With ``-H``: the threads of each watched process (``engine.scan.threadscan``).
        self._thread_rows = ThreadRows(proc_root, self._listing)
        #: Bumped whenever a known task's name, command line or user changes (an exec).
        self.renames = 0
        #: This scan's tasks seen before and read afresh (``Scan.looked``).
        self._looked: list[Task] = []

    # ------------------------------------------------------------------ processes
    def _examine(self, pid: int, st: Stat) -> Proc:
        """A process seen for the first time (or after an exec): ownership and filters."""
        # Before the facts: an owner change after this look shows at the next one. Root
        # without -u owns every process: no mark is ever kept, so none is taken.
        every = self.euid == 0 and self.uid is None
        mark = None if every else dir_mark(f"{self.proc_root}/{pid}")
        uid, user, cmdline = self._read_facts(pid, st.comm)
        ours = (self.euid == 0 or uid == self.euid) and (self.uid is None or uid == self.uid)
        watched = ours
        if watched and self.only_pid is not None:
            watched = pid == self.only_pid
        if watched and self.only_name is not None:
            watched = self.only_name in (cmdline if self.match_cmdline else st.comm)
        return Proc(pid, st.starttime, st.comm, uid, user, cmdline, watched, None if ours else mark)

    @property
    def tasks(self) -> list[Task]:
        """The live tasks of the last scan (what the next scan starts from)."""
        return list(self._tasks.values())

    def scan(self, activity: Activity | None = None) -> Scan:
        """Look at ``/proc`` once; see :class:`Scan`. ``activity``: what the counters said
        of the last scan's tasks (``engine.activity``); None: nothing, read every task."""
        activity = Activity() if activity is None else activity
        self._exited = activity.exited
        self._looked = []
        now = self._clock()
        interval = 0.0 if self._last is None else now - self._last
        self._last = now
        self._uptime = None
        trees = self.tree_roots if not self.threads else None
        walk = _Walk(self._tasks, interval, trees, activity)
        names = self._names(trees)
        walk.clocks = self._cpu_clock and self._listing.steady and not self.tree_roots
        if activity.uncounted and (trees or not self._listing.steady):
            # A PID made since the last scan could stand for another task now: read all.
            walk.activity = dataclasses.replace(activity, uncounted=frozenset())
        self._walk(walk, names)
        return self._settle(walk)

    def _walk(self, w: _Walk, names: list[str]) -> None:
        """Each listed process: kept as it was when it did not run (``Activity``'s rules,
        no read of its ``stat``), else looked at afresh (:meth:`_visit`)."""
        root, old, seen, live, act = self.proc_root, w.old, w.seen, w.live, w.activity
        run_time, whole = self._run_time, self._run_time_whole
        again = self.threads  # -H: its thread's row is that task too (ThreadRows.scan)
        proven = self._listing.proves  # the listing stands for the marks (engine.scan.listing)
        # Process rows only: a tree root's row sums its tree; -H rows are threadscan's.
        flat = not w.trees and not self.threads
        threads = self._thread_rows if self.threads else None
        if threads is not None:  # -H: this scan for the thread rows (engine.scan.threadscan)
            threads.begin(act, self._procs, old, self._read_stat, run_time, w.clocks)
        threads_total = 0
        for name in names:
            pid = int(name)
            t = old.get(pid)
            if t is not None and (
                (flat and act.rested(t, root, run_time, proven))
                # its run time is every thread's (or a schedstat, its only thread's)
                or ((whole or t.num_threads == 1) and act.uncounted_slept(t, run_time, again))
            ):
                # It did not run: no new look at its stat (rest(t), inlined: per task).
                seen[pid] = t
                t.cpu_user = t.cpu_sys = t.cpu_total = 0.0
                t.new = False
                live.add(pid)
                threads_total += t.num_threads
                if t.state == "R":
                    w.queued.append(t)
                continue
            if threads is not None and (known := threads.unchanged(pid)) is not None:
                live.add(pid)
                threads_total += len(known)
                self._take_threads(w, pid, self._procs[pid])
                continue
            threads_total += self._visit(w, pid, name)
        w.threads_total = threads_total

    def _visit(self, w: _Walk, pid: int, name: str) -> int:
        """Process ``pid``, read afresh: its row (its threads' rows with ``-H``, its tree's
        in tree mode) updated; how many threads it adds to the total."""
        p = self._procs.get(pid)
        foreign = p.foreign if p is not None and not w.trees else None
        if foreign is not None and holds(self.proc_root, name, foreign):
            w.live.add(pid)  # another user's still: no read
            return 0
        if w.clocks and p is not None and not p.watched and p.foreign is None and stood(p):
            w.live.add(pid)  # ours, filtered out, and it did not run: no exec, no rename
            return 0
        looked = self._look(pid, w.activity.exited, w.vanished)
        if looked is None:
            return 0
        p, st = looked
        w.live.add(pid)
        # A zombie leader whose other threads still run is a live process (its
        # nr_threads still counts them; proc(5) "num_threads").
        ended = st.state in "ZX" and st.num_threads <= 1
        if w.trees:
            w.fam[pid] = (st.ppid, st.utime + st.cutime, st.stime + st.cstime)
            if w.trees.get(pid) == st.starttime:
                look = partial(self._last_look, w.old, interval=w.interval)
                return tree_root(p, st, ended, w.fam, w.roots, look)
        if not p.watched:
            return 0
        if ended:
            if pid in w.old:
                self._last_look(w.old, pid, self._own_stat(pid, st), w.interval)
            return 0
        if not self.threads:
            self._update(w.seen, w.new, w.old, pid, pid, p, st, w.interval)
        else:
            self._take_threads(w, pid, p)
        return st.num_threads

    def _settle(self, w: _Walk) -> Scan:
        """The scan's result: processes no longer listed forgotten, tree roots' rows
        folded from their trees (``engine.scan.trees``), the tasks not seen again gone."""
        self._listing.forget(w.vanished)
        procs = self._procs
        for pid in procs.keys() - w.live:
            del procs[pid]
            self._thread_rows.forget(pid)
        if w.trees is not None:
            self.tree = {}
        seen, new = w.seen, w.new
        if w.roots:

            def root_row(pid: int, p: Proc, st: Stat) -> None:  # from its tree's CPU times
                self._update(seen, new, w.old, pid, pid, p, st, w.interval)

            hidden = fold(w.roots, w.fam, self.tree, root_row)
            for c in hidden:
                seen.pop(c, None)
            new = [t for t in new if t.pid not in hidden] if hidden else new
        gone = [t for tid, t in w.old.items() if seen.get(tid) is not t]
        self._tasks = seen
        looked, self._looked = self._looked, []
        return Scan(list(seen.values()), new, gone, w.interval, w.threads_total, looked, w.queued)

    def _names(self, trees: dict[int, int] | None) -> list[str]:
        """The ``/proc`` PID entries to look at (``engine.scan.listing``); -p PID: that one only."""
        names = self._listing.names()
        if self.only_pid is None or trees:
            return names
        # -p PID: no other can ever be watched; listed: a process, not a thread
        return [n for n in (str(self.only_pid),) if n in names]

    def _look(
        self, pid: int, exited: Set[tuple[int, int]], vanished: list[str]
    ) -> tuple[Proc, Stat] | None:
        """Process ``pid``'s facts and ``stat`` now; None when gone (added to ``vanished``)
        or hidden. A new identity, an exec or a PID reused within a tick is examined again."""
        try:
            st = self._read_stat(f"{self.proc_root}/{pid}/stat")
            p = self._procs.get(pid)
            reused = (pid, st.starttime) in exited and st.state not in "ZX"
            if p is None or p.starttime != st.starttime or p.comm != st.comm or reused:
                p = self._procs[pid] = self._examine(pid, st)
        except TaskGone:
            vanished.append(str(pid))
            return None
        except PermissionError:  # hidden: still listed, looked at again
            return None
        return p, st

    def _take_threads(self, w: _Walk, pid: int, p: Proc) -> None:
        """With ``-H``: the threads of watched process ``pid`` (``ThreadRows``): kept as
        they were when they did not run, else their rows updated, or their last look
        taken when they ended."""
        kept = self._thread_rows.at_rest(pid)
        if kept is not None:  # none ran, none due a look: kept whole
            w.seen.update(kept.rows)
            w.queued += kept.runnable
            return
        for tid, st in self._thread_rows.scan(pid):
            if st is None:
                t = w.seen[tid] = w.old[tid]
                if t.state == "R":
                    w.queued.append(t)
            elif st.state in "ZX":
                self._last_look(w.old, tid, st, w.interval)
            else:
                self._update(w.seen, w.new, w.old, tid, pid, p, st, w.interval)

    def add_tree_root(self, pid: int, starttime: int) -> None:
        """Make process ``(pid, starttime)`` a tree root (see the class doc)."""
        self.tree_roots[pid] = starttime

    def _last_look(self, old: dict[int, Task], tid: int, st: Stat, interval: float) -> None:
        """A watched task seen ended (a zombie, not reaped yet): its final CPU times give
        its last interval's %CPU (proc(5): a zombie's ``stat`` stays readable until its
        parent waits for it). It is then left out of the scan, hence reported gone."""
        t = old.get(tid)
        reused = t is not None and t.key in self._exited and st.state not in "ZX"
        if t is not None and t.starttime == st.starttime and not reused:
            account(t, st, interval)
            self._looked.append(t)
            t.final = True
            p = self._procs.get(t.pid)  # examined again by ``_look`` after an unseen exec
            if t.name != st.comm and p is not None and p.comm == st.comm:
                t.name, t.cmdline = p.comm, p.cmdline  # ``tiptop -- true``: the zombie's name
                self.renames += 1

    def _own_stat(self, pid: int, st: Stat) -> Stat:
        """With ``-H`` the leader thread's own ``stat`` (its row's times), else ``st``."""
        if not self.threads:
            return st
        try:
            return self._read_stat(f"{self.proc_root}/{pid}/task/{pid}/stat")
        except (TaskGone, PermissionError):
            return st

    def _update(
        self,
        seen: dict[int, Task],
        new: list[Task],
        old: dict[int, Task],
        tid: int,
        pid: int,
        p: Proc,
        st: Stat,
        interval: float,
    ) -> None:
        t = old.get(tid)
        reused = t is not None and t.key in self._exited and st.state not in "ZX"
        if t is not None and t.starttime == st.starttime and not reused:
            account(t, st, interval)
            self._looked.append(t)
            if t.name != p.comm or t.cmdline != p.cmdline:
                t.name, t.cmdline, t.uid, t.user = p.comm, p.cmdline, p.uid, p.user
                self.renames += 1
            t.new = False
        else:
            t = Task(
                tid,
                pid,
                st.starttime,
                p.uid,
                p.user,
                p.comm,
                p.cmdline,
                st.num_threads,
                st.state,
                st.processor,
                st.utime,
                st.stime,
            )
            t.blkio = st.blkio
            # The sweep's first reference (``slept``): the run time at discovery.
            t.runtime = self._run_time(t)
            if self._uptime is None:
                self._uptime = uptime_ticks(self.proc_root)
            age = self._uptime - st.starttime
            if age > 0:
                t.cpu_lifetime = 100.0 * (st.utime + st.stime) / age
            new.append(t)
        seen[tid] = t
