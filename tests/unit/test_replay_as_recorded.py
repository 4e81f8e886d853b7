"""Replay as a user expects (issue 38): each refresh shown for as long as it was while
recording, at a speed the ``*``/``/`` keys change; ``-d`` a fixed delay instead."""

from __future__ import annotations

import time
from pathlib import Path

from tiptop import recording

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "recording-v1.jsonl"


def _with_intervals(tmp_path: Path, dts: list[float]) -> Path:
    """The golden recording with its frame lines' ``dt`` replaced, in order."""
    out, k = [], 0
    for line in GOLDEN.read_text().splitlines(keepends=True):
        if line.startswith('{"t":') and k < len(dts):
            line = line.replace('"dt":2.0', f'"dt":{dts[k]}', 1)
            k += 1
        out.append(line)
    p = tmp_path / "paced.jsonl"
    p.write_text("".join(out))
    return p


def test_each_refresh_is_shown_for_its_recorded_interval(tmp_path: Path) -> None:
    """A frame was on screen until the next one came: the next one's ``dt``, not the gap
    between their times (10 ms in the golden file, or hours between two sessions)."""
    rec = recording.load(str(_with_intervals(tmp_path, [0.2, 0.5, 0.25, 3.0, 0.75])))
    src = recording.ReplaySource(rec)
    assert [src.shown_for(i) for i in range(len(rec))] == [0.5, 0.25, 3.0, 0.75, 2.0]
    assert src.pace() == "1x"
    assert src.key(")") and src.shown_for(0) == 0.25 and src.pace() == "2x"
    assert src.key("(") and src.key("(") and src.shown_for(0) == 1.0
    assert src.pace() == "1/2x"
    for _ in range(20):  # bounded: 1/64 of the recorded pace at most
        src.key("(")
    assert src.shown_for(1) == 0.25 * 64
    fixed = recording.ReplaySource(rec, delay=0.5)
    assert fixed.shown_for(3) == 0.5 and fixed.pace() == "every 0.5 s"
    assert fixed.key(")") and fixed.pace() == "every 0.25 s"
    assert not src.key("/") and not src.key("*")  # the search's key, and htop's none


def test_refreshes_advance_at_the_recorded_pace(tmp_path: Path) -> None:
    """Refreshed as often as asked (keys), the replay moves on only when a frame's time is
    up: 0.25 s of frames shown 0.1 s each is two or three frames on, not twenty-five (a
    late refresh on a loaded machine catches up, and never skips a frame)."""
    rec = recording.load(str(_with_intervals(tmp_path, [0.1] * 5)))
    src = recording.ReplaySource(rec)
    src.start()
    src.refresh()
    assert src.cursor == 0 and 0.09 <= src.due_in(2.0) <= 0.1
    end = time.monotonic() + 0.25
    while time.monotonic() < end:  # a key every 10 ms
        src.refresh()
        time.sleep(0.01)
    assert 1 <= src.cursor <= 3, src.cursor
    assert 0 <= src.due_in(2.0) <= 0.1
    assert "() faster, ( slower)" in src.title() and "(end)" not in src.title()


def test_the_replay_says_it_reached_the_end() -> None:
    """Live: the title says ``end`` at the last refresh; batch: one notice once the last
    refresh was given (issue 50: a replay never said it ended)."""
    rec = recording.load(str(GOLDEN))
    src = recording.ReplaySource(rec)
    assert len(list(src.recorded())) == len(rec)
    (said,) = [m for m in src.messages if m.key == "replay:end"]
    assert said.notice and said.line.startswith(f"replay: the end of the recording: {len(rec)} ")
    live = recording.ReplaySource(rec)
    live.refresh()
    assert "(end)" not in live.title()
    live.key("}")  # a minute on: the last refresh
    live.refresh()
    assert f" {len(rec)}/{len(rec)} (end) " in live.title(), live.title()


def test_the_d_key_sets_a_fixed_delay() -> None:
    """The live view's delay changed (the ``d`` key): frames are shown that long."""
    rec = recording.load(str(GOLDEN))
    src = recording.ReplaySource(rec)
    src.refresh()
    src.due_in(2.0)
    assert src.delay is None
    src.due_in(0.5)
    assert src.delay == 0.5 and src.pace() == "every 0.5 s"
