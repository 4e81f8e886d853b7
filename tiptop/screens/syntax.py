"""Tokenizer and parser shared by column and counter-config expressions (no evaluation).

The lexical rules are the original's flex rules (docs/original.md section 3.1): numbers
``[0-9]+(.[0-9]+)?([eE][+-]?[0-9]+)?``, hex ``0x[0-9A-Fa-f]+``, identifiers
``[A-Za-z][A-Za-z0-9_]*``, the keywords ``and or shl shr`` and ``|``. Unlike the original,
an unknown character is an error (flex echoed and dropped it), and trailing junk is an error
(bison kept the longest valid prefix, so ``2 ^ 3`` read as ``2``; docs/original.md 3.6).

Precedence is the original's (docs/original.md 3.2): ``+ - | or and shl shr`` share the
lowest level, left-associative; ``* /`` bind tighter; we add unary minus (tighter still) and the
functions ``delta(NAME)``, ``min(...)``, ``max(...)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from enum import StrEnum

from tiptop.errors import SpecError
from tiptop.readonly import readonly

#: Deepest nesting of parentheses/unary minus accepted (keeps the parser off the C stack),
#: and the most levels of a syntax tree (a chain of N operators is N levels): compiling
#: and evaluating recurse once per level, and Python stops at 1,000 (sys.getrecursionlimit).
MAX_DEPTH = 100
#: The most hexadecimal digits of a constant: 16 make 64 bits, the width of a counter config
#: (perf_event_open(2)) and more than a double holds exactly.
MAX_HEX_DIGITS = 16

_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+)
  | (?P<hex>0[xX][0-9A-Fa-f]+)
  | (?P<num>[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
  | (?P<ident>[A-Za-z][A-Za-z0-9_]*)
  | (?P<op>[-+*/|(),])
    """,
    re.VERBOSE,
)


class Op(StrEnum):
    """A binary operator of the tree, as written (``|`` is read as :attr:`OR`)."""

    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    OR = "or"
    AND = "and"
    SHL = "shl"
    SHR = "shr"


class Func(StrEnum):
    """A function of the tree, by its name."""

    DELTA = "delta"
    MIN = "min"
    MAX = "max"


#: Word operators; ``|`` is the same token as ``or``.
WORD_OPS = frozenset({"and", "or", "shl", "shr"})
#: Operators of the lowest level (all left-associative, as in calc.y), as tokens.
LOW_OPS = frozenset({"+", "-", "|", "or", "and", "shl", "shr"})
HIGH_OPS = frozenset({"*", "/"})
#: The operators only a counter config takes.
BIT_OPS = frozenset({Op.OR, Op.AND, Op.SHL, Op.SHR})
FUNCTIONS = frozenset(Func)
#: Each operator by its token (``|`` is ``or``), each function by its name: a dict look-up
#: is cheaper than ``Op(text)``, and every built-in screen is parsed at start.
_OPS = {op.value: op for op in Op} | {"|": Op.OR}
_FUNCS = {func.value: func for func in Func}


@readonly
class Token:
    """One lexeme: ``kind`` is ``num``, ``hex``, ``ident``, ``op`` or ``end``; ``pos`` 0-based."""

    kind: str
    text: str
    pos: int


@readonly
class Num:
    """A constant; ``text`` is how it was written."""

    value: float | int
    text: str
    pos: int


@readonly
class Name:
    """An identifier: a counter alias, a built-in variable or a predefined config name."""

    name: str
    pos: int


@readonly
class Call:
    """``delta(NAME)``, ``min(a, ...)`` or ``max(a, ...)``."""

    func: Func
    args: tuple[Node, ...]
    pos: int


@readonly
class Neg:
    """Unary minus."""

    operand: Node
    pos: int


@readonly
class BinOp:
    """A binary operator; ``op`` is normalised (``|`` becomes ``or``)."""

    op: Op
    left: Node
    right: Node
    pos: int


Node = Num | Name | Call | Neg | BinOp


class ExprSyntaxError(SpecError):
    """A syntax error at ``offset`` (0-based) of the expression text."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``, ending with an ``end`` token; raises ExprSyntaxError."""
    out: list[Token] = []
    pos, n = 0, len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ExprSyntaxError(f"unexpected character {text[pos]!r}", pos)
        kind = m.lastgroup
        assert kind is not None
        if kind == "num":
            end = m.end()
            # "5." / "1e" / "2x": a number glued to more number-ish text is not a number.
            if end < n and (text[end] == "." or text[end].isalnum() or text[end] == "_"):
                raise ExprSyntaxError(f"malformed number {text[pos : end + 1]!r}", pos)
        if kind == "ident" and m.group() in WORD_OPS:
            kind = "op"
        if kind != "ws":
            out.append(Token(kind, m.group(), pos))
        pos = m.end()
    out.append(Token("end", "", n))
    return out


class _Parser:
    """Recursive descent over the token list (two precedence levels plus unary/primary)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = tokenize(text)
        self.i = 0
        self.depth = 0

    def peek(self) -> Token:
        return self.toks[self.i]

    def take(self) -> Token:
        tok = self.toks[self.i]
        if tok.kind != "end":
            self.i += 1
        return tok

    def expect(self, text: str) -> Token:
        tok = self.take()
        if tok.kind != "op" or tok.text != text:
            raise ExprSyntaxError(f"expected {text!r}, found {_show(tok)}", tok.pos)
        return tok

    def parse(self) -> Node:
        if self.peek().kind == "end":
            raise ExprSyntaxError("empty expression", 0)
        node = self.low()
        tok = self.peek()
        if tok.kind != "end":
            raise ExprSyntaxError(f"unexpected {_show(tok)} after a complete expression", tok.pos)
        return node

    def low(self) -> Node:
        left = self.high()
        while self.peek().kind == "op" and self.peek().text in LOW_OPS:
            tok = self.take()
            op = _OPS[tok.text]
            left = BinOp(op, left, self.high(), tok.pos)
        return left

    def high(self) -> Node:
        left = self.unary()
        while self.peek().kind == "op" and self.peek().text in HIGH_OPS:
            tok = self.take()
            left = BinOp(_OPS[tok.text], left, self.unary(), tok.pos)
        return left

    def unary(self) -> Node:
        tok = self.peek()
        if tok.kind == "op" and tok.text == "-":
            self.take()
            self.enter(tok)
            node = Neg(self.unary(), tok.pos)
            self.depth -= 1
            return node
        return self.primary()

    def enter(self, tok: Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExprSyntaxError(f"expression nested deeper than {MAX_DEPTH}", tok.pos)

    def primary(self) -> Node:
        tok = self.take()
        if tok.kind == "num":
            return Num(float(tok.text), tok.text, tok.pos)
        if tok.kind == "hex":
            if len(tok.text[2:].lstrip("0")) > MAX_HEX_DIGITS:
                raise ExprSyntaxError(f"hex constant over {MAX_HEX_DIGITS} digits", tok.pos)
            return Num(int(tok.text, 16), tok.text, tok.pos)
        if tok.kind == "ident":
            nxt = self.peek()
            if nxt.kind == "op" and nxt.text == "(":
                return self.call(tok)
            if tok.text in FUNCTIONS:
                raise ExprSyntaxError(f"{tok.text!r} needs '(' after it", nxt.pos)
            return Name(tok.text, tok.pos)
        if tok.kind == "op" and tok.text == "(":
            self.enter(tok)
            node = self.low()
            self.expect(")")
            self.depth -= 1
            return node
        raise ExprSyntaxError(f"expected a value, found {_show(tok)}", tok.pos)

    def call(self, name: Token) -> Node:
        if name.text not in FUNCTIONS:
            raise ExprSyntaxError(f"unknown function {name.text!r}", name.pos)
        self.enter(self.expect("("))
        if name.text == "delta":
            arg = self.take()
            if arg.kind != "ident" or arg.text in FUNCTIONS:
                raise ExprSyntaxError(f"delta() takes a counter name, found {_show(arg)}", arg.pos)
            self.expect(")")
            self.depth -= 1
            return Call(Func.DELTA, (Name(arg.text, arg.pos),), name.pos)
        args = [self.low()]
        while self.peek().kind == "op" and self.peek().text == ",":
            self.take()
            args.append(self.low())
        self.expect(")")
        self.depth -= 1
        return Call(_FUNCS[name.text], tuple(args), name.pos)


def _show(tok: Token) -> str:
    return "end of expression" if tok.kind == "end" else repr(tok.text)


def parse(text: str) -> Node:
    """The syntax tree of ``text``; raises :class:`ExprSyntaxError` with a 0-based offset."""
    tree = _Parser(text).parse()
    _check_height(tree)
    return tree


def _children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, BinOp):
        return (node.left, node.right)
    if isinstance(node, Neg):
        return (node.operand,)
    if isinstance(node, Call):
        return node.args
    return ()


def _check_height(tree: Node) -> None:
    """ExprSyntaxError at the operator where ``tree`` gets more than :data:`MAX_DEPTH`
    levels deep (``1+1+...`` with 1,000 terms), found without recursing."""
    heights: dict[int, int] = {}  # by id(): nodes are told apart by identity
    stack: list[tuple[Node, bool]] = [(tree, False)]
    while stack:
        node, children_done = stack.pop()
        kids = _children(node)
        if not children_done:
            stack.append((node, True))
            stack += [(k, False) for k in kids]
            continue
        height = 1 + max((heights[id(k)] for k in kids), default=-1)  # a leaf is 0
        if height > MAX_DEPTH:
            raise ExprSyntaxError(
                f"expression deeper than {MAX_DEPTH} levels (operators, parentheses, minus signs)",
                node.pos,
            )
        heights[id(node)] = height


def walk(node: Node) -> Iterator[Node]:
    """Every node of the tree, parents first."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, BinOp):
            stack += [n.right, n.left]
        elif isinstance(n, Neg):
            stack.append(n.operand)
        elif isinstance(n, Call):
            stack += reversed(n.args)
