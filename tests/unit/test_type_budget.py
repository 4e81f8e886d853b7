"""The typing budget of tiptop/ (issues 36 and 50): at most :data:`ANY_BUDGET` uses of ``Any`` and
:data:`IGNORE_BUDGET` ``# type: ignore`` comments, each ignore naming its error code and
saying why, on its line or in the comment lines just above it. mypy itself runs in .ci/run
(configured in pyproject.toml); this test keeps the escapes from it few and explained.

``Any`` is counted as the type checker sees it: each ``Any`` or ``typing.Any`` in the code,
annotations quoted as strings included; imports, comments and docstrings are not uses.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "tiptop"
FILES = sorted(PKG.rglob("*.py"))

#: Issue 50's ceiling: the two ``Any`` are the options' draft (fields by name) and cffi's
#: dynamic objects; the ignores each name a stub's gap.
ANY_BUDGET = 2
IGNORE_BUDGET = 5

_IGNORE = re.compile(r"#\s*type:\s*ignore\b(?P<code>\[[a-z-, ]+\])?(?P<rest>.*)$")


def _annotations(tree: ast.AST) -> list[ast.expr]:
    """Every annotation in ``tree`` (arguments, returns, annotated assignments)."""
    out: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            out.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            out.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            out.append(node.annotation)
    return out


def _is_any(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "Any") or (
        isinstance(node, ast.Attribute) and node.attr == "Any"
    )


def count_any(source: str) -> int:
    """The uses of ``Any`` in ``source``: names and attributes in the code, and those in
    quoted annotations (``"list[Any]"``) and ``cast("...", x)`` types."""
    tree = ast.parse(source)
    n = sum(_is_any(node) for node in ast.walk(tree))
    quoted: list[str] = []
    for ann in _annotations(tree):
        quoted += [
            c.value
            for c in ast.walk(ann)
            if isinstance(c, ast.Constant) and isinstance(c.value, str)
        ]
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        is_cast = (isinstance(func, ast.Name) and func.id == "cast") or (
            isinstance(func, ast.Attribute) and func.attr == "cast"
        )
        first = node.args[0] if is_cast and node.args else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            quoted.append(first.value)
    for text in quoted:
        try:
            n += sum(_is_any(x) for x in ast.walk(ast.parse(text, mode="eval")))
        except SyntaxError:
            continue
    return n


def ignores(source: str) -> list[tuple[int, str]]:
    """``(line, problem)`` for each ``# type: ignore`` comment; problem is "" when it names
    its error code and gives a reason (after it, or in the comment lines just above)."""
    lines = source.splitlines()
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        m = _IGNORE.search(tok.string)
        if m is None:
            continue
        row = tok.start[0]
        above = row - 2
        while above >= 0 and lines[above].strip().startswith("#"):
            above -= 1
        reason = m.group("rest").strip(" #") or (above < row - 2)
        if not m.group("code"):
            out.append((row, "names no error code"))
        elif not reason:
            out.append((row, "gives no reason"))
        else:
            out.append((row, ""))
    return out


def test_any_within_budget() -> None:
    counts = {f: count_any(f.read_text()) for f in FILES}
    total = sum(counts.values())
    where = ", ".join(f"{f.relative_to(PKG)}: {n}" for f, n in counts.items() if n)
    assert total <= ANY_BUDGET, f"{total} uses of Any in tiptop/ (budget {ANY_BUDGET}): {where}"


def test_type_ignores_within_budget_and_explained() -> None:
    found = {f: ignores(f.read_text()) for f in FILES}
    total = sum(len(v) for v in found.values())
    assert total <= IGNORE_BUDGET, f"{total} type: ignore comments (budget {IGNORE_BUDGET})"
    bad = [
        f"{f.relative_to(PKG)}:{line}: {why}"
        for f, items in found.items()
        for line, why in items
        if why
    ]
    assert not bad, "type: ignore without code or reason: " + "; ".join(bad)


def test_the_counters_count() -> None:
    """The counters themselves can fail (a test that cannot fail is a defect)."""
    src = (
        "from typing import Any, cast\nimport typing\n"
        "x: Any = 1\n"
        "def f(a: 'list[Any]') -> typing.Any:\n"
        "    '''Any docstring.'''\n"
        "    return cast('dict[str, Any]', a)  # Any comment\n"
    )
    assert count_any(src) == 4
    src = (
        "a = 1  # type: ignore\n"
        "b = 2  # type: ignore[arg-type]\n"
        "c = 3  # type: ignore[arg-type]  # the stubs omit it\n"
        "# the stubs omit it\n"
        "d = 4  # type: ignore[misc]\n"
    )
    assert ignores(src) == [
        (1, "names no error code"),
        (2, "gives no reason"),
        (3, ""),
        (5, ""),
    ]
