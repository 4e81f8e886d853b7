"""table: printf for one double, placeholders, header layout (docs/original.md 6.3), sort,
filter."""

from __future__ import annotations

import re

import pytest

from tests.support.builders import SCREEN, frame, task
from tiptop.cells import Status
from tiptop.errors import SpecError
from tiptop.screens.printf import compile_format
from tiptop.table import (
    View,
    format_row,
    header,
    pid_width_for,
    rows,
    text_lines,
)


@pytest.mark.parametrize(
    ("fmt", "value", "expected"),
    [
        ("%5.1f", 3.14159, "  3.1"),
        (" %4.2f", 1.5, " 1.50"),
        ("%-8.2f|", 2.0, "2.00    |"),
        ("%+e", 1234.5, "+1.234500e+03"),
        ("%g%%", 0.5, "0.5%"),
        ("%08.3f", -3.5, "-003.500"),
        ("%.f", 2.6, "3"),
        ("%5.1f", 1000.0, "1000.0"),  # wider than the header: not cut, as in C
        ("%64.1f", 1.0, " " * 61 + "1.0"),  # the widest field accepted
        ("%6.2lf", 3.14159, "  3.14"),  # C99: l has no effect on f
        ("x%{}", 1.0, None),
    ],
)
def test_printf_matches_c(fmt: str, value: float, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(SpecError):
            compile_format(fmt)
        return
    assert compile_format(fmt)(value) == expected
    assert expected == fmt % value  # Python's % follows C printf for these


@pytest.mark.parametrize(
    "fmt",
    [
        "%d",
        "%s",
        "%5.1f %5.1f",
        "plain",
        "%n",
        "%1000f",  # would build a 1000-character cell per row
        "%65f",
        "%.65f",
        "%Lf",  # a long double
        "%5.1",
        "%99999999999999999999f",  # ValueError inside format(), not a SpecError
        "%.99999999999999999f",
    ],
)
def test_printf_refuses(fmt: str) -> None:
    with pytest.raises(SpecError):
        compile_format(fmt)


def test_header_default_and_sorted() -> None:
    assert header(SCREEN, View()) == "  PID  [%CPU]  Mcycle   IPC COMMAND "
    assert header(SCREEN, View(sort_column=2)) == "  PID   %CPU   Mcycle  [IPC] COMMAND "
    assert header(SCREEN, View(sort_column=-1, show_user=True)) == (
        " [PID] user        %CPU   Mcycle   IPC COMMAND "
    )
    assert header(SCREEN, View(sort_column=3)) == "  PID   %CPU   Mcycle   IPC [COMMAND]"
    assert header(SCREEN, View(pid_width=7)).startswith("    PID  [")


@pytest.mark.parametrize("sort", [-1, 0, 1, 2, 3])
@pytest.mark.parametrize("user", [False, True])
def test_header_has_one_awk_field_per_row_field(sort: int, user: bool) -> None:
    """Whatever column is sorted, the header splits at blanks into as many fields as a
    row, each header over its own: the original's ``[ %CPU]`` was two (issue 50), and
    ``IPC[COMMAND]`` one for two. As wide as the original's (``[COMMAND]``: one more)."""
    view = View(sort_column=sort, show_user=user)
    line = format_row(rows(frame([task(14185, 99.3, 201.89, 1.0)]), SCREEN, view)[0], view)
    head = header(SCREEN, view)
    assert len(head.split()) == len(line.split()), (head, line)
    wide = len(header(SCREEN, View(sort_column=-2, show_user=user)))
    assert len(head) == wide + (sort >= 2)  # "] COMMAND", " [COMMAND]": one blank more
    ends = [m.end() for m in re.finditer(r"[^\s\[\]]+", head)]
    assert ends[-4:-1] == [m.end() for m in re.finditer(r"\S+", line)][-4:-1]  # over cells


def test_row_layout_and_placeholders() -> None:
    f = frame(
        [
            task(14185, 99.3, 201.89, 1.0, marker="+", name="python3"),
            task(2404, 1.0, 0, 0, name="bash", status=[Status.OK, Status.OK, Status.DIV0]),
            task(7, 0.5, 0, 0, name="x", status=[Status.OK, Status.UNREADABLE, Status.NOT_COUNTED]),
        ]
    )
    v = View()
    out = [format_row(r, v) for r in rows(f, SCREEN, v)]
    assert out == [
        "14185+  99.3   201.89  1.00 python3",
        " 2404    1.0     0.00     - bash",
        "    7    0.5        ?     ? x",
    ]


def test_sort_non_ok_last_both_directions_and_stable() -> None:
    f = frame(
        [
            task(1, 5, 1, 0, status=[0, 0, Status.DIV0]),
            task(2, 5, 1, 2.0),
            task(3, 5, 1, 0.5),
            task(4, 5, 1, 2.0),
        ]
    )
    desc = [r.tid for r in rows(f, SCREEN, View(sort_column=2))]
    asc = [r.tid for r in rows(f, SCREEN, View(sort_column=2, descending=False))]
    assert desc == [2, 4, 3, 1]
    assert asc == [3, 2, 4, 1]
    assert [r.tid for r in rows(f, SCREEN, View(sort_column=-1))] == [4, 3, 2, 1]


def test_sort_command_by_string_and_pid_numeric() -> None:
    f = frame([task(t, 1, 0, 0, name=n) for t, n in [(9, "b"), (10, "a"), (100, "c")]])
    assert [r.command for r in rows(f, SCREEN, View(sort_column=3, descending=False))] == [
        "a",
        "b",
        "c",
    ]
    assert [r.tid for r in rows(f, SCREEN, View(sort_column=-1))] == [100, 10, 9]


def test_idle_filter_watch_and_cmdline() -> None:
    f = frame(
        [
            task(1, 0.0, 0, 0, name="idle"),
            task(2, 3.0, 0, 0, name="busy", cmdline="busy --x"),
            task(3, 0.0, 0, 0, name="watched"),
        ]
    )
    assert [r.tid for r in rows(f, SCREEN, View())] == [2]
    assert [r.tid for r in rows(f, SCREEN, View(show_idle=True))] == [2, 1, 3]
    r = rows(f, SCREEN, View(watch="watch"))
    assert [(x.tid, x.watched) for x in r] == [(2, False), (3, True)]
    assert rows(f, SCREEN, View(show_cmdline=True))[0].command == "busy --x"
    assert rows(f, SCREEN, View(watch=2))[0].watched


@pytest.mark.parametrize(
    "view",
    [
        View(),
        View(show_idle=True, show_user=True, sort_column=-1),
        View(show_idle=True, show_cmdline=True, watch="watch", pid_width=7),
        View(watch=2, sort_column=3, descending=False),
    ],
)
def test_batch_lines_are_the_rows_formatted(view: View) -> None:
    """Batch's Row-less path prints what live's Row path prints, plus DEAD and <---."""
    f = frame(
        [
            task(1, 0.0, 0, 0, name="idle", user="nobody", marker="-"),
            task(2, 3.0, 1.5, 2.0, name="busy", cmdline="busy --x", dead=True),
            task(3, 0.0, 0, 0, name="watched", status=[Status.OK, Status.DIV0, Status.UNREADABLE]),
            task(40000, 7.0, 2.0, 0.25, name="new", marker="+"),
        ]
    )
    want = [
        format_row(r, view) + (" DEAD" if r.dead else "") + (" <---" if r.watched else "")
        for r in rows(f, SCREEN, view)
    ]
    assert len(want) >= 2
    assert text_lines(f, SCREEN, view) == want


def test_pid_width() -> None:
    assert pid_width_for(32768) == 5
    assert pid_width_for(4194304) == 7


def test_narrow_format_is_padded_to_its_header() -> None:
    # "%4.1f" under a 6-wide header: without padding the value rows sit two columns left of
    # the '?' rows and of the header (what the live screen showed with such a screen).
    from dataclasses import replace

    from tiptop.screens.model import ColumnSpec

    narrow = replace(
        SCREEN, columns=(ColumnSpec("  %CPU", "%4.1f", "CPU_TOT"), *SCREEN.columns[1:])
    )
    f = frame(
        [
            task(10, 5.0, 1.0, 1.0),
            task(11, 1.0, 1.0, 1.0, status=[Status.UNREADABLE, 0, 0]),
        ]
    )
    v = View(sort_column=-1)
    out = [format_row(r, v) for r in rows(f, narrow, v)]
    assert header(narrow, v) == " [PID]   %CPU   Mcycle   IPC COMMAND "
    assert out == ["   11       ?     1.00  1.00 proc", "   10     5.0     1.00  1.00 proc"]


def test_frame_with_other_columns_keeps_the_layout() -> None:
    # A frame taken for another screen (fewer cells) still gives one cell per column.
    f = frame([task(3, 2.0, 1.0, 0.5)]).take(slice(None))
    f.values, f.status, f.running = f.values[:, :2], f.status[:, :2], f.running[:, :2]
    (r,) = rows(f, SCREEN, View())
    assert r.cells == ["  2.0", "    1.00", "    ?"]
    assert format_row(r, View()) == "    3    2.0     1.00     ? proc"


def test_options_carry_the_pid_width() -> None:
    from tiptop.options import Options

    v = Options(pid_width=pid_width_for(4194304)).view()
    assert v.pid_width == 7
    assert (
        header(SCREEN, v).index("PID")
        == format_row(rows(frame([task(1234567, 1, 0, 0)]), SCREEN, v)[0], v).index("1234567") + 4
    )


def test_name_filter_and_find_match_the_command_case_ignored() -> None:
    """The live ``\\`` filter keeps the rows whose command holds the text, idle or not
    (``View.name_filter``); ``/``'s ``RowList.find`` gives the next such row from a place,
    going round (both htop's rule: anywhere, case ignored)."""
    f = frame(
        [
            task(1, 50.0, 1, 1, name="Firefox"),
            task(2, 40.0, 1, 1, name="bash"),
            task(3, 0.0, 1, 1, name="firefox-bin"),
            task(4, 30.0, 1, 1, name="vim"),
        ]
    )
    view = View(name_filter="FIRE", show_idle=True)
    assert [r.tid for r in rows(f, SCREEN, view)] == [1, 3]
    assert [r.tid for r in rows(f, SCREEN, View(name_filter="fire"))] == [1]  # 3 is idle
    shown = rows(f, SCREEN, View(show_idle=True))
    assert [r.command for r in shown] == ["Firefox", "bash", "vim", "firefox-bin"]
    assert shown.find("fire") == 0 and shown.find("fire", 1) == 3
    assert shown.find("FIRE", 3) == 3 and shown.find("fox", 4) == 0  # round to the top
    assert shown.find("emacs") is None
