"""Known answers on a machine with a hardware PMU, and ``perf stat`` side by side.

Workloads with known behaviour (the self-test's machine-code kernels, tiptop/selftest/code.py)
are counted through tiptop's engine at several sizes and judged on least-squares slopes per
iteration, never on one count (the fixed cost of a run lands in the intercept):

* ``predict``, 2 conditional branches per iteration, both always taken: branches/iteration
  2.00 +- 0.02 and almost no mispredictions; ``mispredict``, the same code with the first
  branch on a random bit: mispredictions/iteration 0.50 +- 0.05;
* the ``topdown`` screen this host picks (%RET %BADS %FE %BE [%SMT], its own column
  expressions evaluated on the slopes): a chain of divides is back-end bound above 60%, a
  tight add loop retires above 60%, random branches give bad speculation above 30%, and the
  level-1 fractions sum to 100% +- 5 for each;
* a pointer chase over rings from L1/8 to 8 x L1 (the L1 data cache size from sysfs): L1D
  misses per access below 0.05 up to L1/2, between 0.85 and 1.15 from 4 x L1 on;
* ``perf stat``, given the same events (spelled from tiptop's plan, grouped as tiptop groups
  them) and counting the same window of the same kernel run separately: instructions and
  branches per iteration within 0.5%, slot fractions within 5% (or 0.5 points when small).

Where there is no hardware PMU each test skips with the errno ``cycles`` gives; an event the
screen needs that does not open skips with tiptop's own explanation; no ``perf`` skips with
why. The software-event comparison with ``perf stat`` (page faults, context switches) needs no
PMU and runs wherever perf and kernel-mode counting do: it checks the side-by-side harness.
docs/selftest.md, "Known-answer validation".
"""

from __future__ import annotations

import math

import pytest

from tests.helpers import hardware_pmu_error
from tests.support.builders import screen
from tests.support.known_answer import (
    LEVEL1_REQUIRED,
    Engine,
    Series,
    core_cpu,
    fractions,
    host_screen,
    l1d_bytes,
    level1_columns,
    perf_events,
)
from tests.system.known_runs import perf_count, perf_problem, pinned_child
from tiptop.selftest.checks import SIZES, fit
from tiptop.selftest.code import PAGE

#: Kernel -> (the level-1 column it must light up, the floor in % of slots).
TOPDOWN = {"divide": ("%BE", 60.0), "add": ("%RET", 60.0), "mispredict": ("%BADS", 30.0)}


def _need_pmu() -> None:
    err = hardware_pmu_error()
    if err is not None:
        pytest.skip(f"no hardware PMU: cycles gives {err}")


def _need_events(engine: Engine) -> None:
    missing = engine.missing()
    if missing:
        why = "; ".join(f"{a}: {line}" for a, line in missing.items())
        pytest.skip(f"screen {engine.screen.name!r} ({engine.screen.desc}): {why}")


def _counted(s: Series) -> None:
    """Fail, saying why, when a group was never scheduled on the PMU (running 0)."""
    for j, alias in enumerate(s.aliases):
        if (s.running[:, j] == 0).any():
            pytest.fail(
                f"{alias} never counted during {s.kernel} (time_running 0): its group did not "
                "get the PMU's counters; another user holds some (the NMI watchdog, "
                f"/proc/sys/kernel/nmi_watchdog, or another monitor)\n{s.describe()}"
            )


@pytest.fixture(scope="module")
def cpu() -> int | None:
    """The CPU every kernel child is pinned to."""
    return core_cpu()


@pytest.fixture(scope="module")
def branches(cpu: int | None) -> dict[str, Series]:
    """``predict`` and ``mispredict`` counted with branches and branch-misses."""
    _need_pmu()
    eng = Engine(screen("known-branch", counters={"BR": "branches", "MIS": "branch-misses"}))
    _need_events(eng)
    with pinned_child(cpu) as child:
        return {k: eng.series(child, k, list(SIZES[k])) for k in ("predict", "mispredict")}


class Topdown:
    """The host's ``topdown`` screen planned here, and each workload of ``TOPDOWN`` counted."""

    def __init__(self, cpu: int | None) -> None:
        spec = host_screen("topdown")
        have = level1_columns(spec)
        if not set(LEVEL1_REQUIRED) <= set(have):
            want = " ".join(LEVEL1_REQUIRED)
            pytest.skip(
                f"the topdown screen this CPU gets ({spec.desc}) has no level-1 slot "
                f"fractions ({want}): its columns are {sorted(have)}"
            )
        self.engine = Engine(spec)
        _need_events(self.engine)
        with pinned_child(cpu) as child:
            self.series = {k: self.engine.series(child, k, list(SIZES[k])) for k in TOPDOWN}

    def fractions(self, slopes: dict[str, float]) -> dict[str, float]:
        """The level-1 columns on these per-iteration slopes."""
        return fractions(self.engine.screen, slopes)


@pytest.fixture(scope="module")
def topdown(cpu: int | None) -> Topdown:
    """The host's topdown screen and its workloads' series."""
    _need_pmu()
    return Topdown(cpu)


@pytest.fixture(scope="module")
def perf() -> None:
    """Skip, saying why, where ``perf stat`` cannot count."""
    why = perf_problem()
    if why is not None:
        pytest.skip(why)


@pytest.mark.hwpmu
def test_two_branches_per_iteration(branches: dict[str, Series]) -> None:
    """``predict``: 2 conditional branches per iteration, both always taken."""
    s = branches["predict"]
    _counted(s)
    assert abs(s.slope("BR") - 2.0) <= 0.02, s.describe()
    assert s.slope("MIS") < 0.05, s.describe()


@pytest.mark.hwpmu
def test_random_branch_half_mispredicted(branches: dict[str, Series]) -> None:
    """``mispredict``: the first branch follows a random bit, a coin flip for any predictor."""
    s = branches["mispredict"]
    _counted(s)
    assert abs(s.slope("MIS") - 0.5) <= 0.05, s.describe()


@pytest.mark.hwpmu
@pytest.mark.parametrize("kernel", sorted(TOPDOWN))
def test_topdown_category(topdown: Topdown, kernel: str) -> None:
    """Each workload lights up its category; the level-1 fractions sum to 100 +- 5."""
    s = topdown.series[kernel]
    _counted(s)
    fr = topdown.fractions(s.slopes())
    column, floor = TOPDOWN[kernel]
    why = f"{topdown.engine.screen.desc}: {fr}\n{s.describe()}"
    assert abs(sum(fr.values()) - 100.0) <= 5.0, why
    assert fr[column] > floor, why


@pytest.mark.hwpmu
def test_pointer_chase_l1d_misses_step_at_l1(cpu: int | None) -> None:
    """L1D misses per access: ~0 while the ring fits L1, ~1 once it is 4 x L1 and more."""
    _need_pmu()
    l1 = l1d_bytes(0 if cpu is None else cpu)
    if l1 is None:
        pytest.skip("the L1 data cache size is not in /sys/devices/system/cpu/cpuN/cache")
    eng = Engine(screen("known-l1d", counters={"L1M": "L1-dcache-load-misses"}))
    _need_events(eng)
    rings = sorted({max(PAGE, (l1 * k // 8) // PAGE * PAGE) for k in (1, 2, 4, 8, 16, 32, 64)})
    with pinned_child(cpu) as child:
        series = {r: eng.series(child, "chase_small", list(SIZES["chase_small"]), r) for r in rings}
    per = {r: s.slope("L1M") for r, s in series.items()}  # one load per iteration
    why = f"L1D {l1} bytes; misses per access by ring bytes: {per}"
    for r, m in per.items():
        _counted(series[r])
        if r <= l1 // 2:
            assert m < 0.05, why
        if r >= 4 * l1:
            assert 0.85 <= m <= 1.15, why


def _perf_slopes(
    engine: Engine, kernel: str, sizes: list[int], cpu: int | None
) -> dict[str, float]:
    """``kernel`` at each size under ``perf stat`` with the events of ``engine``'s plan:
    per alias, perf's slope."""
    events, order = perf_events(engine.splan.plan.groups)
    runs = [perf_count(events, kernel, n, cpu) for n in sizes]
    aliases = engine.splan.plan.aliases
    out = {}
    for k, j in enumerate(order):
        values = [r[k] if k < len(r) else "missing" for r in runs]
        bad = [v for v in values if isinstance(v, str)]
        assert not bad, f"perf stat -e {events}: {aliases[j]} read {bad[0]}"
        out[aliases[j]] = float(fit(sizes, values).slope)  # type: ignore[arg-type]
    return out


def test_perf_stat_software_events_agree(perf: None, cpu: int | None) -> None:
    """Without a PMU too (the harness itself): page faults of ``touch``, counted by tiptop and
    then by ``perf stat`` over the same window, are exactly one per page for both; context
    switches of ``pingpong`` (kernel-mode counting, ``:uk``) one per round trip +- 10%."""
    eng = Engine(screen("known-sw", counters={"PF": "page-faults", "CS": "context-switches"}))
    _need_events(eng)
    slopes = {}
    for kernel in ("touch", "pingpong"):
        sizes = list(SIZES[kernel])
        with pinned_child(cpu) as child:
            mine = eng.series(child, kernel, sizes)
        slopes[kernel] = (mine.slopes(), _perf_slopes(eng, kernel, sizes, cpu))
    (pf_mine, pf_perf), (cs_mine, cs_perf) = slopes["touch"], slopes["pingpong"]
    assert pf_mine["PF"] == pf_perf["PF"] == 1.0, slopes
    assert abs(cs_mine["CS"] - 1) <= 0.1 and abs(cs_perf["CS"] - 1) <= 0.1, slopes


@pytest.mark.hwpmu
def test_perf_stat_instructions_branches_agree(perf: None, cpu: int | None) -> None:
    """Instructions and branches per iteration: tiptop and ``perf stat`` within 0.5%."""
    _need_pmu()
    eng = Engine(screen("known-ib", counters={"INS": "instructions", "BR": "branches"}))
    _need_events(eng)
    for kernel in ("loop", "predict"):
        sizes = list(SIZES[kernel])
        with pinned_child(cpu) as child:
            mine = eng.series(child, kernel, sizes)
        _counted(mine)
        theirs = _perf_slopes(eng, kernel, sizes, cpu)
        for alias in ("INS", "BR"):
            assert math.isclose(mine.slope(alias), theirs[alias], rel_tol=0.005), (
                kernel,
                alias,
                theirs,
                mine.describe(),
            )


def _close_fractions(a: float, b: float) -> bool:
    """Within 5% of the larger, or 0.5 points of slots apart (a small fraction's 5% is
    below what separate runs reproduce)."""
    return abs(a - b) <= max(0.05 * max(abs(a), abs(b)), 0.5)


@pytest.mark.hwpmu
def test_perf_stat_topdown_fractions_agree(perf: None, topdown: Topdown, cpu: int | None) -> None:
    """The topdown screen's fractions from ``perf stat`` counts of its own raw events, in
    its own groups, agree with tiptop's within 5%."""
    for kernel, s in topdown.series.items():
        _counted(s)
        mine = topdown.fractions(s.slopes())
        theirs = topdown.fractions(_perf_slopes(topdown.engine, kernel, s.sizes, cpu))
        for header, v in mine.items():
            assert _close_fractions(v, theirs[header]), (kernel, header, mine, theirs)
