"""``--record``, ``--replay`` and ``--plot`` end to end: a real child recorded in batch
mode, replayed as batch (the same rows), replayed live in tmux (time travel keys and the
title's recorded time), and plotted (two phases in the data drawn, a valid PNG)."""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import run
from tests.system.test_live_tmux import Tmux, has
from tiptop.engine import replay

PAGES = 6000
TOUCH_THEN_SPIN = (
    "import mmap, time\n"
    f"m = mmap.mmap(-1, {PAGES} * 4096)\n"
    f"for i in range({PAGES}): m[i * 4096] = 1\n"
    "end = time.monotonic() + 0.8\n"
    "while time.monotonic() < end: pass\n"
)
#: A spin of 0.6 s of CPU time (however long a loaded machine makes it), then a sleep long
#: enough for three refreshes at -d 0.2 even when they come late.
SPIN_THEN_SLEEP = "import time\nwhile time.process_time() < 0.6: pass\ntime.sleep(2.0)\n"


def _record(tmp_path: Path, name: str, code: str) -> tuple[str, Path]:
    path = tmp_path / name
    r = run(
        "-b", "-d", "0.2", "-S", "sched", "--record", str(path), "--", sys.executable, "-c", code
    )
    assert r.returncode == 0, r.stderr
    return r.stdout, path


def test_batch_replay_prints_the_rows_printed_live(tmp_path: Path) -> None:
    live, path = _record(tmp_path, "touch.jsonl.gz", TOUCH_THEN_SPIN)
    r = run("-b", "--replay", str(path))
    assert r.returncode == 0, r.stderr
    live_lines, replayed = live.split("\n"), r.stdout.split("\n")
    # Same layout and values. The uptime/load line is taken at replay time; the date line
    # is the recording's start, which the live preamble took within milliseconds of it.
    assert replayed[2:] == live_lines[2:]
    fmt = "%a %b %d %H:%M:%S %Z %Y"
    t_live = time.mktime(time.strptime(" ".join(live_lines[1].split()), fmt))
    assert abs(time.mktime(time.strptime(" ".join(replayed[1].split()), fmt)) - t_live) <= 1
    assert sum(1 for line in replayed if line.endswith(" python3") or "python" in line) >= 2
    # Every fresh page touched is one page fault, counted in the recorded deltas.
    rec = replay.load(str(path))
    faults = sum(
        sum(v for v in rec.record(i)["k"]["PF"]["d"] if v is not None) for i in range(len(rec))
    )
    assert faults >= PAGES
    with gzip.open(path, "rt") as f:
        assert json.loads(f.readline())["screen"]["name"] == "sched"


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_live_replay_steps_back_and_forward(tmp_path: Path) -> None:
    _live, path = _record(tmp_path, "steps.jsonl", SPIN_THEN_SLEEP)
    rec = replay.load(str(path))
    n = len(rec)
    assert n >= 4

    def stamp(i: int) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(rec.times[i]))

    t = Tmux([sys.executable, "-m", "tiptop", "--replay", str(path), "-d", "100"], tmp_path)
    try:
        lines = t.wait(has(f"replay {stamp(0)} 1/{n}"), "the first recorded refresh")
        assert lines[0].startswith(f"tiptop - replay {stamp(0)} 1/{n}")
        t.keys("Space")
        t.wait(has(f"replay {stamp(0)} paused 1/{n}"), "pause")
        t.keys("]")
        t.wait(has(f"replay {stamp(1)} paused 2/{n}"), "one refresh forward")
        t.keys("]")
        t.wait(has(f"replay {stamp(2)} paused 3/{n}"), "another refresh forward")
        t.keys("[")
        lines = t.wait(has(f"replay {stamp(1)} paused 2/{n}"), "one refresh back")
        assert any("python" in line for line in lines[4:]), lines
        t.keys("}")  # a minute forward: past the end, the last refresh
        t.wait(has(f"replay {stamp(n - 1)} paused {n}/{n}"), "a minute forward")
        t.keys("{")
        t.wait(has(f"replay {stamp(0)} paused 1/{n}"), "a minute back")
        t.keys("q")
        t.wait(lambda ls: t.dead(), "the program to quit")
    finally:
        t.kill()


def test_plot_shows_two_phases(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install .[plot])")
    from tiptop.cli.plot import find_column, series

    _live, path = _record(tmp_path, "phases.jsonl", SPIN_THEN_SLEEP)
    rec = replay.load(str(path))
    src = replay.ReplaySource(rec, rec.screens[0])
    found = series(src, find_column(rec.screens[0], "%CPU"), 0, len(rec) - 1)
    (child,) = [s for s in found.values() if "python" in s.label]
    # Both phases are in the series drawn: the spin's 0.6 s of CPU (its %CPU over the
    # intervals, whatever share of a CPU it got), then sleeping rows near 0 (the last,
    # DEAD, row is the exit's own interval).
    assert 0.55 <= child.cpu_seconds <= 1.0, (child.cpu_seconds, child.values)
    assert sorted(child.values[-4:-1])[1] < 5, child.values
    png = tmp_path / "cpu.png"
    r = run("--plot", str(path), "--column", "%CPU", "-o", str(png))
    assert r.returncode == 0, r.stderr
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    r = run("--plot", str(path), "-o", str(tmp_path / "x.png"))
    assert r.returncode == 2 and "no such column" in r.stderr  # IPC is not in 'sched'
