"""``tiptop --plot FILE -o out.png``: one column of a recording over time, one line per task.

The column (``--column``; a header of the recorded screen, or of ``-S``'s) is evaluated
again from the recorded counters (``tiptop.recording``) for the top ``--top`` tasks by CPU
time over the recording, or the task given with ``-p``. Without ``--column``: the screen's
first rate or ratio of counters that has values in the recording (``IPC`` first where it
has), else its first column with values (``%CPU`` on a recording made without counters). A
cell that is not a number (``-`` or ``?``) is a gap in its line. The y axis starts at 0
unless a value is negative; the time axis says the day and the time zone. matplotlib is an
optional extra (``pip install 'tiptop-perf[plot]'``); without it the command is one line
saying so.
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from tiptop.cells import Status
from tiptop.cli.screens import ScreenSet
from tiptop.errors import TiptopError, UsageError
from tiptop.messages import MessageLog
from tiptop.options import Options
from tiptop.recording.column import ColumnReader, Series
from tiptop.recording.index import Recording
from tiptop.refresh import drain
from tiptop.screens.columns import Kind, screen_columns
from tiptop.screens.model import ScreenSpec

#: Image formats by suffix (matplotlib's ``savefig`` picks the backend from it).
FORMATS = (".png", ".svg", ".pdf")
INSTALL = "--plot needs matplotlib: pip install 'tiptop-perf[plot]' (or pip install matplotlib)"
#: The figure's size in inches and its resolution: WIDTH pixel columns, the time bins read.
FIGSIZE = (10, 5)
DPI = 100
WIDTH = FIGSIZE[0] * DPI


def find_column(screen: Any, name: str) -> int:
    """The index of ``screen``'s column whose header is ``name`` (case and spaces ignored);
    a ``bottleneck(...)`` column is refused (its value is a node and a share)."""
    want = name.strip().lower()
    headers = [c.header.strip() for c in screen.columns]
    kinds = [c.kind for c in screen_columns(screen)]
    for i, h in enumerate(headers):
        if h.lower() == want and kinds[i] is Kind.BOTTLENECK:
            raise UsageError(
                f"--column {name}: a bottleneck column names a top-down node, not a number to "
                "plot; plot one of the columns it reads"
            )
        if h.lower() == want:
            return i
    raise UsageError(
        f"--column {name}: screen '{screen.name}' has no such column ({', '.join(headers)})"
    )


def series(
    rec: Recording,
    screen: ScreenSpec,
    column: int,
    first: int,
    last: int,
    pid: int | None = None,
    messages: MessageLog | None = None,
) -> dict[int, Series]:
    """Per task (pid, or tid with threads) its values of ``column`` in frames ``first`` to
    ``last`` of ``rec`` under ``screen``, at most :data:`WIDTH` time bins of a smallest and
    a largest value (``tiptop.recording.column``); with ``pid`` that task only. A column
    with no value in that range is one line (TiptopError)."""
    reader = ColumnReader(rec, screen, column, width=WIDTH, pid=pid, messages=messages)
    found = reader.read(first, last)
    if found and reader.valued == 0:
        head = screen.columns[column].header.strip()
        raise TiptopError(f"--plot: {head} has no values in this recording: {reader.why_none()}")
    return found


def top(found: dict[int, Series], n: int) -> list[Series]:
    """The ``n`` series of the tasks that used the most CPU time."""
    return sorted(found.values(), key=lambda s: -s.cpu_seconds)[: max(n, 1)]


def pick_column(source: Any, screen: Any, first: int, last: int) -> int:
    """The column drawn without ``--column``: ``IPC`` if it has values in the recording,
    else the first column reading counter deltas (a rate or ratio) that has, else the first
    column that has (looked for in up to 64 refreshes spread over the range)."""
    step = max((last - first + 1) // 64, 1)
    has = np.zeros(len(screen.columns), bool)
    for i in range(first, last + 1, step):
        f = source.frame(i)
        if f is not None and len(f):
            has |= (f.status == Status.OK).any(axis=0)
    headers = [c.header.strip().upper() for c in screen.columns]
    rates = [c.kind is Kind.RATE for c in screen_columns(screen)]
    for ok in (
        lambda j: headers[j] == "IPC",
        lambda j: rates[j],
        lambda j: True,
    ):
        for j in range(len(headers)):
            if has[j] and ok(j):
                return j
    raise TiptopError(f"--plot: no column of screen '{screen.name}' has a value to draw")


def short(desc: str, limit: int = 48) -> str:
    """A column's description for an axis label: without its parenthesised asides, cut at
    ``limit`` characters."""
    text = " ".join(re.sub(r"\([^()]*\)", " ", desc).split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def draw(lines: list[Series], path: str, ylabel: str, title: str) -> None:
    """Write the lines to ``path`` (PNG, SVG or PDF by suffix), axes labelled: the y axis
    from 0 unless a value is negative, the times in the local time zone, named, each time
    label different from the others (:func:`time_labels`)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.dates import date2num, num2date
        from matplotlib.ticker import Formatter
    except ImportError:
        raise TiptopError(INSTALL) from None
    zone = datetime.datetime.now().astimezone().tzinfo

    class Labels(Formatter):
        """The time axis's labels, as precise as their spacing needs."""

        def __call__(self, x: float, pos: int | None = None) -> str:
            return time_labels([num2date(x, tz=zone)])[0]

        def format_ticks(self, values: Any) -> list[str]:
            return time_labels([num2date(v, tz=zone) for v in values])

    fig, ax = plt.subplots(figsize=FIGSIZE, dpi=DPI)
    low = 0.0
    for s in lines:
        when = date2num([datetime.datetime.fromtimestamp(t, zone) for t in s.times.tolist()])
        ax.plot(when, s.values, label=s.label, linewidth=1.2)
        if np.isfinite(s.values).any():
            low = min(low, float(np.nanmin(s.values)))
    if low >= 0:
        ax.set_ylim(bottom=0)
    times = [float(t) for s in lines if len(s.times) for t in (s.times.min(), s.times.max())]
    ax.set_xlabel(_time_label(times, zone))
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if lines:
        ax.legend(loc="best", fontsize="small")
    ax.xaxis_date(zone)
    ax.xaxis.set_major_formatter(Labels())
    fig.autofmt_xdate()
    try:
        fig.savefig(path)
    except OSError as exc:
        raise TiptopError(f"-o: cannot write '{path}': {exc.strerror}") from None
    finally:
        plt.close(fig)


def time_labels(stamps: list[datetime.datetime]) -> list[str]:
    """Labels of the time axis's ticks, none repeated: ``10:32:05``, with as many decimals
    of a second as ticks closer than a second need (``10:32:05.25``), and the day first
    (``11-27 23:00:00``) when the ticks span days."""
    days = len({s.date() for s in stamps}) > 1
    for decimals in range(7):
        labels = []
        for s in stamps:
            text = s.strftime("%m-%d %H:%M:%S" if days else "%H:%M:%S")
            if decimals:
                text += f".{s.microsecond // 10 ** (6 - decimals):0{decimals}d}"
            labels.append(text)
        if len(set(labels)) == len(labels):
            return labels
    return labels


def _time_label(times: list[float], zone: Any) -> str:
    """``time on 2026-11-27 (UTC, UTC+00:00)``; both days when the range spans two or more."""
    if not times:
        return "time"
    days = [datetime.datetime.fromtimestamp(t, zone) for t in (min(times), max(times))]
    span = days[0].strftime("%Y-%m-%d")
    if days[1].date() != days[0].date():
        span += " to " + days[1].strftime("%Y-%m-%d")
    offset = days[0].strftime("%z")
    return f"time on {span} ({days[0].tzname()}, UTC{offset[:3]}:{offset[3:]})"


def _plotted_screen(rec: Recording, loaded: ScreenSet, wanted: str) -> ScreenSpec:
    """``-S``: a recorded screen by its recorded number or name, else one of this
    machine's screens by name (its columns evaluated from the recorded counters)."""
    from tiptop.cli.replay import pick_recorded

    if rec.screen_numbered(wanted) is None and not wanted.isdigit():
        mine = next((s for s in loaded.screens if wanted in s.name), None)
        if mine is not None:
            return mine
    return pick_recorded(rec, wanted)


def run_plot(opts: Options, loaded: ScreenSet, say: Callable[[str], None]) -> int:
    """``--plot FILE -o IMAGE``: draw the column; 0, or one line and 1/2."""
    from tiptop.cli.replay import frame_range
    from tiptop.recording.reader import load
    from tiptop.recording.replay import ReplaySource

    if not opts.output:
        raise UsageError("--plot needs -o IMAGE (.png, .svg or .pdf)")
    if os.path.splitext(opts.output)[1].lower() not in FORMATS:
        raise UsageError(f"-o {opts.output}: the image name must end in .png, .svg or .pdf")
    rec = load(opts.plot, "--plot")
    try:
        first, last = frame_range(opts, rec.times)
        screen = rec.screens[0]
        if opts.screen is not None:
            screen = _plotted_screen(rec, loaded, opts.screen)
        source = ReplaySource(rec, screen, first=first, last=last)
        if opts.plot_column is not None:
            column = find_column(screen, opts.plot_column)
        else:
            column = pick_column(source, screen, first, last)
        try:
            found = series(rec, screen, column, first, last, opts.only_pid, source.messages)
        finally:
            drain(source.messages, 0, say)
    finally:
        rec.close()
    if not found:
        raise TiptopError("--plot: no task to draw in the recording")
    col = screen.columns[column]
    head = col.header.strip()
    draw(
        top(found, opts.plot_top),
        opts.output,
        f"{head}: {short(col.desc)}",
        f"tiptop on {rec.header.host}: {head}",
    )
    return 0


__all__ = [
    "FORMATS",
    "INSTALL",
    "Series",
    "draw",
    "find_column",
    "pick_column",
    "run_plot",
    "series",
    "short",
    "time_labels",
    "top",
]
