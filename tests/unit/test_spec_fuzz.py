"""Random text and token soups into the expression parser and both loaders: only
SpecError may come out, never another exception."""

from __future__ import annotations

import contextlib

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiptop.errors import SpecError
from tiptop.screens import Target, compile_column, evaluate_config, load_text

TOKENS = [
    "delta",
    "(",
    ")",
    "A",
    "B",
    "CPU_TOT",
    "INTERVAL",
    "min",
    "max",
    ",",
    "+",
    "-",
    "*",
    "/",
    "|",
    "or",
    "and",
    "shl",
    "shr",
    "^",
    "1",
    "0",
    "2.5",
    "1e6",
    "1e",
    "0x1f",
    ".",
    " ",
    "L1D",
    "OP_READ",
    "RESULT_MISS",
    "&",
    "\n",
    "é",
]
XML_TOKENS = [
    "<tiptop>",
    "</tiptop>",
    "<screen",
    ">",
    "</screen>",
    "<counter",
    "<column",
    "/>",
    ' name="s"',
    ' alias="A"',
    ' config="CPU_CYCLES"',
    ' config="cycles"',
    ' type="RAW"',
    ' type="x"',
    ' header=" h"',
    ' format="%4.1f"',
    ' format="%d"',
    ' expr="delta(A)"',
    ' expr="2 ^ 3"',
    ' model="06_2A"',
    ' arch="x86"',
    "<options>",
    '<option name="delay" value="1"/>',
    "</options>",
    "<!DOCTYPE tiptop>",
    "&amp;",
    "&lt;",
    "<!--",
    "-->",
    '"',
    "'",
    " ",
    "\n",
    "<?xml version='1.0'?>",
    "<!ENTITY a 'b'>",
    "&a;",
    "<![CDATA[x]]>",
]
YAML_TOKENS = [
    "screens:",
    "options:",
    "\n",
    "  ",
    "- ",
    "name: s",
    "counters:",
    "columns:",
    "A: cycles",
    "A: {config: CPU_CYCLES, type: RAW}",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "header: ' h'",
    "format: '%4.1f'",
    "expr: delta(A)",
    "expr: 2 ^ 3",
    "&x",
    "*x",
    "!!python/object:os.system",
    "'",
    '"',
    "#",
    "---",
    "...",
    "? ",
    "|",
    ">",
    "%",
    "delay: 1",
    "threshold: x",
    "model: 06_25",
    "- [",
    "null",
    "~",
    "\t",
]

ROWS = {
    "delta(A)": (np.array([1.0, 0.0, 2.0]), np.array([0, 0, 3], np.uint8)),
    "delta(B)": (np.array([0.0, 1.0, 2.0]), np.array([0, 1, 0], np.uint8)),
    "A": (np.array([1.0, 2.0, 3.0]), np.zeros(3, np.uint8)),
    "CPU_TOT": (np.array([1.0, 2.0, 3.0]), np.zeros(3, np.uint8)),
}

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def soup(tokens: list[str], max_size: int = 30) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(tokens), max_size=max_size).map("".join)


@SETTINGS
@given(st.one_of(st.text(max_size=60), soup(TOKENS)))
def test_column_parser_only_raises_spec_error(text: str) -> None:
    try:
        expr = compile_column(text)
    except SpecError:
        return
    v, s = expr.evaluate(ROWS)
    assert v.shape == s.shape == (3,)
    assert np.isnan(v[s != 0]).all()


@SETTINGS
@given(st.one_of(st.text(max_size=60), soup(TOKENS)))
def test_config_parser_only_raises_spec_error(text: str) -> None:
    try:
        value = evaluate_config(text)
    except SpecError:
        return
    assert 0 <= value < 1 << 64


@SETTINGS
@given(st.one_of(st.text(max_size=200), soup(XML_TOKENS, 60), st.binary(max_size=200)))
def test_xml_loader_only_raises_spec_error(text: str | bytes) -> None:
    with contextlib.suppress(SpecError):
        load_text(text, Target("x86", "06_2A"))


@SETTINGS
@given(st.one_of(st.text(max_size=200), soup(YAML_TOKENS, 60), st.binary(max_size=200)))
def test_yaml_loader_only_raises_spec_error(text: str | bytes) -> None:
    with contextlib.suppress(SpecError):
        load_text(text, Target("x86", "06_25"), yaml=True)


@SETTINGS
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["CPU_CYCLES", "cycles", "0x1c2", "1 + 1", ""]),
            st.sampled_from(["delta(A)", "A / B", "2 ^ 3", "min(A, 1)", ""]),
        ),
        max_size=5,
    )
)
def test_well_formed_files_with_random_content_load(pairs: list[tuple[str, str]]) -> None:
    """Structurally valid files never fail as a whole: problems are collected instead."""
    body = "".join(
        f'<counter alias="A" config="{c}"/><counter alias="B" config="{c}"/>'
        f'<column header=" x" format="%4.1f" expr="{e}"/>'
        for c, e in pairs
    )
    cfg = load_text(f'<tiptop><screen name="s">{body}</screen></tiptop>', Target())
    assert len(cfg.screens) == 1
    assert all(isinstance(p, SpecError) and p.line == 1 for p in cfg.problems)
