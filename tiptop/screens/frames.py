"""The one constructor of a :class:`~tiptop.frame.Frame` with rows: the evaluator's inputs
(row facts and counter cells) and the rows' labels made into a finished frame, every field
filled, whatever the source (the sampler, a replayed recording, rows by cgroup).

A source hands over what it knows of its rows; the screen's columns are computed here by its
:class:`~tiptop.screens.evaluate.Evaluator`, and the frame keeps the evaluator's inputs beside
them, so that a recording can evaluate any screen again over the same counts and consumers
never need a fallback for a field a source left out.
"""

from __future__ import annotations

import numpy as np

from tiptop.frame import Context, Frame
from tiptop.readonly import readonly
from tiptop.screens.evaluate import CounterCells, Evaluator
from tiptop.screens.variables import RowFacts, TimeFacts


@readonly
class RowLabels:
    """What a frame shows of its rows that only an exec or a rename changes: ids, user,
    name and command line."""

    tid: np.ndarray  # int64
    pid: np.ndarray  # int64
    user: list[str]
    name: list[str]
    cmdline: list[str]


@readonly
class FrameFacts:
    """What one refresh says of itself rather than of a row."""

    #: 0-based refresh number since the screen (or filter) last changed.
    iteration: int
    #: Unix time at which the refresh was taken.
    timestamp: float
    #: Seconds the refresh covers.
    interval: float
    #: True when rows are threads (``-H``).
    threads: bool
    #: Tasks tracked in all (the live ``Tasks:`` line).
    tasks_total: int
    #: True when each row is a cgroup (``--by cgroup``, the live ``G`` key).
    by_cgroup: bool = False
    #: What the whole machine did over the refresh; None where not read.
    context: Context | None = None


def markers(tid: np.ndarray, pid: np.ndarray, num_threads: np.ndarray) -> list[str]:
    """The original's row markers: ``-`` other thread, ``+`` multi-threaded process, ``" "``
    (one array expression, not a call per row)."""
    return np.where(tid != pid, "-", np.where(num_threads > 1, "+", " ")).tolist()


def evaluated_frame(
    evaluator: Evaluator,
    refresh: FrameFacts,
    labels: RowLabels,
    facts: RowFacts,
    counters: CounterCells,
    *,
    aliases: tuple[str, ...],
    raw: np.ndarray,
    num_threads: np.ndarray,
    dead: np.ndarray,
) -> Frame:
    """The frame of rows ``labels``: ``evaluator``'s columns over ``facts`` and
    ``counters``, with those inputs kept. ``aliases`` name the columns of ``counters``
    and ``raw`` (each counter's unscaled delta, NaN where unreadable); ``num_threads`` and
    ``dead`` are per row."""
    cells = evaluator.evaluate(facts, counters)
    time = facts.time if facts.time is not None else TimeFacts.unknown(facts.n)
    return Frame(
        iteration=refresh.iteration,
        timestamp=refresh.timestamp,
        interval=refresh.interval,
        threads=refresh.threads,
        headers=evaluator.headers,
        counters=aliases,
        tid=labels.tid,
        pid=labels.pid,
        marker=markers(labels.tid, labels.pid, num_threads),
        user=labels.user,
        name=labels.name,
        cmdline=labels.cmdline,
        num_threads=num_threads,
        dead=dead,
        cpu_total=facts.cpu_total,
        values=cells.values,
        status=cells.status,
        running=cells.running,
        node=cells.node,
        counter_delta=raw,
        counter_running=counters.running,
        counter_status=counters.status,
        tasks_total=refresh.tasks_total,
        by_cgroup=refresh.by_cgroup,
        cpu_user=facts.cpu_user,
        cpu_sys=facts.cpu_sys,
        processor=facts.processor,
        cpu_status=np.stack([facts.total_status, facts.split_status], axis=1),
        counter_scaled=counters.scaled,
        counter_total=counters.total,
        counter_total_status=counters.total_status,
        window=facts.window,
        time_percent=time.percent,
        time_status=time.status,
        time_threads=time.threads,
        cpu_limit=time.limit,
        cpus_allowed=time.cpus,
        context=refresh.context,
    )
