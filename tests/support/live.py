"""Live mode without a terminal: a scripted frame source handing out hand-built frames, a
live app over it, and its screen rendered to an urwid canvas as text and attributes (urwid's
own testing habit). Used by tests/unit/test_live_*.py, the tmux test and the keypress
benchmark."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tests.support.builders import frame, screen
from tiptop.cells import Status
from tiptop.frame import Frame, FrameSource, SamplerConfig
from tiptop.host import Host
from tiptop.live.app import LiveApp
from tiptop.live.services import Services
from tiptop.messages import MessageLog
from tiptop.options import Options
from tiptop.screens.model import ColumnSpec, ScreenSpec
from tiptop.sources.bycgroup import group
from tiptop.table import Row

COLS = (
    ColumnSpec(" %CPU", "%5.1f", "CPU_TOT", "Total CPU usage"),
    ColumnSpec("  IPC", " %4.2f", "delta(I)/delta(C)", "Executed instructions per cycle", 1.5),
    ColumnSpec(" %MISS", "%6.2f", "100*delta(M)/delta(I)", "Cache miss per 100 instructions"),
)
DEFAULT = screen(
    "default",
    "Screen by default",
    counters={"C": "cycles", "I": "instructions", "M": "cache-misses"},
    columns=COLS,
)
BRANCH = screen(
    "branch",
    "Branch prediction statistics",
    counters={"C": "cycles", "I": "instructions"},
    columns=COLS[:2],
)


def make_frame(n: int = 4, *, iteration: int = 4) -> Frame:
    """``n`` tasks, %CPU falling with the index; task1 is dead, task2 has ``-`` for IPC,
    task3 a ``?`` %MISS, task0's %MISS was multiplexed and its IPC is over threshold."""
    cpu = np.linspace(50.0, 1.0, n)
    rows: list[dict[str, Any]] = [
        {
            "tid": 100 + i,
            "name": f"task{i}",
            "cmdline": f"/bin/task{i} --flag",
            "cells": [cpu[i], 2.0 if i == 0 else 1.0, 0.5],
        }
        for i in range(n)
    ]
    rows[0]["running"] = [1.0, 1.0, 0.5]
    if n >= 4:
        rows[1]["dead"] = True
        rows[2]["status"] = [Status.OK, Status.DIV0, Status.OK]
        rows[3]["status"] = [Status.OK, Status.OK, Status.UNREADABLE]
    return frame(
        rows, DEFAULT, iteration=iteration, timestamp=1795291592.5, interval=0.0, tasks_total=n + 5
    )


class ScriptedSampler(FrameSource):
    """A scripted frame source (``tiptop.frame.FrameSource``) handing out hand-built frames.

    It keeps the real sampler's priming rule (``tiptop.engine.sampler`` contract): after
    construction or ``reconfigure`` it is unstarted, and a ``refresh()`` then only primes
    it and hands back an empty frame that counts the tasks but shows none."""

    def __init__(self, n: int = 4) -> None:
        self.n = n
        self.messages = MessageLog()
        self.screen = DEFAULT
        self.reconfigured: list[dict[str, Any]] = []
        self.refreshes = 0
        self.starts = 0
        self.started = False

    def start(self) -> None:
        self.starts += 1
        self.started = True

    def refresh(self) -> Frame:
        self.refreshes += 1
        if not self.started:
            self.start()
            empty = Frame.empty(
                tuple(c.header for c in self.screen.columns),
                tuple(c.alias for c in self.screen.counters),
            )
            empty.tasks_total = self.n + 5
            return empty
        f = make_frame(self.n)
        k = len(self.screen.columns)  # only the screen's columns, like the real sampler
        f.headers = f.headers[:k]
        f.values, f.status, f.running = f.values[:, :k], f.status[:, :k], f.running[:, :k]
        return f

    def close(self) -> None:
        self.started = False

    def reconfigure(
        self, screen: ScreenSpec | None = None, config: SamplerConfig | None = None
    ) -> None:
        self.reconfigured.append({"screen": screen, "config": config})
        self.started = False
        if screen is not None:
            self.screen = screen


class GroupedSampler(ScriptedSampler):
    """A :class:`ScriptedSampler` whose rows are summed by cgroup, as the live ``G`` shows
    them: task ``i`` (tid ``100 + i``) runs in cgroup ``labels[i]``; the tasks are kept
    beneath their group rows (``Frame.members``)."""

    def __init__(self, labels: Sequence[str]) -> None:
        super().__init__(len(labels))
        self.labels = list(labels)

    def refresh(self) -> Frame:
        f = super().refresh()
        return group(f, self.screen, self.labels) if len(f) else f


def new_app(
    n: int = 4, host: Host | None = None, sampler: ScriptedSampler | None = None, **opts: Any
) -> tuple[LiveApp, ScriptedSampler]:
    """A live app over a :class:`ScriptedSampler` of ``n`` tasks (or ``sampler``; screens
    DEFAULT and BRANCH, options ``opts``), started and refreshed once, as ``LiveApp.run()``
    leaves it."""
    sampler = sampler if sampler is not None else ScriptedSampler(n)
    app = LiveApp(
        Options(**opts),
        sampler,
        [DEFAULT, BRANCH],
        Services(host=host or Host(), exporter=lambda o, s: "<tiptop/>"),
    )
    sampler.start()  # as LiveApp.run() does
    app.refresh()
    return app, sampler


def text(app: LiveApp, size: tuple[int, int] = (100, 12)) -> list[str]:
    """The screen's lines at ``size`` (columns, rows)."""
    return [line.decode() for line in app.widget.render(size).text]


def attrs(app: LiveApp, size: tuple[int, int], row: int) -> list[tuple[Any, int]]:
    """``(attribute, width)`` runs of one screen row."""
    content = list(app.widget.render(size).content())
    return [(a, len(t)) for a, _cs, t in content[row]]


def keys(app: LiveApp, *ks: str) -> None:
    """Press ``ks``, one after the other."""
    for k in ks:
        app.on_key(k)


def selected(app: LiveApp) -> Row:
    """The highlighted row of ``app``'s table, which the test knows is there."""
    row = app.table.selected_row()
    assert row is not None, "no row is highlighted"
    return row
