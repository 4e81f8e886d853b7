"""Column and config expressions: values, statuses ('-' and '?'), precedence, errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tiptop.cells import Status
from tiptop.errors import SpecError
from tiptop.screens.expr import compile_column, evaluate_config

OK, DIV0, NC, UNR = Status.OK, Status.DIV0, Status.NOT_COUNTED, Status.UNREADABLE


def env(**cols: tuple[list[float], list[int]]) -> dict:
    """An evaluation env; ``dA`` stands for ``delta(A)``."""
    out = {}
    for key, (v, s) in cols.items():
        name = f"delta({key[1:]})" if key.startswith("d") and key[1:].isupper() else key
        out[name] = (np.array(v, dtype=np.float64), np.array(s, dtype=np.uint8))
    return out


ONE = env(
    dA=([6.0], [OK]),
    dB=([3.0], [OK]),
    A=([10.0], [OK]),
    CPU_TOT=([50.0], [OK]),
    INTERVAL=([2.0], [OK]),
    dZ=([0.0], [OK]),
    dU=([7.0], [UNR]),
    dN=([7.0], [NC]),
)

# (expression, value or None for nan, status)
CASES = [
    ("1 + 2 * 3", 7.0, OK),
    ("(1 + 2) * 3", 9.0, OK),
    ("10 - 4 - 3", 3.0, OK),  # left-associative
    ("24 / 4 / 2", 3.0, OK),
    ("-2 * 3", -6.0, OK),
    ("2 - -3", 5.0, OK),
    ("--4", 4.0, OK),
    ("-delta(A) + 1", -5.0, OK),
    ("1e6", 1e6, OK),
    ("2.5", 2.5, OK),
    ("1.5e-3 * 1000", 1.5, OK),
    ("2E+2", 200.0, OK),
    ("0x10", 16.0, OK),
    ("delta(A) / delta(B)", 2.0, OK),
    ("100*delta(A)/delta(B)", 200.0, OK),
    ("A", 10.0, OK),  # absolute value, not the delta
    ("delta(A) / delta(Z)", None, DIV0),
    ("delta(A) / (delta(B) - 3)", None, DIV0),
    ("1 / 0", None, DIV0),
    ("delta(A) / (2 - 2)", None, DIV0),  # a divisor folded to 0
    ("delta(A) / 2", 3.0, OK),  # a constant divisor: plain arithmetic
    ("delta(U) / 2", None, UNR),
    ("delta(Z) / 1e6", 0.0, OK),
    ("delta(U) + delta(A)", None, UNR),
    ("delta(A) + delta(U)", None, UNR),
    ("delta(A) / delta(U)", None, UNR),  # the original printed A/1 here
    ("delta(U) / delta(A)", None, UNR),
    ("delta(U) / delta(Z)", None, UNR),  # unreadable beats a zero divisor
    ("delta(N) / delta(Z)", None, NC),
    ("delta(N) * delta(U)", None, UNR),
    ("delta(Missing) + 1", None, UNR),
    ("min(delta(A), delta(B))", 3.0, OK),
    ("max(delta(A), delta(B), 7)", 7.0, OK),
    ("min(4)", 4.0, OK),
    ("max(1, 2) * min(3, 4)", 6.0, OK),
    ("max(delta(A), delta(U))", None, UNR),
    ("delta(A) / INTERVAL", 3.0, OK),
    ("CPU_TOT / 100", 0.5, OK),
    ("delta(CPU_TOT)", 50.0, OK),  # delta() has no effect on built-ins (docs/original.md 3.4)
]


@pytest.mark.parametrize(("text", "value", "status"), CASES)
def test_one_row(text: str, value: float | None, status: Status) -> None:
    v, s = compile_column(text).evaluate(ONE)
    assert s.dtype == np.uint8 and v.dtype == np.float64
    assert s.tolist() == [status]
    if value is None:
        assert np.isnan(v[0])
    else:
        assert v[0] == pytest.approx(value, rel=1e-12)


def test_many_rows_mixed_statuses() -> None:
    e = env(
        dX=([1.0, 2.0, 3.0, 4.0, 5.0], [OK, OK, UNR, OK, NC]),
        dY=([2.0, 0.0, 1.0, 0.0, 1.0], [OK, OK, OK, UNR, OK]),
    )
    v, s = compile_column("100 * delta(X) / delta(Y)").evaluate(e)
    assert s.tolist() == [OK, DIV0, UNR, UNR, NC]
    assert v[0] == 50.0 and np.isnan(v[1:]).all()


def test_zero_rows_and_constants() -> None:
    e = env(dX=([], []))
    v, s = compile_column("delta(X) / 2").evaluate(e)
    assert v.shape == (0,) and s.shape == (0,)
    v, s = compile_column("3 * 2").evaluate(e)
    assert v.shape == (0,)
    v, s = compile_column("3 * 2").evaluate({}, n=4)
    assert v.tolist() == [6.0] * 4 and s.tolist() == [OK] * 4


def test_does_not_modify_env() -> None:
    e = env(dX=([1.0, 2.0], [UNR, OK]))
    compile_column("delta(X)").evaluate(e)
    assert e["delta(X)"][0].tolist() == [1.0, 2.0]


def test_many_rows_vectorised() -> None:
    n = 10_000
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 5, n).astype(float), rng.integers(0, 5, n).astype(float)
    e = {"delta(A)": (a, np.zeros(n, np.uint8)), "delta(B)": (b, np.zeros(n, np.uint8))}
    v, s = compile_column("delta(A) / delta(B)").evaluate(e)
    assert (s == DIV0).sum() == (b == 0).sum()
    ok = b != 0
    assert np.array_equal(v[ok], a[ok] / b[ok])


def test_reads() -> None:
    c = compile_column("delta(A) + B + CPU_TOT + delta(INTERVAL)")
    assert c.aliases == {"A", "B"}
    assert c.builtins == {"CPU_TOT", "INTERVAL"}
    assert c.keys == {"delta(A)", "B", "CPU_TOT", "INTERVAL"}


# (expression, 1-based column of the error)
ERRORS = [
    ("2 ^ 3", 3),
    ("1 +", 4),
    ("", 1),
    ("(1 + 2", 7),
    ("1 + 2)", 6),
    ("delta(A + B)", 9),
    ("delta(1)", 7),
    ("delta", 6),
    ("foo(1)", 1),
    ("2 3", 3),
    (".5", 1),
    ("5.", 1),
    ("1E", 1),
    ("a & b", 3),
    ("1 shl 2", 3),
    ("A | B", 3),
    ("x and y", 3),
    ("min()", 5),
    ("max(1,)", 7),
    ("_a", 1),
]


@pytest.mark.parametrize(("text", "col"), ERRORS)
def test_errors_have_a_column(text: str, col: int) -> None:
    with pytest.raises(SpecError) as info:
        compile_column(text)
    assert info.value.column == col, info.value


def test_error_position_is_offset_by_the_attribute() -> None:
    with pytest.raises(SpecError) as info:
        compile_column("2 ^ 3", path="f.xml", line=7, column=40)
    err = info.value
    assert (err.path, err.line, err.column) == ("f.xml", 7, 42)
    assert str(err).startswith("f.xml:7:42: ")


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    with pytest.raises(SpecError):
        compile_column("(" * 5000 + "1" + ")" * 5000)
    with pytest.raises(SpecError):
        compile_column("-" * 5000 + "1")


CONFIGS = [
    ("CPU_CYCLES", 0),
    ("BUS_CYCLES", 6),
    ("0x1c2", 0x1C2),
    ("450", 450),
    ("L1D | (OP_READ shl 8) | (RESULT_MISS shl 16)", 0x10000),
    ("LL or (OP_WRITE shl 8) or (RESULT_ACCESS shl 16)", 0x102),
    ("0xff and 0x0f", 0x0F),
    ("0x100 shr 4", 0x10),
    ("1 | 2 shl 8", 0x300),  # one precedence level, left to right, as calc.y
    ("0xffffffffffffffff", (1 << 64) - 1),
]


@pytest.mark.parametrize(("text", "value"), CONFIGS)
def test_config(text: str, value: int) -> None:
    assert evaluate_config(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "1 + 2",
        "CPU_CYCLES * 2",
        "-1",
        "cycles",
        "1.5",
        "0x1ffffffffffffffff",
        "1 shl 64 shl 1",
        "delta(X)",
        "min(1, 2)",
        "",
        "2 ^ 3",
    ],
)
def test_config_errors(text: str) -> None:
    with pytest.raises(SpecError):
        evaluate_config(text)


def test_operators_are_named_as_written_in_refusals() -> None:
    """The tree's operators and functions are enums (syntax.Op, Func): a refusal names
    them as the user wrote them, never as an enum's repr."""
    for call, text, said in (
        (compile_column, "a | b", "bit operator 'or' is only allowed in a counter config"),
        (evaluate_config, "3 * 4", "'*' is not allowed in a counter config"),
        (evaluate_config, "min(1, 2)", "'min' is not allowed in a counter config"),
    ):
        with pytest.raises(SpecError, match=re.escape(said)):
            call(text)
