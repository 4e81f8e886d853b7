"""Modes and kinds are enums, parsed once at the edge (issue 50: 71 string-literal comparisons
stood for them): no module of tiptop/ compares what a mode, kind, format, grouping, role or
operator is with a string literal, outside the parsers that read such words from text
(tests/unit/test_columns_records.py walks the code the same way for expression text)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.unit.test_layers import PKG

#: Names that say "which one of a few": compared with a string literal, they are a mode or
#: a kind kept as text. An attribute, a variable or a method's result so named counts.
DISCRIMINATORS = frozenset(
    {"kind", "how", "mode", "format", "fmt", "by", "series_by", "role", "op", "func", "of"}
)

#: The parsers, where a word is read from text into its enum, with why each is one.
PARSERS = {
    "screens/syntax.py": "the expression tokenizer: a token's kind is the pattern group that "
    "matched it, and the parser makes the tree's Op and Func from the tokens",
    "screens/build.py": "RawItem.kind is the element as the file names it (<counter>, "
    "<column>; xmlrc, yamlrc), read once here into a screen",
    "recording/format.py": "a recording's schema letters (f, i, b), read once per line here",
    "runtimes/state.py": "a container runtime's state files (an OCI spec's annotations): "
    "what kind of container a runtime says it made, read once here",
}

#: Generated modules (ruff excludes them too).
GENERATED = ("screens/builtin_data.py", "kernel/_perf_cffi.py")


def _name(node: ast.expr) -> str | None:
    """The name that ``node`` reads: a variable, an attribute or a method called."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _name(node.func)
    return None


def _words(node: ast.expr) -> bool:
    """Whether ``node`` is a string literal, or a tuple, list or set of them."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return bool(node.elts) and all(_words(e) for e in node.elts)
    return False


def word_comparisons(source: str) -> list[int]:
    """The lines of ``source`` that compare a discriminator with a word (``==``, ``!=``,
    ``in``, ``not in``, or a ``match`` case of literal words)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            named = {_name(s) for s in sides if not _words(s)}
            if any(_words(s) for s in sides) and named & DISCRIMINATORS:
                found.append(node.lineno)
        elif isinstance(node, ast.Match) and _name(node.subject) in DISCRIMINATORS:
            values = [c.pattern for c in node.cases if isinstance(c.pattern, ast.MatchValue)]
            if any(_words(v.value) for v in values):
                found.append(node.lineno)
    return sorted(found)


def test_no_mode_or_kind_is_compared_as_text() -> None:
    files = [p for p in sorted(PKG.rglob("*.py")) if str(p.relative_to(PKG)) not in GENERATED]
    assert len(files) > 100
    found = [
        f"{p.relative_to(PKG)}:{line}"
        for p in files
        if str(p.relative_to(PKG)) not in PARSERS
        for line in word_comparisons(p.read_text())
    ]
    assert not found, f"modes or kinds compared as text (make them enums): {found}"


def test_the_parsers_named_exist_and_read_words() -> None:
    """An exemption that no longer holds a comparison is dropped, not kept."""
    for rel in PARSERS:
        assert word_comparisons((PKG / rel).read_text()), rel


def test_the_walk_sees_each_form(tmp_path: Path) -> None:
    src = (
        "def f(opts, row, td, b, node):\n"
        "    a = opts.format == 'csv'\n"
        "    b = row.kind in ('exact', 'within')\n"
        "    c = td.role(b) != 'metric'\n"
        "    match node.op:\n"
        "        case 'or':\n"
        "            pass\n"
        "    d = opts.name == 'csv'\n"  # a name, not a discriminator
        "    e = opts.format is Format.CSV\n"  # an enum member
    )
    assert word_comparisons(src) == [2, 3, 4, 5]
