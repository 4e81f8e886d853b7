"""Frames turned into Prometheus counter totals over a bounded set of labels (pure: no
``prometheus_client`` here, :mod:`.serve` turns a :class:`Snapshot` into metric families).

Names follow the Prometheus naming conventions (prometheus.io/docs/practices/naming): one
prefix ``tiptop_``, base units, counters end in ``_total``: ``tiptop_cpu_seconds_total``,
``tiptop_instructions_total``, ``tiptop_page_faults_total``, ``tiptop_task_clock_seconds_total``;
ratios (IPC, misses per instruction) are left to PromQL (docs/exporter.md).

Totals are sums of interval deltas kept per label set, so a task that ends leaves its
final counts in its group's total and an aggregated counter never decreases (``rate()`` is
right). Labels are ``comm``, ``user`` and ``cgroup``; with ``by="pid"`` each of the top N
processes by CPU in a refresh gets its own series (``pid`` label too) and the others are
summed into one series whose every label is ``other`` (so ``sum by (cgroup)`` shows them
as one cgroup of that name, never as a series without a cgroup).

Counted from birth: the sampler shows a task from its second refresh on (its first
interval is its counters' baseline, ``tiptop.engine.sampler``), so a process first shown
after the exporter's first refresh gets, once, the CPU time it used before that interval:
its ``/proc/PID/stat`` utime + stime (since its birth, read by ``cpu_since_birth``) less
the interval's. Processes of the first refresh are counted from the exporter's start.

Bounded: a label set none of whose tasks was seen for ``expiry`` seconds (``--series-expiry``,
10 minutes by default) is dropped, at most :data:`MAX_SERIES` are kept (the least recently
seen dropped first), and a kernel thread's comm, which names its current work
(``kworker/u8:2-events_unbound``), is exported as its stable base name (``kworker``,
:func:`stable_comm`).

Absent, not zero: a label set's counter series exists only once one of its tasks read
that counter (cell status OK, ``tiptop.cells``); an event this machine cannot count (a
hardware event without a PMU) has no series at all, where a 0 would read as a measurement.
``tiptop_event_read_ok`` still says, per label set, that the counter was not read.

Rows of whole cgroups (``Frame.by_cgroup``: the cgroup walk of a root ``--by cgroup``
exporter, ``tiptop.engine.cgroupwalk``) are labelled by who runs in them, count their
processes as their tasks (``Frame.processes``) and add no CPU from a birth (theirs is their
cgroup's own, from its birth); a label set all of whose rows are dead (its cgroup removed)
is exported once with its last counts and ends at the next refresh.

Where the time went (docs/screens.md "Where the time goes", read for a screen that uses
it): the seconds its tasks spent on a CPU, waiting for one, throttled by their cgroup's CPU
limit and blocked on block I/O, as counters (:data:`TIME_METRICS`), each absent until one
of the group's tasks knew it (no delay accounting: no I/O series).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import field
from enum import StrEnum
from functools import lru_cache

import numpy as np

from tiptop import vocab
from tiptop.cells import Code
from tiptop.choices import SeriesBy
from tiptop.frame import CgroupCounts, Frame
from tiptop.readonly import mutable, readonly
from tiptop.screens.model import CounterSpec, NamedEvent
from tiptop.workload import Workload

PREFIX = "tiptop_"
OTHER = "other"
#: The most label sets exported at once: a user spawning processes of names never seen
#: before (the 2026-11-29 attack: 5 a second) can add no more series than this, whatever
#: ``--series-expiry`` says. 2,000 processes of distinct names fit, and their exposition
#: stays a few megabytes.
MAX_SERIES = 5000
#: The labels of ``--by cgroup``: who runs in the cgroup, named as kube-state-metrics and
#: cAdvisor name them (``tiptop.workload``; empty where not known), then the cgroup's label.
CGROUP_LABELS = ("namespace", "pod", "container", "container_id", "uid", "unit", "cgroup")
#: Events counted in nanoseconds: exported in seconds (base unit).
_NANOSECONDS = {"task-clock", "cpu-clock"}


@readonly
class Metric:
    """One exported counter: its name (with ``_total``), help text and the factor from the
    event's unit to the base unit."""

    name: str
    help: str
    scale: float = 1.0


class MetricType(StrEnum):
    """A family's OpenMetrics type, the word of its ``# TYPE`` line."""

    COUNTER = "counter"
    GAUGE = "gauge"


@readonly
class Family:
    """One metric family of a snapshot, of type ``kind``; ``samples`` are ``(label
    values, value)`` in the order of ``labels``."""

    name: str
    help: str
    kind: MetricType
    labels: tuple[str, ...]
    samples: tuple[tuple[tuple[str, ...], float], ...]


@readonly
class Snapshot:
    """What one refresh exports: built whole, then swapped in (never changed)."""

    families: tuple[Family, ...] = ()
    timestamp: float = 0.0


def event_name(spec: CounterSpec) -> str:
    """perf's canonical name for a screen counter's event (``cycles``, ``page-faults``),
    else its written name, else its alias."""
    event = spec.event
    if isinstance(event, NamedEvent):
        name: str | None = event.name
    else:
        name = vocab.event_name(event.type, event.config)
    if name is None:
        return str(spec.alias)
    low = name.lower()
    if low in vocab.HARDWARE:
        return vocab.HARDWARE_NAME[vocab.HARDWARE[low]]
    if low in vocab.SOFTWARE:
        return vocab.SOFTWARE_NAME[vocab.SOFTWARE[low]]
    return name


#: A kernel thread's comm: a base name, a slash, then its CPU or queue and current work
#: (``kworker/0:1H-events_highpri``, ``ksoftirqd/3``, ``irq/24-pciehp``, ``kworker/R-rcu_gp``).
_KERNEL_THREAD = re.compile(r"([a-z_][a-z0-9_]*)/(?:u?\d|R-).*")


@lru_cache(maxsize=4096)
def stable_comm(comm: str) -> str:
    """A kernel thread's base name (``kworker``) for its comm, which changes with its
    work; any other comm as it is."""
    match = _KERNEL_THREAD.fullmatch(comm)
    return match.group(1) if match else comm


def metric_for(spec: CounterSpec) -> Metric:
    """The exported counter of one screen counter, its help text in words."""
    event = event_name(spec)
    base = re.sub(r"[^a-z0-9]+", "_", event.lower()).strip("_") or "event"
    if event in _NANOSECONDS:
        return Metric(
            f"{PREFIX}{base}_seconds_total",
            f"Time counted by the perf software event {event}, in seconds",
            1e-9,
        )
    if base[0].isdigit():
        base = f"event_{base}"
    return Metric(f"{PREFIX}{base}_total", f"Events counted by the perf event {event}")


def metrics_for(counters: Sequence[CounterSpec]) -> list[Metric]:
    """The exported counters of a screen's counters; a name two counters share gets the
    alias appended to the later ones."""
    out: list[Metric] = []
    seen: set[str] = set()
    for spec in counters:
        m = metric_for(spec)
        if m.name in seen:
            stem = m.name.removesuffix("_total")
            alias = re.sub(r"[^a-z0-9]+", "_", str(spec.alias).lower())
            m = Metric(f"{stem}_{alias}_total", m.help, m.scale)
        seen.add(m.name)
        out.append(m)
    return out


#: Where the time went, in seconds (``Frame.time_percent``'s columns, in order).
TIME_METRICS = (
    Metric(
        f"{PREFIX}run_seconds_total",
        "Time on a CPU (schedstat; a process: its threads' sum), seconds",
    ),
    Metric(
        f"{PREFIX}wait_seconds_total",
        "Time runnable but waiting for a CPU on a run queue (schedstat run delay; "
        "throttled time included), seconds",
    ),
    Metric(
        f"{PREFIX}throttled_seconds_total",
        "Of the wait, time held by the cgroup's CPU limit (cpu.stat; shared among the "
        "cgroup's waiting tasks), seconds",
    ),
    Metric(
        f"{PREFIX}io_wait_seconds_total",
        "Time blocked on block I/O (delay accounting, kernel.task_delayacct), seconds",
    ),
)


@mutable
class _Group:
    """The running totals of one label set (index 0: CPU seconds, then one per counter,
    then one per :data:`TIME_METRICS`)."""

    totals: np.ndarray
    #: Per counter: some task of the group read it OK once (its series is exported).
    counted: np.ndarray
    tasks: int = 0
    seen: float = 0.0  # the timestamp of the latest refresh that had one of its tasks
    running: np.ndarray | None = None  # min running fraction per counter, last refresh
    ok: np.ndarray | None = None  # 1.0 when every task read the counter OK, last refresh
    suspect: int = 0  # tasks whose breakdown cells were SUSPECT, last refresh


@readonly
class _Grouping:
    """One refresh's rows grouped by label set, and the row labels it was made from."""

    pid: np.ndarray
    name: list[str]
    user: list[str]
    #: Each row's label set.
    keys: list[tuple[str, ...]]
    #: The label sets, in order of first row.
    groups: list[tuple[str, ...]]
    #: Each row's place in :attr:`groups`.
    group_of_row: np.ndarray
    #: ``Aggregator.cgroup_moves`` when this was made.
    moves: int

    def made_from(self, frame: Frame, moves: int) -> bool:
        """Whether ``frame``'s row labels are the very lists this was made from, and no
        process was found moved to another cgroup since (``moves``)."""
        return (
            self.pid is frame.pid
            and self.name is frame.name
            and self.user is frame.user
            and self.moves == moves
        )


@mutable
class Aggregator:
    """Counter totals per label set, fed one frame per refresh."""

    metrics: list[Metric]
    by: SeriesBy = SeriesBy.COMM  # comm (comm, user, cgroup), cgroup, or pid (top N + other)
    top: int = 20
    cmdline: bool = False  # ``-c``: the command line as a label (pid mode only)
    cgroup_of: Callable[[int], str] = field(default=lambda pid: "/")
    #: How many times ``cgroup_of`` found a process moved to another cgroup
    #: (``tiptop.kernel.cgroup.CgroupCache.moves``): a grouping made before it changed is
    #: stale.
    cgroup_moves: Callable[[], int] = field(default=lambda: 0)
    #: The screen declares a breakdown (``ScreenSpec.breakdown``): export how many tasks
    #: of each group had it marked suspect (``tiptop_breakdown_suspect_tasks``).
    breakdown: bool = False
    #: A process's CPU seconds since its birth (``/proc/PID/stat``), None when unreadable:
    #: what a process first shown after the first refresh used before it was shown.
    cpu_since_birth: Callable[[int], float | None] = field(default=lambda pid: None)
    #: Seconds after which a label set none of whose tasks was seen is dropped (0: never).
    expiry: float = 600.0
    #: The most label sets kept (:data:`MAX_SERIES`): past it, the least recently seen go.
    max_series: int = MAX_SERIES
    #: With ``by="cgroup"``: per label, the CPU seconds its cgroups used since the last
    #: call, from their own ``cpu.stat`` (``tiptop.kernel.cgroup.CgroupCpu.used``), given
    #: the refresh's processes; a label left out keeps its tasks' sum.
    cgroup_cpu: Callable[[list[int]], dict[str, float]] | None = None
    #: With ``by="cgroup"``: who runs in a process's cgroup (``tiptop.runtimes``), its
    #: names the labels of :data:`CGROUP_LABELS`; None: the ``cgroup`` label alone is set.
    workload_of: Callable[[int], Workload] | None = None
    #: With ``by="cgroup"``: per cgroup label, its counters over the refresh from the
    #: kernel's cgroup events (``tiptop.engine.count.cgroups``), given the refresh's
    #: processes; those cgroups' tasks have no counters of their own.
    cgroup_counts: Callable[[list[int]], dict[str, CgroupCounts]] | None = None
    #: With ``by="cgroup"``: each cgroup label's label set, as last seen.
    _cgroup_keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _groups: dict[tuple[str, ...], _Group] = field(default_factory=dict)
    #: The processes of the last refresh (None before the first): a process not among
    #: them is new and counted from its birth.
    _known: set[int] | None = None
    #: The grouping of the last refresh's rows (:meth:`_grouping` says when it is stale).
    _kept_grouping: _Grouping | None = None
    #: Rows of whole cgroups (the cgroup walk's frames): the label sets whose every row was
    #: dead (their cgroups removed), exported once with their last counts and then ended.
    _ending: list[tuple[str, ...]] = field(default_factory=list)

    @property
    def labels(self) -> tuple[str, ...]:
        """The label names of every per-group series."""
        base = ("comm", "user", "cgroup")
        if self.by is SeriesBy.CGROUP:
            return CGROUP_LABELS
        if self.by is not SeriesBy.PID:
            return base
        return ("pid", *base, "cmdline") if self.cmdline else ("pid", *base)

    def _key(self, frame: Frame, i: int) -> tuple[str, ...]:
        key = (stable_comm(frame.name[i]), frame.user[i], self.cgroup_of(int(frame.pid[i])))
        if self.by is SeriesBy.CGROUP:
            return self._cgroup_key(int(frame.pid[i]), key[2])
        if self.by is not SeriesBy.PID:
            return key
        pid = (str(int(frame.pid[i])),)
        return (*pid, *key, frame.cmdline[i]) if self.cmdline else (*pid, *key)

    def _other(self) -> tuple[str, ...]:
        return (OTHER,) * len(self.labels)

    def update(self, frame: Frame) -> Snapshot:
        """Add one frame's deltas to the totals; the snapshot to export now. Rows are
        summed per label set with numpy (one pass per quantity, not one per row)."""
        deltas = _deltas(frame, self.metrics)
        for key in self._ending:
            self._groups.pop(key, None)
        if not frame.by_cgroup:  # a cgroup row's CPU is its cgroup's own, from its birth
            self._add_births(frame, deltas)
        for g in self._groups.values():
            g.tasks, g.running, g.ok, g.suspect = 0, None, None, 0
        grouping = self._grouping(frame)
        self._add(frame, deltas, grouping.groups, grouping.group_of_row)
        self._ending = self._ended(frame, grouping) if frame.by_cgroup else []
        if self.cgroup_cpu is not None and self.by is SeriesBy.CGROUP:
            self._add_cgroup_cpu(frame, deltas, grouping.keys)
        if self.cgroup_counts is not None and self.by is SeriesBy.CGROUP:
            self._add_cgroup_counts(frame)
        self._expire(frame.timestamp)
        return self.snapshot(frame)

    def _grouping(self, frame: Frame) -> _Grouping:
        """The grouping of ``frame``'s rows. Kept while the frame's row labels are the very
        lists of the last refresh: the sampler hands the same ones while its rows, names
        and users do not change (``tiptop.engine.sampler``, its row labels), and no
        process was found moved to another cgroup (``cgroup_moves``); ``by="pid"``
        follows the CPU order, which changes every refresh, and is never kept."""
        kept = self._kept_grouping
        moves = self.cgroup_moves()
        if kept is not None and self.by is not SeriesBy.PID and kept.made_from(frame, moves):
            return kept
        keys = self._keys(frame)
        index: dict[tuple[str, ...], int] = {}
        group_of_row = np.fromiter(
            (index.setdefault(key, len(index)) for key in keys), np.intp, len(keys)
        )
        grouping = _Grouping(
            frame.pid, frame.name, frame.user, keys, list(index), group_of_row, moves
        )
        self._kept_grouping = grouping
        return grouping

    def _keys(self, frame: Frame) -> list[tuple[str, ...]]:
        """Each row's label set; with ``by="pid"`` the top N rows' own and every other
        row's :data:`OTHER`, and the series of processes out of the top N end; a row of a
        whole cgroup (``Frame.by_cgroup``) its workload's."""
        if frame.by_cgroup and frame.workload is not None:
            return [_workload_labels(w, w.label) for w in frame.workload]
        if self.by is SeriesBy.PID:
            other = self._other()
            shown = np.zeros(len(frame), bool)
            shown[np.argsort(-frame.cpu_total, kind="stable")[: self.top]] = True
            keys = [self._key(frame, i) if shown[i] else other for i in range(len(frame))]
            kept = set(keys)
            for key in [key for key in self._groups if key != other and key not in kept]:
                del self._groups[key]  # out of the top N, or ended: the series stops
            return keys
        pids = frame.pid.tolist()
        cgroups = [self.cgroup_of(pid) for pid in pids]
        if self.by is SeriesBy.CGROUP:  # the workload looked up once per cgroup label
            made: dict[str, tuple[str, ...]] = {}
            return [
                made[c] if c in made else made.setdefault(c, self._cgroup_key(pid, c))
                for pid, c in zip(pids, cgroups, strict=True)
            ]
        return list(zip(map(stable_comm, frame.name), frame.user, cgroups, strict=True))

    def _cgroup_key(self, pid: int, cgroup: str) -> tuple[str, ...]:
        """The label set of process ``pid`` in cgroup ``cgroup`` (:data:`CGROUP_LABELS`)."""
        w = self.workload_of(pid) if self.workload_of is not None else None
        key = ("", "", "", "", "", "", cgroup) if w is None else _workload_labels(w, cgroup)
        self._cgroup_keys[cgroup] = key
        return key

    def _add(
        self,
        frame: Frame,
        deltas: np.ndarray,
        keys: list[tuple[str, ...]],
        group_of_row: np.ndarray,
    ) -> None:
        """Sum the rows into the label sets ``keys`` (row i into ``keys[group_of_row[i]]``):
        the totals, and the latest refresh's gauges."""
        n_groups, k = len(keys), len(self.metrics)
        width = k + len(TIME_METRICS)
        totals = np.zeros((n_groups, width + 1))
        np.add.at(totals, group_of_row, deltas)
        read_ok = frame.counter_status == Code.OK
        counted = np.zeros((n_groups, width), bool)
        np.logical_or.at(counted, group_of_row, np.hstack([read_ok, frame.time_status == Code.OK]))
        ok = np.ones((n_groups, k))
        np.minimum.at(ok, group_of_row, read_ok.astype(np.float64))
        running = np.full((n_groups, k), np.inf)  # fmin skips nan: inf left = all unknown
        np.fmin.at(running, group_of_row, np.asarray(frame.counter_running, np.float64))
        running[np.isinf(running)] = np.nan
        # A task row is one task; a row of a whole cgroup says how many processes it has.
        tasks = ~frame.dead if frame.processes is None else np.where(frame.dead, 0, frame.processes)
        alive = np.bincount(group_of_row, tasks, n_groups)
        suspect = np.bincount(group_of_row, (frame.status == Code.SUSPECT).any(axis=1), n_groups)
        for j, key in enumerate(keys):
            g = self._groups.get(key)
            if g is None:
                g = self._groups[key] = self._new_group()
            g.totals += totals[j]
            g.counted |= counted[j]
            g.seen = frame.timestamp
            g.tasks, g.suspect = int(alive[j]), int(suspect[j])
            g.running, g.ok = running[j], ok[j]

    def _add_cgroup_cpu(
        self,
        frame: Frame,
        deltas: np.ndarray,
        keys: list[tuple[str, ...]],
    ) -> None:
        """Each cgroup's CPU seconds from its own ``cpu.stat`` where they exceed its
        tasks' sum (:attr:`cgroup_cpu`; ``keys``: each row's label set): processes too
        short to be shown are counted, and a cgroup none of whose processes is shown now
        still counts what they used. The larger of the two is taken for each interval, so
        the total never decreases whatever the clocks' granularity."""
        assert self.cgroup_cpu is not None
        used = self.cgroup_cpu(frame.pid.tolist())
        tasks = dict.fromkeys({k[-1] for k in keys}, 0.0)
        for key, cpu in zip(keys, deltas[:, 0].tolist(), strict=True):
            tasks[key[-1]] += cpu
        for label, seconds in used.items():
            key = self._cgroup_keys.get(label, ("",) * (len(CGROUP_LABELS) - 1) + (label,))
            g = self._groups.get(key)
            if g is None:
                if seconds <= 0:
                    continue  # an idle cgroup no task of which is shown: no new series
                g = self._groups[key] = self._new_group()
            if seconds > 0:
                g.seen = frame.timestamp
            g.totals[0] += max(seconds - tasks.get(label, 0.0), 0.0)

    def _add_cgroup_counts(self, frame: Frame) -> None:
        """Each cgroup's counters from its cgroup events (:attr:`cgroup_counts`): added to
        its totals, and its gauges (read OK, running fraction) are the events' own."""
        assert self.cgroup_counts is not None
        k = len(self.metrics)
        scale = np.array([m.scale for m in self.metrics])
        for label, counts in self.cgroup_counts(frame.pid.tolist()).items():
            key = self._cgroup_keys.get(label, ("",) * (len(CGROUP_LABELS) - 1) + (label,))
            g = self._groups.get(key)
            if g is None:
                if not (counts.ok & (counts.scaled > 0)).any():
                    continue  # an idle cgroup no task of which is shown: no new series
                g = self._groups[key] = self._new_group()
            ok = counts.ok
            g.totals[1 : k + 1] += np.where(ok, counts.scaled, 0.0) * scale
            g.counted[:k] |= ok
            g.seen = frame.timestamp
            g.ok = ok.astype(np.float64)
            g.running = np.where(ok, counts.running, np.nan)

    def _ended(self, frame: Frame, grouping: _Grouping) -> list[tuple[str, ...]]:
        """The label sets all of whose rows are dead: rows of whole cgroups removed since
        the last refresh (this one carries their last counts), whose series end at the
        next (a cgroup made again under the same path starts a new series from 0)."""
        live = np.bincount(grouping.group_of_row, ~frame.dead, len(grouping.groups))
        return [key for key, n in zip(grouping.groups, live.tolist(), strict=True) if n == 0]

    def _new_group(self) -> _Group:
        """A label set's totals, none counted yet."""
        width = len(self.metrics) + len(TIME_METRICS)
        return _Group(np.zeros(width + 1), np.zeros(width, bool))

    def _expire(self, now: float) -> None:
        """Drop the label sets none of whose tasks was seen for :attr:`expiry` seconds, then
        past :attr:`max_series` the least recently seen (of those seen last, the ones that
        used the least CPU)."""
        if self.expiry > 0:
            for key in [k for k, g in self._groups.items() if now - g.seen > self.expiry]:
                del self._groups[key]
        over = len(self._groups) - self.max_series
        if over > 0:
            order = sorted(self._groups.items(), key=lambda kg: (kg[1].seen, kg[1].totals[0]))
            for key, _g in order[:over]:
                del self._groups[key]

    def _add_births(self, frame: Frame, deltas: np.ndarray) -> None:
        """Add to each process first shown now (not the first refresh's) the CPU time it
        used before its first interval (module docstring)."""
        pids = frame.pid.tolist()
        process_rows = (frame.tid == frame.pid).tolist()
        known, self._known = (
            self._known,
            {p for p, row in zip(pids, process_rows, strict=True) if row},
        )
        if known is None:
            return
        for i in [i for i, p in enumerate(pids) if process_rows[i] and p not in known]:
            since_birth = self.cpu_since_birth(pids[i])
            if since_birth is not None:
                deltas[i, 0] = max(since_birth, deltas[i, 0])

    def snapshot(self, frame: Frame) -> Snapshot:
        """The families of the current totals (and the last refresh's gauges); a family
        without samples is left out. Every value is :func:`shortest`."""
        items = sorted(self._groups.items())
        totals = shortest_all(np.array([g.totals for _key, g in items]).reshape(len(items), -1))
        fams = [
            Family(
                f"{PREFIX}cpu_seconds_total",
                "CPU time (user + system, from /proc/PID/stat), seconds",
                MetricType.COUNTER,
                self.labels,
                tuple((key, t[0]) for (key, _g), t in zip(items, totals, strict=True)),
            )
        ]
        for j, m in enumerate((*self.metrics, *TIME_METRICS), start=1):
            fams.append(
                Family(
                    m.name,
                    m.help,
                    MetricType.COUNTER,
                    self.labels,
                    tuple(
                        (key, t[j])
                        for (key, g), t in zip(items, totals, strict=True)
                        if g.counted[j - 1]
                    ),
                )
            )
        fams += self._gauges(items)
        fams.append(
            Family(
                f"{PREFIX}refresh_interval_seconds",
                "Seconds covered by the latest refresh",
                MetricType.GAUGE,
                (),
                (((), shortest(float(frame.interval))),),
            )
        )
        fams.append(
            Family(
                f"{PREFIX}tasks_tracked",
                "Tasks (threads) tracked by tiptop",
                MetricType.GAUGE,
                (),
                (((), float(frame.tasks_total)),),
            )
        )
        return Snapshot(tuple(f for f in fams if f.samples), frame.timestamp)

    def _gauges(self, items: list[tuple[tuple[str, ...], _Group]]) -> list[Family]:
        """Tasks per group; per counter the running fraction and whether it read OK; with a
        breakdown, the tasks whose breakdown was suspect."""
        live = [(key, g) for key, g in items if g.running is not None]
        ev_labels = ("event", *self.labels)
        running, ok = [], []
        for key, g in live:
            for j, m in enumerate(self.metrics):
                name = (m.name.removeprefix(PREFIX).removesuffix("_total"), *key)
                assert g.running is not None and g.ok is not None
                if not np.isnan(g.running[j]):
                    running.append((name, shortest(float(g.running[j]))))
                ok.append((name, float(g.ok[j])))
        fams = [
            Family(
                f"{PREFIX}tasks",
                "Tasks of the group alive at the latest refresh",
                MetricType.GAUGE,
                self.labels,
                tuple((key, float(g.tasks)) for key, g in live),
            ),
            Family(
                f"{PREFIX}event_running_ratio",
                "Least time_running/time_enabled of the group's tasks in the latest "
                "refresh (below 1: multiplexed, the count is scaled)",
                MetricType.GAUGE,
                ev_labels,
                tuple(running),
            ),
            Family(
                f"{PREFIX}event_read_ok",
                "1 when every task of the group read the counter in the latest refresh, "
                "0 when some count is missing (not counted or unreadable)",
                MetricType.GAUGE,
                ev_labels,
                tuple(ok),
            ),
        ]
        if self.breakdown:
            fams.append(
                Family(
                    f"{PREFIX}breakdown_suspect_tasks",
                    "Tasks of the group whose breakdown columns (a top-down level 1) did not add "
                    "up to 100% +- 5 in the latest refresh: their cells are suspect",
                    MetricType.GAUGE,
                    self.labels,
                    tuple((key, float(g.suspect)) for key, g in live),
                )
            )
        return fams


def _workload_labels(w: Workload, cgroup: str) -> tuple[str, ...]:
    """The values of :data:`CGROUP_LABELS` for a cgroup of label ``cgroup`` that ``w``
    runs in."""
    return (w.namespace, w.pod, w.container, w.container_id, w.uid, w.unit, cgroup)


def shortest(value: float) -> float:
    """``value`` rounded to 15 significant digits, as many as any double holds exactly in
    decimal (DBL_DIG, C11 5.2.4.2.2), so that its shortest round-trip text (``repr``, which
    prometheus_client writes) is the decimal a sum of them means, without the noise of the
    float arithmetic that made it: ``0.1 + 0.32`` is written ``0.42``, not
    ``0.42000000000000004``. Rounding is monotone: a counter that never decreased still
    never does."""
    return float(f"{value:.15g}")


def shortest_all(values: np.ndarray) -> list[list[float]]:
    """:func:`shortest` of each row of a 2-d array, at once: scaled to 15 digits left of
    the point, rounded to an integer (below 10**15, exact), scaled back by a power of ten
    (exact up to 10**22, so the division rounds once: the nearest double to that decimal).
    The few values of 10**15 and more, or below 10**-8, go through :func:`shortest`."""
    out = np.array(values, np.float64)
    flat = out.reshape(-1)
    finite = np.flatnonzero(np.isfinite(flat) & (flat != 0))
    digits = 14 - np.floor(np.log10(np.abs(flat[finite])))
    fits = (digits >= 0) & (digits <= 22)
    where, scale = finite[fits], 10.0 ** digits[fits]
    flat[where] = np.round(flat[where] * scale) / scale
    for i in finite[~fits].tolist():
        flat[i] = shortest(float(flat[i]))
    rows: list[list[float]] = out.tolist()
    return rows


def _deltas(frame: Frame, metrics: list[Metric]) -> np.ndarray:
    """Per row: CPU seconds, each counter's scaled delta in base units, then where its time
    went in seconds (:data:`TIME_METRICS`); a cell that was not read OK adds nothing (its
    ``event_read_ok`` gauge says so)."""
    n, k = len(frame), len(metrics)
    out = np.zeros((n, k + 1 + len(TIME_METRICS)))
    known = frame.time_status == Code.OK
    out[:, k + 1 :] = np.where(known, frame.time_percent, 0.0) * frame.interval / 100.0
    cpu = np.nan_to_num(frame.cpu_total, nan=0.0) * frame.interval / 100.0
    out[:, 0] = np.maximum(cpu, 0.0)
    if k:
        raw = frame.counter_scaled
        good = (frame.counter_status == Code.OK) & np.isfinite(raw) & (raw >= 0)
        scale = np.array([m.scale for m in metrics])
        out[:, 1 : k + 1] = np.where(good, raw, 0.0) * scale
    return out


__all__ = [
    "CGROUP_LABELS",
    "MAX_SERIES",
    "OTHER",
    "PREFIX",
    "TIME_METRICS",
    "Aggregator",
    "Family",
    "Metric",
    "Snapshot",
    "metrics_for",
    "shortest",
    "shortest_all",
]
