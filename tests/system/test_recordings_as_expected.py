"""Recordings as a user expects them (issue 38), through ``python -m tiptop``: one screen
numbering (the one seen while recording, in batch and live replay, and for ``-S``)."""

from __future__ import annotations

import dataclasses
import shutil
import sys
from pathlib import Path

import pytest

from tests.helpers import run
from tests.system.test_live_tmux import Tmux, has
from tiptop import recording

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "recording-v1.jsonl"


def _numbered(path: Path) -> None:
    """Three refreshes under 'default' then two under 'branch', recorded by a session
    whose screens were numbered other, other, branch, other, default (4 and 2)."""
    rec = recording.load(str(GOLDEN))
    default, branch = rec.screens
    other = [dataclasses.replace(default, name=f"other{i}") for i in range(3)]
    numbering = [other[0], other[1], branch, other[2], default]
    writer = recording.Recorder(str(path), {"screen_index": 4}, numbering)
    for i, screen in enumerate([default] * 3 + [branch] * 2):
        f = recording.decode(rec, 0, screen)
        f.timestamp = 1.9e9 + i
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
