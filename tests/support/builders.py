"""Hand-built Frames and ScreenSpecs for the table and batch tests (no sampler needed)."""

from __future__ import annotations

import numpy as np

from tiptop.cells import STATUS_DTYPE, Status
from tiptop.frame import Frame
from tiptop.screens.model import ColumnSpec, CounterSpec, NamedEvent, ScreenSpec

SCREEN = ScreenSpec(
    name="default",
    desc="Screen by default",
    counters=(
        CounterSpec("CYCLE", NamedEvent("cycles"), "cycles"),
        CounterSpec("INSN", NamedEvent("instructions"), "instructions"),
    ),
    columns=(
        ColumnSpec(" %CPU", "%5.1f", "CPU_TOT"),
        ColumnSpec("  Mcycle", "%8.2f", "delta(CYCLE) / 1e6"),
        ColumnSpec("  IPC", " %4.2f", "delta(INSN)/delta(CYCLE)"),
    ),
)


def frame(rows: list[dict], *, iteration: int = 0, timestamp: float = 1795291521.0) -> Frame:
    """A frame from row dicts: tid, cpu, mcyc, ipc, and optional pid/marker/name/status."""
    n = len(rows)
    values = np.array([[r["cpu"], r["mcyc"], r["ipc"]] for r in rows], float).reshape(n, 3)
    status = np.array([r.get("status", [Status.OK] * 3) for r in rows], STATUS_DTYPE).reshape(n, 3)
    values[status != Status.OK] = np.nan
    return Frame(
        iteration=iteration,
        timestamp=timestamp,
        interval=1.0,
        threads=False,
        headers=tuple(c.header for c in SCREEN.columns),
        counters=("CYCLE", "INSN"),
        tid=np.array([r["tid"] for r in rows], np.int64),
        pid=np.array([r.get("pid", r["tid"]) for r in rows], np.int64),
        marker=[r.get("marker", " ") for r in rows],
        user=[r.get("user", "root") for r in rows],
        name=[r.get("name", "proc") for r in rows],
        cmdline=[r.get("cmdline", "") for r in rows],
        num_threads=np.ones(n, np.int64),
        dead=np.array([r.get("dead", False) for r in rows], bool),
        cpu_total=np.array([r["cpu"] for r in rows], float),
        values=values,
        status=status,
        running=np.ones((n, 3)),
        counter_delta=np.array(
            [[r["mcyc"] * 1e6, r["mcyc"] * 1e6 * r["ipc"]] for r in rows], float
        ).reshape(n, 2),
        counter_running=np.ones((n, 2)),
        counter_status=np.zeros((n, 2), STATUS_DTYPE),
    )
