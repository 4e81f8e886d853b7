"""The sampler's counter groups over the FAKE backend: a screen with more events than the PMU
has counters is split by column and each part scaled; a generic event on a hybrid CPU is one
group per core PMU, summed raw."""

from __future__ import annotations

from pathlib import Path

from tests.support import host_at
from tests.support.builders import screen
from tests.support.sampling import FAKE_SCREEN, PF, FakeEnv, row
from tiptop.cells import Status
from tiptop.engine.sampler import Sampler, SamplerConfig
from tiptop.screens.model import ScreenSpec


def hw_screen(uses: list[str], n: int = 5) -> ScreenSpec:
    """``n`` hardware counters X0..X(n-1) (config i), a software one, the given columns."""
    counters: dict[str, tuple[int, int]] = {f"X{i}": (0, i) for i in range(n)}
    columns = [(f"{c:>10}", "%10.2f", c) for c in [*uses, "delta(F)"]]
    return screen("split", "split groups", counters={**counters, "F": PF}, columns=columns)


def make_screen(env: FakeEnv, scr: ScreenSpec) -> Sampler:
    fp, b = env
    return Sampler(
        scr,
        SamplerConfig(),
        backend=b,
        host=host_at(str(fp.root), str(fp.root.parent / "nosys")),
    )


def test_group_too_large_is_split_by_column_and_scaled_per_group(env: FakeEnv) -> None:
    fp, b = env
    b.max_group_size[0] = 3  # a 3-counter PMU: 5 events cannot run at once
    fp.add(10, "app")
    for i in range(5):
        b.script(10, (0, i), (i + 1) * 1e9)
    b.script(10, PF, 10)
    # First use: X0 with X3, then X1, X2, X4. Screen-order greedy would give [X0 X1 X2]
    # [X3 X4] and split both columns; by column: [X0 X3] [X1 X2 X4].
    scr = hw_screen(["delta(X0)/delta(X3)", "delta(X1)+delta(X2)+delta(X4)"])
    s = make_screen(env, scr)
    hw = [g.alias_index.tolist() for g in s.plan.groups if g.pmu != "software"]
    assert hw == [[0, 3], [1, 2, 4]]
    assert all(len(attrs) <= 3 for tid, attrs in b.opens)
    assert not [m for m in s.messages.lines() if "split into" in m]  # said with the fraction
    s.start()
    b.clock.advance(2.0)
    f = s.refresh()
    split = [m for m in s.messages.lines() if "split into 2 groups" in m]
    assert split == [
        "screen 'split': its 5 events of PMU cpu do not fit the counters together: split "
        "into 2 groups that the kernel multiplexes; its counters ran 50% of the time, so "
        "its values are scaled estimates"
    ]
    i = row(f, 10)
    assert (f.status[i] == Status.OK).all()
    # The two groups take turns: each counted half the time, and is scaled back by 2.
    assert f.counter_running[i].tolist() == [0.5] * 5 + [1.0]
    assert f.counter_delta[i].tolist() == [1e9, 2e9, 3e9, 4e9, 5e9, 20]
    assert f.values[i].tolist() == [0.25, 20e9, 20.0]
    assert f.running[i].tolist() == [0.5, 0.5, 1.0]
    assert f.multiplexed()[i].tolist() == [True, True, False]
    assert s.messages.lines().count(split[0]) == 1  # said once, not per task or refresh


def test_split_spreads_events_evenly_and_splits_a_too_wide_column(env: FakeEnv) -> None:
    _, b = env
    b.max_group_size[0] = 6
    scr = hw_screen([f"delta(X{i})" for i in range(10)], n=10)
    s = make_screen(env, scr)
    # Greedy needs 2 groups (6 + 4); spread evenly: 5 + 5.
    assert [len(g.attrs) for g in s.plan.groups if g.pmu != "software"] == [5, 5]
    b.max_group_size[0] = 3
    wide = hw_screen(["delta(X0)+delta(X1)+delta(X2)+delta(X3)", "delta(X4)"])
    s2 = make_screen(env, wide)
    # One column needs 4 counters of 3: event by event, then evenly: [X0 X1 X2] [X3 X4].
    hw = [g.alias_index.tolist() for g in s2.plan.groups if g.pmu != "software"]
    assert hw == [[0, 1, 2], [3, 4]]


def test_groups_that_fit_are_not_split(env: FakeEnv) -> None:
    _, b = env
    b.max_group_size[0] = 5
    s = make_screen(env, hw_screen(["delta(X0)", "delta(X4)"]))
    assert [g.alias_index.tolist() for g in s.plan.groups] == [[0, 4, 1, 2, 3], [5]]
    assert not any("split" in m for m in s.messages.lines())


def test_group_as_wide_as_a_pmu_with_a_held_counter_is_split(env: FakeEnv) -> None:
    """A 5-event group opens on a 5-counter PMU (checked against an empty PMU) but never
    runs while the NMI watchdog holds one counter: the plan sees time_running stay 0 on
    its probe and splits it, as it splits a group that does not open."""
    _, b = env
    b.max_group_size[0] = 5
    b.held[0] = 1
    s = make_screen(env, hw_screen(["delta(X0)", "delta(X4)"]))
    hw = [len(g.attrs) for g in s.plan.groups if g.pmu != "software"]
    assert hw == [3, 2]


HYBRID = str(Path(__file__).resolve().parents[1] / "data" / "sysfs" / "hybrid")

CORE, ATOM = 4, 8  # PMU types of cpu_core and cpu_atom in the hybrid tree


def test_hybrid_counter_sums_raw_counts_of_both_core_pmus(env: FakeEnv) -> None:
    """A generic event on a hybrid CPU is one group per core PMU on each task; a counter's
    value is the sum of both PMUs' raw counts, never extrapolated by enabled/running (each
    group runs only while the task is on its PMU's CPUs: arch/x86/events/intel/core.c
    intel_pmu_filter())."""
    fp, b = env
    fp.add(10, "app")
    for pmu, cyc, ins in ((CORE, 2e9, 4e9), (ATOM, 1e9, 1e9)):
        b.script(10, (0, pmu << 32), cyc)  # cycles: config 0 with the PMU type on top
        b.script(10, (0, pmu << 32 | 1), ins)
    b.script(10, PF, 10)
    b.task(10).cpu_share = {CORE: 0.75, ATOM: 0.25}
    s = Sampler(FAKE_SCREEN, SamplerConfig(), backend=b, host=host_at(str(fp.root), HYBRID))
    assert [g.pmu for g in s.plan.groups] == ["cpu_atom", "cpu_core", "software"]
    assert s.plan.multi.tolist() == [True, True, False]
    s.start()
    assert sorted(
        (tid, tuple((a.type, a.config) for a in attrs)) for tid, attrs in b.opens if tid == 10
    ) == [
        (10, ((0, CORE << 32), (0, CORE << 32 | 1))),
        (10, ((0, ATOM << 32), (0, ATOM << 32 | 1))),
        (10, (PF,)),
    ]
    b.clock.advance(4.0)
    f = s.refresh()
    i = row(f, 10)
    # core: 2e9/s * 4 s * 0.75 = 6e9 cycles and 12e9 instructions; atom: 1e9 and 1e9.
    # Summed raw: 7e9 and 13e9 (scaling each group by enabled/running would give 12e9, 16e9).
    assert f.counter_delta[i].tolist() == [7e9, 13e9, 40]
    assert f.values[i, 1:].tolist() == [7000.0, 13e9 / 7e9, 40.0, 7e9]
    assert f.status[i].tolist() == [Status.OK] * 5
    # The two groups share the task's time: together they ran all of it, not multiplexed.
    assert f.counter_running[i].tolist() == [1.0, 1.0, 1.0]
    assert not f.multiplexed()[i].any()
    s.close()
    assert b.open_fds == 0
