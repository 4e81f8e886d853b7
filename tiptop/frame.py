"""One refresh's result: the contract between sampling and display; imports only ``cells``.

A :class:`Frame` holds, for the rows of one refresh (processes, or threads with ``-H``),
the row facts (ids, names, user, liveness), the evaluated columns as a float64 matrix with a
separate status matrix (:class:`tiptop.cells.Status`), each cell's running fraction
(``time_running / time_enabled`` of the counters it used; 1.0 when not multiplexed), and
each counter's raw interval delta, so batch csv/json can print them. Filtering, sorting and
formatting are ``tiptop.table``'s job, not the frame's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tiptop.cells import STATUS_DTYPE, Status


@dataclass
class Frame:
    """The numbers of one refresh. Row arrays have length ``n``; matrices are ``(n, k)``."""

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

    # --- counters, for the machine-readable outputs
    counter_delta: np.ndarray  # float64 (n, len(counters)): raw (unscaled) interval delta
    counter_running: np.ndarray  # float64 (n, len(counters)): Δrunning/Δenabled, nan if unknown
    counter_status: np.ndarray  # uint8 (n, len(counters))

    #: Number of tasks tracked in total (every thread), for the live "Tasks:" line.
    tasks_total: int = 0
    #: Problems first seen at this refresh, one line each (already deduplicated).
    messages: list[str] = field(default_factory=list)

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
            counter_delta=np.zeros((0, nk)),
            counter_running=np.ones((0, nk)),
            counter_status=np.zeros((0, nk), STATUS_DTYPE),
        )

    def multiplexed(self) -> np.ndarray:
        """Cells whose value was scaled because their counters ran part of the interval."""
        return (self.running < 1.0) & (self.status == Status.OK)
