"""The XML .tiptoprc: the original's example, rules of docs/original.md 2, errors, hostile files,
export and reload."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from tiptop.errors import SpecError
from tiptop.screens import (
    NamedEvent,
    NumericEvent,
    ScreenSpec,
    Target,
    export_xml,
    export_yaml,
    load_file,
    load_text,
)

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parents[1] / "data"
EXAMPLE = str(ROOT / "config" / "tiptoprc")
SNB = Target("x86", "06_2A")
NHM = Target("x86", "06_1E")


def bare(screens: list[ScreenSpec]) -> list[ScreenSpec]:
    """Screens without positions or source, for comparing two loads."""
    return [
        replace(
            s,
            source="",
            counters=tuple(replace(c, line=None, column=None) for c in s.counters),
            columns=tuple(replace(c, line=None, column=None) for c in s.columns),
        )
        for s in screens
    ]


def test_example_loads_as_the_original() -> None:
    cfg = load_file(EXAMPLE, NHM)
    assert [s.name for s in cfg.screens] == ["default", "branch", "L1", "uOps", "FP", "imix"]
    assert cfg.options == {"cpu_threshold": "0.00001", "delay": "2.0"}  # only_pid/batch: ignored
    default = cfg.screens[0]
    assert default.desc == "Screen by default (config file)"
    assert [c.alias for c in default.counters] == ["CYCLE", "INSN", "MISS", "BR"]
    assert default.counter("MISS").event == NumericEvent(0, 3)
    assert [c.header for c in default.columns][:3] == [" %CPU", " %SYS", "   P"]
    assert default.columns[6].expr == "1000 * (delta(MISS) / delta(INSN))"
    assert default.columns[0].desc == "CPU usage"
    l1 = cfg.screens[2]
    # L1D | (OP_READ shl 8) | (RESULT_MISS shl 16) = 0x10000, type HW_CACHE = 3
    assert l1.counter("L1Rmiss").event == NumericEvent(3, 0x10000)
    assert l1.counter("L1write").event == NumericEvent(3, 0x100)
    # Nehalem: the 06_1E variant of each gated counter, and every column
    uops = cfg.screens[3]
    assert uops.counter("uOP").event == NumericEvent(4, 0x1C2)
    assert len(uops.columns) == 8
    fp = cfg.screens[4]
    assert fp.counter("assist").event == NumericEvent(4, 0x1F7)
    assert len(fp.columns) == 8


def test_example_gating_on_sandy_bridge() -> None:
    cfg = load_file(EXAMPLE, SNB)
    fp = next(s for s in cfg.screens if s.name == "FP")
    assert fp.counter("assist").event == NumericEvent(4, 0x1ECA)
    assert [c.header.strip() for c in fp.columns] == [
        "%CPU",
        "Mcycle",
        "Minstr",
        "IPC",
        "%x87",
        "%assist",
    ]
    uops = next(s for s in cfg.screens if s.name == "uOps")
    assert "macrof" not in [c.header.strip() for c in uops.columns]
    msgs = [e.message for e in cfg.problems]
    assert "Skipping counter 'MACRO' in screen 'uOps' (model mismatch)" in msgs
    assert all(e.path == EXAMPLE and e.line for e in cfg.problems)


def test_no_model_means_no_gated_counter() -> None:
    cfg = load_file(EXAMPLE, Target())
    imix = next(s for s in cfg.screens if s.name == "imix")
    assert [c.alias for c in imix.counters] == ["C", "I"]
    assert any("(arch mismatch)" in e.message for e in cfg.problems)
    # lower-case hex never matches (docs/original.md 2.3: the original's %02X)
    assert load_file(EXAMPLE, Target("x86", "06_2a")).screens[4].columns[-1].header != "%assist"


def test_bad_lines_are_located_and_the_rest_loads() -> None:
    path = str(DATA / "bad.tiptoprc")
    cfg = load_file(path, Target())
    assert [s.name for s in cfg.screens] == ["mixed", "(no name)"]
    mixed = cfg.screens[0]
    assert [c.header for c in mixed.columns] == [" IPC", " CPU"]
    assert mixed.columns[1].threshold == 90.0
    assert mixed.columns[0].desc == "(unknown)"
    assert cfg.screens[1].desc == "(no desc)"
    assert cfg.screens[1].counters[0].event == NamedEvent("task-clock")
    assert [c.alias for c in mixed.counters] == ["C", "I"]
    where = {e.message.split(":")[0]: (e.line, e.column) for e in cfg.problems}
    by_text = {str(e) for e in cfg.problems}
    # 2 ^ 3 on line 14: the value starts at column 48, so '^' is at column 50
    assert (
        f"{path}:14:50: Invalid expression in column ' BAD', screen 'mixed': unexpected"
        " character '^'; column ignored" in by_text
    )
    assert where["Bad type 'NOPE'"] == (10, 50)
    assert where["Undeclared counter 'Q' in screen 'mixed'"] == (15, 48)
    assert any(m.startswith("Bad config 'CPU_CYCLES + 1'") for m in where)
    assert where["Need a alias for a counter in screen 'mixed'"] == (12, 5)
    assert where["Need a header for a column in screen 'mixed'"] == (17, 5)
    assert any(m.startswith("Bad format '%d %f'") for m in where)
    assert where["Unknown option 'frobnicate' ignored"] == (5, 5)
    assert cfg.options == {"delay": "3", "show_cmdline": "1"}


def test_named_events_types_duplicates_unused() -> None:
    cfg = load_file(str(DATA / "named.tiptoprc"), Target())
    (s,) = cfg.screens
    assert s.desc == 'A & B <c> "q"'
    ev = {c.alias: c.event for c in s.counters}
    assert ev["CY"] == NamedEvent("cycles")
    assert ev["FA"] == NamedEvent("cpu/event=0xca,umask=0x1e,cmask=1/")
    assert ev["FP"] == NamedEvent("FP_ASSIST.ANY")
    assert ev["TSC"] == NamedEvent("msr/tsc/")
    assert ev["TC"] == NamedEvent("task-clock")
    assert ev["DYN"] == NumericEvent(9, 1)
    assert ev["OCT"] == NumericEvent(8, 2)  # strtol base 0: 010 is octal
    assert ev["DUP"] == NumericEvent(0, 1)  # the last declaration wins
    assert "UNUSED" not in ev
    assert [c.alias for c in s.counters][-1] == "DUP"
    msgs = [e.message for e in cfg.problems]
    assert "Unused counter 'UNUSED' in screen 'named'" in msgs
    assert s.columns[1].threshold == 0.25 and s.columns[1].threshold_below


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("<tiptop><screen></tiptop>", "malformed XML"),
        ("<tiptop>\n\n  <screen name='x'>\n</tiptop>", "malformed XML"),
        ("<nottiptop/>", "root node != <tiptop>"),
        ("", "malformed XML"),
        ("<tiptop>&undefined;</tiptop>", "malformed XML"),
        # A str holding bytes decoded with surrogateescape (not valid UTF-8): the XML
        # parser's own error, not UnicodeEncodeError.
        ("<tiptop><screen name='\udcff'/></tiptop>", "malformed XML"),
    ],
)
def test_fatal_errors(text: str, needle: str) -> None:
    with pytest.raises(SpecError) as info:
        load_text(text, Target(), path="x.xml")
    assert needle in str(info.value) and info.value.path == "x.xml"


def test_malformed_names_the_line() -> None:
    with pytest.raises(SpecError) as info:
        load_text("<tiptop>\n\n  <screen name='x'>\n</tiptop>", Target(), path="x.xml")
    assert info.value.line == 4


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE tiptop [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<tiptop><screen name="&lol3;"/></tiptop>
"""

EXTERNAL = """<?xml version="1.0"?>
<!DOCTYPE tiptop [ <!ENTITY x SYSTEM "file:///etc/passwd"> ]>
<tiptop><screen name="&x;"/></tiptop>
"""

EXTERNAL_DTD = """<?xml version="1.0"?>
<!DOCTYPE tiptop SYSTEM "http://example.invalid/evil.dtd">
<tiptop/>
"""


@pytest.mark.parametrize("text", [BILLION_LAUGHS, EXTERNAL, EXTERNAL_DTD])
def test_hostile_xml_is_refused(text: str) -> None:
    with pytest.raises(SpecError) as info:
        load_text(text, Target(), path="evil.xml")
    assert "refusing" in str(info.value)
    assert info.value.path == "evil.xml" and info.value.line is not None


def test_oversized_file_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "big.tiptoprc"
    p.write_text("<tiptop>" + "<!-- padding -->" * 70000 + "</tiptop>")
    assert os.path.getsize(p) > 1 << 20
    with pytest.raises(SpecError, match="larger than"):
        load_file(str(p), Target())


def test_unreadable_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read"):
        load_file(str(tmp_path / "missing"), Target())


def test_export_escapes_and_reloads(tmp_path: Path) -> None:
    cfg = load_file(str(DATA / "named.tiptoprc"), Target())
    xml = export_xml(cfg)
    assert 'desc="A &amp; B &lt;c&gt; &quot;q&quot;"' in xml
    again = load_text(xml, Target())
    assert bare(again.screens) == bare(cfg.screens)


@pytest.mark.parametrize("target", [Target(), SNB, NHM])
def test_example_export_reload_both_syntaxes(target: Target, tmp_path: Path) -> None:
    cfg = load_file(EXAMPLE, target)
    for name, text in (("x.tiptoprc", export_xml(cfg)), ("x.yaml", export_yaml(cfg))):
        p = tmp_path / name
        p.write_text(text)
        again = load_file(str(p), target)
        assert bare(again.screens) == bare(cfg.screens), name
        assert again.options == cfg.options
        # and exporting the reload gives the same text
        assert (export_xml if name.endswith("rc") else export_yaml)(again) == text


def test_export_keeps_constants_and_whitespace_exactly() -> None:
    cfg = load_text(
        '<tiptop><screen name="s"><counter alias="A" config="INSTRUCTIONS" type="HARDWARE"/>'
        '<column header="  x y " format="%9.4f" expr="delta(A)&#9;* 0.0001&#10;+ 1.5e-3"'
        ' threshold="0.001"/></screen></tiptop>',
        Target(),
    )
    col = cfg.screens[0].columns[0]
    assert (col.header, col.expr) == ("  x y ", "delta(A)\t* 0.0001\n+ 1.5e-3")
    xml = export_xml(cfg)
    assert 'expr="delta(A)&#9;* 0.0001&#10;+ 1.5e-3"' in xml and 'threshold="0.001"' in xml
    assert bare(load_text(xml, Target()).screens) == bare(cfg.screens)
    assert bare(load_text(export_yaml(cfg), Target(), yaml=True).screens) == bare(cfg.screens)


def test_empty_config() -> None:
    empty = load_text("<tiptop/>", Target())
    assert (empty.path, empty.options, empty.screens, empty.problems) == (None, {}, [], [])
