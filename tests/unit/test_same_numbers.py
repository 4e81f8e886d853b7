"""One set of counts, four consumers, the same numbers (docs/architecture.md: one
evaluator). The FAKE backend's scripted counts go through the real sampler, recorded as
``--record`` does; then the live view, batch text, a replay of the recording and the
Prometheus exporter each show them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support.builders import StubSource, replayed
from tests.support.live import text
from tests.support.sampling import CY, IN, PF, FakeEnv, make
from tiptop import recording
from tiptop.exporter.aggregate import Aggregator, metrics_for
from tiptop.frame import Frame
from tiptop.host import Host
from tiptop.live.app import LiveApp
from tiptop.live.services import Services
from tiptop.messages import MessageLog
from tiptop.options import Options
from tiptop.screens.model import ScreenSpec
from tiptop.table import View, text_lines

#: Two tasks, counted over three refreshes of 1 s (fake clock), one of them multiplexed.
TASKS = {10: ("app", 2e9, 3e9, 40, 1.0), 20: ("db", 5e8, 2e8, 7, 0.5)}


class Shown(StubSource):
    """The frames the sampler gave, handed out again in order (what the live view shows)."""

    def __init__(self, frames: list[Frame], screen: ScreenSpec) -> None:
        self.frames, self.screen, self.messages = list(frames), screen, MessageLog()

    def refresh(self) -> Frame:
        return self.frames.pop(0)


def sampled(env: FakeEnv, path: Path) -> tuple[list[Frame], ScreenSpec]:
    """Three refreshes of the scripted tasks through the sampler, recorded to ``path``."""
    fp, b = env
    for tid, (name, cy, ins, pf, mux) in TASKS.items():
        fp.add(tid, name, utime=0)
        b.script(tid, CY, cy)
        b.script(tid, IN, ins)
        b.script(tid, PF, pf)
        b.task(tid).mux = mux
    sampler = make(env)
    source = recording.RecordingSource(sampler, recording.Recorder(str(path), {"host": "h"}))
    source.start()
    frames = []
    for k in range(3):
        b.clock.advance(1.0)
        for tid in TASKS:
            fp.set_stat(tid, TASKS[tid][0], utime=50 * (k + 1))
        frames.append(source.refresh())
    source.close()
    return frames, sampler.screen


def test_live_batch_replay_and_exporter_show_the_same_numbers(env: FakeEnv, tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    frames, screen = sampled(env, path)
    assert [len(f) for f in frames] == [2, 2, 2]
    assert frames[1].multiplexed().any()  # a scaled cell is among them
    view = View(show_idle=True)
    batch = [text_lines(f, screen, view) for f in frames]

    # Replay: the same values, statuses and running fractions, and so the same lines.
    rec = recording.load(str(path))
    replay = recording.ReplaySource(rec, rec.screens[0])
    for i, f in enumerate(frames):
        again = replayed(replay, i)
        for field in ("values", "status", "running", "counter_delta", "window"):
            np.testing.assert_array_equal(getattr(again, field), getattr(f, field), field)
        assert text_lines(again, rec.screens[0], view) == batch[i]

    # Live: each batch line's cells are on the live screen, row for row.
    app = LiveApp(
        Options(show_idle=True),
        Shown(frames, screen),
        [screen],
        Services(host=Host(), exporter=lambda o, s: ""),
    )
    for lines in batch:
        app.refresh()
        shown = text(app, (160, 12))
        for line in lines:
            cells = line.split(None, 2)[2].rsplit(None, 1)[0]  # between user and command
            assert any(cells in s for s in shown), (cells, shown)

    # Exporter: its counter totals are the frames' scaled deltas, summed.
    agg = Aggregator(metrics_for(screen.counters))
    for f in frames:
        snap = agg.update(f)
    totals = {fam.name: sum(v for _, v in fam.samples) for fam in snap.families}
    for m, j in zip(agg.metrics, range(len(frames[0].counters)), strict=True):
        want = sum(float(np.nansum(f.counter_scaled[:, j] * m.scale)) for f in frames)
        assert totals[m.name] == pytest.approx(want), m.name
