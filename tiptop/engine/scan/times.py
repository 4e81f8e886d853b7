"""Where each row's time went over a refresh: on a CPU, waiting for one, held by its
cgroup's CPU limit, blocked on block I/O; and what the whole machine did meanwhile.

Read for a screen that needs it (a ``TIME_*`` variable, ``CPU_LIMIT`` or a
``bottleneck(...)`` column: ``tiptop.screens.variables``), after the scan, for the tasks
the scan looked at afresh (``Scan.looked``: what this costs grows with the tasks that ran,
not with all of them): a task that did not run since the last scan (its ``stat`` was not
read, ``engine.activity``) has nothing new to add, because the kernel credits a task's
time to these counts when the task runs (below), so its parts are 0 for the interval;
except one that was runnable when last seen (state R): it cannot have left the run queue
without running, so it waited all the interval, shown so before the kernel credits that
wait (when it ends), and what was shown ahead is taken off the wait credited then.

*Sources*, all cumulative, each read diffed against the task's previous one:

- ``/proc/PID/task/TID/schedstat`` (Documentation/scheduler/sched-stats.rst): ns on a
  CPU and ns waiting on a run queue; the wait is added when it ends (``sched_info_arrive``,
  kernel/sched/stats.h), so a wait longer than a refresh shows in the refresh that ends it.
  A run queue's wait includes the time the task's cgroup was throttled: its tasks stay
  queued on the throttled queue (measured here: a CPU loop under a 0.2 CPU limit waits 80%).
- ``delayacct_blkio_ticks``, field 42 of the task's ``stat`` (proc(5)), while
  ``kernel.task_delayacct`` is 1 (Documentation/accounting/delay-accounting.rst); the
  task's own, also in ``/proc/PID/stat``. A task forked while it was off is never counted:
  where this run saw it turned on, the tasks older than that read unknown.
- Per cgroup of the ``cpu`` controller, its tasks' throttled time (``tiptop.kernel.cgroup``).
  The kernel counts it per cgroup and CPU run queue, not per task, so a row's throttled
  time is estimated: the cgroup's throttled time over the interval, shared among the run
  queues its waiting rows could fill (the fewer of its waiting rows and the CPUs), and
  never more than the row's own wait.

*Rows.* A thread row (``-H``) is its thread's; a process row sums its threads' (read one by
one; a single-threaded process's ``/proc/PID/schedstat`` is its only thread's). Each
thread's parts are clamped to the interval in turn (on a CPU, then waiting, then I/O),
since a wait credited when it ends may have begun before the interval. A thread that
exited within the interval takes its last parts with it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from tiptop.cells import STATUS_DTYPE, Code
from tiptop.engine.scan.task import Identity, Task
from tiptop.errors import TaskGone
from tiptop.frame import Context, Pressure
from tiptop.host import Host
from tiptop.kernel import cgroup, machine
from tiptop.kernel.procfs import CLK_TCK, list_threads, read_schedstat, read_stat, uptime_ticks
from tiptop.readonly import Slotted, mutable
from tiptop.screens.variables import IO, RUN, THROTTLED, TIME_PARTS, WAIT, TimeFacts

__all__ = ["TimeReader"]

#: A cgroup's CPU limit is read again after this many refreshes without throttling (it is
#: read whenever the cgroup was throttled; a limit raised or removed throttles nothing).
LIMIT_REREAD = 16
#: A cgroup not read for this many refreshes is forgotten.
CGROUP_EXPIRY = 64

#: One thread's cumulative counts: ns on a CPU, ns waiting on a run queue, blkio ticks.
Counts = tuple[int, int, int]


class _Seen(Slotted):
    """What was read of one row's task last time: its scanner ``looked`` mark and each
    thread's counts."""

    __slots__ = ("ahead", "cgroup", "looked", "threads", "unreadable")

    def __init__(self, looked: int) -> None:
        self.looked = looked
        self.threads: dict[int, Counts] = {}
        #: No ``schedstat`` could be read for it.
        self.unreadable = False
        #: Seconds of wait shown before the kernel credited them (a task queued all along,
        #: see the module doc), taken off its main thread's next credited wait.
        self.ahead = 0.0
        #: Its process's cgroup in the ``cpu`` hierarchy ("" for none; None: not read
        #: yet), read when it first ran and again whenever it waited (a process may be
        #: moved to another cgroup: stale until then, which matters only to a task that
        #: waits).
        self.cgroup: str | None = None


@mutable
class _Cgroup:
    """One cgroup of the ``cpu`` controller: its throttled ns at its last read and when,
    and its CPU limit (None for none) as read at refresh ``limit_read``."""

    throttled: int | None
    at: float
    refresh: int
    limit: float | None = None
    limit_read: int = -LIMIT_REREAD


class TimeReader:
    """Reads where the rows' time went at each refresh (see the module doc); its state
    is per task identity (forgotten when the task is gone) and per cgroup (forgotten
    :data:`CGROUP_EXPIRY` refreshes after its last read)."""

    def __init__(
        self, host: Host, threads: bool, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.root = host.proc_root
        self.host = host
        self.threads = threads
        self._clock = clock
        self._seen: dict[Identity, _Seen] = {}
        #: pid -> its threads' ids, as last listed (a multi-threaded process row).
        self._tids: dict[int, list[int]] = {}
        self._cgroups: dict[str, _Cgroup] = {}
        self._refresh = 0
        #: The machine's last counts: (steal, total) ticks and per resource PSI totals.
        self._ticks: tuple[int, int] | None = None
        self._pressure: dict[str, tuple[int | None, int | None]] = {}
        #: Delay accounting is on (re-read at each refresh), and when it was seen turned
        #: on (clock ticks since boot; 0: on since before this run).
        self._io = host.delayacct is True
        self._io_since = 0.0

    # ------------------------------------------------------------------ rows
    def begin(self, new: Iterable[Task]) -> None:
        """Take the first counts of tasks found by the scan (shown from the next refresh)."""
        for t in new:
            self._seen[t.key] = self._read(t)

    def read(
        self,
        rows: Sequence[Task],
        interval: float,
        looked: Sequence[Task],
        queued: Sequence[Task] = (),
        live: int | None = None,
    ) -> TimeFacts:
        """Where each of ``rows``' time went over the last ``interval`` seconds. Only the
        ``looked`` tasks (the scan read them afresh: ``Scan.looked``) are read; ``queued``
        (``Scan.queued``: runnable when last seen, not run since) waited all the interval;
        the others' parts are 0 (see the module doc). The rows from ``live`` on have ended
        (this is their last interval): each is read one last time, its parts unknown when
        it is gone already (reaped)."""
        live = len(rows) if live is None else live
        self._refresh += 1
        n = len(rows)
        seconds = np.zeros((n, len(TIME_PARTS)))
        status = np.zeros((n, len(TIME_PARTS)), STATUS_DTYPE)
        threads = np.ones(n) if self.threads else np.maximum(_threads(rows), 1.0)
        pos = {id(t): i for i, t in enumerate(rows)} if looked or queued or live < n else {}
        for t in queued:
            i = pos.get(id(t))
            seen = self._seen.get(t.key)
            if i is not None and seen is not None and seen.looked == t.looked:
                seconds[i, WAIT] = interval
                seen.ahead += interval
        ran: list[int] = []
        for i in sorted({pos[id(t)] for t in looked if id(t) in pos} | set(range(live, n))):
            t = rows[i]
            seen, now = self._seen.get(t.key), self._read(t)
            self._seen[t.key] = now
            now.cgroup = None if seen is None else seen.cgroup
            ran.append(i)
            if seen is None or now.unreadable or seen.unreadable:
                status[i, RUN] = status[i, WAIT] = Code.UNREADABLE
                continue
            run, wait, io, now.ahead = _parts(seen, now, interval, t.tid)
            seconds[i, RUN], seconds[i, WAIT], seconds[i, IO] = run, wait, io
        status[:, IO] = self._io_status(rows)
        seconds[:, THROTTLED], status[:, THROTTLED], limit = self._throttled(
            rows, ran, seconds[:, WAIT], status[:, WAIT], interval
        )
        cpus = np.full(n, np.nan)
        for i in np.flatnonzero(seconds[:, WAIT] > 0).tolist():
            cpus[i] = _affinity(rows[i].tid)
        if interval <= 0:
            status[:] = Code.UNREADABLE
        seconds[status != Code.OK] = np.nan
        percent = 100.0 * seconds / interval if interval > 0 else seconds
        return TimeFacts(percent, status, threads, limit, cpus)

    def _io_status(self, rows: Sequence[Task]) -> np.ndarray:
        """Whether each row's I/O is known: delay accounting is on, and was when the task
        was forked (a task forked while it was off is never counted; one that started before
        this run saw it turned on is taken as counted)."""
        on = machine.delay_accounting(self.root) is True
        if on and not self._io:  # turned on during this run: older tasks are not counted
            self._io_since = uptime_ticks(self.root)
        self._io = on
        if not on:
            return np.full(len(rows), Code.UNREADABLE, STATUS_DTYPE)
        if not self._io_since:
            return np.zeros(len(rows), STATUS_DTYPE)
        born = np.array([t.starttime for t in rows], np.float64)
        return np.where(born < self._io_since, Code.UNREADABLE, Code.OK).astype(STATUS_DTYPE)

    def forget(self, gone: Iterable[Task]) -> None:
        """Drop what was kept of tasks that ended."""
        for t in gone:
            self._seen.pop(t.key, None)
            if t.tid == t.pid:
                self._tids.pop(t.pid, None)

    def _read(self, t: Task) -> _Seen:
        """Task ``t``'s counts now: its thread's (``-H``), its only thread's, or each of
        its threads'."""
        seen = _Seen(t.looked)
        if self.threads or t.num_threads <= 1:
            where = f"{self.root}/{t.pid}/task/{t.tid}" if self.threads else f"{self.root}/{t.pid}"
            got = read_schedstat(f"{where}/schedstat")
            if got is None:
                seen.unreadable = True
            else:
                seen.threads[t.tid] = (got[0], got[1], t.blkio)
            return seen
        io = self._io
        for tid in self._list(t):
            where = f"{self.root}/{t.pid}/task/{tid}"
            got = read_schedstat(f"{where}/schedstat")
            if got is not None:
                seen.threads[tid] = (got[0], got[1], _blkio(where) if io else 0)
        seen.unreadable = not seen.threads
        return seen

    def _list(self, t: Task) -> list[int]:
        """Process ``t``'s thread ids: as last listed while as many as it has now."""
        tids = self._tids.get(t.pid)
        if tids is None or len(tids) != t.num_threads:
            try:
                tids = self._tids[t.pid] = list_threads(self.root, t.pid)
            except TaskGone:
                return []
        return tids

    # ------------------------------------------------------------------ cgroups
    def _throttled(
        self,
        rows: Sequence[Task],
        ran: list[int],
        wait: np.ndarray,
        wait_status: np.ndarray,
        interval: float,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row, its estimated throttled seconds (of its wait) and their status, and its
        cgroup's CPU limit (NaN for none, and for the rows that did not run: not looked up).
        ``ran``: the rows read this refresh."""
        n = len(rows)
        out, limit = np.zeros(n), np.full(n, np.nan)
        status = np.where(wait_status != Code.OK, Code.UNREADABLE, Code.OK).astype(STATUS_DTYPE)
        where = self.host.cpu_cgroups
        if where is None:  # no cpu controller: no limits, nothing throttled
            return out, status, limit
        members: dict[str, list[int]] = {}
        for i in ran:
            seen = self._seen[rows[i].key]
            if seen.cgroup is None or wait[i] > 0:
                seen.cgroup = _cgroup_path(self.root, rows[i].pid, where.v2) or ""
            if seen.cgroup:
                members.setdefault(seen.cgroup, []).append(i)
        now = self._clock()
        cpus = max(self.host.cpus, 1)
        for path, group_rows in members.items():
            waiting = [i for i in group_rows if wait[i] > 0]
            group, rate = self._cgroup(path, now, bool(waiting))
            if group.limit is not None:
                limit[group_rows] = group.limit
            if not waiting:
                continue
            if rate is None:
                status[waiting] = Code.UNREADABLE
                continue
            share = rate * interval / min(len(waiting), cpus)
            out[waiting] = np.minimum(wait[waiting], share)
        self._expire()
        return out, status, limit

    def _cgroup(self, path: str, now: float, waited: bool) -> tuple[_Cgroup, float | None]:
        """Cgroup ``path`` and its throttled seconds per second since its last read (None
        when unknown: first seen now, or unreadable). It is read when first seen and when
        any of its rows waited; its limit when it was throttled or is due a look."""
        where = self.host.cpu_cgroups
        assert where is not None
        group = self._cgroups.get(path)
        rate = 0.0 if path.strip("/") == "" else None  # the root has no limit
        if group is None or waited:
            throttled = cgroup.throttled_ns(where.mount, where.root, path, where.v2)
            if rate is None and group is not None and None not in (group.throttled, throttled):
                assert group.throttled is not None and throttled is not None
                rate = max(throttled - group.throttled, 0) / 1e9 / max(now - group.at, 1e-6)
            if group is None:
                group = self._cgroups[path] = _Cgroup(throttled, now, self._refresh)
            group.throttled, group.at = throttled, now
        group.refresh = self._refresh
        if self._refresh - group.limit_read >= LIMIT_REREAD or (rate or 0.0) > 0:
            group.limit = cgroup.cpu_limit(where.mount, where.root, path, where.v2)
            group.limit_read = self._refresh
        return group, rate

    def _expire(self) -> None:
        old = [p for p, g in self._cgroups.items() if self._refresh - g.refresh > CGROUP_EXPIRY]
        for p in old:
            del self._cgroups[p]

    # ------------------------------------------------------------------ the machine
    def context(self, interval: float) -> Context:
        """What the whole machine did since the last call (None parts the first time)."""
        ticks = machine.cpu_ticks(self.root)
        steal = None
        if ticks is not None and self._ticks is not None and ticks[1] > self._ticks[1]:
            steal = (ticks[0] - self._ticks[0]) / (ticks[1] - self._ticks[1])
        self._ticks = ticks
        pressure = []
        for resource in machine.PRESSURE_RESOURCES:
            totals = machine.pressure_totals(self.root, resource)
            if totals is None:
                continue
            before = self._pressure.get(resource)
            self._pressure[resource] = totals
            if before is None or interval <= 0:
                pressure.append(Pressure(resource, None, None))
                continue
            some, full = (
                None if a is None or b is None else min(max(a - b, 0) / 1e6 / interval, 1.0)
                for a, b in zip(totals, before, strict=True)
            )
            pressure.append(Pressure(resource, some, full))
        return Context(self.host.cpus, machine.runnable(self.root), steal, tuple(pressure))


def _parts(
    seen: _Seen, now: _Seen, interval: float, lead: int
) -> tuple[float, float, float, float]:
    """A row's seconds on a CPU, waiting and blocked on I/O between two reads: each
    thread's deltas clamped to the interval in turn, summed (see the module doc), the wait
    shown ahead of the kernel's credit (:attr:`_Seen.ahead`) taken off thread ``lead``'s;
    and what is still ahead. A thread first seen now (born since) counts from 0."""
    run = wait = io = 0.0
    ahead = seen.ahead
    for tid, (r, w, b) in now.threads.items():
        r0, w0, b0 = seen.threads.get(tid, (0, 0, 0))
        dr = min(max(r - r0, 0) / 1e9, interval)
        credited = max(w - w0, 0) / 1e9
        if tid == lead and ahead:
            credited, ahead = max(credited - ahead, 0.0), max(ahead - credited, 0.0)
        dw = min(credited, interval - dr)
        db = min(max(b - b0, 0) / CLK_TCK, interval - dr - dw)
        run, wait, io = run + dr, wait + dw, io + db
    return run, wait, io, ahead


def _threads(rows: Sequence[Task]) -> np.ndarray:
    """Each row's thread count, as floats."""
    return np.fromiter((t.num_threads for t in rows), np.float64, len(rows))


def _blkio(where: str) -> int:
    """A thread's block I/O ticks (its ``stat`` field 42); 0 when gone."""
    try:
        return read_stat(f"{where}/stat").blkio
    except TaskGone:
        return 0


def _cgroup_path(root: str, pid: int, v2: bool) -> str | None:
    """Process ``pid``'s cgroup in the ``cpu`` controller's hierarchy, read now (a process
    may be moved into another cgroup at any time)."""
    try:
        with open(f"{root}/{pid}/cgroup", "rb") as f:
            return cgroup.cpu_path_of(f.read(65536), v2)
    except OSError:
        return None


def _affinity(tid: int) -> float:
    """How many CPUs task ``tid`` may run on (sched_getaffinity(2)); NaN when gone."""
    try:
        return float(len(os.sched_getaffinity(tid)))
    except OSError:
        return np.nan
