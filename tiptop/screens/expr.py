"""Column and counter-config expressions: our own parser, compiled once, never ``eval``.

CONTRACT (implemented by the screens work; the sampler depends on exactly this):

``compile_column(text, *, path=None, line=None, column=None) -> ColumnExpr``
    Parses a column expression (docs/original.md section 3 plus unary minus, ``min()``,
    ``max()``, ``INTERVAL``). Raises :class:`tiptop.errors.SpecError` whose column number
    points into the attribute text.

``ColumnExpr.aliases -> frozenset[str]``
    Counter aliases the expression reads (absolute or through ``delta()``); ``bare`` and
    ``deltas`` are those read each way.
``ColumnExpr.builtins -> frozenset[str]``
    Which of :data:`tiptop.screens.variables.BUILTINS` it reads.
``ColumnExpr.evaluate(env) -> tuple[numpy.ndarray, numpy.ndarray]``
    ``env`` maps a key to ``(values float64[n], status uint8[n])``: the bare alias for the
    absolute counter value, ``delta_key(alias)`` for its interval delta, and each builtin
    name. Returns ``(values, status)``: a zero divisor gives ``Status.DIV0``; any operand
    whose status is not OK propagates the worst status (``numpy.maximum`` of the operands'
    statuses, see ``tiptop.cells``); cells that are not OK hold ``nan``.

``evaluate_config(text) -> int``
    The original's counter ``config`` expression (predefined names, decimal/hex, ``|``,
    ``or``, ``and``, ``shl``, ``shr``) as a uint64. Raises ``SpecError``.

Additions beyond the contract: ``ColumnExpr.keys`` (the env keys it reads),
``ColumnExpr.text``, ``evaluate(env, n=None)`` (``n`` rows when ``env`` is empty or the
expression is constant). The config names are :data:`tiptop.vocab.CONFIG_NAMES`. A key
missing from ``env`` reads as ``Status.UNREADABLE``. Columns compile to a tree of closures
over whole numpy arrays: the per-refresh cost is a few numpy calls per operator,
independent of row count.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from tiptop.cells import STATUS_DTYPE, Status
from tiptop.errors import SpecError
from tiptop.outside import shown
from tiptop.screens import syntax
from tiptop.screens.bottleneck import is_path, parse_path
from tiptop.screens.model import delta_key
from tiptop.screens.syntax import BinOp, Call, ExprSyntaxError, Func, Name, Neg, Node, Num, Op
from tiptop.screens.variables import BUILTINS
from tiptop.vocab import CONFIG_NAMES

__all__ = ["ColumnExpr", "compile_column", "evaluate_config"]

_U64 = (1 << 64) - 1
_OK = int(Status.OK)
_UNREADABLE = int(Status.UNREADABLE)

Env = Mapping[str, tuple[np.ndarray, np.ndarray]]
#: A node's values: float64 per row, or one number for every row (broadcast at the end).
Values = np.ndarray | float
#: A node's statuses: uint8 per row (:class:`tiptop.cells.Status`), or one for every row.
Statuses = np.ndarray | int
# A compiled node: env -> (values, status); either may be a scalar (broadcast at the end).
_Fn = Callable[[Env], tuple[Values, Statuses]]


def _locate(
    err: ExprSyntaxError | SpecError,
    offset: int,
    path: str | None,
    line: int | None,
    column: int | None,
) -> SpecError:
    """A SpecError at ``offset`` of the text, which starts at 1-based ``column`` (or 1)."""
    return SpecError(err.message, path, line, (column or 1) + offset)


class ColumnExpr:
    """A compiled column expression (see the module contract)."""

    __slots__ = ("_fn", "aliases", "bare", "builtins", "const", "deltas", "keys", "text")

    def __init__(
        self,
        text: str,
        fn: _Fn,
        keys: frozenset[str],
        aliases: frozenset[str],
        builtins: frozenset[str],
        const: bool,
    ) -> None:
        self.text = text
        self._fn = fn
        self.keys = keys
        self.aliases = aliases
        #: The aliases read bare (their running total) and through ``delta()``.
        self.bare = frozenset(a for a in aliases if a in keys)
        self.deltas = frozenset(a for a in aliases if delta_key(a) in keys)
        self.builtins = builtins
        self.const = const

    def __repr__(self) -> str:
        return f"ColumnExpr({self.text!r})"

    def parts(self, env: Env) -> tuple[Values, Statuses]:
        """``(values, status)`` as the expression makes them: arrays, or scalars where it
        reads no row (a constant); values not yet blanked where the status is not OK. For
        a caller that fills many columns under one ``np.errstate(all="ignore")`` (a
        division by zero is a status here, never a warning) and blanks them at once."""
        return self._fn(env)

    def evaluate(self, env: Env, n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(values float64[n], status uint8[n])`` for the rows of ``env``."""
        if n is None:
            n = _rows(env, self.keys)
        with np.errstate(all="ignore"):
            v, s = self.parts(env)
        # Broadcast by assignment: np.broadcast_to is a Python function around a view.
        values = np.empty(n)
        values[...] = v
        status = np.empty(n, STATUS_DTYPE)
        status[...] = s
        values[status != _OK] = np.nan
        return values, status


def _rows(env: Env, keys: frozenset[str]) -> int:
    for k in keys:
        if k in env:
            return len(env[k][0])
    for v, _s in env.values():
        return len(v)
    return 0


def _unread(_env: Env) -> tuple[Values, Statuses]:
    return np.nan, _UNREADABLE


def compile_column(
    text: str, *, path: str | None = None, line: int | None = None, column: int | None = None
) -> ColumnExpr:
    """Compile a column expression once; raises SpecError located in the text. A
    ``bottleneck(...)`` column (tiptop/screens/bottleneck.py) compiles to a placeholder
    reading nothing: the evaluator computes it from the other columns."""
    if is_path(text):
        try:
            parse_path(text)
        except SpecError as err:
            raise SpecError(err.message, path, line, column) from None
        return ColumnExpr(text, _unread, frozenset(), frozenset(), frozenset(), True)
    try:
        tree = syntax.parse(text)
        for node in syntax.walk(tree):
            if isinstance(node, BinOp) and node.op in syntax.BIT_OPS:
                raise ExprSyntaxError(
                    f"bit operator '{node.op}' is only allowed in a counter config", node.pos
                )
    except ExprSyntaxError as err:
        raise _locate(err, err.offset, path, line, column) from None
    keys: set[str] = set()
    aliases: set[str] = set()
    builtins: set[str] = set()
    fn, const = _compile(tree, keys, aliases, builtins)
    return ColumnExpr(
        text, fn, frozenset(keys), frozenset(aliases), frozenset(builtins), const is not None
    )


def _compile(
    node: Node, keys: set[str], aliases: set[str], builtins: set[str]
) -> tuple[_Fn, float | None]:
    """A closure for ``node`` and its constant value (``None`` unless constant-folded)."""
    if isinstance(node, Num):
        value = float(node.value)
        return _const(value), value
    if isinstance(node, Name) or (isinstance(node, Call) and node.func is Func.DELTA):
        target = node if isinstance(node, Name) else node.args[0]
        if not isinstance(target, Name):  # the parser gives delta() one alias
            raise ExprSyntaxError("delta() takes a counter alias", node.pos)
        name = target.name
        if (
            name in BUILTINS
        ):  # built-ins first; delta() has no effect on them (docs/original.md 3.4)
            builtins.add(name)
            key = name
        else:
            aliases.add(name)
            key = name if isinstance(node, Name) else delta_key(name)
        keys.add(key)
        return _var(key), None
    if isinstance(node, Neg):
        fn, c = _compile(node.operand, keys, aliases, builtins)
        if c is not None:
            return _const(-c), -c
        return (lambda env: _neg(fn(env))), None
    if isinstance(node, Call):  # min / max
        parts = [_compile(a, keys, aliases, builtins) for a in node.args]
        ufunc = np.minimum if node.func is Func.MIN else np.maximum
        consts = [c for _f, c in parts if c is not None]
        if len(consts) == len(parts):
            value = float(ufunc.reduce(consts))
            return _const(value), value
        return _minmax(ufunc, [f for f, _c in parts]), None
    assert isinstance(node, BinOp)
    lf, lc = _compile(node.left, keys, aliases, builtins)
    rf, rc = _compile(node.right, keys, aliases, builtins)
    if lc is not None and rc is not None and not (node.op is Op.DIV and rc == 0):
        with np.errstate(all="ignore"):
            value = float(_ARITH[node.op](np.float64(lc), np.float64(rc)))
        return _const(value), value
    if node.op is Op.DIV and (rc is None or rc == 0):  # else a constant divisor, never 0
        return _div(lf, rf), None
    return _arith(_ARITH[node.op], lf, rf), None


_ARITH = {Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: np.divide}


def _const(value: float) -> _Fn:
    return lambda env: (value, _OK)


def _var(key: str) -> _Fn:
    def fn(env: Env) -> tuple[Values, Statuses]:
        try:
            v, s = env[key]
        except KeyError:
            return np.nan, _UNREADABLE
        return v, s

    return fn


def _neg(vs: tuple[Values, Statuses]) -> tuple[Values, Statuses]:
    return -vs[0], vs[1]


def _worst(a: Statuses, b: Statuses) -> Statuses:
    # Statuses are ordered so the worst is the maximum (numpy.maximum; see tiptop.cells).
    if isinstance(a, int) and a == _OK:
        return b
    if isinstance(b, int) and b == _OK:
        return a
    return np.maximum(a, b)


def _arith(ufunc: np.ufunc, lf: _Fn, rf: _Fn) -> _Fn:
    def fn(env: Env) -> tuple[Values, Statuses]:
        a, sa = lf(env)
        b, sb = rf(env)
        return ufunc(a, b), _worst(sa, sb)

    return fn


def _div(lf: _Fn, rf: _Fn) -> _Fn:
    # The original shows '-' when the divisor is 0 (tiptop.1: "When an expression would
    # result in a division by zero, a '-' sign is printed"); an unreadable operand wins.
    def fn(env: Env) -> tuple[Values, Statuses]:
        a, sa = lf(env)
        b, sb = rf(env)
        # DIV0 where b is 0: a bool is 0 or 1 = DIV0 as a status byte, and the worst
        # status is the largest (tiptop.cells), so one maximum does it.
        zero = np.asarray(np.equal(b, 0)).view(STATUS_DTYPE)
        return np.divide(a, b), np.maximum(_worst(sa, sb), zero)

    return fn


def _minmax(ufunc: np.ufunc, fns: list[_Fn]) -> _Fn:
    def fn(env: Env) -> tuple[Values, Statuses]:
        v, s = fns[0](env)
        for f in fns[1:]:
            b, sb = f(env)
            v = ufunc(v, b)
            s = _worst(s, sb)
        return v, s

    return fn


def evaluate_config(text: str) -> int:
    """The value of a counter ``config`` expression (docs/original.md 3.5) as a uint64."""
    try:
        return _config(syntax.parse(text))
    except ExprSyntaxError as err:
        raise SpecError(f"{err.message} (at column {err.offset + 1} of '{shown(text)}')") from None


def _config(node: Node) -> int:
    if isinstance(node, Num):
        if isinstance(node.value, float) and node.value > _U64:  # 1e400 is inf
            raise ExprSyntaxError("config value does not fit in 64 bits", node.pos)
        if isinstance(node.value, float) and not node.value.is_integer():
            raise ExprSyntaxError(f"config constant {node.text!r} is not an integer", node.pos)
        value = int(node.value)
    elif isinstance(node, Name):
        if node.name not in CONFIG_NAMES:
            raise ExprSyntaxError(f"unknown config name {node.name!r}", node.pos)
        value = CONFIG_NAMES[node.name]
    elif isinstance(node, BinOp) and node.op in syntax.BIT_OPS:
        a, b = _config(node.left), _config(node.right)
        if node.op is Op.OR:
            value = a | b
        elif node.op is Op.AND:
            value = a & b
        elif node.op is Op.SHR:
            value = a >> b
        else:
            if b > 64:
                raise ExprSyntaxError("shift count over 64", node.pos)
            value = a << b
    else:
        pos = node.pos
        what = node.op if isinstance(node, BinOp) else "-" if isinstance(node, Neg) else node.func
        raise ExprSyntaxError(f"'{what}' is not allowed in a counter config", pos)
    if value > _U64:
        raise ExprSyntaxError("config value does not fit in 64 bits", node.pos)
    return value
