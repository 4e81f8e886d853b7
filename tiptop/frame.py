"""One refresh's result and where it comes from: the contract between sampling and display.

Imports only ``cells`` and ``messages``.

A :class:`Frame` holds, for the rows of one refresh (processes, or threads with ``-H``),
the row facts (ids, names, user, liveness), the evaluated columns as a float64 matrix with a
separate status matrix (:class:`tiptop.cells.Status`), each cell's running fraction
(``time_running / time_enabled`` of the counters it used; 1.0 when not multiplexed), a
bottleneck cell's node beside its value (never packed into it), and
each counter's raw interval delta, so batch csv/json can print them. Filtering, sorting and
formatting are ``tiptop.table``'s job, not the frame's.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import KW_ONLY
from typing import TYPE_CHECKING, Protocol

import numpy as np

from tiptop.cells import STATUS_DTYPE, valued
from tiptop.messages import MessageLog
from tiptop.readonly import by_value, mutable, readonly

if TYPE_CHECKING:
    from tiptop.screens.model import ScreenSpec
    from tiptop.workload import Workload


@by_value
class SamplerConfig:
    """What a frame source watches and how: ``threads`` (-H), ``kernel`` (-K),
    ``only_pid``, ``only_name``, ``match_cmdline`` (-c), ``uid`` (-u), ``collect`` (False
    for --no-collect), ``cpu_threshold`` (--cpu-min), ``sticky``. Made from the options
    in one place, ``tiptop.options.Options.sampler_config()``."""

    threads: bool = False
    kernel: bool = False
    only_pid: int | None = None
    only_name: str | None = None
    match_cmdline: bool = False
    uid: int | None = None
    collect: bool = True
    cpu_threshold: float = 0.00001
    sticky: bool = False


@readonly
class Pressure:
    """One resource's pressure stall information over a refresh (PSI,
    Documentation/accounting/psi.rst): the fraction of the interval in which some tasks,
    and all non-idle tasks at once, stalled on it; None where the kernel does not say."""

    resource: str
    some: float | None
    full: float | None


@readonly
class Context:
    """What the whole machine did over one refresh, for the header beside the rows' own
    time: CPUs, tasks runnable, the time the hypervisor stole, the pressure of CPU, I/O and
    memory (``tiptop.engine.scan.times`` reads it)."""

    #: CPUs online.
    cpus: int
    #: Tasks runnable at the refresh, tiptop itself left out (``/proc/loadavg``); None unread.
    runnable: int | None
    #: Fraction of the CPUs' time stolen by the hypervisor (``/proc/stat``, proc(5)
    #: ``steal``); None unread.
    steal: float | None
    #: PSI of cpu, io and memory, those the kernel has.
    pressure: tuple[Pressure, ...] = ()


@mutable
class CgroupCounts:
    """One cgroup's counters over one refresh, counted whole by the kernel's cgroup events
    (``tiptop.engine.count.cgroups``), per counter alias of the screen (arrays of k): what
    rows by cgroup and the exporter take in place of its tasks' sums."""

    #: Raw (unscaled) interval delta.
    raw: np.ndarray
    #: Scaled interval delta (each CPU's by its own running fraction).
    scaled: np.ndarray
    #: Σ Δrunning / Σ Δenabled over the CPUs (1 where never enabled: nothing ran).
    running: np.ndarray
    #: Scaled count since the cgroup was first followed.
    total: np.ndarray
    #: Read OK over the whole interval (not the baseline's, not a CPU never scheduled in).
    ok: np.ndarray
    #: No task of the cgroup ran in the interval: its events were enabled for no time on
    #: any CPU (a cgroup event's clock runs only while one of its tasks is on the CPU).
    idle: bool = False

    def __add__(self, other: CgroupCounts) -> CgroupCounts:
        """Two cgroups' counts as one row's (the cgroups of one name)."""
        return CgroupCounts(
            self.raw + other.raw,
            self.scaled + other.scaled,
            np.minimum(self.running, other.running),
            self.total + other.total,
            self.ok & other.ok,
            self.idle and other.idle,
        )


@readonly
class Members:
    """The rows a frame's rows were summed from (rows by cgroup: the tasks of each group
    row), so that a view can show each group row with its tasks beneath it."""

    #: The frame of the tasks, as its source gave it.
    rows: Frame
    #: int64 per task row: the index of its group row in the summed frame.
    group: np.ndarray


#: What a row field of a :class:`Frame` holds (see :data:`ROW_FIELDS`).
RowField = np.ndarray | list[str] | None


@mutable
class Frame:
    """The numbers of one refresh. Row arrays have length ``n``; matrices are ``(n, k)``.

    Every field is filled: a frame with rows is made by ``tiptop.screens.frames`` (the one
    constructor, whatever the source), an empty one by :meth:`empty`."""

    # Every field by keyword: forty-odd of them, too many to give in order.
    _: KW_ONLY

    #: 0-based refresh number since the screen (or filter) last changed.
    iteration: int
    #: Unix time at which this refresh was taken.
    timestamp: float
    #: Seconds this refresh covers (since the previous one).
    interval: float
    #: True when rows are threads (``-H``), False when they are processes.
    threads: bool
    #: Column headers, in screen order (the screen's ColumnSpecs carry the formats).
    headers: tuple[str, ...]
    #: Counter aliases, in screen order.
    counters: tuple[str, ...]

    # --- rows
    tid: np.ndarray  # int64: the thread id (== pid on a process row)
    pid: np.ndarray  # int64: the process (thread group) id
    marker: list[str]  # "+" main thread of a multi-threaded process, "-" other threads, " "
    user: list[str]
    name: list[str]  # process name (comm), full, never cut at a space
    cmdline: list[str]  # full command line, NULs as spaces, newlines made safe
    num_threads: np.ndarray  # int64
    dead: np.ndarray  # bool: the task has exited (kept in sticky mode)
    cpu_total: np.ndarray  # float64: %CPU over the interval, for the idle filter and -p

    # --- cells
    values: np.ndarray  # float64 (n, len(headers))
    status: np.ndarray  # uint8 (n, len(headers)), a Status per cell
    running: np.ndarray  # float64 (n, len(headers)): min running fraction of the cell's counters
    #: int16 (n, len(headers)): a bottleneck cell's top-down node, an index in its column's
    #: labels (``tiptop.screens.columns.Column.labels``); -1 for none and in other columns.
    node: np.ndarray

    # --- counters, for the machine-readable outputs
    counter_delta: np.ndarray  # float64 (n, len(counters)): raw (unscaled) interval delta
    counter_running: np.ndarray  # float64 (n, len(counters)): Δrunning/Δenabled, nan if unknown
    counter_status: np.ndarray  # uint8 (n, len(counters))

    #: Number of tasks tracked in total (every thread), for the live "Tasks:" line.
    tasks_total: int
    #: True when each row is a cgroup, its tasks summed (``--by cgroup``, the live ``G``):
    #: the name column is then the cgroup's label.
    by_cgroup: bool = False

    # --- the evaluation's other inputs (``tiptop.screens.evaluate``): with these a
    # recording evaluates any screen over the same counters again on replay, and rows by
    # cgroup sum them.
    cpu_user: np.ndarray  # float64: %CPU in user mode (CPU_USER)
    cpu_sys: np.ndarray  # float64: %CPU in system mode (CPU_SYS)
    processor: np.ndarray  # float64: the CPU last run on (PROC_ID)
    cpu_status: np.ndarray  # uint8 (n, 2): statuses of CPU_TOT, CPU_USER/SYS
    counter_scaled: np.ndarray  # float64 (n, k): delta(alias), scaled; NaN where not OK
    counter_total: np.ndarray  # float64 (n, k): the alias's running total; NaN where not OK
    counter_total_status: np.ndarray  # uint8 (n, k)
    #: float64: seconds each row's counter deltas cover (``INTERVAL``); None: ``interval``
    #: for every row.
    window: np.ndarray | None = None
    # --- where each row's time went (``tiptop.screens.variables.TimeFacts``, same names)
    time_percent: np.ndarray  # float64 (n, 4): run, wait, throttled, I/O, % of the interval
    time_status: np.ndarray  # uint8 (n, 4)
    time_threads: np.ndarray  # float64: the threads each row's sums cover
    cpu_limit: np.ndarray  # float64: its cgroup's CPU limit in CPUs; NaN for none
    cpus_allowed: np.ndarray  # float64: the CPUs it may run on, where read; NaN otherwise
    #: What the whole machine did over the refresh; None where not read.
    context: Context | None = None
    #: Per row, who runs in its cgroup (``tiptop.workload``): set on the rows by cgroup
    #: (``tiptop.sources.bycgroup``); None where not known.
    workload: list[Workload] | None = None
    #: The task rows this frame's rows sum (rows by cgroup), each with its group row; None
    #: for a frame of tasks. A copy of some rows (:meth:`take`, :meth:`concat`) has none.
    members: Members | None = None
    #: A replayed refresh's cgroups counted whole (their tasks had no counters of their
    #: own), by who runs in them; None where none were (a live source's rows by cgroup
    #: ask the sampler's ``cgroup_counts``).
    whole: dict[Workload, CgroupCounts] | None = None
    #: int64 per row by cgroup, the processes in its cgroup now (the exporter's cgroup
    #: walk, ``tiptop.engine.cgroupwalk``, reads them from ``cgroup.procs``); None where
    #: each row is one task, or a sum of the task rows beneath it.
    processes: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.tid)

    @classmethod
    def empty(
        cls,
        headers: tuple[str, ...] = (),
        counters: tuple[str, ...] = (),
        *,
        iteration: int = 0,
        timestamp: float = 0.0,
        interval: float = 0.0,
        threads: bool = False,
    ) -> Frame:
        """A frame with no rows (what a refresh with nothing to show returns)."""
        nc, nk = len(headers), len(counters)
        return cls(
            iteration=iteration,
            timestamp=timestamp,
            interval=interval,
            threads=threads,
            headers=headers,
            counters=counters,
            tid=np.zeros(0, np.int64),
            pid=np.zeros(0, np.int64),
            marker=[],
            user=[],
            name=[],
            cmdline=[],
            num_threads=np.zeros(0, np.int64),
            dead=np.zeros(0, bool),
            cpu_total=np.zeros(0),
            values=np.zeros((0, nc)),
            status=np.zeros((0, nc), STATUS_DTYPE),
            running=np.ones((0, nc)),
            node=np.full((0, nc), -1, np.int16),
            counter_delta=np.zeros((0, nk)),
            counter_running=np.ones((0, nk)),
            counter_status=np.zeros((0, nk), STATUS_DTYPE),
            tasks_total=0,
            cpu_user=np.zeros(0),
            cpu_sys=np.zeros(0),
            processor=np.zeros(0),
            cpu_status=np.zeros((0, 2), STATUS_DTYPE),
            counter_scaled=np.zeros((0, nk)),
            counter_total=np.zeros((0, nk)),
            counter_total_status=np.zeros((0, nk), STATUS_DTYPE),
            time_percent=np.zeros((0, 4)),
            time_status=np.zeros((0, 4), STATUS_DTYPE),
            time_threads=np.zeros(0),
            cpu_limit=np.zeros(0),
            cpus_allowed=np.zeros(0),
        )

    def multiplexed(self) -> np.ndarray:
        """Cells whose value was scaled because their counters ran part of the interval."""
        return (self.running < 1.0) & valued(self.status)

    def take(self, rows: slice | np.ndarray) -> Frame:
        """Some rows of the frame (a slice, an index array or a boolean mask); the frame
        facts (iteration, headers, tasks_total...) are kept."""
        out: dict[str, RowField] = {}
        for name in ROW_FIELDS:
            x = getattr(self, name)
            if x is None:
                continue
            if isinstance(x, list):
                x = x[rows] if isinstance(rows, slice) else [x[i] for i in _indices(rows)]
            else:
                x = x[rows]
            out[name] = x
        return self._with_rows(out)

    def concat(self, other: Frame) -> Frame:
        """This frame's rows then ``other``'s; the frame facts are this frame's (``other``
        may be a headerless empty frame, or this one may be: then ``other``'s headers)."""
        if not len(other):
            return self
        if not len(self) and self.values.shape[1] != other.values.shape[1]:
            return dataclasses.replace(
                other,
                iteration=self.iteration,
                timestamp=self.timestamp,
                interval=self.interval,
                tasks_total=self.tasks_total,
            )
        out: dict[str, RowField] = {}
        for name in ROW_FIELDS:
            x, y = getattr(self, name), getattr(other, name)
            if x is None or y is None:  # windows known for every row, or not at all
                out[name] = y if not len(self) else None
                continue
            out[name] = x + y if isinstance(x, list) else np.concatenate([x, y])
        return self._with_rows(out)

    def _with_rows(self, rows: dict[str, RowField]) -> Frame:
        """A copy with the row fields ``rows`` (from :data:`ROW_FIELDS`) replaced: set one by
        one, since a type checker cannot match a dict of mixed fields to the constructor; the
        copy sums no :attr:`members` (their group indices are this frame's rows')."""
        out = copy.copy(self)
        out.members = None
        for name, value in rows.items():
            setattr(out, name, value)
        return out


def _indices(rows: np.ndarray) -> list[int]:
    rows = np.asarray(rows)
    return np.flatnonzero(rows).tolist() if rows.dtype == bool else rows.tolist()


#: The per-row fields of a Frame (arrays and lists of length ``n``).
ROW_FIELDS: tuple[str, ...] = tuple(
    f.name
    for f in dataclasses.fields(Frame)
    if f.name
    not in (
        "iteration",
        "timestamp",
        "interval",
        "threads",
        "headers",
        "counters",
        "tasks_total",
        "by_cgroup",
        "context",
        "members",
        "whole",
    )
)


class FrameSource(Protocol):
    """Where frames come from: the sampler (``tiptop.engine.sampler``), a replayed
    recording (``tiptop.recording``), rows summed by cgroup, or a test's scripted source.
    The live view, the batch writers, the exporter and every other consumer take frames
    through this protocol only.

    ``start()`` takes baselines (nothing is shown for it); ``refresh()`` gives the frame
    covering the time since the previous ``start``/``refresh``; ``reconfigure(screen,
    config)`` switches screen or what is watched (a :class:`SamplerConfig`) and the next
    ``refresh`` starts afresh;
    ``messages`` is the message log every consumer reads with its own cursor; ``close()``
    releases everything.

    The abilities below have defaults here: a source that subclasses this protocol and
    lacks one inherits "not supported", so consumers call them without probing.
    """

    messages: MessageLog
    #: The screen being evaluated: a plain attribute, so that a source may set it; a
    #: source whose screen is another's (a wrapper, a replay) makes it a read-only property.
    screen: ScreenSpec

    def start(self) -> None:
        """Take baselines; the next :meth:`refresh` covers a real interval."""
        ...

    def refresh(self) -> Frame:
        """The frame of the time since the previous start/refresh."""
        ...

    def reconfigure(
        self, screen: ScreenSpec | None = None, config: SamplerConfig | None = None
    ) -> None:
        """Switch screen or what is watched (None: as it was); the next refresh starts
        afresh."""
        ...

    def close(self) -> None:
        """Release every resource."""
        ...

    # ------------------------------------------------------------------ abilities
    def key(self, key: str) -> bool:
        """A key this source acts on (a replay's time travel, the cgroup ``G``): True
        when it used ``key``. By default it uses none."""
        return False

    def title(self) -> str:
        """Words for the live title line about where frames come from (a replay's time);
        empty by default."""
        return ""

    def due_in(self, delay: float) -> float:
        """Seconds until the live view's next refresh, given its ``delay`` (a replay plays
        at the recorded pace); by default the delay."""
        return delay

    def attach_spawned(self, pid: int, stops_at_exec: str | None = None) -> None:
        """Count a forked child from its ``execve`` (``tiptop -- cmd``); only a source
        that counts live tasks can."""
        # Not NotImplementedError: a type checker takes a body that only raises it for an
        # abstract method, and this default is meant to be inherited.
        raise TypeError(f"{type(self).__name__} counts no spawned command")


class SourceWrapper(FrameSource):
    """A source that passes everything to the ``source`` it wraps; a subclass overrides
    what it changes (recording each frame, rows summed by cgroup)."""

    def __init__(self, source: FrameSource) -> None:
        self.source = source
        self.messages = source.messages

    @property
    def screen(self) -> ScreenSpec:  # type: ignore[override]  # read-only: the wrapped source's
        """The wrapped source's screen."""
        return self.source.screen

    def start(self) -> None:
        """The wrapped source's baselines."""
        self.source.start()

    def refresh(self) -> Frame:
        """The wrapped source's frame."""
        return self.source.refresh()

    def reconfigure(
        self, screen: ScreenSpec | None = None, config: SamplerConfig | None = None
    ) -> None:
        """Reconfigure the wrapped source."""
        self.source.reconfigure(screen, config)

    def due_in(self, delay: float) -> float:
        """When the wrapped source's next refresh is due."""
        return self.source.due_in(delay)

    def close(self) -> None:
        """Close the wrapped source."""
        self.source.close()

    def key(self, key: str) -> bool:
        """The wrapped source's keys."""
        return self.source.key(key)

    def title(self) -> str:
        """The wrapped source's title words."""
        return self.source.title()

    def attach_spawned(self, pid: int, stops_at_exec: str | None = None) -> None:
        """The wrapped source counts the spawned command."""
        self.source.attach_spawned(pid, stops_at_exec)


__all__ = [
    "ROW_FIELDS",
    "Context",
    "Frame",
    "FrameSource",
    "Members",
    "Pressure",
    "SamplerConfig",
    "SourceWrapper",
]
