"""Live mode's screen without a terminal: rendered to a canvas and compared as text and
attributes (urwid's own testing habit): the golden screen, row colours, help and error
windows, scrolling, resizing, the palette, indicators and the error log file.
"""

from __future__ import annotations

import io
import os
from typing import Any

import pytest
import urwid

from tests.support.live import (
    BRANCH,
    DEFAULT,
    ScriptedSampler,
    attrs,
    keys,
    new_app,
    selected,
    text,
)
from tiptop.live import palette as P
from tiptop.live.app import LiveApp
from tiptop.live.rows import Scroller
from tiptop.live.services import Services
from tiptop.live.text import Markup
from tiptop.live.widgets import MIN_COLS, MIN_ROWS
from tiptop.options import Options
from tiptop.screens.model import Target
from tiptop.screens.variables import VARIABLES

GOLDEN = [
    "tiptop -                                      [root]                  [sticky]",
    "Tasks:   4 processes,   4 displayed,   1 dead" + " " * 37 + "screen  0: default",
    "",
    "  PID  [%CPU]\u25bc IPC  %MISS COMMAND",
    "  100   50.0  2.00   0.50 task0",
    "  101   33.7  1.00   0.50 task1",
    "  102   17.3     -   0.50 task2",
    "  103    1.0  1.00      ? task3",
    "",
    "",
    "",
    "Iteration: 4" + " " * 18 + "[errors] [scaled]" + " " * 35 + "Epoch: 1795291592",
]


def test_golden_screen() -> None:
    app, sampler = new_app(sticky=True, show_timestamp=True, show_epoch=True)
    sampler.messages.say("C: cycles: no such event", "C: cycles: no such event")
    app.refresh()
    lines = [x.rstrip() for x in text(app)]
    golden = list(GOLDEN)
    if os.geteuid() != 0:
        golden[0] = "tiptop -" + " " * 62 + "[sticky]"
    assert lines == golden
    # The header is padded to COLS-1 (docs/original.md 5.1), rows are cut to COLS-1; the
    # sort column and its direction's mark bold (the mark takes 3 bytes, 1 column).
    assert attrs(app, (100, 12), 3) == [
        (P.HEADER, 7),
        (P.HEADER_SORT, 9),
        (P.HEADER, 85),
        (None, 1),
    ]


def test_root_indicator_follows_euid() -> None:
    app, _ = new_app()
    assert ("[root]" in text(app)[0]) == (os.geteuid() == 0)


def test_dead_and_watched_rows_and_cell_attributes() -> None:
    app, _ = new_app(sticky=True, watch_name="task2")
    size = (60, 12)
    # The selection cursor starts on the top row: the whole row in its attribute.
    assert attrs(app, size, 4) == [(P.SELECTED, 59), (None, 1)]
    keys(app, "end")  # the cursor to the last row (task3)
    assert attrs(app, size, 7) == [(P.SELECTED, 59), (None, 1)]
    # task0: IPC over its threshold (1.5), %MISS multiplexed (running 0.5).
    assert attrs(app, size, 4) == [(None, 13), (P.OVER, 5), (None, 1), (P.SCALED, 6), (None, 35)]
    # task1 is dead: red all along, nothing else.
    assert attrs(app, size, 5) == [(P.DEAD, 31), (None, 29)]
    # task2, right after the dead row, is watched (green): no red leaks onto it.
    assert attrs(app, size, 6) == [(P.WATCHED, 31), (None, 29)]


def test_help_window_lists_columns() -> None:
    app, _ = new_app()
    keys(app, "h")
    lines = text(app, (100, 14))
    body = [line[6:75].rstrip(" │") for line in lines]
    assert any("Help (h or Esc closes)" in line for line in lines)
    assert "Screen by default" in body
    assert "%CPU : Total CPU usage" in body
    assert "IPC  : Executed instructions per cycle" in body
    assert any(b.startswith("Target: ") for b in body)
    keys(app, "?")
    assert not any("Help (h or Esc closes)" in line for line in text(app, (100, 14)))


def test_help_window_lists_the_built_in_variables() -> None:
    """After the legend, every built-in variable of the registry with its description."""
    app, _ = new_app()
    keys(app, "h")
    body = [line[6:195].rstrip(" │") for line in text(app, (200, 90))]  # wide: no line wraps
    start = body.index("Built-in variables of expressions:")
    shown = body[start + 1 : start + 1 + len(VARIABLES)]
    width = max(len(v.name) for v in VARIABLES)  # the names padded to the longest
    assert (
        shown[0]
        == f"{'CPU_TOT'.ljust(width)}: %CPU over the interval, user plus system (100 = one CPU)"
    )
    assert shown[4] == f"{'INTERVAL'.ljust(width)}: seconds the row's counter deltas cover"
    for line, v in zip(shown, VARIABLES, strict=True):
        assert line.split(":", 1) == [v.name.ljust(width), f" {v.description}"]


@pytest.mark.parametrize("cols", [80, 200])
def test_help_window_takes_the_width_and_wraps_at_spaces(cols: int) -> None:
    """The box spans the terminal less 5 columns each side; a line longer than the box
    (the keys) goes on at the next row at a space, never cut inside a word."""
    from tiptop.live.registry import key_help

    app, _ = new_app()
    keys(app, "h")
    lines = text(app, (cols, 60))
    top = next(i for i, line in enumerate(lines) if "Help (h or Esc closes)" in line)
    assert lines[top].index("┌") == 5 and lines[top].rindex("┐") == cols - 6
    inner = [line[6 : cols - 6].rstrip() for line in lines[top + 1 :] if "│" in line[:6]]
    start = inner.index("Selection and windows:")
    shown = key_help()
    assert inner[start : start + len(shown)] == [k.rstrip() for k in shown]  # one per line
    assert "  Up Down" in inner[start + 1] and "move the highlight" in inner[start + 1]


def test_help_window_longer_than_the_terminal_scrolls() -> None:
    """A help text taller than the terminal shows its top and scrolls with Up/Down and
    End (its last line says how far); Esc closes it (issue 39)."""
    app, _ = new_app()
    keys(app, "h")
    lines = text(app, (100, 9))
    assert len(lines) == 9
    assert "Help (h or Esc closes)" in lines[0]
    assert lines[1][6:75].startswith("Target: ")
    assert "% (Up/Down scroll)" in lines[-2] and lines[-1].strip().startswith("└")
    keys(app, "down")
    assert text(app, (100, 9))[1][6:75].startswith("Screen by default")
    keys(app, "end")
    lines = text(app, (100, 9))
    assert "END" in lines[-2] and "CPU_TOT" not in lines[1]
    keys(app, "esc")
    assert not any("Help" in line for line in text(app, (100, 9)))


def test_esc_closes_every_window_and_enter_opens_the_tree() -> None:
    app, _ = new_app()
    for key, title in (("h", "Help ("), ("e", "errors detected"), ("t", "Top-down tree")):
        keys(app, key)
        assert any(title in line for line in text(app)), key
        keys(app, "esc")
        assert not any(title in line for line in text(app)), key
    keys(app, "down", "enter")  # Enter: the tree of the highlighted task, named
    assert any("Top-down tree of PID 101 (task1)" in line for line in text(app))


def test_help_window_shows_the_target_cli_found() -> None:
    """The original's ``Target: x86, model = %02X_%02X`` (docs/original.md 5.4), from
    ``Options.target`` as cli sets it from /proc/cpuinfo, not the bare machine name."""
    app, _ = new_app(target=Target("x86", "1A_11"))
    keys(app, "h")
    body = [line[6:75].rstrip(" │") for line in text(app, (100, 14))]
    assert "Target: x86, model = 1A_11" in body


def test_error_window_scrolls() -> None:
    app, sampler = new_app()
    for i in range(40):
        sampler.messages.say(f"problem {i}", f"problem {i}")
    app.refresh()
    keys(app, "e")
    lines = text(app, (80, 20))
    top = next(i for i, line in enumerate(lines) if "40 errors detected (e to close)" in line)
    assert lines[top + 1].strip("│ ") == "BEGIN"
    assert lines[top + 2].strip("│ ") == "problem 0"
    keys(app, "down", "down")
    lines = text(app, (80, 20))
    assert lines[top + 1].strip("│ ") == "....."
    assert lines[top + 2].strip("│ ") == "problem 2"
    keys(app, "end")
    lines = text(app, (80, 20))
    assert lines[-3].strip("│ ") == "END" and lines[-4].strip("│ ") == "problem 39"
    assert lines[-2].strip("│ ") == "100 %"
    keys(app, "e")
    assert not any("errors detected" in line for line in text(app, (80, 20)))


def test_rows_scroll_beyond_the_terminal() -> None:
    """Up/Down move the highlight; the view scrolls to keep it in sight."""
    app, _ = new_app(n=50, show_idle=True)
    lines = text(app, (60, 12))  # 7 rows fit between header and footer
    assert lines[4].startswith("  100 ") and lines[10].startswith("  106 ")
    keys(app, "down")
    assert text(app, (60, 12))[4].startswith("  100 ")  # the view stays
    assert selected(app).pid == 101
    keys(app, *["down"] * 6)  # past the last row shown: the view follows
    lines = text(app, (60, 12))
    assert lines[4].startswith("  101 ") and lines[10].startswith("  107 ")
    keys(app, "end")
    assert text(app, (60, 12))[10].startswith("  149 ")
    keys(app, "page up")  # the highlight a page up, still in sight: the view stays
    assert text(app, (60, 12))[4].startswith("  143 ")
    assert selected(app).pid == 143
    keys(app, "home")
    assert text(app, (60, 12))[4].startswith("  100 ")


def test_the_highlight_follows_its_task_across_sorts_and_refreshes() -> None:
    app, _ = new_app()
    keys(app, "down")  # task1, second by %CPU
    assert selected(app).pid == 101
    keys(app, "R")  # reversed: task1 moves, the highlight with it
    lines = text(app, (60, 12))
    assert selected(app).pid == 101
    assert attrs(app, (60, 12), 4 + app.table.selected) == [(P.SELECTED, 59), (None, 1)]
    assert lines[4 + app.table.selected].startswith("  101 ") and app.table.selected != 1
    app.refresh()
    assert selected(app).pid == 101


def test_user_column_narrows_so_that_command_stays() -> None:
    """``-U`` on a narrow terminal (issue 39: at 80 columns the default screen lost
    COMMAND): the user column gives up to 7 of its 10 characters, in the header and the
    rows alike; where everything fits nothing changes."""
    app, _ = new_app(show_user=True)
    wide = text(app, (100, 12))
    assert wide[3].startswith("  PID  user       [%CPU]\u25bc") and "  root   " in wide[4]
    lines = text(app, (40, 12))  # the header is 45 wide with -U: 5 left out
    assert lines[3].rstrip() == "  PID  use   [%CPU]\u25bc IPC  %MISS COMMAND", lines[3]
    assert lines[4].rstrip().endswith(" task0") and lines[4].startswith("  100  ")
    assert lines[4].index("50.0") == wide[4].index("50.0") - 5  # under its header still
    lines = text(app, (30, 12))  # narrower than that: 3 characters stay, COMMAND is cut
    assert lines[3].startswith("  PID  use [%CPU]\u25bc")


def test_resize_and_too_small() -> None:
    app, _ = new_app()
    assert len(text(app, (120, 40))) == 40
    small = text(app, (60, 15))
    assert len(small) == 15 and all(len(line) == 60 for line in small)
    assert small[3].rstrip() == "  PID  [%CPU]\u25bc IPC  %MISS COMMAND"
    tiny = text(app, (MIN_COLS - 1, MIN_ROWS))
    assert tiny[0].startswith("Terminal too") and len(tiny) == MIN_ROWS
    assert text(app, (40, MIN_ROWS - 1))[0].startswith("Terminal too small")


def test_only_visible_rows_are_formatted() -> None:
    app, _ = new_app(n=5000, show_idle=True)
    calls = 0
    fmt = app.table.format_row

    def counting(row: Any) -> str:
        nonlocal calls
        calls += 1
        return fmt(row)

    app.table.format_row = counting
    text(app, (100, 30))
    assert calls == 30 - 5


def test_mono_palette_keeps_meanings_apart() -> None:
    mono = {name: m for name, _fg, _bg, m in P.PALETTE}
    meanings = [P.WATCHED, P.DEAD, P.OVER, P.SCALED, P.HEADER]
    assert len({mono[m] for m in meanings}) == len(meanings)
    for m in meanings:
        assert urwid.AttrSpec(mono[m], "default", 1).foreground != "default"
    screen = urwid.display.raw.Screen()
    screen.register_palette(P.PALETTE)  # urwid accepts every entry in 16 colours and mono


def test_tasks_line_is_blank_until_a_frame_counts_them() -> None:
    """No ``Tasks:   0 processes`` before the first refresh (or after a restart)."""
    sampler = ScriptedSampler(4)
    app = LiveApp(Options(), sampler, [DEFAULT, BRANCH])
    sampler.start()
    line = text(app)[1]
    assert "Tasks" not in line and line.rstrip().endswith("screen  0: default")
    app.refresh()
    assert text(app)[1].startswith("Tasks:   4 processes,   4 displayed")
    keys(app, "H")  # threads: the sampler restarts, counts are unknown again
    assert "Tasks" not in text(app)[1]
    app.refresh()
    assert text(app)[1].startswith("Tasks:   4 threads")


def test_rec_indicator_while_recording() -> None:
    """``[rec]`` at COLS-6 while ``--record`` writes (issue 39: nothing said so)."""
    assert "[rec]" not in text(new_app()[0])[0]
    line = text(new_app(record="/tmp/run.jsonl", show_idle=True)[0])[0]
    assert line.index("[rec]") == 100 - 6 and line.index("[idle]") == 100 - 13


def test_conf_indicator_follows_the_config_file() -> None:
    """``[conf]`` at COLS-60 when a configuration file was read (docs/original.md 5.1)."""
    assert "[conf]" not in text(new_app()[0])[0]
    line = text(new_app(config_path="/tmp/.tiptoprc")[0])[0]
    assert line.index("[conf]") == 100 - 60


def test_error_file_gets_each_new_message_once() -> None:
    """``-E file`` in live mode: the sampler's messages are logged there as they appear
    (the original's error log file), not only in the ``e`` window."""
    log = io.StringIO()
    sampler = ScriptedSampler(4)
    app = LiveApp(Options(), sampler, [DEFAULT, BRANCH], Services(error_log=log))
    sampler.messages.say("bus-cycles: ENOENT: not here", "bus-cycles: ENOENT: not here")
    app.refresh()
    app.refresh()
    sampler.messages.say("pid 7: EACCES: not yours", "pid 7: EACCES: not yours")
    app.refresh()
    assert log.getvalue().splitlines() == [
        "tiptop: bus-cycles: ENOENT: not here",
        "tiptop: pid 7: EACCES: not yours",
    ]
    log.close()  # a log that can no longer be written: said once, the screen stays up
    sampler.messages.say("third", "third")
    app.refresh()
    assert text(app)[2].startswith("-E: cannot write the error log")


@pytest.mark.parametrize(
    "markup",
    [
        "plain line",
        "",
        "x" * 50,
        "y" * 49,
        [(None, "14185+  99.3 "), ("over", "  201.89"), (None, "  1.00 python3")],
        [("dead", "  7  0.5     ?     ? gone DEAD")],
        [(None, "ab"), ("scaled", "c" * 60), (None, "tail")],
        [(None, "left "), ("over", "")],
        "caf\u00e9 \u4e2d\u6587 wide",  # not ASCII: through urwid.Text
        "tab\there",  # a control character: through urwid.Text
    ],
)
def test_a_line_is_drawn_as_urwid_text_draws_it(markup: Any) -> None:
    """The direct path for plain ASCII lines draws exactly what urwid.Text(wrap="clip")
    draws: same bytes, same attribute runs, padded and clipped to the width."""
    cols = 50
    want = list(urwid.Text(markup, wrap="clip").render((cols,)).content())
    assert list(Scroller(lambda i, c: markup, 1).render((cols, 1)).content()) == want


def test_scroller_draws_mixed_lines_as_urwid_text_would() -> None:
    """Plain lines drawn together in one canvas, others through urwid.Text, in order, the
    rest of the box blank: the same screen as every line through urwid.Text."""
    lines: list[Markup] = [
        "one",
        [("over", "two"), (None, " 2")],
        "caf\u00e9",
        "four",
        "x" * 80,
        "tab\there",
    ]
    sc = Scroller(lambda i, cols: lines[i], len(lines))
    cols, rows = 40, 9
    got = list(sc.render((cols, rows)).content())
    want = [r for m in lines for r in urwid.Text(m, wrap="clip").render((cols,)).content()]
    want += list(urwid.SolidCanvas(" ", cols, rows - len(lines)).content())
    assert got == want


def test_the_tasks_line_counts_one_kind_and_names_it() -> None:
    """Total and displayed count the rows' kind, named (issue 50: ``Tasks: N total``
    counted threads beside displayed processes): the frame's thread count (9 here) is
    not the total of 4 process rows."""
    app, _ = new_app(show_idle=False)
    assert app.frame.tasks_total == 9 and len(app.frame) == 4
    assert text(app)[1].startswith("Tasks:   4 processes,   4 displayed")
    keys(app, "H")
    app.refresh()
    assert text(app)[1].startswith("Tasks:   4 threads,   4 displayed")
    app, _ = new_app(n=1)
    assert text(app)[1].startswith("Tasks:   1 process,   1 displayed")


def test_the_title_line_says_what_the_machine_did() -> None:
    """Where the screen reads where the time goes, the frame carries the machine's context:
    the title line gives its steal and pressure (PSI some/full, % of the interval) after
    ``tiptop -``, the indicators still at their places."""
    from tiptop.frame import Context, Pressure

    app, sampler = new_app(sticky=True)
    made = sampler.refresh

    def with_context() -> Any:
        frame = made()
        frame.context = Context(
            2, 3, 0.004, (Pressure("cpu", 0.518, 0.0), Pressure("io", 0.027, None))
        )
        return frame

    sampler.refresh = with_context  # type: ignore[method-assign]
    app.refresh()
    app.refresh()
    title = text(app)[0]
    assert title.startswith("tiptop - steal 0%  PSI cpu 52/0 io 3/?  "), title
    assert "[sticky]" in title
