"""perf's own parser of its metric formulas (tests/vendor/perf_metric.py, the kernel's
tools/perf/pmu-events/metric.py, verbatim) against ours (tests/support/perfexpr.py): every
``MetricExpr`` of the vendored tables reads the same on random counts, so the oracle tests'
parser is checked by perf's. The critical-path comparison with perf's parse is in
tests/unit/test_bottleneck.py. No PMU needed."""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

import pytest

from tests.support import oracle
from tests.support.perf_metric_eval import parse_with_metric_py
from tests.support.perfexpr import canonical, parse
from tests.unit.test_oracle_screens import LITERALS

ROOT = Path(__file__).resolve().parents[2]
TABLES = oracle.data()["tables"]


def test_tiptop_never_imports_the_vendored_parser() -> None:
    """metric.py is a test oracle (LGPL-2.1 OR BSD-2-Clause, tests/vendor/README.md): no
    module of the product may import it, nor anything under tests/."""
    imports = re.compile(r"^\s*(from|import)\s+(tests\b|perf_metric\b)", re.M)
    bad = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "tiptop").rglob("*.py")
        if imports.search(path.read_text())
    ]
    assert bad == []


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_metric_reads_the_same_by_perfs_parser(table: str) -> None:
    """Each metric's value, on 5 draws of random counts, is the same by both parsers (NaN
    where both divide by zero), metrics read through the same table."""
    metrics = TABLES[table]["metrics"]
    lits = {**LITERALS, "#slots": 5.0}
    rng = random.Random(table)
    for draw in range(5):
        _check_draw(metrics, lits, rng, low=0 if draw == 0 else 1)


def _check_draw(metrics: dict, lits: dict[str, float], rng: random.Random, low: int) -> None:
    """One draw of counts (``low`` 0: some may be 0, so that both divide by zero)."""
    counts: dict[str, float] = {}

    def count(name: str) -> float:
        return counts.setdefault(canonical(name).lower(), float(rng.randint(low, 10**9)))

    def ours(name: str) -> float:
        n = canonical(name)
        return parse(metrics[n]["MetricExpr"]).value(ours, lits) if n in metrics else count(n)

    def perfs(name: str) -> float:
        n = canonical(name)
        if n in metrics:
            return parse_with_metric_py(metrics[n]["MetricExpr"]).value(perfs, lits)
        return count(n)

    for name in metrics:
        a, b = ours(name), perfs(name)
        same = math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
        assert same or (math.isnan(a) and math.isnan(b)), (name, a, b)
