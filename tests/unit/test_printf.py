"""One printf checker (tiptop.screens.printf) for the loader and the table: a format the
loader keeps always prints, and a format the table could not print is refused at load
with file:line:column."""

from __future__ import annotations

import time
import tracemalloc

import pytest

from tests.support.builders import frame, screen
from tiptop import table
from tiptop.errors import SpecError
from tiptop.frame import Frame
from tiptop.screens import ScreenSpec, Target, load_text
from tiptop.screens.printf import MAX_FIELD, check_formats, compile_format
from tiptop.table import View


def xml(fmt: str) -> str:
    # The format attribute's value starts at line 3, column 37.
    return (
        "<tiptop>\n"
        '<screen name="s">\n'
        f'  <column header="   value" format="{fmt}" expr="2 * 1.5"/>\n'
        "</screen>\n"
        "</tiptop>\n"
    )


def yaml(fmt: str) -> str:
    # The format value starts at line 4, column 39 (inside the quotes).
    return (
        "screens:\n"
        "  - name: s\n"
        "    columns:\n"
        f"      - {{header: '   value', format: '{fmt}', expr: 2 * 1.5}}\n"
    )


@pytest.mark.parametrize("as_yaml", [False, True])
def test_lf_is_accepted_by_the_loader_and_the_table(as_yaml: bool) -> None:
    text = yaml("%8.2lf") if as_yaml else xml("%8.2lf")
    cfg = load_text(text, Target(), path="rc", yaml=as_yaml)
    assert cfg.problems == []
    (col,) = cfg.screens[0].columns
    assert col.format == "%8.2lf"
    assert compile_format(col.format)(3.0) == "    3.00"
    check_formats(cfg.screens[0])  # no SpecError


@pytest.mark.parametrize(
    ("as_yaml", "place"),
    [(False, "rc:3:37"), (True, "rc:4:39")],
)
def test_absurd_width_is_refused_at_load_with_its_place(as_yaml: bool, place: str) -> None:
    text = yaml("%1000f") if as_yaml else xml("%1000f")
    cfg = load_text(text, Target(), path="rc", yaml=as_yaml)
    assert cfg.screens[0].columns == ()
    assert [str(e) for e in cfg.problems] == [
        f"{place}: Bad format '%1000f': width 1000 is over {MAX_FIELD} (a cell is a column)"
        " in column '   value', screen 's'"
    ]


@pytest.mark.parametrize(
    "fmt",
    [
        "%6.2lf",
        "%64.1f",
        "%.64e",
        "x%g%%",
        "%-+#08.3F",
        "%1000f",
        "%65f",
        "%.65g",
        "%Lf",
        "%lld",
        "%d",
        "%f%f",
        "100%",
        "%5.1",
        "%*f",
        "%'f",
    ],
)
def test_loader_keeps_exactly_what_the_table_prints(fmt: str) -> None:
    try:
        compile_format(fmt)
        printable = True
    except SpecError:
        printable = False
    cfg = load_text(xml(fmt), Target())
    assert bool(cfg.screens[0].columns) == printable, cfg.problems
    assert printable == (fmt in ("%6.2lf", "%64.1f", "%.64e", "x%g%%", "%-+#08.3F"))


def test_flags_follow_c() -> None:
    assert compile_format("%-+#08.3F|")(2.5) == "+2.500  |"  # '-' wins over '0'
    assert compile_format("% .1e")(1234.5) == " 1.2e+03"
    assert compile_format("%#.0f")(3.0) == "3."


def _one_row(s: ScreenSpec) -> Frame:
    return frame([{"tid": 1, "cpu": 2.0, "cells": [2.0] * len(s.columns)}], s)


@pytest.mark.parametrize("fmt", ["%999999999f", "%.999999999f"])
def test_a_gigabyte_format_is_refused_before_anything_is_formatted(fmt: str) -> None:
    """Printed, ``%999999999f`` is a 1 GB cell (6 s, or a MemoryError under a memory
    limit): a second screen with it loads without it, every loaded screen's rows print in
    a few kilobytes, and a screen built past the loader is refused before any cell."""
    text = xml("%4.1f").replace("</tiptop>", xml(fmt).split("\n", 1)[1])
    bad = screen("bad", columns=[(" h", fmt, "CPU_TOT")])
    tracemalloc.start()
    try:
        t0 = time.thread_time()  # CPU, not wall: a loaded machine does not move it
        cfg = load_text(text, Target(), path="rc")
        rows = [table.rows(_one_row(s), s, View()) for s in cfg.screens if s.columns]
        with pytest.raises(SpecError, match="is over 64"):
            table.rows(_one_row(bad), bad, View())
        elapsed = time.thread_time() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [len(s.columns) for s in cfg.screens] == [1, 0]
    assert [r[0].cells for r in rows] == [["     2.0"]]
    assert "is over 64" in cfg.problems[0].message
    assert peak < 4 << 20 and elapsed < 1.0, (peak, elapsed)
