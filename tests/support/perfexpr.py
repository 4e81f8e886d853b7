"""perf's metric expressions (tools/perf/util/expr.l, expr.y), parsed by our own small
parser and evaluated on given counts: the oracle the built-in screens are compared with
(tests/unit/test_oracle_*.py). Never ``eval``.

The syntax, as perf's grammar has it (lowest precedence first): ``A if COND else B``;
``|``; ``^``; ``&``; ``<``, ``>`` (and ``<=``, ``>=``, ``==``, ``!=`` read the same way);
``+``, ``-``; ``*``, ``/``, ``%``; unary ``-``; numbers (``1e6``, ``0x1f``); the functions
``min``, ``max``, ``d_ratio`` (0 when the divisor is 0), ``strcmp_cpuid_str``,
``has_event``, ``source_count``; ``#literal`` names (``#slots``, ``#SMT_on``); and names:
events or other metrics, with backslash escapes (``topdown\\-fe\\-bound``), a PMU prefix
(``cpu_core@INST_RETIRED.ANY@``) and modifiers (``cpu@name\\,cmask\\=0x6@``). A name is
reported in one canonical form (:func:`canonical`): PMU prefix dropped, escapes removed,
modifiers kept as ``name@cmask=0x6@``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["Expr", "canonical", "parse"]

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<num>(?:0x[0-9a-fA-F]+)|(?:\d+\.?\d*(?:[eE][-+]?\d+)?)|(?:\.\d+(?:[eE][-+]?\d+)?))
    | (?P<lit>\#[A-Za-z_][A-Za-z0-9_]*)
    | (?P<name>(?:[A-Za-z_]|\\.)(?:[A-Za-z0-9_.:]|\\.)*(?:@(?:[^@\\]|\\.)*@[A-Za-z]*)?)
    | (?P<op><=|>=|==|!=|[-+*/%()<>|^&,])
    )""",
    re.VERBOSE,
)
_KEYWORDS = {"if", "else"}
_FUNCS = {"min", "max", "d_ratio", "strcmp_cpuid_str", "has_event", "source_count"}
_BINARY = [
    ("|",),
    ("^",),
    ("&",),
    ("<", ">", "<=", ">=", "==", "!="),
    ("+", "-"),
    ("*", "/", "%"),
]


def canonical(raw: str) -> str:
    """One spelling of an event or metric name: escapes removed, a ``pmu@name@`` prefix
    dropped, ``pmu@name,mods@`` as ``name@mods@``, a suffix (``@k``, ``@R``) dropped."""
    text = re.sub(r"\\(.)", r"\1", raw)
    m = re.fullmatch(r"([A-Za-z0-9_]+)@([^@]*)@[A-Za-z]*", text)
    if m:
        name, _, mods = m[2].partition(",")
        return f"{name}@{mods}@" if mods else name
    return text


@dataclass(frozen=True)
class Expr:
    """A parsed expression: evaluate it with :meth:`value`; :attr:`names` are the events and
    metrics it reads (canonical), :attr:`literals` its ``#`` names."""

    tree: tuple
    names: frozenset[str]
    literals: frozenset[str]

    def value(
        self,
        name: Callable[[str], float],
        literal: Mapping[str, float],
        cpuid: Callable[[str], float] = lambda _id: 0.0,
    ) -> float:
        """The expression's value: ``name(n)`` gives an event's count or a metric's value,
        ``literal['#slots']`` a literal, ``cpuid(id)`` what ``strcmp_cpuid_str(id)`` is."""
        return _eval(self.tree, name, literal, cpuid)


def parse(text: str) -> Expr:
    """Parse perf's metric expression ``text``; raises ``ValueError`` when it does not."""
    toks = _tokens(text)
    p = _Parser(toks)
    tree = p.cond()
    if p.i != len(toks):
        raise ValueError(f"unexpected {toks[p.i][1]!r} in {text!r}")
    return Expr(tree, frozenset(p.names), frozenset(p.literals))


def _tokens(text: str) -> list[tuple[str, str]]:
    out, i = [], 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        m = _TOKEN.match(text, i)
        if not m or m.end() == i:
            raise ValueError(f"cannot read {text[i:]!r}")
        kind = m.lastgroup or "op"
        value = m[kind]
        if kind == "name" and value in _KEYWORDS:
            kind = "kw"
        out.append((kind, value))
        i = m.end()
    return out


class _Parser:
    """Recursive descent over perf's grammar, one method per precedence level."""

    def __init__(self, toks: list[tuple[str, str]]) -> None:
        self.toks = toks
        self.i = 0
        self.names: set[str] = set()
        self.literals: set[str] = set()

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, value: str) -> None:
        tok = self.peek()
        if tok is None or tok[1] != value:
            raise ValueError(f"expected {value!r}, got {tok!r}")
        self.i += 1

    def cond(self) -> tuple:
        then = self.binary(0)
        if self.peek() == ("kw", "if"):
            self.i += 1
            test = self.binary(0)
            self.take("else")
            other = self.cond()
            return ("if", test, then, other)
        return then

    def binary(self, level: int) -> tuple:
        if level == len(_BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while (tok := self.peek()) is not None and tok[0] == "op" and tok[1] in _BINARY[level]:
            self.i += 1
            left = (tok[1], left, self.binary(level + 1))
        return left

    def unary(self) -> tuple:
        if self.peek() == ("op", "-"):
            self.i += 1
            return ("neg", self.unary())
        return self.atom()

    def atom(self) -> tuple:
        tok = self.peek()
        if tok is None:
            raise ValueError("expression ends early")
        kind, value = tok
        self.i += 1
        if kind == "num":
            return ("num", float(int(value, 16)) if value.startswith("0x") else float(value))
        if kind == "lit":
            self.literals.add(value)
            return ("lit", value)
        if value == "(":
            inner = self.cond()
            self.take(")")
            return inner
        if kind == "name" and value in _FUNCS and self.peek() == ("op", "("):
            self.i += 1
            args = [self.cond() if value != "strcmp_cpuid_str" else self.raw_arg()]
            while self.peek() == ("op", ","):
                self.i += 1
                args.append(self.cond())
            self.take(")")
            return ("call", value, *args)
        if kind == "name":
            name = canonical(value)
            self.names.add(name)
            return ("name", name)
        raise ValueError(f"unexpected {value!r}")

    def raw_arg(self) -> tuple:
        tok = self.peek()
        if tok is None:
            raise ValueError("strcmp_cpuid_str needs an argument")
        self.i += 1
        return ("id", tok[1])


def _eval(t: tuple, name: Callable, lit: Mapping[str, float], cpuid: Callable) -> float:
    op = t[0]
    if op == "num":
        return t[1]
    if op == "lit":
        return lit[t[1]]
    if op == "name":
        return name(t[1])
    if op == "neg":
        return -_eval(t[1], name, lit, cpuid)
    if op == "if":
        return _eval(t[2] if _eval(t[1], name, lit, cpuid) else t[3], name, lit, cpuid)
    if op == "call":
        return _call(t[1], t[2:], name, lit, cpuid)
    a, b = _eval(t[1], name, lit, cpuid), _eval(t[2], name, lit, cpuid)
    return _BINOPS[op](a, b)


def _call(fn: str, args: tuple, name: Callable, lit: Mapping[str, float], cpuid: Callable) -> float:
    if fn == "strcmp_cpuid_str":
        return cpuid(args[0][1])
    vals = [_eval(a, name, lit, cpuid) for a in args]
    if fn == "min":
        return min(vals)
    if fn == "max":
        return max(vals)
    if fn == "d_ratio":
        return 0.0 if vals[1] == 0 else vals[0] / vals[1]
    return 1.0  # has_event, source_count: the tables' events are all there


def _div(a: float, b: float) -> float:
    return a / b if b else math.nan


_BINOPS: dict[str, Callable[[float, float], float]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": _div,
    "%": lambda a, b: math.fmod(a, b),
    "<": lambda a, b: float(a < b),
    ">": lambda a, b: float(a > b),
    "<=": lambda a, b: float(a <= b),
    ">=": lambda a, b: float(a >= b),
    "==": lambda a, b: float(a == b),
    "!=": lambda a, b: float(a != b),
    "|": lambda a, b: float(bool(a) or bool(b)),
    "^": lambda a, b: float(bool(a) != bool(b)),
    "&": lambda a, b: float(bool(a) and bool(b)),
}
