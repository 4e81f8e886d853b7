"""Batch mode's ``--format csv`` and ``--format json``: one record per visible row, each
column's value and status, each counter's delta and running time, under stable field names
(docs/guide.md). A value that is NaN or infinite is written empty (csv) or null (json).
Rows by cgroup (``--by cgroup``) also carry who runs in the cgroup
(``tiptop.workload.FIELDS`` and the cgroup's short label: csv columns after ``dead``, json
an object ``workload``), empty where not known.
"""

from __future__ import annotations

import csv
import json
import math
from typing import IO, TYPE_CHECKING

from tiptop.cells import STATUS_NAME, VALUED, Status
from tiptop.choices import Format, SeriesBy
from tiptop.frame import Frame
from tiptop.options import Options
from tiptop.table import View, path_cell, path_nodes, rows
from tiptop.workload import FIELDS, Workload

if TYPE_CHECKING:
    from tiptop.screens.model import ScreenSpec


def field_names(screen: ScreenSpec) -> tuple[list[str], list[str]]:
    """Stable machine names: each column's header with spaces stripped (made unique with
    ``_2``...), and each counter's alias. Documented in docs/guide.md."""
    seen: dict[str, int] = {}
    cols = []
    for col in screen.columns:
        name = col.header.strip() or "column"
        seen[name] = seen.get(name, 0) + 1
        cols.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return cols, [c.alias for c in screen.counters]


def _workload(frame: Frame, i: int) -> tuple[str, ...]:
    """Row ``i``'s workload fields and cgroup label; empty strings where not known."""
    found: Workload | None = frame.workload[i] if frame.workload is not None else None
    if found is None:
        return ("",) * (len(FIELDS) + 1)
    return (*found.values(), found.label)


def _num(x: float) -> float | None:
    return None if math.isnan(x) or math.isinf(x) else x


class RecordWriter:
    """One record per row: csv (one header line) or json (one object per line)."""

    BASE = ("timestamp", "iteration", "interval", "pid", "tid", "user", "command", "dead")
    #: With rows by cgroup: who runs in it (``tiptop.workload``), then its short label.
    WORKLOAD = (*FIELDS, "cgroup")

    def __init__(
        self, out: IO[str], options: Options, screen: ScreenSpec, screen_index: int, fmt: Format
    ) -> None:
        self.out = out
        self.screen = screen
        self.view: View = options.view()
        self.json = fmt is Format.JSON
        self.columns, self.counters = field_names(screen)
        #: Per column, a bottleneck column's label table (docs/screens.md "Bottleneck").
        self.paths = path_nodes(screen)
        self.csv = None if self.json else csv.writer(out, lineterminator="\n")
        self.by_cgroup = options.series_by is SeriesBy.CGROUP

    def begin(self, now: float) -> None:
        """The csv header line (nothing for json)."""
        if self.csv is not None:
            names = list(self.BASE) + (list(self.WORKLOAD) if self.by_cgroup else [])
            for c, labels in zip(self.columns, self.paths, strict=True):
                names += [c, f"{c}_status"] + ([f"{c}_node"] if labels else [])
            for a in self.counters:
                names += [f"{a}_delta", f"{a}_running"]
            self.csv.writerow(names)

    def frame(self, frame: Frame, iteration: int) -> int:
        """Write every visible row of one iteration."""
        # Counter columns of the frame in the screen's order (by alias).
        kidx = [frame.counters.index(a) if a in frame.counters else None for a in self.counters]
        n = 0
        for row in rows(frame, self.screen, self.view):
            i = row.index
            values = [
                _num(v) if s in VALUED else None
                for v, s in zip(row.values, row.status, strict=True)
            ]
            statuses = [STATUS_NAME[s] for s in row.status]
            nodes: dict[int, str | None] = {}
            for j, labels in enumerate(self.paths):
                if labels:  # the node apart, the share as the value
                    ok = values[j] is not None
                    nodes[j] = path_cell(labels, row.nodes[j]) if ok else None
            deltas: list[float | None] = []
            running: list[float | None] = []
            for k in kidx:
                if k is None:  # a counter of the screen that this frame lacks
                    deltas.append(None)
                    running.append(None)
                    continue
                ok = frame.counter_status[i, k] == Status.OK
                deltas.append(_num(float(frame.counter_delta[i, k])) if ok else None)
                running.append(_num(float(frame.counter_running[i, k])))
            base = [
                round(frame.timestamp, 6),
                iteration,
                round(frame.interval, 6),
                row.pid,
                row.tid,
                row.user,
                row.command,
                row.dead,
            ]
            who = _workload(frame, i) if self.by_cgroup else None
            if self.json:
                rec = dict(zip(self.BASE, base, strict=True))
                if who is not None:
                    rec["workload"] = dict(zip(self.WORKLOAD, who, strict=True))
                rec["columns"] = dict(zip(self.columns, values, strict=True))
                rec["status"] = dict(zip(self.columns, statuses, strict=True))
                if nodes:
                    rec["nodes"] = {self.columns[j]: lab for j, lab in nodes.items()}
                rec["counters"] = {
                    a: {"delta": d, "running": r}
                    for a, d, r in zip(self.counters, deltas, running, strict=True)
                }
                self.out.write(json.dumps(rec, allow_nan=False) + "\n")
            else:
                assert self.csv is not None
                line: list[object] = [*base[:7], int(row.dead), *(who or ())]
                for j, (v, s) in enumerate(zip(values, statuses, strict=True)):
                    line += ["" if v is None else repr(v), s]
                    if j in nodes:
                        line.append(nodes[j] or "")
                for d, r in zip(deltas, running, strict=True):
                    line += ["" if d is None else repr(d), "" if r is None else repr(r)]
                self.csv.writerow(line)
            n += 1
        return n
