"""The YAML form: same screens as the XML example, errors with line/column, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_spec_xml import EXAMPLE, NHM, SNB, bare
from tiptop.errors import SpecError
from tiptop.screens import NamedEvent, NumericEvent, Target, export_yaml, load_file, load_text

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parents[1] / "data"
EXAMPLE_YAML = str(ROOT / "config" / "tiptop.yaml")


@pytest.mark.parametrize("target", [Target(), SNB, NHM, Target("x86", "06_CF")])
def test_yaml_example_equals_the_xml_example(target: Target) -> None:
    x, y = load_file(EXAMPLE, target), load_file(EXAMPLE_YAML, target)
    assert bare(y.screens) == bare(x.screens)
    assert len(y.screens) == 6
    assert {k: float(v) for k, v in y.options.items()} == {"cpu_threshold": 1e-5, "delay": 2.0}
    assert [e.message for e in y.problems] == [e.message for e in x.problems]


def test_yaml_example_export_reload() -> None:
    y = load_file(EXAMPLE_YAML, SNB)
    text = export_yaml(y)
    again = load_text(text, SNB, yaml=True)
    assert bare(again.screens) == bare(y.screens)
    assert export_yaml(again) == text


def test_scalars_stay_as_written() -> None:
    cfg = load_text(
        "screens:\n"
        "  - name: s\n"
        "    counters:\n"
        "      R: {config: 0x1c2, type: RAW, arch: x86, model: 06_25}\n"
        "      N: cycles\n"
        "    columns:\n"
        "      - {header: ' r', format: '%2.0f', expr: delta(R) + delta(N), threshold: 1e-3}\n",
        Target("x86", "06_25"),
        yaml=True,
    )
    (s,) = cfg.screens
    r = s.counter("R")
    # YAML 1.1 would read 0x1c2 as 450 and 06_25 as octal 405: we keep the text
    assert (r.config, r.model, r.event) == ("0x1c2", "06_25", NumericEvent(4, 0x1C2))
    assert s.counter("N").event == NamedEvent("cycles")
    assert s.columns[0].threshold == 0.001


def test_bad_lines_are_located_and_the_rest_loads() -> None:
    path = str(DATA / "bad.yaml")
    cfg = load_file(path, Target())
    assert [s.name for s in cfg.screens] == ["mixed", "after"]
    assert [c.header for c in cfg.screens[0].columns] == [" IPC", " CPU"]
    text = [str(e) for e in cfg.problems]
    # line 10: `      - {header: " BAD", format: "%4.2f", expr: 2 ^ 3}`, '^' at column 51
    assert any(t.startswith(f"{path}:10:51: Invalid expression in column ' BAD'") for t in text)
    # a quoted value: the column still points at the bad character ('$' at column 59)
    assert any(t.startswith(f"{path}:11:59: Invalid expression in column ' QUO'") for t in text)
    assert any(t.startswith(f"{path}:14:15: counters must be a mapping") for t in text)
    assert cfg.options == {"delay": "3"}


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("screens: [\n  {name: x,\n", 3),
        ("options: {delay: 1}\nscreens:\n  - name: a\n   bad: indent\n", 4),
        ("\tscreens: []\n", 1),
        ("screens: 3\n", 1),
        ("- a\n- b\n", 1),
        ("foo: 1\n", 1),
    ],
)
def test_fatal_yaml_errors_have_a_line(text: str, line: int) -> None:
    with pytest.raises(SpecError) as info:
        load_text(text, Target(), path="x.yaml", yaml=True)
    assert info.value.path == "x.yaml"
    assert info.value.line == line, info.value


def test_yaml_aliases_are_refused() -> None:
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
    )
    text = (
        "screens:\n  - name: s\n    columns: &c [{header: x, format: '%f', expr: '1'}]\n"
        "  - name: t\n    columns: *c\n"
    )
    cfg = load_text(text, Target(), yaml=True)
    assert [s.name for s in cfg.screens] == ["s"]
    assert "anchors and aliases" in cfg.problems[0].message
    with pytest.raises(SpecError):
        load_text(laughs, Target(), yaml=True)


def test_python_tags_are_refused() -> None:
    with pytest.raises(SpecError):
        load_text("!!python/object/apply:os.system ['true']\n", Target(), yaml=True)
    # tags are never constructed: a tagged scalar is just its text
    cfg = load_text("screens:\n  - name: !!python/name:os.system\n", Target(), yaml=True)
    assert cfg.screens[0].name == "(no name)"  # the value after the tag is empty
    cfg = load_text("screens:\n  - name: !!python/tuple [1]\n", Target(), yaml=True)
    assert cfg.screens == [] and "plain value" in cfg.problems[0].message


def test_oversized_yaml_is_refused() -> None:
    with pytest.raises(SpecError, match="larger than"):
        load_text("#" * (1 << 20) + "\n", Target(), yaml=True)


def test_empty_yaml() -> None:
    assert load_text("", Target(), yaml=True).screens == []
    assert load_text("screens:\n", Target(), yaml=True).screens == []
