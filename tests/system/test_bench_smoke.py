"""Smoke test of the whole-process benchmark (benchmarks/whole_process.py): a short batch
measurement of our tiptop alone (no C original) on 20 sleeping processes."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler to build the hw2sw shim")
def test_batch_row_of_ours_alone(capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import whole_process
    finally:
        sys.path.remove(str(BENCH))
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
