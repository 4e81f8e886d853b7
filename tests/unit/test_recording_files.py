"""Recording files at their edges (``tiptop.recording``): gzip members cut short by a crash
are followed into the next session, a damaged member is skipped to the next, lines are read
back from saved inflate states and never all held, input is bounded, frame lines are
checked, new files are private and links refused; the plot's default column."""

from __future__ import annotations

import dataclasses
import datetime
import gzip
import json
import os
import stat
import tempfile
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.support.builders import replayed
from tiptop import recording
from tiptop.errors import TiptopError
from tiptop.recording import format as fmt
from tiptop.recording import inflate

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "recording-v1.jsonl"


def _golden_lines() -> list[bytes]:
    return GOLDEN.read_bytes().splitlines(keepends=True)


def _append_session(path: Path, frames: int, t0: float) -> None:
    """A second session appended by the writer: the golden's first screen, ``frames``
    refreshes of one task."""
    rec = recording.load(str(GOLDEN))
    screen = rec.screens[0]
    writer = recording.Recorder(str(path), {"started": t0})
    for i in range(frames):
        f = recording.decode(rec, 0, screen)
        f.timestamp = t0 + i
        writer.write(f, screen)
    writer.close()
    rec.close()


@pytest.mark.parametrize("gz", [False, True])
def test_a_cut_session_then_an_appended_one_keep_every_whole_refresh(
    tmp_path: Path, gz: bool
) -> None:
    """A recorder stopped mid-refresh (the file cut inside a frame line), then a new
    session appended: every whole refresh of both replays, and the gap is noted."""
    p = tmp_path / ("r.jsonl.gz" if gz else "r.jsonl")
    raw = GOLDEN.read_bytes()
    cut = raw[: raw.rindex(b'{"t":') + 40]  # the last refresh is half written
    if gz:  # the writer's way: sync-flushed refreshes, no trailer
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        whole = raw[: raw.rindex(b'{"t":')]
        data = c.compress(whole) + c.flush(zlib.Z_SYNC_FLUSH)
        data += c.compress(cut[len(whole) :]) + c.flush(zlib.Z_NO_FLUSH)
        p.write_bytes(data)
    else:
        p.write_bytes(cut)
    _append_session(p, 3, 1.9e9)
    rec = recording.load(str(p))
    assert len(rec) == 4 + 3
    assert [round(t) for t in rec.times[4:]] == [1.9e9, 1.9e9 + 1, 1.9e9 + 2]
    notes = " | ".join(rec.all_notes())
    assert "a new session starts" in notes
    assert ("cut short" in notes) if gz else ("not a whole refresh" in notes)
    assert all(len(replayed(recording.ReplaySource(rec), i)) > 0 for i in range(len(rec)))


def test_a_damaged_gzip_member_is_skipped_to_the_next(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl.gz"
    first = gzip.compress(GOLDEN.read_bytes())
    broken = bytearray(first)
    broken[len(broken) // 2] ^= 0xFF
    p.write_bytes(bytes(broken))
    _append_session(p, 2, 1.9e9)
    rec = recording.load(str(p))
    assert [round(t) for t in rec.times[-2:]] == [1.9e9, 1.9e9 + 1]
    assert any("damaged at byte" in n for n in rec.all_notes())


def test_a_long_gzip_recording_is_read_back_from_saved_states(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines are read again from the inflate state saved nearest before them, in any
    order, and give the bytes written."""
    monkeypatch.setattr("tiptop.recording.reader.MARK_EVERY", 4096)
    lines = _golden_lines()
    body = b"".join(lines[:2]) + b"".join(lines[2:5] * 40)
    p = tmp_path / "long.jsonl.gz"
    p.write_bytes(gzip.compress(body))
    rec = recording.load(str(p))
    assert len(rec) == 120 and len(rec.store.members[0].marks) > 10
    want = [json.loads(x) for x in lines[2:5] * 40]
    for i in [119, 0, 57, 58, 3, 118]:
        assert rec.record(i) == want[i]


def test_input_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(b"\0" * (64 << 20)))
    with pytest.raises(TiptopError, match=r"first line is longer than 16 MiB"):
        recording.load(str(bomb))
    monkeypatch.setattr(fmt, "MAX_BYTES", 3000)
    rec = recording.load(str(GOLDEN))
    assert 0 < len(rec) < 5 and any("the rest is not read" in n for n in rec.notes)


def test_recordings_are_private_and_links_are_refused(tmp_path: Path) -> None:
    p = tmp_path / "new.jsonl"
    os.umask(0o022)
    recording.Recorder(str(p), {}).close()
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    target = tmp_path / "secret"
    target.write_bytes(b"")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    with pytest.raises(TiptopError, match=r"is a symbolic link: not written"):
        recording.Recorder(str(link), {})
    assert target.read_bytes() == b""


def test_frame_lines_are_checked() -> None:
    good = json.loads(_golden_lines()[2])
    assert len(fmt.frame_from(good).tid) == 3
    changes: list[tuple[dict[str, object], str]] = [
        ({"tid": [1, 2]}, "'nth' is not a list of 2"),
        ({"cpu": [1, "2", 3]}, "'cpu' holds a value that is not a number"),
        ({"cs": [0, 9, 0]}, "'cs' holds a value that is not an integer from 0 to 4"),
        ({"k": {"X": {"st": [0, 0, 0]}}}, "counter 'X' has no deltas"),
        ({"k": {"X": {"d": None}}}, "counter 'X' has no deltas"),  # found by the fuzz test
        ({"t": None}, "'t' is not a number"),
        ({"cpu": [1, 10**400, 3]}, "'cpu' holds a number too large"),
        ({"dt": 10**400}, "'dt' is not a number"),  # was an OverflowError, a traceback
    ]
    for change, why in changes:
        with pytest.raises(fmt.FormatError, match=why):
            fmt.frame_from({**good, **change})
    cpu = fmt.frame_from({**good, "cpu": [None, 1, 2]}).values["cpu"]
    assert cpu is not None and np.isnan(cpu[0])


def test_a_threshold_past_a_floats_range_is_a_format_error() -> None:
    """JSON integers have no bound: 10**400 as a column's threshold is refused with the
    header's one line (it was an OverflowError, a traceback)."""
    head = json.loads(_golden_lines()[0])
    head["screen"]["columns"][0]["threshold"] = 10**400
    with pytest.raises(fmt.FormatError, match=r"'threshold' is not a number"):
        fmt.screen_from_record(head["screen"])


def test_the_inflater_keeps_what_decodes_before_damage() -> None:
    """A member cut after a sync flush, then another member: inflating the first keeps all
    it held and fails exactly at the second's header."""
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    data = c.compress(b"a" * 100_000 + b"\n") + c.flush(zlib.Z_SYNC_FLUSH)
    whole = data + gzip.compress(b"second\n")
    with tempfile.TemporaryFile() as f:
        f.write(whole)
        f.flush()
        inf = inflate.Inflater(f.fileno(), 0)
        out = b""
        while not inf.ended:
            out += inf.step()
        assert out == b"a" * 100_000 + b"\n" and inf.damaged_at == len(data)
        assert inflate.find_member(f.fileno(), inf.damaged_at, len(whole)) == len(data)


def test_plot_picks_a_column_with_values_and_says_what_it_is() -> None:
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install .[plot])")
    from tiptop.cli.plot import _time_label, pick_column, short

    rec = recording.load(str(GOLDEN))
    default, branch = rec.screens
    src = recording.ReplaySource(rec, default)
    assert default.columns[pick_column(src, default, 0, 4)].header.strip() == "IPC"
    # 'branch' has no IPC: its first rate of counters with values (%MISP has none).
    src = recording.ReplaySource(rec, branch)
    assert branch.columns[pick_column(src, branch, 0, 4)].header.strip() == "%MIS/I"
    assert short("Total CPU usage (from /proc)") == "Total CPU usage"
    assert _time_label([0.0, 86400.0 * 2], datetime.UTC).startswith(
        "time on 1970-01-01 to 1970-01-03 (UTC, UTC+00:00)"
    )


def test_a_long_recording_is_not_held_in_memory(tmp_path: Path) -> None:
    """Loading keeps where each refresh is, not its line: the memory it takes is a small
    part of the decompressed size; read in the background, the first refresh shows while
    the rest is read, and the refreshes are the same."""
    rec0 = recording.load(str(GOLDEN))
    screen = rec0.screens[0]
    frame = recording.decode(rec0, 0, screen)
    rec0.close()
    n = 2000
    deltas = np.arange(n * 5, dtype=float).reshape(n, 5)
    big = dataclasses.replace(
        frame,
        tid=np.arange(1000, 1000 + n),
        pid=np.arange(1000, 1000 + n),
        marker=[" "] * n,
        user=["u"] * n,
        name=["x"] * n,
        cmdline=["x"] * n,
        num_threads=np.ones(n, np.int64),
        dead=np.zeros(n, bool),
        cpu_total=np.linspace(0, 100, n),
        values=frame.values[:1].repeat(n, 0),
        status=frame.status[:1].repeat(n, 0),
        running=frame.running[:1].repeat(n, 0),
        counter_delta=deltas,
        counter_running=np.ones((n, 5)),
        counter_status=np.zeros((n, 5), np.uint8),
        cpu_user=np.zeros(n),
        cpu_sys=np.zeros(n),
        processor=np.zeros(n),
        cpu_status=np.zeros((n, 2), np.uint8),
        counter_scaled=deltas,
        counter_total=deltas,
        counter_total_status=np.zeros((n, 5), np.uint8),
    )
    path = tmp_path / "big.jsonl.gz"
    writer = recording.Recorder(str(path), {})
    for i in range(200):
        writer.write(dataclasses.replace(big, timestamp=1.8e9 + i), screen)
    writer.close()
    with gzip.open(path) as f:
        size = sum(len(x) for x in f)
    tracemalloc.start()
    rec = recording.load(str(path))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(rec) == 200 and size > 10 << 20
    assert peak < size / 4, (peak, size)
    rec2 = recording.load(str(path), background=True)
    assert len(replayed(recording.ReplaySource(rec2), 0)) == n
    rec2.wait()
    assert list(rec2.times) == list(rec.times)
    assert rec2.record(199) == rec.record(199)
    rec.close()
    rec2.close()
