"""Smoke test of the whole-process benchmark (benchmarks/whole_process.py): a short batch
measurement of our tiptop alone (no C original) on 20 sleeping processes; the window that
reads a batch run's CPU between two refreshes printed."""

from __future__ import annotations

import importlib
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _bench(module: str) -> ModuleType:
    """A module of benchmarks/ (not a package: its modules import each other by name)."""
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(module)
    finally:
        sys.path.remove(str(BENCH))


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler to build the hw2sw shim")
def test_batch_row_of_ours_alone(capsys: pytest.CaptureFixture[str]) -> None:
    whole_process = _bench("whole_process")
    argv = ["--sizes", "20", "--quick", "--no-c", "--parts", "batch"]
    rows = whole_process.run([*argv, "--modes", "processes"])
    batch = [r for r in rows if r.what == "batch"]
    assert len(batch) == 1
    row = batch[0]
    # the shim makes the default screen's 5 counters open: at least the 20 sleepers' rows
    # of the last refresh have all their cells (tasks started during it may show '?')
    ours, c = row.counted.split(" / ")
    counted, rows_seen = (int(x) for x in ours.split("/"))
    assert 20 <= counted <= rows_seen
    assert c == "-"
    ms = float(row.ours.split()[0])
    assert 0 < ms < 1000
    assert row.c == "n/a" and row.ratio == "n/a"
    printed = capsys.readouterr().out
    assert "| batch " in printed and row.ours in printed


def test_window_marks_refreshes_by_their_blank_lines(tmp_path: Path) -> None:
    """Refresh k printed shows as k + 1 blank lines (the preamble ends with one), counted
    across the writes a poll sees, a blank line split between two of them included; the
    run time is read at refresh 1 and at refresh 3, and the window is 2 refreshes."""
    procbench = _bench("procbench")
    out = tmp_path / "batch.out"
    w = procbench.Window(out, 1, 3, max_gap=1.0)
    me = os.getpid()
    for chunk, blanks, marks in (
        (b"tiptop - up\n\n  PID [ %CPU]\n    1 a\n", 1, []),
        (b"\n", 2, [1]),  # refresh 1's blank line, its first newline in the chunk before
        (b"    1 a\n\n    1 a\n", 3, [1]),
        (b"\n", 4, [1, 3]),
    ):
        with open(out, "ab") as f:
            f.write(chunk)
        # run 20 ms between marks: schedstat's run time of a running task moves at the
        # scheduler's updates (a tick at most), so the window sees time pass
        end = time.thread_time() + 0.02
        while time.thread_time() < end:
            pass
        w.poll(me)
        assert (w.blanks, sorted(w.cpu)) == (blanks, marks)
    per = w.per_refresh_s()
    assert per is not None and per == (w.cpu[3] - w.cpu[1]) / 1e9 / 2


def test_window_refuses_a_mark_seen_late(tmp_path: Path) -> None:
    """A poll that sees more than the refresh end it waits for, or comes long after the
    poll before, could read the run time in another refresh: no mark, and why."""
    procbench = _bench("procbench")
    out = tmp_path / "batch.out"
    out.write_bytes(b"tiptop - up\n\n    1 a\n\n    1 a\n\n")  # refreshes 1 and 2 at once
    w = procbench.Window(out, 1, 2)
    w.poll(os.getpid())
    assert w.cpu == {} and "refresh 1's end seen late" in w.problem
    assert w.per_refresh_s() is None


def test_start_up_floor_is_a_child_s_cpu() -> None:
    """The start-up row's floor is the CPU of a child Python: importing our dependencies
    costs more than an empty program, and both cost something (a floor read from the wrong
    process, or from none, would be 0 for both)."""
    livebench = _bench("livebench")
    empty = statistics.median(
        livebench.floor_run(livebench.floor_tool({}, "pass")) for _ in range(3)
    )
    deps = statistics.median(livebench.floor_run(livebench.floor_tool({})) for _ in range(3))
    assert 0 < empty < deps


def test_above_the_floor_is_taken_round_by_round() -> None:
    """Ours above the floor is the median of each round's difference (50, 50, 30: 50), not
    the difference of the two medians (100 - 60 = 40), which a machine slowing down between
    rounds would move; a tool that failed shows its error."""
    livebench = _bench("livebench")
    rounds = [{"ours": 100.0, "floor": 50.0}, {"ours": 130.0, "floor": 80.0}]
    st = livebench.StartUp([*rounds, {"ours": 90.0, "floor": 60.0}], {"C": "exit 1"})
    assert st.above_floor("ours") == 50.0
    assert st.median("ours") - st.median("floor") == 40.0
    assert st.above_floor("C") == st.median("C") == "exit 1"


def test_each_tool_takes_each_place_in_turn() -> None:
    """Over as many repeats as tools, each tool runs first once and last once (two tools:
    the order flips at each repeat)."""
    procbench = _bench("procbench")
    tools = [procbench.Tool(x, (x,)) for x in ("ours", "C", "before")]
    orders = [[t.label for t in procbench.rotation(tools, r)] for r in range(3)]
    assert orders == [["ours", "C", "before"], ["C", "before", "ours"], ["before", "ours", "C"]]
    two = [[t.label for t in procbench.rotation(tools[:2], r)] for r in range(2)]
    assert two == [["ours", "C"], ["C", "ours"]]
