"""Recordings as a user expects them (issue 38), through ``python -m tiptop``: one screen
numbering (the one seen while recording, in batch and live replay, and for ``-S``), the
recording's own time range, one recorder per file."""

from __future__ import annotations

import dataclasses
import gzip
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import run
from tests.system.test_live_tmux import Tmux, has
from tests.system.test_record_replay import _count, recorder
from tiptop import recording
from tiptop.errors import TiptopError

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "recording-v1.jsonl"


#: The recordings' first refresh: 2026-11-27 10:00:05, local time.
T0 = time.mktime((2026, 11, 27, 10, 0, 5, 0, 0, -1))


def _numbered(path: Path, t0: float = T0) -> None:
    """Three refreshes under 'default' then two under 'branch', one a second from ``t0``,
    recorded by a session whose screens were numbered other, other, branch, other,
    default (4 and 2)."""
    rec = recording.load(str(GOLDEN))
    default, branch = rec.screens
    other = [dataclasses.replace(default, name=f"other{i}") for i in range(3)]
    numbering = [other[0], other[1], branch, other[2], default]
    writer = recording.Recorder(str(path), {"screen_index": 4}, numbering)
    for i, screen in enumerate([default] * 3 + [branch] * 2):
        f = recording.decode(rec, 0, screen)
        f.timestamp = t0 + i
        writer.write(f, screen)
    writer.close()
    rec.close()


def test_replay_numbers_screens_as_they_were_numbered_while_recording(tmp_path: Path) -> None:
    path = tmp_path / "n.jsonl"
    _numbered(path)
    rec = recording.load(str(path))
    assert rec.numbers == [4, 2] and rec.screen_list() == "4 default, 2 branch"
    r = run("-b", "--replay", str(path))
    assert r.returncode == 0, r.stderr
    assert "Screen 4: default" in r.stdout and "Screen 2: branch" in r.stdout
    # -S takes what the replay printed: the number, or a part of the name.
    for wanted in ("2", "bra"):
        r = run("-b", "-n", "1", "-S", wanted, "--replay", str(path))
        assert r.returncode == 0, r.stderr
        assert "Screen 2: branch" in r.stdout and "Screen 4" not in r.stdout
    # A screen the recording lacks: one line listing the recording's screens.
    for wanted in ("0", "cache"):
        r = run("-b", "-S", wanted, "--replay", str(path))
        assert r.returncode == 2 and r.stdout == ""
        assert r.stderr.strip().endswith(
            f"-S {wanted}: no such screen in the recording (its screens: 4 default, 2 branch)"
        ), r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_live_replay_shows_the_recorded_numbers(tmp_path: Path) -> None:
    path = tmp_path / "n.jsonl"
    _numbered(path)
    t = Tmux([sys.executable, "-m", "tiptop", "--replay", str(path), "-d", "100"], tmp_path)
    try:
        t.wait(has("screen  4: default"), "the first screen by its recorded number")
        t.keys("Right")
        t.wait(has("screen  2: branch"), "the other recorded screen by its number")
    finally:
        t.kill()


def _refreshes(out: str) -> int:
    """Refreshes printed: the golden task 'compute' has a row in each."""
    return sum(1 for line in out.splitlines() if line.endswith(" compute"))


def test_time_ranges_are_the_recordings_own(tmp_path: Path) -> None:
    """A time alone is on the recording's day; a range with no refresh in it is one line
    saying the recording's span, exit status 1, for replay and plot alike."""
    path = tmp_path / "r.jsonl"
    _numbered(path)  # 10:00:05 to 10:00:09
    r = run("-b", "--replay", str(path), "--from", "10:00:07")
    assert r.returncode == 0 and _refreshes(r.stdout) == 3, r.stderr
    r = run("-b", "--replay", str(path), "--to", "10:00:06")
    assert r.returncode == 0 and _refreshes(r.stdout) == 2, r.stderr
    span = "the recording spans 2026-11-27 10:00:05 to 2026-11-27 10:00:09"
    png = str(tmp_path / "x.png")
    for args in (
        ["-b", "--replay", str(path), "--from", "11:30"],  # after the end: not yesterday's
        ["-b", "--replay", str(path), "--to", "09:00"],
        ["-b", "--replay", str(path), "--from", "2026-11-28 10:00"],
        ["--plot", str(path), "--from", "11:30", "-o", png],
    ):
        r = run(*args)
        assert r.returncode == 1 and r.stdout == "", (args, r.stderr)
        assert r.stderr.count("\n") == 1 and span in r.stderr, (args, r.stderr)
    assert "from 2026-11-27 11:30:00 to its end" in r.stderr


def test_a_time_alone_finds_its_day_in_a_recording_over_midnight(tmp_path: Path) -> None:
    """23:30 to 00:30: ``--from 00:00`` is the second day's midnight, ``--to 23:59`` the
    first day's."""
    from tiptop.cli.replay import parse_when

    start = time.mktime((2026, 11, 27, 23, 30, 0, 0, 0, -1))
    end = start + 3600
    midnight = time.mktime((2026, 11, 28, 0, 0, 0, 0, 0, -1))
    assert parse_when("00:00", start, end) == midnight
    assert parse_when("23:59", start, end, last=True) == midnight - 60
    assert parse_when("23:45", start, end) == start + 15 * 60
    assert parse_when("00:15", start, end, last=True) == midnight + 15 * 60
    assert parse_when("5m ago", start, end) == end - 300


@pytest.mark.parametrize("name", ["two.jsonl.gz", "two.jsonl"])
def test_a_second_recorder_on_one_file_is_refused_and_nothing_is_lost(
    tmp_path: Path, name: str
) -> None:
    """Two recorders appending to one gzip file interleaved their members (4 of 300
    refreshes survived): the second is now refused with one line naming the first's PID,
    before writing anything, and every refresh of the first replays."""
    path = tmp_path / name
    first = recorder(path, 2)
    try:
        size = path.stat().st_size
        r = run("-b", "-n", "3", "-d", "0.2", "-S", "sched", "--record", str(path))
        assert r.returncode == 1 and r.stdout == "", r.stderr
        assert r.stderr == (
            f"tiptop: --record: '{path}' is being recorded by process {first.pid}: "
            "not written (one recorder per file; name another file)\n"
        )
        assert path.stat().st_size >= size
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=30)
    assert first.returncode == 128 + signal.SIGTERM  # ended by SIGTERM, cleanly (man page)
    rec = recording.load(str(path))
    assert len(rec) >= 2 and rec.all_notes() == [], rec.all_notes()
    # The first recorder gone, the file is free again: a session is appended.
    n = len(rec)
    r = run("-b", "-n", "2", "-d", "0.2", "-S", "sched", "--record", str(path))
    assert r.returncode == 0, r.stderr
    assert _count(path) == n + 2


def test_a_bomb_under_a_wrong_first_line_is_refused_before_its_body(tmp_path: Path) -> None:
    """A gzip file whose first line is not a header, then 4 GiB of zeros: refused on its
    first line, not after inflating the 4 GiB (31 s under load before)."""
    zeros = gzip.compress(bytes(64 << 20), compresslevel=1)  # 64 MiB in a ~64 KiB member
    bomb = tmp_path / "bomb.jsonl.gz"
    with open(bomb, "wb") as f:
        f.write(gzip.compress(b'{"not":"a header"}\n'))
        for _ in range(64):
            f.write(zeros)
    start = time.monotonic()
    r = run("-b", "--replay", str(bomb))
    took = time.monotonic() - start
    assert r.returncode == 1, r.stderr
    why = "is not a tiptop recording (line 1: before any usable header: skipped)"
    assert r.stderr == f"tiptop: --replay: '{bomb}' {why}\n"
    assert took < 5.0, f"refused after {took:.1f} s"
    # Without the start-up: well under the time inflating 4 GiB takes (seconds, at best).
    start = time.monotonic()
    with pytest.raises(TiptopError, match="is not a tiptop recording"):
        recording.load(str(bomb))
    took = time.monotonic() - start
    assert took < 1.0, f"refused after {took:.1f} s"


def test_a_header_cut_short_then_an_appended_session_still_replays(tmp_path: Path) -> None:
    """A recorder stopped while writing its first header, then one appended: the cut
    header is skipped with a note, the appended session replays."""
    path = tmp_path / "cut.jsonl"
    path.write_text(GOLDEN.read_text()[:50])
    _numbered(path)
    rec = recording.load(str(path))
    assert len(rec) == 5
    assert "line 1: not JSON (damaged): skipped" in " ".join(rec.all_notes())


def _blocked_open(path: str, flags: int) -> threading.Thread:
    """A thread opening the FIFO ``path`` with ``flags``: it stays blocked until another
    process opens the other end."""
    thread = threading.Thread(target=lambda: os.close(os.open(path, flags)), daemon=True)
    thread.start()
    time.sleep(0.2)
    return thread


def test_a_fifo_is_refused_without_being_opened(tmp_path: Path) -> None:
    """Opening a FIFO wakes the process at its other end: tiptop refuses it first."""
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    for args, other_end in (
        (["-b", "--replay", fifo], os.O_WRONLY),
        (["--plot", fifo, "-o", str(tmp_path / "x.png")], os.O_WRONLY),
        (["-b", "-n", "1", "--record", fifo], os.O_RDONLY),
    ):
        peer = _blocked_open(fifo, other_end)
        r = run(*args, timeout=20)
        assert r.returncode == 1 and "is not a regular file" in r.stderr, r.stderr
        time.sleep(0.2)
        assert peer.is_alive(), f"{args}: tiptop opened the FIFO"
        # The other end opened here lets the peer go.
        this_end = os.O_RDONLY | os.O_NONBLOCK if other_end == os.O_WRONLY else os.O_WRONLY
        os.close(os.open(fifo, this_end))
        peer.join(5)
        assert not peer.is_alive()
