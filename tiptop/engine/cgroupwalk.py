"""Rows of whole cgroups read from the cgroup tree, not from ``/proc``: the frame source of
the exporter's ``--by cgroup`` as root on cgroup v2 (docs/exporter.md, "Walking the cgroup
tree"), where counting each task would cost a refresh per task and the series are per
cgroup anyway.

One refresh, in order (each step hands its result forward):

1. the followed cgroups' events (``engine.count.cgroups``: one group of the screen's plan
   per CPU per leaf cgroup), read as the sampler reads them;
2. the hierarchy walked (``kernel.cgroup.walk_hierarchy``: one ``scandir`` per cgroup):
   a cgroup not seen before is followed from now, one seen before and gone (or made again
   under its path: another inode) gives its last row, dead, and its series end;
3. per followed cgroup, its processes (``cgroup.procs`` read again through an fd kept
   open; a leaf whose events say none of its tasks ran only on its turn, once every
   :data:`SWEEP` refreshes), and the leaves with processes counted by their events from
   now (``CgroupCounters.covers``);
4. its ``cpu.stat`` (``usage_usec``, the split, ``throttled_usec``), except for a leaf
   whose events say none of its tasks ran (``CgroupCounts.idle``: its usage cannot have
   grown); a cgroup with children gets its own processes' CPU, its usage less its
   children's over the interval;
5. one frame of the rows, by the one evaluator (``screens.frames.evaluated_frame``).

*What it does not know*, against the sampler's rows of tasks summed by cgroup (each cell
not known here is absent, never 0): a task's own facts (name, user, command line: none
are labels of ``--by cgroup``); where the time went beyond the CPU and the throttling
(each task's ``schedstat`` run delay and delay accounting's I/O wait are per task: the
pressure files' totals are wall time with some task stalled, not a sum over tasks); the
event counts of the processes of a cgroup with children (the root's kernel threads, a
slice's own processes: the kernel's event on such a cgroup counts its descendants too),
of a leaf past the cgroup events' cap, and of a leaf's first refresh (its baseline); the
threads of a row (its processes stand for them). A cgroup's CPU is its own ``cpu.stat``'s,
from its birth when it was made after the start, so a process too short for any scan is
counted, as the event counts count it.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from tiptop.cells import STATUS_DTYPE, Code
from tiptop.engine.count.cgroups import MAX_CGROUPS, CgroupCounters
from tiptop.frame import CgroupCounts, Frame, FrameSource, SamplerConfig
from tiptop.host import Clock
from tiptop.kernel.cgroup import (
    CgroupDir,
    CpuStat,
    count_procs,
    procs_fd,
    read_cpu_stat,
    walk_hierarchy,
)
from tiptop.messages import MessageLog
from tiptop.readonly import mutable
from tiptop.screens.evaluate import CounterCells, evaluator_for
from tiptop.screens.frames import FrameFacts, RowLabels, evaluated_frame
from tiptop.screens.model import ScreenSpec
from tiptop.screens.variables import RUN, THROTTLED, TIME_PARTS, RowFacts, TimeFacts
from tiptop.workload import Workload

_NO_CPU = CpuStat(0.0, 0.0, 0.0, 0.0)
#: A leaf none of whose tasks ran has its processes counted again once every SWEEP
#: refreshes (its turn), not at each: a process ending or forking runs, so its count
#: changes between two turns only when a process that does not run is moved in or out.
SWEEP = 16


@mutable
class _Followed:
    """One cgroup followed by the walk: where it is, its ``cgroup.procs`` fd, its
    ``cpu.stat`` at the last read and what the latest refresh found of it."""

    path: str
    inode: int
    leaf: bool
    fd: int | None
    last: CpuStat
    processes: int = 0
    #: The refreshes whose number is this modulo :data:`SWEEP` count an idle leaf's
    #: processes.
    turn: int = 0
    #: A cgroup with children: what its own processes' CPU came short of 0 so far
    #: (seconds, <= 0; :func:`_own_usage`).
    owed: float = 0.0
    #: A row of it was given (its series exists): its removal gives a last, dead row.
    shown: bool = False


@mutable
class _Row:
    """One row of a refresh before it is a frame's: the cgroup, its CPU over the interval
    (seconds; None where not known) and its counts."""

    cgroup: _Followed
    cpu: CpuStat | None
    own: bool  # a cgroup with children: its own processes' CPU only, the split not known
    counts: CgroupCounts | None
    dead: bool = False


class CgroupWalker(FrameSource):
    """The cgroups of the hierarchy at ``mount`` as rows (module docstring): ``counters``
    (owned from now: closed with this source) count the leaves' events, ``workload_of``
    names who runs in a cgroup path; at most ``max_cgroups`` cgroups are followed (one fd
    each), past that one line says so."""

    def __init__(
        self,
        screen: ScreenSpec,
        counters: CgroupCounters,
        mount: str,
        workload_of: Callable[[str], Workload],
        messages: MessageLog,
        clock: Clock | None = None,
        max_cgroups: int = MAX_CGROUPS,
    ) -> None:
        self.screen = screen
        self.messages = messages
        self.counters = counters
        self.mount = mount.rstrip("/")
        self.workload_of = workload_of
        self.clock = clock or Clock()
        self.max_cgroups = max_cgroups
        self._aliases = tuple(counters.plan.aliases)
        self._evaluator = evaluator_for(screen, tuple((a, j) for j, a in enumerate(self._aliases)))
        #: Per path, the cgroups followed now.
        self._followed: dict[str, _Followed] = {}
        self._started_wall = 0.0
        self._last_time = 0.0
        self._iteration = 0

    # ------------------------------------------------------------------ FrameSource
    def start(self) -> None:
        """The first walk: every cgroup followed, its ``cpu.stat`` the baseline, the
        leaves with processes counted by their events from now."""
        self._started_wall = self.clock.wall()
        self._last_time = self.clock.monotonic()
        self._iteration = 0
        for found in walk_hierarchy(self.mount):
            cg = self._follow(found, born=False)
            if cg is not None:
                self._count_processes(cg)
        self.counters.read()  # the events' baselines

    def refresh(self) -> Frame:
        """The frame of every cgroup that has processes, used CPU or was removed since the
        last refresh (module docstring)."""
        now = self.clock.monotonic()
        interval = max(now - self._last_time, 1e-9)
        self._last_time = now
        counts = self.counters.read()
        rows = self._walk(counts)
        frame = self._frame(rows, interval)
        self._iteration += 1
        return frame

    def reconfigure(
        self, screen: ScreenSpec | None = None, config: SamplerConfig | None = None
    ) -> None:
        """Another screen of the same counters (its columns evaluated from the next
        refresh); the walk watches no tasks, so a config changes nothing. The events are
        the screen's they were planned for: a screen of other counters is refused."""
        if screen is None:
            return
        evaluator = evaluator_for(screen, tuple((a, j) for j, a in enumerate(self._aliases)))
        if {str(c.alias) for c in screen.counters} != set(self._aliases):
            raise ValueError("the cgroup walk counts the events it was planned for")
        self.screen, self._evaluator = screen, evaluator

    def close(self) -> None:
        """Close every fd: the cgroups' events and their ``cgroup.procs``."""
        for cg in self._followed.values():
            self._unfollow(cg)
        self._followed.clear()
        self.counters.close()

    # ------------------------------------------------------------------ steps
    def _walk(self, counts: dict[str, CgroupCounts]) -> list[_Row]:
        """Steps 2 to 4: the cgroups found, gone and new, their processes and their CPU."""
        found = {c.path: c for c in walk_hierarchy(self.mount)}
        rows: list[_Row] = []
        for cg in list(self._followed.values()):
            now = found.get(cg.path)
            if now is None or now.inode != cg.inode:
                self._unfollow(cg)
                del self._followed[cg.path]
                if cg.shown:  # its last counts; what its CPU did since its last read is lost
                    rows.append(_Row(cg, None, not cg.leaf, counts.get(cg.path), dead=True))
            else:
                cg.leaf = now.leaf
        for path, now in found.items():
            if path not in self._followed:
                self._follow(now, born=True)
        deltas: dict[str, CpuStat] = {}
        turn = self._iteration % SWEEP
        for cg in self._followed.values():
            c = counts.get(cg.path)
            if cg.leaf and c is not None and c.idle:
                if cg.turn == turn:
                    self._count_processes(cg)
                continue  # none of its tasks ran: its cpu.stat cannot have grown
            self._count_processes(cg)
            stat = read_cpu_stat(self._dir(cg.path))
            if stat is not None:
                grown = (max(a - b, 0.0) for a, b in zip(stat, cg.last, strict=True))
                deltas[cg.path] = CpuStat(*grown)
                cg.last = stat
        own = _own_usage(deltas, self._followed)
        for cg in self._followed.values():
            cpu = deltas.get(cg.path, _NO_CPU) if cg.leaf else own.get(cg.path)
            c = counts.get(cg.path)
            ran = c is not None and bool((c.ok & (c.scaled > 0)).any())
            # A cgroup with children and no process of its own has no row: its own CPU is
            # then what its children ran between the reads of its usage and of theirs.
            used = cpu is not None and cpu.usage > 0 and cg.leaf
            if cg.processes or ran or used:
                cg.shown = True
                rows.append(_Row(cg, cpu, not cg.leaf, c if cg.leaf else None))
        return rows

    def _follow(self, found: CgroupDir, born: bool) -> _Followed | None:
        """Follow a cgroup from now: its ``cgroup.procs`` opened, its ``cpu.stat`` read
        (its baseline; zero when ``born`` and made after the start: its CPU counted from
        its birth). None past :attr:`max_cgroups`, or when it is gone already."""
        if len(self._followed) >= self.max_cgroups:
            self.messages.say(
                "cgroup-walk:cap",
                f"more than {self.max_cgroups} cgroups: the others are not exported",
            )
            return None
        where = self._dir(found.path)
        fd = procs_fd(where)
        if fd is None:
            return None
        last = read_cpu_stat(where) or _NO_CPU
        if born and self._made_since_start(where):
            last = _NO_CPU
        cg = _Followed(found.path, found.inode, found.leaf, fd, last, turn=found.inode % SWEEP)
        self._followed[found.path] = cg
        return cg

    def _count_processes(self, cg: _Followed) -> None:
        """Its processes now; a leaf with some counted by its events from now."""
        n = count_procs(cg.fd) if cg.fd is not None else None
        cg.processes = n or 0
        if cg.leaf and cg.processes:
            self.counters.covers(cg.path)

    def _unfollow(self, cg: _Followed) -> None:
        if cg.fd is not None:
            os.close(cg.fd)
            cg.fd = None

    def _made_since_start(self, where: str) -> bool:
        """Whether the cgroup directory ``where`` was made after :meth:`start` (its ctime,
        set when the kernel made it)."""
        try:
            return os.stat(where).st_ctime >= self._started_wall
        except OSError:
            return False

    def _dir(self, path: str) -> str:
        return f"{self.mount}{path.rstrip('/')}"

    def _frame(self, rows: list[_Row], interval: float) -> Frame:
        """Step 5: the rows made into a frame by the one evaluator."""
        n, k = len(rows), len(self._aliases)
        ids = np.array([r.cgroup.inode for r in rows], np.int64)
        workloads = [self.workload_of(r.cgroup.path) for r in rows]
        names = [w.shown() for w in workloads]
        processes = np.array([r.cgroup.processes if not r.dead else 0 for r in rows], np.int64)
        labels = RowLabels(ids, ids, ["*"] * n, names, [w.label for w in workloads])
        pct = 100.0 / interval
        usage = np.array([np.nan if r.cpu is None else r.cpu.usage for r in rows]) * pct
        user = np.array([np.nan if r.cpu is None or r.own else r.cpu.user for r in rows]) * pct
        system = np.array([np.nan if r.cpu is None or r.own else r.cpu.system for r in rows])
        known = np.isfinite(usage)
        split = np.isfinite(user)
        facts = RowFacts(
            cpu_total=usage,
            cpu_sys=system * pct,
            cpu_user=user,
            processor=np.full(n, np.nan),
            interval=interval,
            total_status=np.where(known, Code.OK, Code.UNREADABLE).astype(STATUS_DTYPE),
            split_status=np.where(split, Code.OK, Code.UNREADABLE).astype(STATUS_DTYPE),
            time=self._time(rows, usage, pct) if self._evaluator.reads_time else None,
        )
        cells, raw = _counter_cells(rows, n, k)
        refresh = FrameFacts(
            self._iteration,
            self.clock.wall(),
            interval,
            False,
            int(sum(cg.processes for cg in self._followed.values())),
            by_cgroup=True,
        )
        frame = evaluated_frame(
            self._evaluator,
            refresh,
            labels,
            facts,
            cells,
            aliases=self._aliases,
            raw=raw,
            # Threads are not read: a row stands for at least its processes' threads.
            num_threads=processes,
            dead=np.array([r.dead for r in rows], bool),
        )
        frame.marker = [" "] * n
        frame.workload = workloads
        frame.processes = processes
        return frame

    def _time(self, rows: list[_Row], usage: np.ndarray, pct: float) -> TimeFacts:
        """Where each row's time went, as far as a cgroup's own files say: on a CPU (its
        usage) and throttled by its own CPU limit (a leaf's ``throttled_usec``); the wait
        for a CPU and the I/O wait are per task, not known here."""
        n = len(rows)
        percent = np.full((n, len(TIME_PARTS)), np.nan)
        percent[:, RUN] = usage
        percent[:, THROTTLED] = [
            np.nan if r.cpu is None or r.own else r.cpu.throttled * pct for r in rows
        ]
        status = np.where(np.isfinite(percent), Code.OK, Code.UNREADABLE).astype(STATUS_DTYPE)
        nan = np.full(n, np.nan)
        threads = np.array([max(r.cgroup.processes, 1) for r in rows], np.float64)
        return TimeFacts(percent, status, threads, nan, nan)


def _own_usage(deltas: dict[str, CpuStat], followed: dict[str, _Followed]) -> dict[str, CpuStat]:
    """Per cgroup with children, the CPU of its own processes over the interval: its
    usage's growth less its children's (the kernel counts a cgroup's descendants into it;
    a child removed since the last read leaves its last growth in its parent's). Only its
    usage is known so: the split is not.

    A parent is read before its children (the walk's order), so its growth may come short
    of theirs by what they ran in between: that shortfall is owed (``_Followed.owed``) and
    paid from the next growth, never exported as a decrease, and the differences add up
    to the parent's usage less its children's, as they should."""
    children: dict[str, float] = {}
    for path, d in deltas.items():
        if path != "/":
            parent = path.rsplit("/", 1)[0] or "/"
            children[parent] = children.get(parent, 0.0) + d.usage
    out: dict[str, CpuStat] = {}
    for path, d in deltas.items():
        cg = followed[path]
        if cg.leaf:
            continue
        own = cg.owed + d.usage - children.get(path, 0.0)
        cg.owed = min(own, 0.0)
        out[path] = CpuStat(max(own, 0.0), 0.0, 0.0, 0.0)
    return out


def _counter_cells(rows: list[_Row], n: int, k: int) -> tuple[CounterCells, np.ndarray]:
    """The rows' counter cells: a leaf's events' counts where read OK, else not counted."""
    scaled, total = np.full((n, k), np.nan), np.full((n, k), np.nan)
    running, raw = np.full((n, k), np.nan), np.zeros((n, k))
    status = np.full((n, k), Code.NOT_COUNTED, STATUS_DTYPE)
    total_status = np.full((n, k), Code.NOT_COUNTED, STATUS_DTYPE)
    for i, r in enumerate(rows):
        c = r.counts
        if c is None:
            continue
        ok = c.ok
        scaled[i] = np.where(ok, c.scaled, np.nan)
        total[i] = np.where(ok, c.total, np.nan)
        running[i] = np.where(ok, c.running, np.nan)
        raw[i] = np.where(ok, c.raw, 0.0)
        status[i] = np.where(ok, Code.OK, Code.NOT_COUNTED)
        total_status[i] = status[i]
    return CounterCells(scaled, status, total, total_status, running), raw


__all__ = ["SWEEP", "CgroupWalker"]
