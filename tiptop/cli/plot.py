"""``tiptop --plot FILE -o out.png``: one column of a recording over time, one line per task.

The column (``--column``, default ``IPC``; a header of the recorded screen, or of ``-S``'s)
is evaluated again from the recorded counters (``tiptop.recording``) for the top
``--top`` tasks by CPU time over the recording, or the task given with ``-p``. A cell that
is not a number (``-`` or ``?``) is a gap in its line. matplotlib is an optional extra
(``pip install 'tiptop-perf[plot]'``); without it the command is one line saying so.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tiptop.cells import Status
from tiptop.cli.screens import ScreenSet
from tiptop.errors import TiptopError, UsageError

#: Image formats by suffix (matplotlib's ``savefig`` picks the backend from it).
FORMATS = (".png", ".svg", ".pdf")
INSTALL = "--plot needs matplotlib: pip install 'tiptop-perf[plot]' (or pip install matplotlib)"


@dataclass
class Series:
    """One task's line: its label, and per recorded refresh its time and value (nan: gap)."""

    label: str
    times: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    cpu_seconds: float = 0.0


def find_column(screen: Any, name: str) -> int:
    """The index of ``screen``'s column whose header is ``name`` (case and spaces ignored)."""
    want = name.strip().lower()
    headers = [c.header.strip() for c in screen.columns]
    for i, h in enumerate(headers):
        if h.lower() == want:
            return i
    raise UsageError(
        f"--column {name}: screen '{screen.name}' has no such column ({', '.join(headers)})"
    )


def series(
    source: Any, column: int, first: int, last: int, pid: int | None = None
) -> dict[int, Series]:
    """Per task (pid, or tid with threads) its values of ``column`` in frames ``first`` to
    ``last`` of a ``ReplaySource``; with ``pid`` that task only."""
    out: dict[int, Series] = {}
    for i in range(first, last + 1):
        f = source.frame(i)
        keys = f.tid if f.threads else f.pid
        for r, key in enumerate(keys.tolist()):
            if pid is not None and key != pid:
                continue
            s = out.get(key)
            if s is None:
                s = out[key] = Series(f"{key} {f.name[r]}")
            ok = f.status[r, column] == Status.OK
            s.times.append(f.timestamp)
            s.values.append(float(f.values[r, column]) if ok else float("nan"))
            if np.isfinite(f.cpu_total[r]):
                s.cpu_seconds += float(f.cpu_total[r]) * f.interval / 100.0
    return out


def top(found: dict[int, Series], n: int) -> list[Series]:
    """The ``n`` series of the tasks that used the most CPU time."""
    return sorted(found.values(), key=lambda s: -s.cpu_seconds)[: max(n, 1)]


def draw(lines: list[Series], path: str, ylabel: str, title: str) -> None:
    """Write the lines to ``path`` (PNG, SVG or PDF by suffix), axes labelled."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TiptopError(INSTALL) from None
    fig, ax = plt.subplots(figsize=(10, 5))
    for s in lines:
        when = [datetime.datetime.fromtimestamp(t) for t in s.times]
        ax.plot(when, s.values, label=s.label, linewidth=1.2)
    ax.set_xlabel("time")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if lines:
        ax.legend(loc="best", fontsize="small")
    from matplotlib.dates import DateFormatter

    ax.xaxis.set_major_formatter(DateFormatter("%H:%M:%S"))
    fig.autofmt_xdate()
    try:
        fig.savefig(path)
    except OSError as exc:
        raise TiptopError(f"-o: cannot write '{path}': {exc.strerror}") from None
    finally:
        plt.close(fig)


def run_plot(opts: Any, loaded: ScreenSet, say: Callable[[str], None]) -> int:
    """``--plot FILE -o IMAGE``: draw the column; 0, or one line and 1/2."""
    from tiptop.cli.replay import frame_range
    from tiptop.cli.screens import pick_screen
    from tiptop.recording.replay import ReplaySource, load

    if not opts.output:
        raise UsageError("--plot needs -o IMAGE (.png, .svg or .pdf)")
    if os.path.splitext(opts.output)[1].lower() not in FORMATS:
        raise UsageError(f"-o {opts.output}: the image name must end in .png, .svg or .pdf")
    rec = load(opts.plot)
    for note in rec.notes:
        say(note)
    first, last = frame_range(opts, rec.times)
    screen = rec.screens[0] if opts.screen is None else pick_screen(loaded.screens, opts.screen)[1]
    column = find_column(screen, opts.plot_column)
    source = ReplaySource(rec, screen, first=first, last=last)
    found = series(source, column, first, last, opts.only_pid)
    if not found:
        raise TiptopError("--plot: no task to draw in the recording")
    col = screen.columns[column]
    host = rec.header.get("host", "?")
    draw(top(found, opts.plot_top), opts.output, f"{col.header.strip()} ({col.desc})",
         f"tiptop on {host}: {col.header.strip()}")  # fmt: skip
    return 0


__all__ = ["FORMATS", "INSTALL", "Series", "draw", "find_column", "run_plot", "series", "top"]
