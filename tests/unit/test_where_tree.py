"""``--where``'s call tree on made-up stacks (tiptop/where/calltree.py, report.py): both
views, shares of the whole, cuts by depth and by share, the first level's ``[other]``;
and the batch text and json of one refresh."""

from __future__ import annotations

import io
import json

from tiptop.choices import Format
from tiptop.outputs.where import WhereWriter
from tiptop.where import Hot, Profile, Stack
from tiptop.where.calltree import TreeRow, View, build, tree_rows
from tiptop.where.report import TreeCut, profile_tree, row_text

MAIN, A, B, WORK, IDLE = (("main", "p"), ("a", "p"), ("b", "p"), ("work", "p"), ("idle", "p"))
STACKS = (Stack((MAIN, A, WORK), 75), Stack((MAIN, B, WORK), 20), Stack((MAIN, IDLE), 5))


def laid(view: View, depth: int = 0, min_share: float = 0.0) -> list[tuple[int, str, float]]:
    root = build(((s.frames, s.weight) for s in STACKS), view)
    rows = tree_rows(root, depth=depth, min_share=min_share)
    return [(r.depth, r.site[0], r.share) for r in rows]


def test_top_down_from_the_callers() -> None:
    assert laid(View.TOP_DOWN) == [
        (0, "main", 100.0),
        (1, "a", 75.0),
        (2, "work", 75.0),
        (1, "b", 20.0),
        (2, "work", 20.0),
        (1, "idle", 5.0),
    ]


def test_bottom_up_each_function_then_its_callers() -> None:
    assert laid(View.BOTTOM_UP) == [
        (0, "work", 95.0),
        (1, "a", 75.0),
        (2, "main", 75.0),
        (1, "b", 20.0),
        (2, "main", 20.0),
        (0, "idle", 5.0),
        (1, "main", 5.0),
    ]


def test_cut_by_depth_and_by_share() -> None:
    assert laid(View.TOP_DOWN, depth=2) == [
        (0, "main", 100.0),
        (1, "a", 75.0),
        (1, "b", 20.0),
        (1, "idle", 5.0),
    ]
    assert laid(View.BOTTOM_UP, min_share=10.0) == [
        (0, "work", 95.0),
        (1, "a", 75.0),
        (2, "main", 75.0),
        (1, "b", 20.0),
        (2, "main", 20.0),
    ]


def test_the_first_level_past_its_top_is_one_other_row() -> None:
    rows = profile_tree(STACKS, TreeCut(View.BOTTOM_UP, depth=1, min_share=0.0), top=1)
    assert isinstance(rows[0], TreeRow) and rows[0].site == WORK
    assert rows[1] == (5.0, "[other]", "1 functions")
    assert row_text(rows[0]) == " 95.0%  work  p"


def profile() -> Profile:
    hot = (Hot("work", "p", 95), Hot("idle", "p", 5))
    return Profile(7, "p", "cpu-clock", 1000, 1.0, 100, 0, hot, False, STACKS)


def test_the_batch_text_is_the_tree_and_json_nests_it() -> None:
    out = io.StringIO()
    writer = WhereWriter(out, Format.TEXT, 7, TreeCut(View.TOP_DOWN, depth=3, min_share=10.0))
    writer.frame(profile(), 0)
    lines = out.getvalue().splitlines()
    assert lines[1:-1] == [
        "  100.0%  main  p",
        "   75.0%    a  p",
        "   75.0%      work  p",
        "   20.0%    b  p",
        "   20.0%      work  p",
    ], lines
    out = io.StringIO()
    WhereWriter(out, Format.JSON, 7, TreeCut(depth=2)).frame(profile(), 0)
    rec = json.loads(out.getvalue())
    assert rec["view"] == "bottom-up"
    work = rec["tree"][0]
    assert (work["symbol"], work["samples"], work["share"]) == ("work", 95, 95.0)
    assert [c["symbol"] for c in work["children"]] == ["a", "b"]
    assert work["children"][0]["children"] == []  # cut at depth 2
    assert sum(s["samples"] for s in rec["stacks"]) == rec["samples"] == 100


def test_folded_lines_escape_a_semicolon_and_keep_their_bound(tmp_path: object) -> None:
    """One line per distinct stack over the run, the file written again whole; a ``;`` in
    a name escaped; stacks past the bound counted on one line, the sum kept."""
    import os
    from pathlib import Path

    from tiptop.outputs import folded as F

    path = Path(str(tmp_path)) / "f.folded"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    out = F.FoldedFile(fd, str(path))
    out.add(profile())
    out.add(profile())
    assert path.read_text().splitlines() == ["main;a;work 150", "main;b;work 40", "main;idle 10"]
    jit = Profile(7, "p", "cpu-clock", 1000, 1.0, 3, 0, (), False, (Stack((("La;b", "j"),), 3),))
    bound = F.MAX_STACKS
    F.MAX_STACKS = 3
    try:
        out.add(jit)
    finally:
        F.MAX_STACKS = bound
    assert path.read_text().splitlines()[-1] == "[other stacks] 3"
    assert out.samples == 203
    assert F.folded_line(("La;b", "c"), 2) == "La\\x3bb;c 2"
    out.close()
