"""Rows aggregated by cgroup (``--by cgroup``, the live ``G`` key): one row per cgroup
(containers, systemd services, Kubernetes pods), its numbers summed from the per-task rows
the sampler already has, so no privilege beyond what ``tiptop`` needs is asked for.

The cgroup of each process is read when first seen and again whenever it ran
(``tiptop.kernel.cgroup``: a process may be moved to another cgroup), and who
runs in it (``tiptop.runtimes``: Kubernetes' namespace, pod and container, a docker or
podman container's name, a systemd unit) once per cgroup; a row is a group of the cgroups
that show the same name (``Workload.shown``: ``namespace/pod/container``, ``docker:web``,
``nginx.service``, else the cgroup's short label), and carries that workload
(``Frame.workload``) for the batch records. A group row sums %CPU (user and system too),
each counter's scaled delta and running total over the tasks whose counter read OK; its
columns are then evaluated again by the one evaluator (``tiptop.screens.evaluate``), so
``IPC`` of a group is its instructions over its cycles, not a sum of ratios. A counter is
``?`` in a group only when none of its tasks read it; its running fraction is the least of
those that did. The row's PID is the smallest of the group, its name and command line the
name above, its user the tasks' user (``*`` when they differ); it is dead when all its
tasks are.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tiptop.cells import STATUS_DTYPE, Code
from tiptop.frame import CgroupCounts, Frame, FrameSource, Members, SourceWrapper
from tiptop.kernel.cgroup import CgroupCache
from tiptop.runtimes import Workloads
from tiptop.screens.evaluate import CounterCells, evaluator_for
from tiptop.screens.frames import FrameFacts, RowLabels, evaluated_frame
from tiptop.screens.model import ScreenSpec
from tiptop.screens.variables import RowFacts, TimeFacts
from tiptop.workload import Workload

#: The live key that switches grouping on and off.
KEY = "G"


def _sum(x: np.ndarray, g: np.ndarray, m: int) -> np.ndarray:
    out = np.zeros((m, *x.shape[1:]))
    np.add.at(out, g, np.nan_to_num(np.asarray(x, np.float64)))
    return out


def group(
    frame: Frame,
    screen: ScreenSpec,
    labels: list[str],
    workloads: list[Workload] | None = None,
    counted: dict[str, CgroupCounts] | None = None,
) -> Frame:
    """``frame``'s rows summed by ``labels`` (one per row), columns evaluated again, the
    tasks kept beneath their group rows (``Frame.members``: a live tree shows them); each
    group row carries the workload of its first row (``workloads``, one per row, when
    given). ``counted``: per label, its cgroups' counts from the kernel's cgroup events,
    added to what its tasks counted themselves (those tasks have no counters of their
    own: ``tiptop.engine.count.cgroups``)."""
    if not len(frame):
        return frame
    names = sorted(set(labels))
    index = {v: i for i, v in enumerate(names)}
    g = np.array([index[x] for x in labels], np.int64)
    m = len(names)
    counters, raw = _group_counters(frame, g, m)
    if counted:
        counters, raw = _with_cgroup_counts(counters, raw, names, counted)
    refresh = FrameFacts(
        frame.iteration,
        frame.timestamp,
        frame.interval,
        False,
        frame.tasks_total,
        True,
        context=frame.context,
    )
    evaluator = evaluator_for(screen, tuple((a, j) for j, a in enumerate(frame.counters)))
    grouped = evaluated_frame(
        evaluator,
        refresh,
        _group_labels(frame, g, names),
        _group_facts(frame, g, m),
        counters,
        aliases=frame.counters,
        raw=raw,
        num_threads=_sum(frame.num_threads, g, m).astype(np.int64),
        dead=_sum((~frame.dead).astype(float), g, m) == 0,
    )
    if workloads is not None:
        first = dict(zip(reversed(labels), reversed(workloads), strict=True))
        grouped.workload = [first[name] for name in names]
    grouped.marker = [" "] * m  # a group is no multi-threaded process ("+")
    grouped.members = Members(frame, g)
    return grouped


def _group_counters(frame: Frame, g: np.ndarray, m: int) -> tuple[CounterCells, np.ndarray]:
    """Each group's counter cells (the sums of its rows that read OK; ``?`` where none
    did; the least running fraction) and raw deltas."""
    k = len(frame.counters)
    ok = frame.counter_status == Code.OK
    any_ok = _sum(ok.astype(np.float64), g, m) > 0
    st = np.where(any_ok, Code.OK, Code.NOT_COUNTED).astype(STATUS_DTYPE)
    scaled = np.where(any_ok, _sum(np.where(ok, frame.counter_scaled, 0.0), g, m), np.nan)
    t_ok = frame.counter_total_status == Code.OK
    total = _sum(np.where(t_ok, frame.counter_total, 0.0), g, m)
    tst = np.where(_sum(t_ok.astype(float), g, m) > 0, Code.OK, Code.UNREADABLE)
    run = np.ones((m, k))
    np.minimum.at(
        run, g, np.where(ok & np.isfinite(frame.counter_running), frame.counter_running, 1.0)
    )
    cells = CounterCells(scaled, st, total, tst.astype(STATUS_DTYPE), run)
    return cells, _sum(np.where(ok, frame.counter_delta, 0.0), g, m)


def _with_cgroup_counts(
    cells: CounterCells, raw: np.ndarray, names: list[str], counted: dict[str, CgroupCounts]
) -> tuple[CounterCells, np.ndarray]:
    """The groups' cells with their cgroups' own counts added where read OK."""
    scaled, status = cells.scaled.copy(), cells.status.copy()
    total, total_status = cells.total.copy(), cells.total_status.copy()
    running, raw = cells.running.copy(), raw.copy()
    for j, name in enumerate(names):
        c = counted.get(name)
        if c is None:
            continue
        ok = c.ok
        scaled[j] = np.where(ok, np.nan_to_num(scaled[j]) + c.scaled, scaled[j])
        total[j] = np.where(ok, np.nan_to_num(total[j]) + c.total, total[j])
        was = status[j] == Code.OK
        running[j] = np.where(
            ok, np.where(was, np.fmin(running[j], c.running), c.running), running[j]
        )
        status[j] = np.where(ok, Code.OK, status[j])
        total_status[j] = np.where(ok, Code.OK, total_status[j])
        raw[j] += np.where(ok, c.raw, 0.0)
    return CounterCells(scaled, status, total, total_status, running), raw


def _group_facts(frame: Frame, g: np.ndarray, m: int) -> RowFacts:
    """Each group's CPU times (sums; the split unknown where a row's is) and counter
    window; a group has no one last CPU."""
    split_known = _sum((frame.cpu_status[:, 1] != Code.OK).astype(float), g, m) == 0
    return RowFacts(
        cpu_total=_sum(frame.cpu_total, g, m),
        cpu_sys=_sum(frame.cpu_sys, g, m),
        cpu_user=_sum(frame.cpu_user, g, m),
        processor=np.full(m, np.nan),
        interval=frame.interval,
        total_status=np.zeros(m, STATUS_DTYPE),
        split_status=np.where(split_known, Code.OK, Code.UNREADABLE).astype(STATUS_DTYPE),
        window=_window(frame, g, m),
        time=_group_time(frame, g, m),
    )


def _group_time(frame: Frame, g: np.ndarray, m: int) -> TimeFacts:
    """Where each group's time went: each part the sum of its tasks' that know it (unknown
    only where none does, as a counter), over the sum of their threads; the group's CPU
    limit the tightest of its tasks' cgroups', the CPUs allowed the most of theirs."""
    ok = frame.time_status == Code.OK
    known = _sum(ok.astype(float), g, m) > 0
    percent = np.where(known, _sum(np.where(ok, frame.time_percent, 0.0), g, m), np.nan)
    status = np.where(known, Code.OK, Code.UNREADABLE).astype(STATUS_DTYPE)
    limit, cpus = np.full(m, np.inf), np.full(m, -np.inf)
    np.minimum.at(limit, g, np.where(np.isnan(frame.cpu_limit), np.inf, frame.cpu_limit))
    np.maximum.at(cpus, g, np.where(np.isnan(frame.cpus_allowed), -np.inf, frame.cpus_allowed))
    return TimeFacts(
        percent,
        status,
        _sum(frame.time_threads, g, m),
        np.where(np.isinf(limit), np.nan, limit),
        np.where(np.isinf(cpus), np.nan, cpus),
    )


def _group_labels(frame: Frame, g: np.ndarray, names: list[str]) -> RowLabels:
    """A group's row: the smallest PID of the group, the cgroup label as its name and
    command line, its tasks' user (``*`` when they differ)."""
    m = len(names)
    pid = np.full(m, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(pid, g, frame.pid)
    users = [sorted({frame.user[i] for i in np.flatnonzero(g == j)}) for j in range(m)]
    return RowLabels(
        pid, pid, [u[0] if len(u) == 1 else "*" for u in users], list(names), list(names)
    )


def _window(frame: Frame, g: np.ndarray, m: int) -> np.ndarray | None:
    """Each group's counter window: the longest of its rows' (``Frame.window``)."""
    if frame.window is None:
        return None
    out = np.zeros(m)
    np.maximum.at(out, g, frame.window)
    return out


def follow_rows(cgroups: CgroupCache, frame: Frame) -> list[int]:
    """``cgroups`` told of ``frame``'s rows (``CgroupCache.follow``: the processes with no
    row forgotten, those with CPU time over the refresh read again); the rows' PIDs."""
    pids: list[int] = frame.pid.tolist()
    cgroups.follow(pids, frame.pid[frame.cpu_total > 0].tolist())
    return pids


class Membership:
    """Who runs in each task's cgroup: the cgroup of each process read when first seen and
    again whenever it ran (``tiptop.kernel.cgroup.CgroupCache``), who runs in it once per cgroup
    (``tiptop.runtimes.Workloads``); the rows by cgroup and a recording (``--record``)
    ask it of the same frame, which is looked up once."""

    def __init__(
        self,
        proc_root: str = "/proc",
        workloads: Workloads | None = None,
        counting: Callable[[], dict[str, CgroupCounts]] | None = None,
    ) -> None:
        self.cgroups = CgroupCache(proc_root)
        #: The counts, by cgroup path, of the cgroups counted whole over the latest
        #: refresh (the sampler's ``cgroup_counts``: their tasks have no counters of their
        #: own); None: every task counts itself.
        self.counting = counting
        #: Who runs in each cgroup (its owner: this object; the cli's, with the host's
        #: cgroup mount, else one that reads no inode).
        self.workloads = workloads if workloads is not None else Workloads(None)
        #: The latest frame looked up (stale when another comes), its tasks' workloads,
        #: and its cgroups by path.
        self._frame: Frame | None = None
        self._of: list[Workload] = []
        self.paths: dict[str, Workload] = {}

    def of(self, frame: Frame) -> list[Workload]:
        """The workload of each row's process, its cgroup's looked up once per frame."""
        if frame is self._frame:
            return self._of
        pids = follow_rows(self.cgroups, frame)
        seen: dict[str, Workload] = {}
        out = []
        for pid in pids:
            path = self.cgroups.path(pid)
            found = seen.get(path)
            if found is None:
                found = seen[path] = self.workloads.of(path)
            out.append(found)
        self._frame, self._of, self.paths = frame, out, seen
        return out

    def counted(self) -> dict[Workload, CgroupCounts]:
        """The counts of the latest frame's cgroups counted whole, by who runs in them (a
        cgroup followed with no row now is left out: not shown)."""
        out: dict[Workload, CgroupCounts] = {}
        for path, counts in (self.counting() if self.counting is not None else {}).items():
            found = self.paths.get(path)
            if found is not None:
                out[found] = out[found] + counts if found in out else counts
        return out

    def forget_gone(self, frame: Frame) -> None:
        """Forget the processes that have no row in ``frame`` (a PID may be reused); read
        again the cgroups of those that ran."""
        if frame is not self._frame:
            follow_rows(self.cgroups, frame)


class CgroupSource(SourceWrapper):
    """A frame source whose rows are summed by cgroup while :attr:`enabled`; the live
    ``G`` key (through the source's ``key``, as a replay's time travel keys) switches it.
    Who runs in each task's cgroup comes from ``membership`` (live tasks), else from the
    frames (``Frame.workload`` of each task row, ``Frame.whole``: a replayed recording's);
    a frame of tasks without it is passed on as it is."""

    def __init__(
        self, source: FrameSource, enabled: bool = True, membership: Membership | None = None
    ) -> None:
        super().__init__(source)
        self.enabled = enabled
        self.membership = membership

    def refresh(self) -> Frame:
        """The wrapped source's frame, grouped when enabled."""
        return self.grouped(self.source.refresh())

    def grouped(self, frame: Frame) -> Frame:
        """``frame`` (of the wrapped source, under its screen) grouped when enabled."""
        member = self.membership
        if not self.enabled:
            if member is not None:
                member.forget_gone(frame)
            return frame
        workloads = member.of(frame) if member is not None else frame.workload
        if workloads is None or not len(frame):
            return frame
        names = [w.shown() for w in workloads]
        whole = member.counted() if member is not None else frame.whole
        counted: dict[str, CgroupCounts] = {}
        for found, counts in (whole or {}).items():
            name = found.shown()
            counted[name] = counted[name] + counts if name in counted else counts
        return group(frame, self.source.screen, names, workloads, counted)

    def key(self, key: str) -> bool:
        """``G`` switches grouping; other keys go to the wrapped source."""
        if key == KEY:
            self.enabled = not self.enabled
            return True
        return self.source.key(key)


__all__ = ["KEY", "CgroupSource", "Membership", "group"]
