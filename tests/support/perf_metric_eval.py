"""perf's metric expressions as perf's own build parses them: tests/vendor/perf_metric.py
(the kernel's tools/perf/pmu-events/metric.py, verbatim) turns a ``MetricExpr`` into a tree
of its ``Operator``/``Select``/``Function``/``Event``/``Constant``/``Literal`` nodes, and
:class:`PerfPyExpr` evaluates that tree on given counts: a second reading of the formulas,
independent of our parser (tests/support/perfexpr.py), with the same ``value`` interface.
For ``MetricExpr`` only: perf does not parse ``MetricThreshold`` with it (Python's
precedence of ``|``/``&`` over ``>``; tests/vendor/README.md)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tests.support.perfexpr import _BINOPS
from tests.vendor import perf_metric as pm

__all__ = ["PerfPyExpr", "parse_with_metric_py"]

#: The operators' arithmetic (perf's expr.y: ``/`` by 0 is NaN, ``|``/``^``/``&`` on truth
#: values): the same as our parser's; what is independent here is the parse.
_OPS = _BINOPS


#: A name's (or a CPU id's) value.
Lookup = Callable[[str], float]


def _no_cpuid(_id: str) -> float:  # strcmp_cpuid_str: no CPU id given
    return 0.0


@dataclass(frozen=True)
class PerfPyExpr:
    """A ``MetricExpr`` as metric.py's ``ParsePerfJson(...).Simplify()`` gives it."""

    tree: pm.Expression

    def value(self, name: Lookup, literal: Mapping[str, float], cpuid: Lookup = _no_cpuid) -> float:
        """As :meth:`tests.support.perfexpr.Expr.value`; ``name`` gets each name as
        metric.py spells it (perf's ``@`` and escape forms)."""
        return _eval(self.tree, name, literal, cpuid)


def parse_with_metric_py(text: str) -> PerfPyExpr:
    """``text`` parsed by perf's metric.py, as jevents.py does for a ``MetricExpr``."""
    return PerfPyExpr(pm.ParsePerfJson(text).Simplify())


def _eval(
    e: pm.Expression,
    name: Callable[[str], float],
    literal: Mapping[str, float],
    cpuid: Callable[[str], float],
) -> float:
    def ev(x: pm.Expression) -> float:
        return _eval(x, name, literal, cpuid)

    if isinstance(e, pm.Constant):
        return float(e.value)
    if isinstance(e, pm.Literal):
        return literal[e.value]
    if isinstance(e, pm.Event):
        return name(e.name)
    if isinstance(e, pm.Select):
        return ev(e.true_val) if ev(e.cond) else ev(e.false_val)
    if isinstance(e, pm.Operator):
        return _OPS[e.operator](ev(e.lhs), ev(e.rhs))
    if isinstance(e, pm.Function):
        return _function(e, ev, cpuid)
    raise TypeError(f"metric.py node {type(e).__name__}")


def _function(
    e: pm.Function, ev: Callable[[pm.Expression], float], cpuid: Callable[[str], float]
) -> float:
    if e.fn == "strcmp_cpuid_str":
        assert isinstance(e.lhs, pm.Event)
        return cpuid(e.lhs.name)
    if e.fn in ("has_event", "source_count"):
        return 1.0  # the tables' events are all there, each from one source
    a, b = ev(e.lhs), ev(e.rhs) if e.rhs is not None else math.nan
    if e.fn == "min":
        return min(a, b)
    if e.fn == "max":
        return max(a, b)
    if e.fn == "d_ratio":
        return a / b if b else 0.0
    raise ValueError(f"metric.py function {e.fn}")
