"""The one screen builder and the one frame builder of the tests, so that a test states only
what it needs (no sampler, no screen file).

``screen("sw", counters={"PF": "page-faults"}, columns=[(" PF", "%5.0f", "delta(PF)")])``
builds a :class:`ScreenSpec`; ``frame([{"tid": 1, "cells": [...]}], SCREEN)`` builds the
:class:`Frame` a sampler of that screen would hand out. :data:`SCREEN` and :func:`task` are
the small default screen (%CPU, Mcycle, IPC) of the table and batch tests, and its rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from tiptop.cells import STATUS_DTYPE, Status
from tiptop.frame import Frame, FrameSource, SamplerConfig
from tiptop.screens.model import ColumnSpec, CounterSpec, NamedEvent, NumericEvent, ScreenSpec

#: What a counter is given as: an event name (``"cycles"``, ``"msr/tsc/"``), a numeric
#: ``(type, config)`` pair, or a ready :class:`CounterSpec`.
Counter = str | tuple[int, int] | CounterSpec

#: What a column is given as: a :class:`ColumnSpec` or its positional fields
#: ``(header, format, expr[, desc[, threshold]])``.
Column = ColumnSpec | tuple[Any, ...]

#: The perf type names the original's screen files use (perf_event_open(2) ``type``).
_TYPE_NAMES = {0: "HARDWARE", 1: "SOFTWARE"}


def _counter(alias: str, event: Counter) -> CounterSpec:
    if isinstance(event, CounterSpec):
        return event
    if isinstance(event, str):
        return CounterSpec(alias, NamedEvent(event), event)
    type_, config = event
    return CounterSpec(
        alias, NumericEvent(type_, config), str(config), _TYPE_NAMES.get(type_, str(type_))
    )


def screen(
    name: str = "t",
    desc: str | None = None,
    *,
    counters: Mapping[str, Counter] | None = None,
    columns: Iterable[Column] = (),
    source: str = "builtin",
) -> ScreenSpec:
    """A screen ``name`` (described as ``desc``, the name by default) with ``counters``
    (alias -> event, in order) and ``columns``, said to come from ``source``."""
    return ScreenSpec(
        name,
        name if desc is None else desc,
        counters=tuple(_counter(a, e) for a, e in (counters or {}).items()),
        columns=tuple(c if isinstance(c, ColumnSpec) else ColumnSpec(*c) for c in columns),
        source=source,
    )


SCREEN = screen(
    "default",
    "Screen by default",
    counters={"CYCLE": "cycles", "INSN": "instructions"},
    columns=[
        (" %CPU", "%5.1f", "CPU_TOT"),
        ("  Mcycle", "%8.2f", "delta(CYCLE) / 1e6"),
        ("  IPC", " %4.2f", "delta(INSN)/delta(CYCLE)"),
    ],
)

#: A screen with a bottleneck column over two node columns (back end, memory bound); a
#: frame's rows give its cells and each cell's node (``"node"``) as they like.
BOTTLENECK_SCREEN = screen(
    "td",
    counters={"C": "cycles"},
    columns=[
        (" %CPU", "%5.1f", "CPU_TOT"),
        ("    %BE", "%7.1f", "delta(C)"),
        ("   %MEM", "%7.1f", "delta(C)"),
        ("    BOTTLENECK", "%.0f%%", "bottleneck(tma: BE=%BE, BE/Mem=%MEM)"),
    ],
)


def task(tid: int, cpu: float, mcyc: float, ipc: float, **facts: Any) -> dict[str, Any]:
    """A row of :data:`SCREEN` for :func:`frame`: %CPU, Mcycle and IPC, and the counter
    deltas that give them; ``facts`` are the other row keys (name, status, dead...)."""
    return {"tid": tid, "cells": [cpu, mcyc, ipc], "deltas": [mcyc * 1e6, mcyc * 1e6 * ipc]} | facts


def frame(
    rows: Sequence[Mapping[str, Any]],
    scr: ScreenSpec = SCREEN,
    *,
    iteration: int = 0,
    timestamp: float = 1795291521.0,
    interval: float = 1.0,
    tasks_total: int = 0,
) -> Frame:
    """The frame of screen ``scr`` holding ``rows``, as the sampler would hand it out.

    Each row is a dict with ``tid`` and ``cells`` (one value per column); optional keys:
    ``status`` and ``running`` per column (OK, 1.0), ``deltas`` per counter (0), ``cpu``
    (%CPU; the first cell by default), ``pid`` (the tid), ``marker`` (" "), ``user``
    ("root"), ``name`` ("proc"), ``cmdline`` (""), ``dead`` (False), ``time`` (% of the
    interval on a CPU, waiting, throttled, blocked on I/O: unknown by default) with
    ``time_status`` (OK where ``time`` holds a number) and ``threads`` (1). A cell whose
    status is not OK holds NaN, as the sampler leaves it."""
    n, nc, nk = len(rows), len(scr.columns), len(scr.counters)

    def matrix(key: str, default: float, dtype: Any, k: int) -> np.ndarray:
        return np.array([r.get(key, [default] * k) for r in rows], dtype).reshape(n, k)

    values = matrix("cells", np.nan, float, nc)
    status = matrix("status", Status.OK, STATUS_DTYPE, nc)
    values[status != Status.OK] = np.nan
    deltas = matrix("deltas", 0.0, float, nk)
    cpu = np.array([r.get("cpu", r["cells"][0]) for r in rows], float)
    time = matrix("time", np.nan, float, 4)
    unknown = [Status.UNREADABLE] * 4
    time_status = np.array([r.get("time_status", unknown) for r in rows], STATUS_DTYPE).reshape(
        n, 4
    )
    given = np.array(["time_status" in r for r in rows], bool)
    time_status[~np.isnan(time) & ~given[:, None]] = 0
    return Frame(
        iteration=iteration,
        timestamp=timestamp,
        interval=interval,
        threads=False,
        headers=tuple(c.header for c in scr.columns),
        counters=tuple(c.alias for c in scr.counters),
        tid=np.array([r["tid"] for r in rows], np.int64),
        pid=np.array([r.get("pid", r["tid"]) for r in rows], np.int64),
        marker=[r.get("marker", " ") for r in rows],
        user=[r.get("user", "root") for r in rows],
        name=[r.get("name", "proc") for r in rows],
        cmdline=[r.get("cmdline", "") for r in rows],
        num_threads=np.ones(n, np.int64),
        dead=np.array([r.get("dead", False) for r in rows], bool),
        cpu_total=cpu,
        values=values,
        status=status,
        running=matrix("running", 1.0, float, nc),
        node=matrix("node", -1, np.int16, nc),
        counter_delta=deltas,
        counter_running=np.ones((n, nk)),
        counter_status=np.zeros((n, nk), STATUS_DTYPE),
        tasks_total=tasks_total,
        # The evaluator's other inputs: all in user mode, last CPU unknown, counters read
        # OK (scaled = raw), no running totals.
        cpu_user=cpu,
        cpu_sys=np.zeros(n),
        processor=np.full(n, np.nan),
        cpu_status=np.zeros((n, 2), STATUS_DTYPE),
        counter_scaled=deltas.copy(),
        counter_total=np.full((n, nk), np.nan),
        counter_total_status=np.full((n, nk), Status.UNREADABLE, STATUS_DTYPE),
        time_percent=np.where(time_status == Status.OK, time, np.nan),
        time_status=time_status,
        time_threads=np.array([r.get("threads", 1) for r in rows], float),
        cpu_limit=np.full(n, np.nan),
        cpus_allowed=np.full(n, np.nan),
    )


class Replayed(Protocol):
    """What replays a recording refresh by refresh (``tiptop.recording.ReplaySource``)."""

    def frame(self, index: int) -> Frame | None: ...


def replayed(source: Replayed, index: int) -> Frame:
    """Refresh ``index`` of a replay, which the test knows is there (a refresh that cannot
    be read is None: a failure here, not an attribute error later)."""
    frame = source.frame(index)
    assert frame is not None, f"refresh {index} of the recording cannot be read"
    return frame


class Lines(Protocol):
    """A recording's refreshes as parsed JSON (``tiptop.recording.index.Recording``)."""

    def record(self, index: int) -> object: ...


def recorded_line(rec: Lines, index: int) -> dict[str, Any]:
    """Refresh ``index``'s line of a recording as the JSON object it is, its values read
    by the test as the file has them."""
    line = rec.record(index)
    assert isinstance(line, dict), line
    return line


class StubSource(FrameSource):
    """A ``FrameSource`` for tests whose ``refresh`` is all that matters: ``start``,
    ``reconfigure`` (which takes a new screen when given) and ``close`` do nothing else."""

    def start(self) -> None:
        """Nothing to start."""

    def reconfigure(
        self, screen: ScreenSpec | None = None, config: SamplerConfig | None = None
    ) -> None:
        """A new screen when given; nothing else to do."""
        if screen is not None:
            self.screen = screen

    def close(self) -> None:
        """Nothing to close."""
