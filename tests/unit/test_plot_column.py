"""``--plot`` reads one column fast (``tiptop.recording.column``): the numbers a replay
shows, at most two points per time bin with each bin's extremes kept, one line for a column
with no value, and time labels that never repeat (issue 38)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import numpy as np
import pytest

from tiptop import recording
from tiptop.cells import Status
from tiptop.errors import TiptopError
from tiptop.recording.column import ColumnReader

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "recording-v1.jsonl"


def test_the_column_read_is_the_column_a_replay_shows() -> None:
    """Every column of both recorded screens, per task and refresh, read in one batch,
    equals what a replay evaluates refresh by refresh."""
    rec = recording.load(str(GOLDEN))
    for screen in rec.screens:
        for j in range(len(screen.columns)):
            found = ColumnReader(rec, screen, j).read(0, len(rec) - 1)
            for i in range(len(rec)):
                f = recording.decode(rec, i, screen)
                for r, pid in enumerate(f.pid.tolist()):
                    want = f.values[r, j] if f.status[r, j] == Status.OK else np.nan
                    got = found[pid].values[list(found[pid].times).index(f.timestamp)]
                    assert got == want or (np.isnan(got) and np.isnan(want)), (screen.name, j)


def _long(tmp_path: Path, frames: int, spike: int) -> Path:
    """The golden header and first refresh, repeated ``frames`` times a second apart; in
    refresh ``spike`` task 100 ran 1,000 times fewer cycles (its IPC 1,000 times higher)."""
    lines = GOLDEN.read_text().splitlines()
    head, facts, frame = lines[0], lines[1], json.loads(lines[2])
    out = [head, facts]
    for i in range(frames):
        d = json.loads(json.dumps(frame))
        d["t"] = frame["t"] + i
        if i == spike:
            d["k"]["CYCLE"]["d"][2] //= 1000
        out.append(json.dumps(d, separators=(",", ":")))
    p = tmp_path / "long.jsonl"
    p.write_text("\n".join(out) + "\n")
    return p


def test_many_refreshes_are_binned_and_a_spike_stays(tmp_path: Path) -> None:
    rec = recording.load(str(_long(tmp_path, 600, spike=321)))
    screen = rec.screens[0]
    ipc = [c.header.strip() for c in screen.columns].index("IPC")
    reader = ColumnReader(rec, screen, ipc, width=50)
    found = reader.read(0, len(rec) - 1)
    s = found[100]
    assert len(s.times) == 2 * 50 and len(s.values) == 100  # 600 refreshes, 50 bins
    normal = 4600 / 2200
    assert np.nanmax(s.values) == pytest.approx(normal * 1000, rel=1e-3)
    assert np.nanmin(s.values) == pytest.approx(normal)
    assert s.cpu_seconds == pytest.approx(600 * 0.97 * 2.0)
    assert list(s.times) == sorted(s.times)
    # Few refreshes: every point as recorded.
    assert len(ColumnReader(rec, screen, ipc, width=50).read(0, 99)[100].values) == 100


def test_a_column_with_no_value_is_one_line() -> None:
    from tiptop.cli.plot import series

    rec = recording.load(str(GOLDEN))
    default, branch = rec.screens
    bus = [c.header.strip() for c in default.columns].index("%BUS")
    with pytest.raises(TiptopError, match=r"^--plot: %BUS has no values in this recording: BUS"):
        series(rec, default, bus, 0, len(rec) - 1)
    misp = [c.header.strip() for c in branch.columns].index("%MISP")
    with pytest.raises(TiptopError, match=r"every cell is - or \?"):
        series(rec, branch, misp, 0, len(rec) - 1)


def test_time_labels_never_repeat() -> None:
    from tiptop.cli.plot import time_labels

    zone = datetime.UTC
    t0 = datetime.datetime(2026, 11, 27, 23, 59, 58, tzinfo=zone)

    def ticks(step: float, n: int = 6) -> list[datetime.datetime]:
        return [t0 + datetime.timedelta(seconds=step * i) for i in range(n)]

    assert time_labels(ticks(1.0, 2)) == ["23:59:58", "23:59:59"]
    assert time_labels(ticks(0.2, 3)) == ["23:59:58.0", "23:59:58.2", "23:59:58.4"]
    assert time_labels(ticks(0.05, 2)) == ["23:59:58.00", "23:59:58.05"]
    assert time_labels(ticks(86400.0, 2)) == ["11-27 23:59:58", "11-28 23:59:58"]
    for step in (0.001, 0.1, 0.25, 1, 5, 60, 3600):
        labels = time_labels(ticks(step))
        assert len(set(labels)) == len(labels), (step, labels)


def test_past_the_row_budget_every_nth_refresh_is_read_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The largest recording the reader takes (gen_plot_worst.py: 4 GiB of refreshes)
    took 162 to 223 s to draw whole; past ROWS task rows every n-th refresh is read, so
    the work stays bounded, and one message says so. Without the bound every refresh is
    read (the lines read count them)."""
    from tiptop.recording import column

    rec = recording.load(str(_long(tmp_path, 600, spike=300)))
    screen = rec.screens[0]
    ipc = [c.header.strip() for c in screen.columns].index("IPC")
    rows = len(rec.frame(0).tid)
    read: list[int] = []
    real = ColumnReader._line

    def counted(self: ColumnReader, index: int) -> object:
        read.append(index)
        return real(self, index)

    monkeypatch.setattr(ColumnReader, "_line", counted)
    whole = ColumnReader(rec, screen, ipc, width=50)
    whole.read(0, len(rec) - 1)
    assert set(read) == set(range(600)) and not whole.messages.since(0)[0]
    read.clear()
    monkeypatch.setattr(column, "ROWS", 100 * rows)  # 100 refreshes' worth
    bounded = ColumnReader(rec, screen, ipc, width=50)
    found = bounded.read(0, len(rec) - 1)
    assert len(read) <= column.SAMPLES + 3 + 100  # the samples, then every 6th refresh
    assert set(range(0, 600, 6)) <= set(read)
    said = [m.line for m in bounded.messages.since(0)[0]]
    assert said == [
        f"{rec.path}: 600 refreshes of about {rows} tasks, more than --plot reads in a minute: "
        "every 6th drawn (each time bin's extremes among those); --from/--to draw every "
        "refresh of a shorter span"
    ]
    s = found[100]
    assert np.nanmax(s.values) == pytest.approx(4600 / 2200 * 1000, rel=1e-3)  # 300 = 6 * 50
    assert s.cpu_seconds == pytest.approx(100 * 0.97 * 2.0)  # of the refreshes read
