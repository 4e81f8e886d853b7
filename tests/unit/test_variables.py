"""The registry of built-in variables (tiptop.screens.variables): each entry's computation
on a small facts object, the compiler and the engine reading the registry, and
docs/screens.md's list checked against it. A new variable is one registry entry plus its
case in EXPECTED."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tiptop.cells import STATUS_DTYPE, Status
from tiptop.screens import BUILTINS, VARIABLES, RowFacts, Variable, compile_column
from tiptop.screens.variables import TimeFacts, environment

DOCS = Path(__file__).resolve().parents[2] / "docs" / "screens.md"
OK, UNR, DIV0 = int(Status.OK), int(Status.UNREADABLE), int(Status.DIV0)
NAN = float("nan")

#: Where the three rows' time went: the busy one (its only thread) 60% of the interval on a
#: CPU, 30% waiting of which 20% throttled, 5% blocked on I/O, under a 0.5 CPU limit; the
#: idle one (4 threads, delay accounting unknown for it) nothing; the reaped one unknown.
TIMES = TimeFacts(
    percent=np.array([[60.0, 30.0, 20.0, 5.0], [0.0, 0.0, 0.0, NAN], [NAN] * 4]),
    status=np.array([[OK] * 4, [OK, OK, OK, UNR], [UNR] * 4], STATUS_DTYPE),
    threads=np.array([1.0, 4.0, 1.0]),
    limit=np.array([0.5, NAN, NAN]),
    cpus=np.array([2.0, NAN, NAN]),
)

#: Three rows: a busy task, an idle one on CPU 3, one reaped unseen (split unknown).
FACTS = RowFacts(
    cpu_total=np.array([150.0, 0.0, 12.5]),
    cpu_sys=np.array([50.0, 0.0, 0.0]),
    cpu_user=np.array([100.0, 0.0, 0.0]),
    processor=np.array([0.0, 3.0, 1.0]),
    interval=2.0,
    total_status=np.array([OK, OK, OK], STATUS_DTYPE),
    split_status=np.array([OK, OK, UNR], STATUS_DTYPE),
    time=TIMES,
)

#: name -> (values, statuses) on FACTS.
EXPECTED: dict[str, tuple[list[float], list[int]]] = {
    "CPU_TOT": ([150.0, 0.0, 12.5], [OK, OK, OK]),
    "CPU_SYS": ([50.0, 0.0, 0.0], [OK, OK, UNR]),
    "CPU_USER": ([100.0, 0.0, 0.0], [OK, OK, UNR]),
    "PROC_ID": ([0.0, 3.0, 1.0], [OK, OK, OK]),
    "INTERVAL": ([2.0, 2.0, 2.0], [OK, OK, OK]),
    "TIME_RUN": ([60.0, 0.0, NAN], [OK, OK, UNR]),
    "TIME_WAIT": ([30.0, 0.0, NAN], [OK, OK, UNR]),
    "TIME_THROTTLED": ([20.0, 0.0, NAN], [OK, OK, UNR]),
    "TIME_IO": ([5.0, NAN, NAN], [OK, UNR, UNR]),
    # the rest: 100 less 95; 4 threads x 100, its I/O unknown (so part of this rest)
    "TIME_SLEEP": ([5.0, 400.0, NAN], [OK, OK, UNR]),
    "CPU_LIMIT": ([0.5, NAN, NAN], [OK, DIV0, DIV0]),
}


def test_every_variable_has_its_case() -> None:
    assert list(EXPECTED) == list(BUILTINS)
    assert len(set(BUILTINS)) == len(BUILTINS)


@pytest.mark.parametrize("var", VARIABLES, ids=lambda v: v.name)
def test_variable_computes_its_column(var: Variable) -> None:
    values, status = var.compute(FACTS)
    want_v, want_s = EXPECTED[var.name]
    assert values.dtype == np.float64 and status.dtype == STATUS_DTYPE
    known = status == OK
    np.testing.assert_allclose(values[known], np.array(want_v)[known])
    assert status.tolist() == want_s
    assert var.description and "\n" not in var.description and "|" not in var.description


def test_columns_read_the_environment_the_registry_builds() -> None:
    env = environment(FACTS)
    assert list(env) == list(BUILTINS)
    expr = compile_column("CPU_SYS * INTERVAL + PROC_ID")
    assert expr.builtins == {"CPU_SYS", "INTERVAL", "PROC_ID"} and expr.aliases == frozenset()
    values, status = expr.evaluate(env)
    assert values[:2].tolist() == [100.0, 3.0]
    assert np.isnan(values[2]) and status.tolist() == [OK, OK, UNR]


def test_a_name_outside_the_registry_is_a_counter() -> None:
    expr = compile_column("delta(CPU_IDLE) + CPU_TOT")
    assert expr.aliases == {"CPU_IDLE"} and expr.builtins == {"CPU_TOT"}


def documented() -> dict[str, str]:
    """docs/screens.md's built-in variables: name -> description."""
    text = DOCS.read_text()
    start = text.index("### Built-in variables")
    section = text[start : text.index("\n#", start + 1)]
    rows = re.findall(r"^\| `([A-Z_]+)` \| (.*?) \|$", section, re.M)
    return dict(rows)


def test_docs_list_exactly_the_registry() -> None:
    assert documented() == {v.name: v.description for v in VARIABLES}
