"""What each event should count under the self-test's kernels, the fit, and the verdicts.

An event is checked by the kernel whose per-iteration count of it is known
(``CHECKS``, keyed by perf type and config, include/uapi/linux/perf_event.h); the counts over
several sizes are fitted by least squares in exact rational arithmetic, so that "exact" means
the slope *is* the prediction, not that it rounds to it. The fixed cost of starting and
stopping (the kernel's frame, the wake-up) lands in the intercept, never in the slope.
docs/selftest.md explains each category.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import field
from enum import StrEnum
from fractions import Fraction

from tiptop.readonly import mutable, readonly
from tiptop.vocab import HwId, PerfType, SwId

#: Iteration counts per kernel: four sizes, the largest 8 times the smallest.
SIZES: dict[str, tuple[int, ...]] = {
    "loop": (1_000_000, 2_000_000, 4_000_000, 8_000_000),
    "mispredict": (100_000, 200_000, 400_000, 800_000),
    "touch": (64, 128, 256, 512),
    "pingpong": (50, 100, 200, 400),
    "chase_small": (100_000, 200_000, 400_000, 800_000),
    "chase_large": (25_000, 50_000, 100_000, 200_000),
    "predict": (100_000, 200_000, 400_000, 800_000),
    "divide": (50_000, 100_000, 200_000, 400_000),
    "add": (1_000_000, 2_000_000, 4_000_000, 8_000_000),
}
#: Runs of each size, in as many passes over every kernel and size; one run per size is fitted
#: (``pick_run``), so one run disturbed from outside cannot move the slope.
REPEATS = 3


@readonly
class Check:
    """How one event is checked: the kernel, the count per iteration (None: the child's CPU
    time per iteration, measured from ``/proc/PID/schedstat``), the tolerance, and what the
    prediction rests on."""

    kernel: str
    per_iter: Fraction | None
    tolerance: float
    basis: str


_HW, _SW, _CACHE = int(PerfType.HARDWARE), int(PerfType.SOFTWARE), int(PerfType.HW_CACHE)
#: ``PERF_TYPE_HW_CACHE`` configs: id | op << 8 | result << 16 (perf_event_open(2)).
_L1D_READ_ACCESS, _L1D_READ_MISS = 0 | 0 << 8 | 0 << 16, 0 | 0 << 8 | 1 << 16
_CPU_TIME = Check("loop", None, 0.05, "the child's CPU time (/proc/PID/schedstat)")
CHECKS: dict[tuple[int, int], Check] = {
    (_HW, HwId.INSTRUCTIONS): Check("loop", Fraction(2), 0.005, "2 instructions per iteration"),
    (_HW, HwId.BRANCH_INSTRUCTIONS): Check("loop", Fraction(1), 0.005, "1 branch per iteration"),
    (_HW, HwId.BRANCH_MISSES): Check(
        "mispredict", Fraction(1, 2), 0.10, "a random branch: half mispredicted"
    ),
    (_SW, SwId.TASK_CLOCK): _CPU_TIME,
    (_SW, SwId.CPU_CLOCK): _CPU_TIME,
    (_SW, SwId.PAGE_FAULTS): Check("touch", Fraction(1), 0.01, "1 fresh page per iteration"),
    (_SW, SwId.PAGE_FAULTS_MIN): Check("touch", Fraction(1), 0.01, "1 fresh page per iteration"),
    (_CACHE, _L1D_READ_ACCESS): Check(
        "chase_small", Fraction(1), 0.10, "1 load per iteration (4 KiB ring: L1 hits)"
    ),
    (_CACHE, _L1D_READ_MISS): Check(
        "chase_large", Fraction(1), 0.10, "1 L1 miss per iteration (16 MiB random ring)"
    ),
    (_SW, SwId.CONTEXT_SWITCHES): Check(
        "pingpong", Fraction(1), 0.10, "1 blocking pipe read per iteration"
    ),
}


class Verdict(StrEnum):
    """What the self-test found of one event: its word is the report's (``kind`` in json)."""

    EXACT = "exact"
    WITHIN = "within"
    OFF = "off"
    NOT_COUNTING = "not counting"
    UNSUPPORTED = "unsupported"
    UNCHECKED = "unchecked"


#: Verdicts: good ones, bad ones (exit 1), and those that check nothing.
GOOD = frozenset({Verdict.EXACT, Verdict.WITHIN})
BAD = frozenset({Verdict.OFF, Verdict.NOT_COUNTING})
NONE = frozenset({Verdict.UNSUPPORTED, Verdict.UNCHECKED})


def check_for(type_: int, config: int) -> Check | None:
    """The check of an event, by its attr's type and config (a hybrid PMU's type in the
    config's upper 32 bits, perf_event_open(2) "PERF_TYPE_HARDWARE", is ignored)."""
    if type_ == _HW:
        config &= 0xFFFFFFFF
    return CHECKS.get((type_, config))


@mutable
class Fit:
    """A least-squares line through exact points, and its r-squared (1.0 for a perfect line;
    nan when every count is the same)."""

    slope: Fraction
    intercept: Fraction
    r2: float


def fit(xs: list[int], ys: list[float]) -> Fit:
    """The least-squares line through ``(xs, ys)`` in rational arithmetic."""
    n = len(xs)
    fx = [Fraction(x) for x in xs]
    fy = [Fraction(y) for y in ys]
    zero = Fraction(0)
    sx, sy = sum(fx, zero), sum(fy, zero)
    sxx = sum((x * x for x in fx), zero)
    sxy = sum((x * y for x, y in zip(fx, fy, strict=True)), zero)
    slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    intercept = (sy - slope * sx) / n
    mean = sy / n
    ss_tot = sum((y - mean) ** 2 for y in fy)
    ss_res = sum((y - (slope * x + intercept)) ** 2 for x, y in zip(fx, fy, strict=True))
    r2 = float(1 - ss_res / ss_tot) if ss_tot else math.nan
    return Fit(slope, intercept, r2)


@mutable
class Row:
    """One event's line of the report."""

    alias: str
    event: str
    kernel: str = ""
    predicted: float | None = None
    basis: str = ""
    slope: float | None = None
    intercept: float | None = None
    r2: float | None = None
    kind: Verdict = Verdict.UNCHECKED
    verdict: str = "not checked: no kernel with a known count of this event"
    steal_ms: float | None = None
    sizes: list[int] = field(default_factory=list)
    counts: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """The row for ``--format json`` (nan as null)."""
        d = dict(self.__dict__)
        for k, v in d.items():
            if isinstance(v, float) and math.isnan(v):
                d[k] = None
        return d


def pick_run(check: Check, runs: list[tuple[float, float]]) -> int:
    """Of one size's runs, each ``(count, the child's CPU time)``, the index of the one to
    fit: the median by count (one of the runs, never a mean: exact counts stay exact); for a
    check against CPU time, the median run by excess, the count less its own CPU time (a run
    whose CPU time is unknown, if any). Time that task-clock counts and the scheduler does
    not give the child (steal, interrupts: docs/selftest.md) adds to one run's excess, so the
    median leaves a disturbed run out; the least excess would pick the runs whose excess the
    clocks' granularity made negative, a bias of its own. Count and reference come from that
    one run, since runs of one size can differ more than any excess (on a VM the loop's time
    per iteration varied 2x from one child to the next)."""
    order = range(len(runs))
    if check.per_iter is not None:
        return _median_index(order, lambda i: runs[i][0])
    unknown = [i for i in order if math.isnan(runs[i][1])]
    if unknown:
        return unknown[0]
    return _median_index(order, lambda i: runs[i][0] - runs[i][1])


def _median_index(order: range, key: Callable[[int], float]) -> int:
    """The index in ``order`` whose ``key`` is the median (the upper one of an even count)."""
    return sorted(order, key=key)[len(order) // 2]


def judge(
    row: Row,
    check: Check,
    sizes: list[int],
    counts: list[float],
    ref: list[float],
    steal_ns: float = 0.0,
) -> None:
    """Fill ``row`` from the counts of ``sizes`` (``ref``: the child's CPU times, for a check
    against CPU time; ``steal_ns``: the host's steal during those runs, which excuses a
    CPU-time check off on the high side by no more than it): the fit, and the verdict."""
    row.kernel, row.basis, row.sizes, row.counts = check.kernel, check.basis, sizes, counts
    f = fit(sizes, counts)
    row.slope, row.intercept, row.r2 = float(f.slope), float(f.intercept), f.r2
    if check.per_iter is None:
        row.steal_ms = steal_ns / 1e6
        if any(math.isnan(c) for c in ref):
            row.kind, row.verdict = Verdict.UNCHECKED, "not checked: /proc/PID/schedstat unreadable"
            return
        predicted = fit(sizes, ref).slope
    else:
        predicted = check.per_iter
    row.predicted = float(predicted)
    if not any(counts):
        row.kind, row.verdict = Verdict.NOT_COUNTING, "not counting: every run read 0"
        return
    if f.slope == predicted:
        row.kind, row.verdict = Verdict.EXACT, "exact"
        return
    err = float(f.slope / predicted - 1) if predicted else math.inf
    if abs(err) <= check.tolerance:
        row.kind, row.verdict = (
            Verdict.WITHIN,
            f"within {100 * check.tolerance:g}% ({100 * err:+.3f}%)",
        )
    elif check.per_iter is None and err > 0 and 0 < sum(counts) - sum(ref) <= steal_ns:
        row.kind = Verdict.UNCHECKED
        row.verdict = (
            f"not checked: off by {100 * err:+.2f}% while the host stole "
            f"{steal_ns / 1e6:.0f} ms of CPU time (/proc/stat steal), which task-clock counts "
            "and the child's CPU time does not; run it again on a quieter host"
        )
    else:
        row.kind, row.verdict = Verdict.OFF, f"off by {100 * err:+.2f}%"


#: Alias prefix of the software events the self-test adds to a screen that lacks them
#: (``tiptop.selftest.report.EXTRAS``): not the screen's own.
EXTRA = "st-"


def _own(rows: list[Row]) -> list[Row]:
    """The rows of the screen's own counters (all rows for a screen without counters)."""
    return [r for r in rows if not r.alias.startswith(EXTRA)] or rows


def exit_code(rows: list[Row]) -> int:
    """0: every checked event is good; 1: some counter is off (or does not count); 2: no
    event of the screen could be checked (the software events added beside it do not make
    a screen checked: ``-S default`` without a PMU checks nothing of ``default``)."""
    if any(r.kind in BAD for r in rows):
        return 1
    return 0 if any(r.kind in GOOD for r in _own(rows)) else 2


def summary(rows: list[Row], code: int) -> str:
    """The report's last line."""
    good = sum(r.kind in GOOD for r in rows)
    bad = sum(r.kind in BAD for r in rows)
    unsupported = sum(r.kind is Verdict.UNSUPPORTED for r in rows)
    unchecked = sum(r.kind is Verdict.UNCHECKED for r in rows)
    word = {0: "all checked counters are right", 1: "a counter is off", 2: "nothing checked"}
    if code == 2 and any(r.kind in GOOD for r in rows):
        own = _own(rows)
        word[2] = (
            f"nothing of the screen checked ({len(own)} of its events, none countable or "
            "with a known count here; only the software events beside it were)"
        )
    return (
        f"selftest: {good} good, {bad} off, {unsupported} unsupported here, "
        f"{unchecked} not checked: {word[code]} (exit {code})"
    )
