"""``--record``, ``--replay`` and ``--plot`` end to end: a real child recorded in batch
mode, replayed as batch (the same rows), replayed live in tmux (time travel keys and the
title's recorded time), and plotted (two phases in the data drawn, a valid PNG)."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import REPO, run
from tests.support.builders import recorded_line
from tests.system.test_live_tmux import Tmux, has
from tiptop import recording
from tiptop.errors import TiptopError

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
    rec = recording.load(str(path))
    faults = sum(
        sum(v for v in recorded_line(rec, i)["k"]["PF"]["d"] if v is not None)
        for i in range(len(rec))
    )
    assert faults >= PAGES
    with gzip.open(path, "rt") as f:
        assert json.loads(f.readline())["screen"]["name"] == "sched"


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_live_replay_steps_back_and_forward(tmp_path: Path) -> None:
    _live, path = _record(tmp_path, "steps.jsonl", SPIN_THEN_SLEEP)
    rec = recording.load(str(path))
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


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_live_replay_plays_at_the_recorded_pace_and_the_speed_keys_change_it(
    tmp_path: Path,
) -> None:
    """A ``-d 0.5`` recording replayed live without ``-d``: two frames a second (the
    default delay, 2 s, would be one every two seconds); ``/`` twice: one every two."""
    path = tmp_path / "pace.jsonl"
    r = run("-b", "-d", "0.5", "-S", "sched", "--record", str(path), "--", "sleep", "6")
    assert r.returncode == 0, r.stderr
    n = len(recording.load(str(path)))
    assert n >= 9

    def at(i: int) -> Callable[[list[str]], bool]:
        return lambda lines: bool(lines) and f" {i}/{n} " in lines[0]

    t = Tmux([sys.executable, "-m", "tiptop", "--replay", str(path)], tmp_path)
    try:
        t.wait(at(2), "the second frame")
        start = time.monotonic()
        t.wait(at(6), "four frames later")
        took = time.monotonic() - start
        assert took < 4.0, f"4 frames of 0.5 s took {took:.1f} s"  # 8 s at the default delay
        assert "1x () faster, ( slower)" in t.screen()[0]
        t.keys("(", "(")
        lines = t.wait(has("1/4x () faster, ( slower)"), "a quarter of the pace")
        place = re.search(r" (\d+)/\d+ ", lines[0])
        assert place is not None, lines[0]
        k = int(place.group(1))
        start = time.monotonic()
        t.wait(at(k + 2), "two frames at 2 s each")
        assert time.monotonic() - start > 2.5  # at most one frame's 2 s was spent already
        t.keys("q")
        t.wait(lambda ls: t.dead(), "the program to quit")
    finally:
        t.kill()


def test_plot_shows_two_phases(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install .[plot])")
    from tiptop.cli.plot import find_column, series

    _live, path = _record(tmp_path, "phases.jsonl", SPIN_THEN_SLEEP)
    rec = recording.load(str(path))
    found = series(rec, rec.screens[0], find_column(rec.screens[0], "%CPU"), 0, len(rec) - 1)
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
    # Without --column: the screen's first rate with values (no IPC in 'sched').
    r = run("--plot", str(path), "-o", str(tmp_path / "x.png"))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert (tmp_path / "x.png").read_bytes()[:4] == b"\x89PNG"
    r = run("--plot", str(path), "--column", "IPC", "-o", str(tmp_path / "y.png"))
    assert r.returncode == 2 and "no such column" in r.stderr


TWO_SCREENS = """\
screens:
  - name: cpu
    desc: CPU only
    counters: {TC: task-clock}
    columns:
      - {header: " %CPU", format: "%5.1f", desc: Total CPU usage, expr: CPU_TOT}
      - {header: "  CPUms", format: "%7.1f", desc: task-clock ms, expr: delta(TC) / 1e6}
  - name: faults
    desc: page faults
    counters: {PF: page-faults}
    columns:
      - {header: "    FLT", format: "%7.0f", desc: Page faults, expr: delta(PF)}
"""


def _blocks(out: str) -> list[tuple[str, int]]:
    """Batch text as (header line, number of refreshes printed under it)."""
    parts = re.split(r"^(  PID +\[.*)$", out, flags=re.MULTILINE)
    return [
        (head.rstrip(), sum(1 for g in body.split("\n\n") if g.strip() and "Screen " not in g))
        for head, body in zip(parts[1::2], parts[2::2], strict=True)
    ]


def _unmarked(header: str) -> str:
    """A live header as batch prints it: without the live sort direction's mark."""
    return header.replace("\u25bc", " ").replace("\u25b2", " ").rstrip()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_a_recorded_screen_switch_replays_under_each_header(tmp_path: Path) -> None:
    """Live in tmux: two screens of a -W file, Right pressed between refreshes, q. The batch
    replay prints each refresh under the header that was on the terminal then, and the
    live replay follows the switch (Left/Right offer the recorded screens)."""
    (tmp_path / "two.yaml").write_text(TWO_SCREENS)
    rec_path = tmp_path / "r.jsonl"
    # -i: a refresh in which no task ran prints nothing in batch mode (as the original
    # does, docs/original.md), so idle rows are shown to make every refresh a block.
    cmd = [
        sys.executable,
        "-m",
        "tiptop",
        "-W",
        "two.yaml",
        "--only-conf",
        "-d",
        "0.3",
        "-i",
        "--record",
        str(rec_path),
    ]
    t = Tmux(cmd, tmp_path)
    try:
        lines = t.wait(has("screen  0: cpu"), "the first screen")
        live_one = next(x for x in map(_unmarked, lines) if re.match(r"  PID +\[", x))
        t.wait(lambda _: _count(rec_path) >= 3, "three refreshes")
        t.keys("Right")
        lines = t.wait(has("screen  1: faults"), "the second screen")
        live_two = next(x for x in map(_unmarked, lines) if re.match(r"  PID +\[", x))
        n = _count(rec_path)
        t.wait(lambda _: _count(rec_path) >= n + 3, "three more refreshes")
        t.keys("q")
        t.wait(lambda ls: t.dead(), "the program to quit")
    finally:
        t.kill()
    assert "CPUms" in live_one and "FLT" in live_two
    r = run("-b", "--replay", str(rec_path))
    assert r.returncode == 0, r.stderr
    (one, n_one), (two, n_two) = _blocks(r.stdout)
    assert (one, two) == (live_one, live_two)
    assert n_one >= 3 and n_two >= 3
    assert "\nScreen 1: faults\n" in r.stdout
    assert n_one + n_two == _count(rec_path)
    # Live replay: the view follows the recorded switch; Left goes back to 'cpu' for good.
    t = Tmux([sys.executable, "-m", "tiptop", "--replay", str(rec_path), "-d", "0.2"], tmp_path)
    try:
        t.wait(has("screen  0: cpu"), "the replay's first screen")
        t.wait(has("screen  1: faults"), "the replay following the recorded switch")
        t.keys("Right")
        t.wait(has("screen  0: cpu"), "Right: the other recorded screen (not a built-in)")
        t.keys("q")
        t.wait(lambda ls: t.dead(), "the program to quit")
    finally:
        t.kill()


@pytest.mark.parametrize("name", ["k.jsonl.gz", "k.jsonl"])
def test_a_killed_recorder_then_an_appended_session_keep_every_refresh(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    p = recorder(path, 4)
    p.send_signal(signal.SIGKILL)
    p.wait()
    first = _count(path)
    assert first >= 4
    r = run("-b", "-n", "5", "-d", "0.2", "-S", "sched", "--record", str(path))
    assert r.returncode == 0, r.stderr
    rec = recording.load(str(path))
    assert len(rec) == first + 5  # every whole refresh of both sessions
    assert any("a new session starts" in n for n in rec.all_notes())
    r = run("-b", "--replay", str(path))
    assert r.returncode == 0 and r.stdout.count("\n  PID  [") == 1
    assert "a new session starts" in r.stderr and "Traceback" not in r.stderr


def recorder(path: Path, refreshes: int) -> subprocess.Popen[bytes]:
    """``tiptop -b -d 0.2 -S sched --record path`` running, once ``refreshes`` refreshes
    are in the file (or 30 s passed; killed if this fails)."""
    cmd = [sys.executable, "-m", "tiptop", "-b", "-d", "0.2", "-S", "sched", "--record", str(path)]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        end = time.monotonic() + 30
        while _count(path) < refreshes and time.monotonic() < end:
            time.sleep(0.1)
    except BaseException:
        p.kill()
        p.wait()
        raise
    return p


def _count(path: Path) -> int:
    """The whole refreshes a reader finds in the file now (0 while it has none)."""
    try:
        rec = recording.load(str(path))
    except TiptopError:
        return 0
    rec.close()
    return len(rec)
