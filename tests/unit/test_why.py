"""``--why PID`` (tiptop/outputs/why.py, tiptop/table/why.py): one task's top-down tree per
refresh, as text and json, from a synthetic frame of a Zen 4 ``topdown2`` screen: its
nodes, values, thresholds, the critical path, the advice, and the marks for scaled and
missing counts. The command line's one-line refusals are tests/system/test_why.py's."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from tests.support import builders
from tests.unit.test_time_level import times
from tiptop.cells import Status
from tiptop.choices import Format
from tiptop.frame import Frame
from tiptop.options import Options
from tiptop.outputs.batch import make_writer
from tiptop.outputs.why import WhyWriter
from tiptop.screens import ScreenSpec, Target, builtin_screens
from tiptop.screens.evaluate import CounterCells, Evaluator
from tiptop.screens.variables import RowFacts
from tiptop.table.why import (
    deeper,
    task_tree,
    time_screen,
    tree_lines,
    tree_record,
    why_screen,
)

ZEN4 = builtin_screens(Target("x86", "19_11"))
TD2 = next(s for s in ZEN4 if s.name == "topdown2")
#: 6e9 slots: retiring 25%, bad speculation 5%, front end 20% (latency 8%), back end 45%
#: (memory 4/5 of it: 36%, cpu 9%), the rest SMT.
COUNTS = {
    "CYC": 1e9,
    "CYC2": 1e9,
    "RET": 1.5e9,
    "DISP": 1.8e9,
    "UC": 0.0,
    "MISP": 1.0,
    "RSY": 1.0,
    "FE": 1.2e9,
    "FEL": 0.08e9,
    "BE": 2.7e9,
    "LNC": 80.0,
    "NC": 100.0,
    "SMT": 0.3e9,
}


def _frame(
    running: float = 1.0,
    missing: str | None = None,
    screen: ScreenSpec = TD2,
    time: list[float] | None = None,
) -> Frame:
    """One row, task 4242 ``chase``, of ``screen`` from :data:`COUNTS`: ``missing`` an
    alias whose count could not be read, ``time`` where its time went (fractions of the
    interval: run, wait, throttled, I/O; unknown by default)."""
    aliases = [c.alias for c in screen.counters]
    d = np.array([[COUNTS[a] for a in aliases]])
    st = np.zeros(d.shape, np.uint8)
    if missing:
        st[0, aliases.index(missing)] = Status.UNREADABLE
    z = np.zeros(1)
    spent = None if time is None else times([time])
    facts = RowFacts(np.full(1, 99.0), z, z, z, 1.0, st[0, :1] * 0, st[0, :1] * 0, time=spent)
    cells = Evaluator(screen, aliases).evaluate(
        facts, CounterCells(d, st, d, st, np.full(d.shape, running))
    )
    row = {
        "tid": 4242,
        "name": "chase",
        "cells": cells.values[0].tolist(),
        "status": cells.status[0].tolist(),
        "running": cells.running[0].tolist(),
    }
    if time is not None:
        row["time"] = [100.0 * x for x in time]
    frame = builders.frame([row], screen)
    frame.counter_status = st  # the reads' statuses, as the sampler's frame has them
    return frame


def test_the_tree_has_values_thresholds_path_and_advice() -> None:
    tree = task_tree(_frame(), TD2, 4242)
    assert tree is not None and tree.command == "chase"
    by = {n.label: n for n in tree.nodes}
    assert by["BE"].share == pytest.approx(45.0) and by["BE"].bound == 20.0  # sum of its parts
    assert by["BE/Mem"].share == pytest.approx(36.0) and by["BE/Mem"].over
    assert [n.label for n in tree.nodes if n.critical] == ["BE", "BE/Mem"]
    assert by["FE"].over and not by["FE"].critical  # over, but BE is larger
    assert by["SMT"].share is None  # no column on topdown2
    assert "working set" in by["BE/Mem"].helps and "NUMA" in by["BE/Mem"].helps
    assert "branch" in by["BAD/Misp"].helps
    lines = tree_lines(tree)
    assert lines[0] == "PID 4242 (chase): bottleneck BE/Mem 36% of slots"
    assert lines[7].startswith(" * BE            45.0% > 20% over  ")  # after FE, BAD and theirs
    assert lines[8].startswith(" *   BE/Mem      36.0% > 20% over  stalled on loads")
    assert lines[9].startswith("     BE/CPU       9.0% > 10%       ")
    assert lines[13].startswith("   SMT             n/a > 20%       ")


def test_scaled_and_missing_counts_say_so() -> None:
    frame = _frame(running=0.5)
    frame.counter_running[0, :] = 0.5
    frame.counter_running[0, 6:] = 0.48  # the second group (CYC2...) ran a little less
    tree = task_tree(frame, TD2, 4242)
    assert tree is not None and tree.running == 0.5
    lines = tree_lines(tree)
    assert lines[0].endswith("(counts scaled: they ran 50% of the time)")
    assert lines[1] == (
        "   events ran: CYC 50%, RET 50%, UC 50%, DISP 50%, MISP 50%, RSY 50%, CYC2 48%, "
        "FEL 48%, FE 48%, BE 48%, LNC 48%, NC 48%"
    )
    assert tree_record(tree)["ran"] == {
        **dict.fromkeys(["CYC", "RET", "UC", "DISP", "MISP", "RSY"], 0.5),
        **dict.fromkeys(["CYC2", "FEL", "FE", "BE", "LNC", "NC"], 0.48),
    }
    whole = task_tree(_frame(), TD2, 4242)
    assert whole is not None
    assert not any(ln.startswith("   events ran") for ln in tree_lines(whole))
    tree = task_tree(_frame(missing="LNC"), TD2, 4242)
    assert tree is not None and tree.status == Status.UNREADABLE
    assert "counts missing ('?')" in tree_lines(tree)[0]
    assert not any(n.critical for n in tree.nodes)


def test_writer_text_and_json() -> None:
    out = io.StringIO()
    w = make_writer(out, Options(why=4242, format=Format.JSON), TD2, 0)
    assert isinstance(w, WhyWriter)
    w.begin(0.0)
    w.frame(_frame(), 3)
    rec = json.loads(out.getvalue())
    assert rec["iteration"] == 3 and rec["screen"] == "topdown2" and rec["pid"] == 4242
    assert rec["bottleneck"] == "BE/Mem" and rec["share"] == pytest.approx(36.0)
    mem = next(n for n in rec["nodes"] if n["label"] == "BE/Mem")
    assert mem["metric"] == "backend_bound_memory" and mem["critical"] and mem["threshold"] == 20
    out = io.StringIO()
    w = WhyWriter(out, Options(why=77), TD2, "(level 2 is on screen 'x': -S x)")
    w.begin(0.0)
    w.frame(_frame(), 0)
    text = out.getvalue().splitlines()
    assert text[0].startswith("tiptop --why 77: screen 'topdown2'") and text[1].startswith(
        "(level 2"
    )
    assert text[2].endswith("PID 77: no row this refresh (not running, or ended)")


def test_which_screen() -> None:
    assert ZEN4[why_screen(ZEN4) or 0].name == "topdown2"
    td = next(s for s in ZEN4 if s.name == "topdown")
    assert deeper(td, ZEN4) == "topdown2" and deeper(TD2, ZEN4) is None
    neoverse = builtin_screens(Target("arm64", "41_D40"))
    assert neoverse[why_screen(neoverse) or 0].name == "topdown"  # level 1 only there
    assert why_screen(builtin_screens(Target("x86", "19_01"))) is None  # Zen 3: no tree


def test_the_time_screen_where_no_cpu_tree_is() -> None:
    zen3 = builtin_screens(Target("x86", "19_01"))
    assert zen3[time_screen(zen3) or 0].name == "state"
    assert time_screen([s for s in zen3 if s.name != "state"]) is None
