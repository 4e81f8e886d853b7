"""Live rows by cgroup as a tree without a terminal: each cgroup's row with its tasks
beneath it, ``=`` and ``*`` hide and show them, the highlight keeps to a cgroup's row or a
task of one id, a cgroup's row is neither tagged nor signalled (tests/support/live.py;
``tests/system/test_live_tmux.py`` drives the real program over real cgroups)."""

from __future__ import annotations

from tests.support.live import GroupedSampler, keys, new_app, text
from tiptop.live.app import LiveApp

#: Tasks 100..105 (%CPU 50, 40.2, 30.4, 20.6, 10.8, 1; task1 dead) in three cgroups:
#: web 91.2 %CPU, db 60.8, cron 1.
LABELS = ["web", "db", "web", "db", "web", "cron"]


def tree_app() -> LiveApp:
    app, _ = new_app(sampler=GroupedSampler(LABELS))
    return app


def names(app: LiveApp) -> list[str]:
    return [f"{r.branch}{r.command}" for r in app.rows]


def test_each_cgroup_row_has_its_tasks_beneath_it() -> None:
    app = tree_app()
    assert names(app) == [
        "- web",
        "  |- task0",
        "  |- task2",
        "  `- task4",
        "- db",
        "  |- task1",
        "  `- task3",
        "- cron",
        "  `- task5",
    ]
    lines = text(app, (100, 20))
    assert lines[1].startswith("Tasks:   3 cgroups,   3 displayed")  # cgroups, not rows
    assert lines[3].rstrip().endswith("CGROUP")
    assert lines[4].split()[0] == "100" and lines[4].rstrip().endswith(" - web")
    assert lines[5].split()[0] == "100" and lines[5].rstrip().endswith("   |- task0")


def test_the_sort_orders_the_cgroups_and_each_ones_tasks() -> None:
    app = tree_app()
    keys(app, "R")  # %CPU, smallest first
    assert names(app) == [
        "- cron",
        "  `- task5",
        "- db",
        "  |- task3",
        "  `- task1",
        "- web",
        "  |- task4",
        "  |- task2",
        "  `- task0",
    ]


def test_equals_hides_and_shows_a_cgroups_tasks() -> None:
    app = tree_app()
    keys(app, "down", "down", "down", "down")  # db's row
    assert app.table.selected_row().command == "db"  # type: ignore[union-attr]
    keys(app, "=")
    assert names(app)[4:] == ["+ db", "- cron", "  `- task5"]
    assert app.table.selected_row().command == "db"  # type: ignore[union-attr]
    keys(app, "=")
    assert names(app)[4:7] == ["- db", "  |- task1", "  `- task3"]


def test_equals_on_a_task_hides_its_cgroups_and_highlights_that_row() -> None:
    app = tree_app()
    keys(app, "down", "down")  # task2, in web
    assert app.table.selected_row().command == "task2"  # type: ignore[union-attr]
    keys(app, "=")
    assert names(app)[:2] == ["+ web", "- db"]
    row = app.table.selected_row()
    assert row is not None and row.command == "web" and row.summed and app.table.selected == 0


def test_star_hides_and_shows_every_cgroups_tasks() -> None:
    app = tree_app()
    keys(app, "down")  # task0
    keys(app, "*")
    assert names(app) == ["+ web", "+ db", "+ cron"]
    assert app.table.selected_row().command == "web"  # type: ignore[union-attr]
    assert "Every cgroup's tasks hidden" in text(app)[2]
    keys(app, "down", "=")  # db alone shown again
    assert names(app) == ["+ web", "- db", "  |- task1", "  `- task3", "+ cron"]
    keys(app, "*")
    assert len(names(app)) == 9 and "shown" in text(app)[2]


def test_the_highlight_keeps_to_a_cgroups_row_or_the_task_of_its_id() -> None:
    """web's row has its smallest task's PID (100): a refresh keeps the highlight on the
    one it was on, and the ``t`` window's frame holds that one row of the id."""
    app = tree_app()
    keys(app, "down")  # task0, PID 100, beneath web's row of PID 100
    app.refresh()
    row = app.table.selected_row()
    assert row is not None and (row.tid, row.command, app.table.selected) == (100, "task0", 1)
    assert app.session.selected_frame().name[:3] == ["task0", "task1", "task2"]
    keys(app, "up")
    app.refresh()
    row = app.table.selected_row()
    assert row is not None and (row.tid, row.command, app.table.selected) == (100, "web", 0)
    assert app.session.selected_frame().name == ["cron", "db", "web"]


def test_a_cgroups_row_is_neither_tagged_nor_signalled() -> None:
    app = tree_app()
    keys(app, " ")
    assert not app.state.tagged and "a cgroup's row" in text(app)[2]
    keys(app, "k")
    assert "No task to signal" in text(app)[2]
    keys(app, "down", " ")  # task0
    assert app.state.tagged == {100}


def test_equals_without_rows_by_cgroup_says_what_it_does() -> None:
    app, _ = new_app()
    keys(app, "=")
    assert "G shows rows by cgroup" in text(app)[2]
    assert [r.command for r in app.rows] == ["task0", "task1", "task2", "task3"]
