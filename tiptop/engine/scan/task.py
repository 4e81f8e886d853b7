"""One watched task's record, a process's facts, a scan's result, and a task's CPU accounting
from ``stat``.

A task is identified by ``(tid, starttime)`` (proc(5): ``starttime`` is field 22 of
``/proc/PID/stat``, in clock ticks since boot), so a reused PID is a new task. The scanner
that fills these records is ``tiptop.engine.scan.tasks``.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable, Sequence
from dataclasses import field

from tiptop.errors import TaskGone
from tiptop.kernel.procfs import CLK_TCK, Stat, process_cpu_ns, read_file
from tiptop.readonly import Slotted, mutable

#: A task's identity: ``(tid, starttime)`` (see the module doc).
Identity = tuple[int, int]


class Task(Slotted):
    """One watched task (a process in process mode, a thread with ``-H``).

    The ``cpu_*`` values are percentages of one CPU over the last interval; ``new`` is true
    in the scan that discovered it (its CPU values then mean nothing yet).
    """

    __slots__ = (
        "blkio",
        "cmdline",
        "cpu_lifetime",
        "cpu_sys",
        "cpu_total",
        "cpu_user",
        "final",
        "key",
        "looked",
        "name",
        "new",
        "num_threads",
        "pid",
        "processor",
        "runtime",
        "starttime",
        "state",
        "stime",
        "tid",
        "uid",
        "user",
        "utime",
    )

    def __init__(
        self,
        tid: int,
        pid: int,
        starttime: int,
        uid: int,
        user: str,
        name: str,
        cmdline: str,
        num_threads: int,
        state: str,
        processor: int,
        utime: int,
        stime: int,
    ) -> None:
        self.tid = tid
        self.pid = pid
        self.starttime = starttime
        self.uid = uid
        self.user = user
        self.name = name
        self.cmdline = cmdline
        self.num_threads = num_threads
        self.state = state
        self.processor = processor
        self.utime = utime
        self.stime = stime
        #: Lifetime-average %CPU at discovery (for busy-first attach).
        self.cpu_lifetime = 0.0
        self.cpu_total = 0.0
        self.cpu_sys = 0.0
        self.cpu_user = 0.0
        self.new = True
        #: Its final CPU times were read (seen as a zombie before its parent reaped it), so
        #: its last interval's %CPU is exact; a task gone without that was reaped unseen.
        self.final = False
        #: Its time on a CPU (ns, :data:`RunTime`) at its discovery or when last found
        #: asleep (:func:`slept`); 0 when that could not be read.
        self.runtime = 0
        #: Ticks it waited for block I/O (``stat`` field 42, :attr:`Stat.blkio`) at its
        #: last look.
        self.blkio = 0
        #: How many times its ``stat`` was read afresh (:func:`account`): what changed since
        #: a mark taken earlier says whether it ran since (``engine.scan.times``).
        self.looked = 0
        #: The identity ``(tid, starttime)``, made once (looked up for every task at every
        #: refresh); ``tid`` and ``starttime`` never change.
        self.key: Identity = (tid, starttime)


@mutable
class Scan:
    """The result of one :meth:`TaskScanner.scan`."""

    #: Live watched tasks, old ones first in discovery order, then the new ones.
    tasks: list[Task]
    #: Tasks discovered by this scan (also in ``tasks``).
    new: list[Task]
    #: Tasks seen before and gone (exited, zombie, or PID reused) since the last scan.
    gone: list[Task]
    #: Seconds since the previous scan (0 for the first).
    interval: float
    #: Every thread of the watched processes (for the "Tasks:" line).
    threads_total: int
    #: Tasks seen before whose ``stat`` this scan read afresh (:func:`account`): those that
    #: may have run since the last scan (``engine.scan.times`` reads only these).
    looked: list[Task] = field(default_factory=list)
    #: Tasks seen before, not read afresh, that were runnable when last looked at (state
    #: ``R``): queued on a run queue all along since (``engine.scan.times``).
    queued: list[Task] = field(default_factory=list)


def same_tasks(a: Sequence[Task], b: Sequence[Task]) -> bool:
    """Whether ``a`` and ``b`` hold the same ``Task`` objects in the same order (a
    refresh over the rows of the one before: what the engine keeps between refreshes)."""
    return len(a) == len(b) and all(map(operator.is_, a, b))


def rest(t: Task) -> None:
    """``t`` did not run during the interval: 0 %CPU, nothing else changed."""
    t.cpu_user = t.cpu_sys = t.cpu_total = 0.0
    t.new = False


def account(t: Task, st: Stat, interval: float) -> None:
    """Update ``t`` from its new ``stat``: %CPU over ``interval`` from the utime/stime
    deltas (proc(5) fields 14, 15, in clock ticks), state, CPU, thread count."""
    if interval > 0:
        scale = 100.0 / (interval * CLK_TCK)
        du = max(st.utime - t.utime, 0)
        ds = max(st.stime - t.stime, 0)
        t.cpu_user = du * scale
        t.cpu_sys = ds * scale
        t.cpu_total = (du + ds) * scale
    t.utime = st.utime
    t.stime = st.stime
    t.state = st.state
    t.processor = st.processor
    t.num_threads = st.num_threads
    t.blkio = st.blkio
    t.looked += 1


class Proc(Slotted):
    """What the scanner knows of one process identity (watched or not): its facts, read
    once per identity, and whether it is watched."""

    __slots__ = ("cmdline", "comm", "foreign", "pid", "ran", "starttime", "uid", "user", "watched")

    def __init__(
        self,
        pid: int,
        starttime: int,
        comm: str,
        uid: int,
        user: str,
        cmdline: str,
        watched: bool,
        foreign: tuple[int, int] | None = None,
    ) -> None:
        self.pid = pid
        self.starttime = starttime
        self.comm = comm
        self.uid = uid
        self.user = user
        self.cmdline = cmdline
        self.watched = watched
        #: Not ours (another user's, or not the ``-u`` user's): its ``/proc/PID`` inode and
        #: owner when examined (:func:`dir_mark`); None for our own processes.
        self.foreign = foreign
        #: Its CPU-time clock (ns) at its last look where that was asked (ours but not
        #: watched: ``-p``, a name filter; or watched with ``-H``), -1 before one
        #: (:func:`stood`).
        self.ran = -1


def stood(p: Proc) -> bool:
    """Whether process ``p``'s CPU-time clock (``procfs.process_cpu_ns``) is the one seen
    at its last look, which it becomes: then it did not run since, so it did not exec nor
    rename itself, and its ``stat`` holds nothing its filter reads. A clock that stays 0
    is a kernel thread's that never ran (the workqueues' rescuers: ``kworker/R-*``), which
    stands too; a process gone reads -1 and says no."""
    ran = process_cpu_ns(p.pid, gone=-1)
    was, p.ran = p.ran, ran
    return ran >= 0 and ran == was


def dir_mark(path: str) -> tuple[int, int] | None:
    """``/proc/PID``'s inode and owner. A PID reused by a new process gets a new inode
    (procfs makes one per process instance, fs/proc/base.c ``proc_pid_make_inode``) and an
    owner change (setuid(2), then execve(2): proc(5) "/proc/pid" is owned by the effective
    uid of a dumpable process) changes the owner: so a process of another user whose mark
    is unchanged is still another user's, and its ``stat`` need not be read (a stat(2) costs
    less than reading and parsing the file). The ownership rule itself
    (real uid, docs/original.md 7.1) was applied when it was examined."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_uid)


def holds(root: str, name: str, mark: tuple[int, int] | None) -> bool:
    """Whether ``ROOT/NAME`` (a ``/proc/PID``) still bears ``mark`` (:func:`dir_mark`): the
    same task instance, same owner."""
    return dir_mark(f"{root}/{name}") == mark


#: How the scanner reads a row's time on a CPU so far, in ns (0: it cannot say):
#: :func:`run_time_reader`.
RunTime = Callable[[Task], int]


def schedstat(root: str, t: Task, thread: bool) -> str:
    """The ``schedstat`` file of ``t``'s row: a thread's own (``/proc/PID/task/TID``), or
    a process's (``/proc/PID``: its main thread's, proc(5))."""
    if thread:
        return f"{root}/{t.pid}/task/{t.tid}/schedstat"
    return f"{root}/{t.pid}/schedstat"


def runtime(path: str) -> int:
    """A task's time on a CPU, in ns: the first field of its ``schedstat``
    (Documentation/scheduler/sched-stats.rst); 0 when it cannot be read."""
    try:
        return int(read_file(path).split(None, 1)[0])
    except (TaskGone, OSError, ValueError, IndexError):
        return 0


def run_time_reader(root: str, thread: bool, clock: bool) -> RunTime:
    """How a row's time on a CPU is read. With ``clock`` (process rows under this PID
    namespace's ``/proc``), the process's CPU-time clock (``procfs.process_cpu_ns``): every
    thread's time, for one system call. Otherwise (``-H`` rows: a thread's clock may be
    read only by its own process, kernel/time/posix-cpu-timers.c; or another ``/proc``
    tree) its ``schedstat`` file: a thread's own, or a process's main thread's."""
    if clock:
        return lambda t: process_cpu_ns(t.pid)
    return lambda t: runtime(schedstat(root, t, thread))


def slept(t: Task, ran: int) -> bool:
    """Whether task ``t`` is still asleep since it was last seen so: ``ran``, its time on a
    CPU now (:data:`RunTime`), is the one seen at its discovery or its last such look.
    Asked for a task that did not run when the sweep reaches it, and for a task without
    counters at every scan (``engine.activity``). That one number is cheaper to read than
    ``stat``, so a task whose counters stopped without it sleeping (a set-user-ID exec
    ends them, fs/exec.c ``begin_new_exec()``) is still caught at its next sweep, for
    less. A 0 (unreadable, or no scheduler statistics) says no."""
    was, t.runtime = t.runtime, ran
    return ran != 0 and ran == was
