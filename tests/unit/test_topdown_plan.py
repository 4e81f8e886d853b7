"""The counter plan honours the kernel's rules for Intel perf metrics, over the FAKE backend
and the fake sysfs trees: ``slots`` leads the group of every ``topdown-*`` metric event, every
metric is in that group and the group is never split up, a metric without ``slots`` is refused
with one line at bind time, and on a hybrid CPU only ``cpu_core`` counts them.

The rules are tools/perf/Documentation/topdown.txt ("Limits on Intel Ice Lake") and
arch/x86/events/intel/core.c ``intel_pmu_hw_config`` (EINVAL for a metric whose leader is not
``slots``); metric events take no counter (arch/x86/events/core.c ``collect_event``). The fake
plays both (tests/support/fake_backend.py ``perf_metrics``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import host_at
from tests.support.builders import screen
from tests.support.fake_backend import FakeBackend
from tiptop.engine.count.plan import Planner
from tiptop.events.topdown import Role, Topdown, perf_metrics
from tiptop.kernel.attr import GROUP_READ_FORMAT
from tiptop.messages import MessageLog
from tiptop.screens import ScreenSpec, Target, builtin_screens

DATA = Path(__file__).resolve().parents[1] / "data" / "sysfs"
#: An Ice Lake-like core PMU ``cpu`` (type 4): slots and the four level-1 metrics.
INTEL = str(DATA / "intel")
#: An Alder Lake-like hybrid: ``cpu_core`` (type 4, CPUs 0-15) with slots and all eight
#: metrics, ``cpu_atom`` (type 8, CPUs 16-23) whose topdown-* are ordinary events.
HYBRID = str(DATA / "hybrid")
CORE, ATOM = 4, 8

#: arch/x86/events/intel/core.c EVENT_ATTR_STR(slots / td_*): event=0x00,umask=0x4 and
#: umask=0x80..0x87, i.e. config umask << 8.
SLOTS = 0x0400
METRIC = {
    "topdown-retiring": 0x8000,
    "topdown-bad-spec": 0x8100,
    "topdown-fe-bound": 0x8200,
    "topdown-be-bound": 0x8300,
    "topdown-heavy-ops": 0x8400,
    "topdown-br-mispredict": 0x8500,
    "topdown-fetch-lat": 0x8600,
    "topdown-mem-bound": 0x8700,
}
L1 = [METRIC[n] for n in list(METRIC)[:4]]
#: cpu_atom's events of the level-1 names: the first strings of
#: EVENT_ATTR_STR_HYBRID(topdown-*, ...) (event=0xc2, 0x73, 0x71, 0x74, umask 0).
ATOM_TD = {
    "topdown-retiring": 0xC2,
    "topdown-bad-spec": 0x73,
    "topdown-fe-bound": 0x71,
    "topdown-be-bound": 0x74,
}


def fake() -> FakeBackend:
    """A fake backend whose core PMU (type 4) has perf metrics and 4 counters."""
    b = FakeBackend()
    b.perf_metrics[CORE] = (SLOTS, frozenset(METRIC.values()))
    b.max_group_size[CORE] = 4
    return b


def planner(b: FakeBackend, sysfs: str, tmp_path: Path) -> tuple[Planner, MessageLog]:
    log = MessageLog()
    host = host_at(str(tmp_path), sysfs)
    return Planner(b, host, log, threads=False, kernel=False), log


def configs(attrs: tuple) -> list[tuple[int, int]]:
    return [(a.type, a.config) for a in attrs]


def builtin(name: str, model: str) -> ScreenSpec:
    (s,) = [s for s in builtin_screens(Target("x86", model)) if s.name == name]
    return s


def test_perf_metrics_read_from_sysfs() -> None:
    pm = perf_metrics(INTEL, "cpu")
    assert pm is not None and (pm.type, pm.slots) == (CORE, SLOTS)
    assert pm.metrics == {METRIC[n]: n for n in list(METRIC)[:4]}
    core = perf_metrics(HYBRID, "cpu_core")
    assert core is not None and core.metrics == {v: n for n, v in METRIC.items()}
    assert core.cpus == "0-15"
    assert perf_metrics(HYBRID, "cpu_atom") is None  # no events/slots: no perf metrics
    assert perf_metrics(INTEL, "msr") is None and perf_metrics(INTEL, "nosuch") is None


def test_icelake_topdown_is_one_group_led_by_slots(tmp_path: Path) -> None:
    """The columns read RET before S (aliases of a column by name), yet slots leads and the
    four metrics follow it; every metric was probed under slots, never alone."""
    b = fake()
    p, log = planner(b, INTEL, tmp_path)
    sp = p.plan(builtin("topdown", "06_7D"))
    assert not log.lines()
    (g,) = sp.plan.groups
    assert g.pmu == "cpu"
    # then perf's tma_* corrections, in the same group: INT_MISC.UOP_DROPPING (0x0d/0x10),
    # INT_MISC.CLEARS_COUNT (0x0d/0x01, edge, cmask 1)
    tma = [(CORE, 0x100D), (CORE, 0x010D | 1 << 18 | 1 << 24)]
    assert configs(g.attrs) == [(CORE, SLOTS)] + [(CORE, c) for c in L1] + tma
    aliases = [sp.plan.aliases[j] for j in g.alias_index]
    assert aliases == ["S", "RET", "BAD", "FE", "BE", "UD", "CC"]
    assert all(a.read_format == GROUP_READ_FORMAT for a in g.attrs)
    assert sp.plan.available.all() and not sp.plan.multi.any()
    for _, attrs in b.opens:  # every open that held a metric had slots first
        if any(a.config in L1 for a in attrs):
            assert (attrs[0].type, attrs[0].config) == (CORE, SLOTS)


def test_metric_without_slots_is_refused_in_one_line(tmp_path: Path) -> None:
    b = fake()
    p, log = planner(b, INTEL, tmp_path)
    scr = screen(
        counters={"RET": "topdown-retiring", "I": "instructions"},
        columns=[(" r", "%2.0f", "delta(RET)/delta(I)")],
    )
    sp = p.plan(scr)
    assert sp.plan.available.tolist() == [False, True]
    (line,) = log.lines()
    assert "'RET'" in line and "led by the 'slots' event of PMU cpu" in line
    assert all(a.config != METRIC["topdown-retiring"] for _, attrs in b.opens for a in attrs)


def test_topdown_head_stays_whole_when_the_pmu_must_split(tmp_path: Path) -> None:
    """Three raw events first, slots and four metrics, two raw events last, on a 4-counter
    PMU: the whole does not fit, the head (slots, metrics: one counter) stays together and
    first, and takes the first column's events; the last column goes to a second group."""
    b = fake()
    p, _log = planner(b, INTEL, tmp_path)
    raw = {f"X{i}": f"cpu/event=0x{0x10 + i:x}/" for i in range(5)}
    td = {
        "S": "slots",
        "RET": "topdown-retiring",
        "BAD": "topdown-bad-spec",
        "FE": "topdown-fe-bound",
        "BE": "topdown-be-bound",
    }
    cols = [("x", "%1.0f", "delta(X0)+delta(X1)+delta(X2)")]
    cols += [(a, "%3.0f", f"delta({a})/delta(S)") for a in ("RET", "BAD", "FE", "BE")]
    cols += [("y", "%1.0f", "delta(X3)+delta(X4)")]
    sp = p.plan(screen(counters={**raw, **td}, columns=cols))
    hw = [[sp.plan.aliases[j] for j in g.alias_index] for g in sp.plan.groups]
    assert hw == [["S", "RET", "BAD", "FE", "BE", "X0", "X1", "X2"], ["X3", "X4"]]
    assert sp.split == {"cpu": (10, 2)}  # said at a refresh, with the running fraction
    for g in sp.plan.groups:  # each group opens as planned (metrics take no counter)
        b.open_group(0, g.attrs).close()


def test_a_lone_head_larger_than_the_even_share_is_not_cut(tmp_path: Path) -> None:
    """Level 2 (slots + 8 metrics) and 8 raw events on a 4-counter PMU: however the other
    events are spread, the nine top-down members stay in the first group, slots first."""
    b = fake()
    p, _ = planner(b, HYBRID, tmp_path)
    scr = builtin("topdown2", "06_97")
    raw = screen(
        counters={f"X{i}": f"cpu_core/event=0x{0x10 + i:x}/" for i in range(8)},
        columns=[(f"x{i}", "%2.0f", f"delta(X{i})") for i in range(8)],
    )
    both = ScreenSpec("t", "t", scr.counters + raw.counters, scr.columns + raw.columns)
    sp = p.plan(both)
    first = sp.plan.groups[0]
    head = configs(first.attrs)[:9]  # metrics in first-use order after slots
    assert head[0] == (CORE, SLOTS) and sorted(head[1:]) == [(CORE, c) for c in METRIC.values()]
    assert {g.pmu for g in sp.plan.groups} == {"cpu_core"}
    assert sum(len(g.attrs) for g in sp.plan.groups) == 18  # + cpu_core INT_MISC.UOP_DROPPING
    assert all((a.type, a.config) != (CORE, SLOTS) for g in sp.plan.groups[1:] for a in g.attrs)
    for g in sp.plan.groups:
        b.open_group(0, g.attrs).close()


def test_hybrid_topdown_counts_on_cpu_core_only(tmp_path: Path) -> None:
    """topdown-retiring names a metric on cpu_core and an ordinary event (its own issue
    slots) on cpu_atom: only the metric is kept, and one line says what is not counted."""
    b = fake()
    p, log = planner(b, HYBRID, tmp_path)
    sp = p.plan(builtin("topdown", "06_97"))
    (g,) = sp.plan.groups
    assert g.pmu == "cpu_core"
    uop_dropping = (CORE, 0x10AD)  # cpu_core INT_MISC.UOP_DROPPING (adl-metrics.json tma_*)
    heavy = (CORE, METRIC["topdown-heavy-ops"])  # for retiring's threshold: no counter
    assert configs(g.attrs) == [(CORE, SLOTS)] + [(CORE, c) for c in L1] + [heavy, uop_dropping]
    assert not sp.plan.multi.any()
    assert all(a.type != ATOM for _, attrs in b.opens for a in attrs)
    (line,) = log.lines()
    assert line.startswith(
        "top-down metrics count only on cpu_core (CPUs 0-15): cpu_atom (CPUs 16-23) has no "
        "perf metrics; its events of the same names (cpu_atom/topdown-retiring/, "
        "cpu_atom/topdown-bad-spec/, cpu_atom/topdown-fe-bound/, cpu_atom/topdown-be-bound/)"
    )
    assert "shows '?'" in line
    assert set(log.about("RET").subjects) == {"S", "RET", "BAD", "FE", "BE", "HVY"}  # type: ignore[union-attr]


@pytest.mark.parametrize("name", list(ATOM_TD))
def test_hybrid_names_resolve_to_both_pmus_and_only_core_is_a_metric(name: str) -> None:
    from tiptop.events import resolve

    bs = {b.pmu: b for b in resolve(name, sysfs_root=HYBRID)}
    assert (bs["cpu_core"].attr.type, bs["cpu_core"].attr.config) == (CORE, METRIC[name])
    assert (bs["cpu_atom"].attr.type, bs["cpu_atom"].attr.config) == (ATOM, ATOM_TD[name])
    td = Topdown(HYBRID)
    assert td.role(bs["cpu_core"]) is Role.METRIC and td.role(bs["cpu_atom"]) is None
    assert td.metrics_only(list(bs.values())) == [bs["cpu_core"]]


def test_non_hybrid_says_nothing_about_other_pmus(tmp_path: Path) -> None:
    assert Topdown(INTEL).only_here("cpu", []) is None
    assert Topdown(HYBRID).only_here("cpu_atom", []) is None  # no metrics there at all


@pytest.mark.parametrize("text", ["cpu/event=0x00,umask=0x80/", "r8000", "cpu/config=0x8000/"])
def test_raw_forms_of_a_metric_are_metrics_too(text: str, tmp_path: Path) -> None:
    """The kernel tells a metric event by its encoding, not its name: so does the plan."""
    b = fake()
    p, log = planner(b, INTEL, tmp_path)
    sp = p.plan(
        screen(
            counters={"S": "cpu/slots/", "M": text}, columns=[("m", "%3.0f", "delta(M)/delta(S)")]
        )
    )
    (g,) = sp.plan.groups
    assert configs(g.attrs) == [(CORE, SLOTS), (CORE, METRIC["topdown-retiring"])]
    assert not log.lines()


def test_list_screens_probe_opens_a_metric_under_slots() -> None:
    """--list-screens / --list-events probe each event on its own, except a metric event,
    which the kernel opens only under its PMU's slots: the probe's group gets that head."""
    from tiptop import diagnose
    from tiptop.events import resolve
    from tiptop.events.bindings import counting_attr

    host = host_at("/proc", INTEL)
    for name, head in (("topdown-retiring", [SLOTS]), ("slots", []), ("cycles", [])):
        (b,) = resolve(name, sysfs_root=INTEL)
        attr = counting_attr(b, kernel=False, inherit=False, inherit_thread=False)
        got = diagnose._slots_head(b, host, attr)
        assert [a.config for a in got] == head, name
        assert all(a.type == attr.type and a.exclude_kernel for a in got)


@pytest.mark.parametrize(
    ("model", "smt", "said"),
    [("06_55", True, True), ("06_3C", True, True), ("06_55", False, False), ("06_7E", True, False)],
)
def test_pre_ice_lake_topdown_says_it_is_whole_core_with_smt_on(
    tmp_path: Path, model: str, smt: bool, said: bool
) -> None:
    """Skylake-X/Cascade Lake and Haswell with SMT on: one line says the task's top-down
    cells are not its own (the core's slots are shared; pmu-tools#385, AnyThread); not
    with SMT off, nor on Ice Lake, whose perf metrics count per thread."""
    log = MessageLog()
    host = host_at(str(tmp_path), INTEL, smt_active=smt)
    Planner(fake(), host, log, threads=False, kernel=False).plan(builtin("topdown", model))
    said_here = [m for m in log if "whole-core" in m.line]
    assert bool(said_here) is said
    if said:
        (m,) = said_here
        assert m.line.startswith("screen 'topdown': with SMT on, top-down before Ice Lake is")
        assert "pmu-tools#385" in m.line and "AnyThread" in m.line
        assert m.notice  # what this machine is, not an error
