"""Rows by cgroup as a tree (tiptop/table/tree.py, the live ``G`` view): each group row
with its tasks beneath it, the groups sorted among themselves and each group's tasks among
themselves by the view's column; folded groups; a group and its smallest task share an id
and stay two rows."""

from __future__ import annotations

import pytest

from tests.support.builders import SCREEN, frame, task
from tiptop import table
from tiptop.frame import Frame
from tiptop.sources.bycgroup import group
from tiptop.table import Folding, View


def _grouped() -> Frame:
    """web: a1 (10 %CPU, IPC 2), a2 (30, 0.5), a3 (5, 3); db: b1 (50, 1) and an idle task;
    web sums 45 %CPU at IPC 38/41, db 50 at IPC 1."""
    f = frame(
        [
            task(1, 10.0, 10.0, 2.0, name="a1"),
            task(2, 30.0, 30.0, 0.5, name="a2"),
            task(3, 50.0, 5.0, 1.0, name="b1"),
            task(4, 5.0, 1.0, 3.0, name="a3"),
            task(5, 0.0, 0.0, 1.0, name="idle"),
        ]
    )
    return group(f, SCREEN, ["web", "web", "db", "web", "db"])


def names(rows: table.RowList, view: View) -> list[str]:
    """Each row's name column as the live table shows it (the tree's drawing first)."""
    return [table.format_row(r, view).split(maxsplit=4)[-1] for r in rows]


def lines(view: View) -> list[str]:
    return names(table.rows(_grouped(), SCREEN, view), view)


def test_groups_and_their_tasks_are_sorted_by_the_same_column() -> None:
    view = View(folding=Folding())
    assert lines(view) == ["- db", "`- b1", "- web", "|- a2", "|- a1", "`- a3"]
    by_ipc = View(sort_column=2, folding=Folding())  # db's IPC 1.0 over web's 0.93
    assert lines(by_ipc) == ["- db", "`- b1", "- web", "|- a3", "|- a1", "`- a2"]
    ascending = View(sort_column=2, descending=False, folding=Folding())
    assert lines(ascending) == ["- web", "|- a2", "|- a1", "`- a3", "- db", "`- b1"]


def test_the_drawing_leaves_the_names_in_one_column() -> None:
    view = View(folding=Folding())
    rows = table.rows(_grouped(), SCREEN, view)
    text = [table.format_row(r, view) for r in rows]
    assert text[0].endswith(" - db") and text[1].endswith("   `- b1")
    assert text[3].endswith("   |- a2")


def test_folded_groups_hide_their_tasks() -> None:
    assert lines(View(folding=Folding().toggle("web"))) == ["- db", "`- b1", "+ web"]
    folded = Folding().toggle_all()
    assert lines(View(folding=folded)) == ["+ db", "+ web"]
    assert lines(View(folding=folded.toggle("web"))) == ["+ db", "- web", "|- a2", "|- a1", "`- a3"]
    assert lines(View(folding=folded.toggle_all())) == lines(View(folding=Folding()))


def test_a_task_shown_brings_its_group_and_an_idle_one_is_hidden() -> None:
    assert lines(View(name_filter="a1", folding=Folding())) == ["- web", "`- a1"]
    shown = lines(View(show_idle=True, folding=Folding()))
    assert shown[:3] == ["- db", "|- b1", "`- idle"]


def test_without_folding_the_group_rows_stand_alone() -> None:
    """Batch ``--by cgroup`` (no folding in its view): the group rows only, as before."""
    view = View()
    rows = table.rows(_grouped(), SCREEN, view)
    assert names(rows, view) == ["db", "web"] and rows.top_level() == 2
    assert all(r.summed and r.group is None and r.branch == "" for r in rows)


def test_a_group_and_its_smallest_task_are_two_rows() -> None:
    """web's row has its smallest task's PID, 1: the highlight, the tags and the ``t``
    window tell them apart by depth, and each one's frame has that id once."""
    view = View(folding=Folding())
    rows = table.rows(_grouped(), SCREEN, view)
    web, a1 = rows.position_of(1, 0), rows.position_of(1, 1)
    assert (web, a1) == (2, 4)
    assert web is not None and a1 is not None
    assert rows[web].summed and rows[web].group == "web" and rows[web].depth == 0
    assert not rows[a1].summed and rows[a1].group == "web" and rows[a1].depth == 1
    assert rows.position_of(2, 0) == 3  # a2 has one row: found at its own depth
    assert rows.top_level() == 2
    tasks = rows.level_frame(a1)
    assert tasks.tid.tolist().count(1) == 1 and tasks.name[tasks.tid.tolist().index(1)] == "a1"
    groups = rows.level_frame(web)
    assert groups.name == ["db", "web"] and groups.pid.tolist() == [3, 1]


@pytest.mark.parametrize("sort_column", [-1, 0, 1, 2, 3])
def test_every_task_is_beneath_its_own_group(sort_column: int) -> None:
    view = View(sort_column=sort_column, show_idle=True, folding=Folding())
    rows = table.rows(_grouped(), SCREEN, view)
    group_of = {"a1": "web", "a2": "web", "a3": "web", "b1": "db", "idle": "db"}
    current = None
    for r in rows:
        if r.depth == 0:
            current = r.command
        else:
            assert group_of[r.command] == current == r.group
    assert len(rows) == 7
