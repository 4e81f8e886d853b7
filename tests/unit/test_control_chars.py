"""Control characters a user's text carries (a screen name, a header, an alias, a ``-p``
name) are written as escapes everywhere, never obeyed by the terminal: batch output, error
lines, ``--list-screens`` (issue 15, item 10)."""

from __future__ import annotations

import io

import pytest

from tests.support.builders import frame
from tiptop import cli
from tiptop.cli.screens import ScreenSet, format_list
from tiptop.options import Options
from tiptop.outputs.batch import make_writer
from tiptop.screens import Target, load_text

#: Control characters a terminal obeys (C0, DEL, C1).
CONTROLS = {chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))}

#: A screen whose name, description, header and an (unused) alias carry ESC sequences and
#: a newline; a column whose format would print ESC in every cell.
RC = r"""screens:
  - name: "\e[2Jwiped"
    desc: "line\nbreak"
    counters:
      "\e[31mA": cycles
      B: cycles
    columns:
      - {header: "\e[7m h", format: "%4.1f", expr: "delta(B)"}
      - {header: " x", format: "\e[31m%4.1f", expr: "delta(B)"}
"""


def clean(text: str) -> bool:
    """Only newlines end lines; no other control character."""
    return not CONTROLS & set(text.replace("\n", ""))


@pytest.fixture
def loaded() -> ScreenSet:
    cfg = load_text(RC, Target(), path="rc.yaml", yaml=True)
    return ScreenSet(entries=list(cfg.screens), problems=[str(p) for p in cfg.problems])


def test_loaded_text_keeps_escapes_and_formats_refuse_them(loaded: ScreenSet) -> None:
    (s,) = loaded.screens
    assert (s.name, s.desc) == ("\\x1b[2Jwiped", "line\\nbreak")
    assert [c.header for c in s.columns] == ["\\x1b[7m h"]
    assert any("control character" in p for p in loaded.problems)
    assert any("Unused counter '\\x1b[31mA'" in p for p in loaded.problems)
    assert all(clean(p) for p in loaded.problems)


def test_batch_output_and_list_screens_show_escapes(loaded: ScreenSet) -> None:
    (s,) = loaded.screens
    out = io.StringIO()
    opts = Options(only_name="\x1b]0;title\x07", watch_name="\x9b2J", batch=True)
    writer = make_writer(out, opts, s, 0)
    writer.begin(0.0)
    cells = [3.0] * len(s.columns)
    writer.frame(frame([{"tid": 1, "cells": cells, "cpu": 50.0, "name": "p"}], s), 1)
    text = out.getvalue()
    assert clean(text), text
    assert "only pid '\\x1b]0;title\\x07'" in text and "Screen 0: \\x1b[2Jwiped" in text
    assert clean(format_list(loaded, None))


def test_error_lines_show_escapes(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--format", "\x1b[2Jcsv"], prog="tiptop") == 2
    assert cli.main(["-W", "/nonexistent/\x1b[2J\n"], prog="tiptop") == 2
    assert capsys.readouterr().err.splitlines() == [
        "tiptop: --format: '\\x1b[2Jcsv' is not one of text, csv, json",
        "tiptop: -W: '/nonexistent/\\x1b[2J\\n' does not exist",
    ]
