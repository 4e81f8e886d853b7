"""More hardware events than the PMU has counters: the kernel time-multiplexes them.

A custom screen opens 10 ``instructions`` counters on one loop child (the guest's PMUv3 has 6
event counters plus the cycle counter; x86 cores have 4-8). Each counter then runs part of the
time (``time_running < time_enabled``, perf_event_open(2) "read_format"), tiptop scales
value x enabled/running, and the table layer flags those cells as multiplexed. The loop is
uniform, so every scaled value lands within 1% of the exact count (0.03% in the guest's
recipe measurements).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tests.hwpmu.conftest import IN_GUEST, LoopMaker, count_once
from tests.support.builders import screen
from tiptop.screens.model import ScreenSpec

pytestmark = pytest.mark.hwpmu

NCOUNTERS = 10


def _screen() -> ScreenSpec:
    return screen(
        "mux",
        "10 instructions counters",
        counters={f"I{i}": (0, 1) for i in range(NCOUNTERS)},
        columns=[(f"{'I' + str(i):>12}", "%12.0f", f"delta(I{i})") for i in range(NCOUNTERS)],
        source="tests/hwpmu",
    )


def test_multiplexed_counters_scaled_and_marked(
    loop_children: LoopMaker, report: Callable[[str], None]
) -> None:
    from tiptop import table

    k = 4
    n = 25_000_000 if IN_GUEST else 250_000_000
    screen = _screen()
    child = loop_children(k, n)
    frame, i, messages = count_once(screen, child)
    values, running = frame.values[i], frame.running[i]
    raw = frame.counter_delta[i]
    report(
        f"multiplex {NCOUNTERS} x instructions, K={k} N={n} (exact {k * n}): "
        f"running={np.round(running, 3).tolist()} "
        f"max_rel_err={np.abs(values / (k * n) - 1).max():.5f}"
    )
    assert (frame.status[i] == 0).all(), (frame.status[i], messages)
    assert (running < 1.0).all() and (running > 0.0).all(), running
    assert (raw < values).all()  # the raw deltas were scaled up
    np.testing.assert_allclose(values, k * n, rtol=0.01)
    assert frame.multiplexed()[i].all()
    view = table.View(show_idle=True)
    (row,) = [r for r in table.rows(frame, screen, view) if r.tid == child.pid]
    assert row.multiplexed == [True] * NCOUNTERS
