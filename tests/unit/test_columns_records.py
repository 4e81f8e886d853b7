"""tiptop/screens/columns.py: a screen's columns compiled once into records that say what
each column is, and nothing outside ``tiptop.screens`` reading expression text."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support import builders
from tests.unit.test_layers import PKG
from tiptop.engine.count.plan import Planner
from tiptop.recording.writer import bare_aliases
from tiptop.screens import Target, builtin_screens
from tiptop.screens.bottleneck import OFFSET
from tiptop.screens.columns import Kind, compiled, screen_columns
from tiptop.screens.evaluate import Evaluator
from tiptop.screens.timetree import TIME_LABELS

SCREEN = builders.screen(
    "kinds",
    counters={"C": "cycles", "I": "instructions", "BE": "cache-misses"},
    columns=[
        (" %CPU", "%5.1f", "CPU_TOT"),
        ("   IPC", "%6.2f", "delta(I) / delta(C)"),
        ("  TOTAL", "%7.0f", "I + delta(INTERVAL)"),
        ("    %BE", "%7.1f", "100 * delta(BE) / delta(C)"),
        ("    %RET", "%7.1f", "100 - 100 * delta(BE) / delta(C)"),
        ("  BOTTLENECK", "%.0f%%", "bottleneck(tma: RET=%RET, BE=%BE)"),
    ],
)


def expression_reads(path: Path) -> list[int]:
    """The lines where ``path`` reads an attribute named ``expr`` (a ColumnSpec's
    expression text)."""
    tree = ast.parse(path.read_text(), str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "expr"
    ]


def test_no_module_outside_screens_reads_expression_text() -> None:
    """Column meaning comes from the records: recording, plot, table, evaluator and the
    engine ask ``tiptop.screens.columns``; none reads ``ColumnSpec.expr``."""
    outside = [p for p in sorted(PKG.rglob("*.py")) if "screens" not in p.relative_to(PKG).parts]
    assert len(outside) > 50
    found = [f"{p.relative_to(PKG)}:{line}" for p in outside for line in expression_reads(p)]
    assert not found, f"expression text read outside tiptop/screens/: {found}"


def test_the_check_sees_an_expression_read(tmp_path: Path) -> None:
    src = (PKG / "cli" / "plot.py").read_text() + '\nrates = ["delta(" in c.expr for c in ()]\n'
    copy = tmp_path / "plot.py"
    copy.write_text(src)
    assert expression_reads(copy) == [len(src.splitlines())]
    assert expression_reads(PKG / "screens" / "columns.py")  # the records read it


def test_each_record_says_its_kind_and_what_it_reads() -> None:
    cols = screen_columns(SCREEN)
    assert [c.kind for c in cols] == [
        Kind.PLAIN,
        Kind.RATE,
        Kind.PLAIN,  # delta() of a built-in reads no counter's delta
        Kind.RATE,
        Kind.RATE,
        Kind.BOTTLENECK,
    ]
    assert [(set(c.bare), set(c.deltas)) for c in cols] == [
        (set(), set()),
        (set(), {"I", "C"}),
        ({"I"}, set()),
        (set(), {"BE", "C"}),
        (set(), {"BE", "C"}),
        (set(), set()),  # its node names (RET, BE) are not counters it reads
    ]
    bottleneck = cols[5]
    assert bottleneck.compiled is None and bottleneck.path is not None
    assert bottleneck.labels[:OFFSET] == TIME_LABELS  # the time level first
    assert bottleneck.labels[OFFSET : OFFSET + 2] == ("FE", "BAD") and "BE/Mem" in bottleneck.labels
    assert [j for j, _bp in cols.paths] == [5]
    assert [c.format for c in cols] == [c.format for c in SCREEN.columns]


def test_the_recorder_keeps_totals_of_bare_reads_only() -> None:
    """``I`` read bare is recorded with its totals; ``BE``, named as a node by the
    bottleneck column but read only as a delta, is not."""
    assert bare_aliases(SCREEN) == {"I"}


def test_a_column_that_does_not_compile_says_why() -> None:
    screen = builders.screen("bad", counters={"C": "cycles"}, columns=[("  X", "%3.0f", "1 +")])
    (col,) = screen_columns(screen)
    assert col.compiled is None and col.error is not None and col.kind is Kind.PLAIN


def test_columns_are_compiled_once_from_load_to_plan() -> None:
    """The loader's compile is the one the plan's evaluator runs: the same objects."""
    screen = builtin_screens(Target("x86", "19_11"))[0]
    records = screen_columns(screen)
    for col, spec in zip(records, screen.columns, strict=True):
        if col.compiled is not None:
            assert compiled(spec.expr) is col.compiled
    ev = Evaluator(screen, [c.alias for c in screen.counters])
    assert all(a is b.compiled for a, b in zip(ev.columns, records, strict=True))
    assert "compile_column" not in Planner.plan.__code__.co_names
