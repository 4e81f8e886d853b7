"""One printf checker (tiptop.screens.printf) for the loader and the table: a format the
loader keeps always prints, and a format the table could not print is refused at load
with file:line:column."""

from __future__ import annotations

import pytest

from tiptop import table
from tiptop.errors import SpecError
from tiptop.screens import Target, load_text
from tiptop.screens.printf import MAX_FIELD, compile_format


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
    table.check_formats(cfg.screens[0])  # no SpecError


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
    ["%6.2lf", "%64.1f", "%.64e", "x%g%%", "%-+#08.3F", "%1000f", "%65f", "%.65g", "%Lf",
     "%lld", "%d", "%f%f", "100%", "%5.1", "%*f", "%'f"],
)  # fmt: skip
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
