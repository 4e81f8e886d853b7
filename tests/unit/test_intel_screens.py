"""Intel Ice Lake+ built-in screens, pinned without the hardware: which variant each CPU model
gets (the intel_pmu_init() cases of arch/x86/events/intel/core.c), the encodings against the
fake sysfs trees, and the numbers a sampler over the FAKE backend shows for scripted counts
(level 1 and level 2 over slots, P-core-only counting on a hybrid, FP assists)."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from tests.support import host_at
from tests.support.fake_backend import FakeBackend
from tests.support.sampling import FakeEnv, row
from tests.unit.test_topdown_plan import CORE, HYBRID, INTEL, METRIC, SLOTS, builtin, fake
from tiptop.cells import Status
from tiptop.engine.sampler import Sampler, SamplerConfig
from tiptop.events import resolve
from tiptop.screens import NamedEvent, ScreenSpec, Target, builtin_screens
from tiptop.screens.bottleneck import OFFSET

ICELAKE = ["06_7D", "06_7E", "06_6A", "06_6C", "06_8C", "06_8D", "06_A7"]
SERVER = ["06_8F", "06_CF", "06_AD", "06_AE"]  # Sapphire/Emerald/Granite Rapids
HYBRIDS = [
    "06_97",
    "06_9A",
    "06_B7",
    "06_BA",
    "06_BF",
    "06_AA",
    "06_AC",
    "06_B5",
    "06_BD",
    "06_C5",
    "06_C6",
]
#: Lunar Lake, Arrow Lake-S/H: no tma_* metrics, no INT_MISC.UOP_DROPPING, no ASSISTS.FP in the
#: kernel's 6.12 tables (tests/data/oracle/kernel-6.12.json).
LION_COVE = ["06_BD", "06_C5", "06_C6"]
#: perf's tma_* corrections (icl-, spr-, adl-metrics.json): INT_MISC.UOP_DROPPING, and
#: INT_MISC.CLEARS_COUNT on Ice Lake..Rocket Lake.
TMA_EVENTS = {
    "icl": ["cpu/event=0x0d,umask=0x10/", "cpu/event=0x0d,umask=0x01,edge=1,cmask=1/"],
    "spr": ["cpu/event=0xad,umask=0x10/"],
    "hybrid": ["cpu_core/event=0xad,umask=0x10/"],
}
L1_NAMES = ["slots", "topdown-retiring", "topdown-bad-spec", "topdown-fe-bound", "topdown-be-bound"]
L2_NAMES = [
    *L1_NAMES,
    "topdown-heavy-ops",
    "topdown-br-mispredict",
    "topdown-fetch-lat",
    "topdown-mem-bound",
]
#: ASSISTS.FP: EventCode 0xc1, UMask 0x2 (tools/perf/pmu-events/arch/x86/*/floating-point.json).
ASSISTS_FP = 0x02C1


def offered(model: str) -> dict[str, ScreenSpec]:
    return {s.name: s for s in builtin_screens(Target("x86", model))}


def names(s: ScreenSpec) -> list[str]:
    return [c.event.name for c in s.counters if isinstance(c.event, NamedEvent)]


@pytest.mark.parametrize("model", ICELAKE + SERVER + HYBRIDS)
def test_ice_lake_and_later_get_the_perf_metrics_screens(model: str) -> None:
    s = offered(model)
    hybrid = model in HYBRIDS
    kind = "icl" if model in ICELAKE else "spr" if model in SERVER else "hybrid"
    tma = [] if model in LION_COVE else TMA_EVENTS[kind]
    heavy = [] if model in ICELAKE else ["topdown-heavy-ops"]  # retiring's threshold reads it
    assert names(s["topdown"]) == L1_NAMES + heavy + tma
    assert ("P-core" in s["topdown"].desc) == hybrid and "Intel" in s["topdown"].desc
    if model in ICELAKE:
        assert "topdown2" not in s  # 4 metrics only (num_topdown_events = 4)
    else:
        assert names(s["topdown2"]) == L2_NAMES + tma[:1]
        assert ("P-core" in s["topdown2"].desc) == hybrid
    if model in LION_COVE:
        assert "fp" not in s or "ASSISTS.FP" not in s["fp"].desc
        return
    fp = s["fp"]
    assert "ASSISTS.FP" in fp.desc and ("E-core" in fp.desc) == hybrid
    prefix = "cpu_core" if hybrid else "cpu"
    assert fp.counter("A").event == NamedEvent(f"{prefix}/event=0xc1,umask=0x02/")


@pytest.mark.parametrize("model", ["06_55", "06_9E", "06_3F", "06_BE", "06_FF", "19_11"])
def test_older_or_other_cpus_get_no_intel_perf_metrics_screen(model: str) -> None:
    """Skylake/Cascade Lake and Haswell keep their raw-event variants, Alder Lake-N (atom
    only, no perf metrics), unknown models and AMD get no Intel level 2 and no ASSISTS.FP
    (AMD Zen 4 has its own level 2, from dispatch slots)."""
    s = offered(model)
    assert "topdown2" not in s or (model == "19_11" and "AMD Zen 4" in s["topdown2"].desc)
    assert "slots" not in names(s["topdown"])
    assert "fp" not in s or "ASSISTS.FP" not in s["fp"].desc


@pytest.mark.parametrize(
    ("text", "sysfs", "type_", "config"),
    [
        *[(n, INTEL, CORE, SLOTS if n == "slots" else METRIC[n]) for n in L1_NAMES],
        *[(f"cpu_core/{n}/", HYBRID, CORE, SLOTS if n == "slots" else METRIC[n]) for n in L2_NAMES],
        ("cpu/event=0xc1,umask=0x02/", INTEL, CORE, ASSISTS_FP),
        ("cpu_core/event=0xc1,umask=0x02/", HYBRID, CORE, ASSISTS_FP),
        ("cpu_core/instructions/", HYBRID, CORE, 0xC0),  # INST_RETIRED.ANY
        ("cpu_core/cycles/", HYBRID, 0, CORE << 32),  # generic cycles on cpu_core only
    ],
)
def test_encodings(text: str, sysfs: str, type_: int, config: int) -> None:
    (b,) = [b for b in resolve(text, sysfs_root=sysfs) if b.pmu in ("cpu", "cpu_core")]
    assert (b.attr.type, b.attr.config) == (type_, config)


# ------------------------------------------------------------------ numbers
#: Level-1 and level-2 fractions of slots the fake counts: the four level-1 add up to 1.
FRAC = {
    "topdown-retiring": 0.40,
    "topdown-bad-spec": 0.10,
    "topdown-fe-bound": 0.20,
    "topdown-be-bound": 0.30,
    "topdown-heavy-ops": 0.15,
    "topdown-br-mispredict": 0.06,
    "topdown-fetch-lat": 0.12,
    "topdown-mem-bound": 0.18,
}
RATE = 4e9  # slots per second on a CPU


def sampler(env: FakeEnv, scr: ScreenSpec, sysfs: str) -> tuple[Sampler, FakeBackend]:
    fp, _ = env
    b = fake()
    return Sampler(scr, SamplerConfig(), backend=b, host=host_at(str(fp.root), sysfs)), b


def script_slots(b: FakeBackend, tid: int, fractions: dict[str, float]) -> None:
    b.script(tid, (CORE, SLOTS), RATE)
    for name, f in fractions.items():
        b.script(tid, (CORE, METRIC[name]), f * RATE)


def test_icelake_level1_is_each_metric_over_slots(env: FakeEnv) -> None:
    fp, _ = env
    s, b = sampler(env, builtin("topdown", "06_7D"), INTEL)
    fp.add(10, "app")
    fp.add(11, "muxed")
    level1 = {k: FRAC[k] for k in list(FRAC)[:4]}
    script_slots(b, 10, level1)
    script_slots(b, 11, level1)
    b.task(11).mux = 0.5  # the group shares the PMU: all its members scaled alike
    s.start()
    b.clock.advance(2.0)
    f = s.refresh()
    for tid, running in ((10, 1.0), (11, 0.5)):
        i = row(f, tid)
        assert f.status[i].tolist() == [Status.OK] * 6
        assert f.values[i, 1:5].tolist() == pytest.approx([40.0, 10.0, 20.0, 30.0])
        assert f.values[i, 1:5].sum() == pytest.approx(100.0)
        assert f.running[i, 1:].tolist() == [running] * 5  # the bottleneck marked alike
        # FE (20 > 15) and BE (30 > 20) are over their bounds: BE, the larger
        assert (f.node[i, 5], f.values[i, 5]) == (OFFSET + 2, pytest.approx(30.0))  # BE


def test_hybrid_level1_counts_p_core_time_and_says_so(env: FakeEnv) -> None:
    """A task 75% of its time on P-cores: its fractions are its P-core slots', its running
    fraction 0.75; a task only on E-cores shows '?' (NOT_COUNTED), and one line says why."""
    fp, _ = env
    s, b = sampler(env, builtin("topdown", "06_97"), HYBRID)
    fp.add(10, "mixed")
    fp.add(11, "ecore")
    for tid in (10, 11):
        script_slots(b, tid, {k: FRAC[k] for k in list(FRAC)[:5]})  # heavy operations too
        for cfg in (0xC2, 0x73, 0x71, 0x74):  # cpu_atom's events of the same names
            b.script(tid, (8, cfg), 1e12)  # would wreck the fractions if they were added
    b.task(10).cpu_share = {CORE: 0.75, 8: 0.25}
    b.task(11).cpu_share = {CORE: 0.0, 8: 1.0}
    s.start()
    b.clock.advance(2.0)
    f = s.refresh()
    i = row(f, 10)
    assert f.values[i, 1:6].tolist() == pytest.approx([40.0, 10.0, 20.0, 30.0, 15.0])
    assert f.running[i, 1:].tolist() == [0.75] * 6
    # FE (20 > 15) and BE (30 > 20) over, and retiring (40, under 70) by heavy operations
    # over 10% (15: tma_retiring's second term): retiring, the largest, at level 1 (no step
    # to RET/Heavy: light operations are not counted)
    assert (f.node[i, 6], f.values[i, 6]) == (OFFSET + 3, pytest.approx(40.0))  # RET
    j = row(f, 11)
    assert f.status[j, 1:].tolist() == [Status.NOT_COUNTED] * 6
    assert [m for m in s.messages.lines() if m.startswith("top-down metrics count only on")]


def test_level2_columns_are_the_topdown_txt_formulas(env: FakeEnv) -> None:
    fp, _ = env
    s, b = sampler(env, builtin("topdown2", "06_97"), HYBRID)
    fp.add(10, "app")
    script_slots(b, 10, FRAC)
    b.task(10).cpu_share = {CORE: 1.0}
    s.start()
    b.clock.advance(2.0)
    f = s.refresh()
    i = row(f, 10)
    heads = [h.strip() for h in f.headers]
    got = dict(zip(heads, f.values[i].tolist(), strict=True))
    want = {
        "%HEAVY": 15.0,
        "%LIGHT": 40.0 - 15.0,  # retiring = heavy + light
        "%BRMIS": 6.0,
        "%CLEAR": 10.0 - 6.0,  # bad speculation = mispredicts + clears
        "%FLAT": 12.0,
        "%FBW": 20.0 - 12.0,  # front-end bound = latency + bandwidth
        "%MEM": 18.0,
        "%CORE": 30.0 - 18.0,  # back-end bound = memory + core
    }
    assert {k: got[k] for k in want} == pytest.approx(want)
    assert sum(want.values()) == pytest.approx(100.0)
    assert f.status[i].tolist() == [Status.OK] * 10
    # Level 1 as the sums: FE 20 > 15, BE 30 > 20 and retiring 40 (heavy operations 15 >
    # 10: tma_retiring's MetricThreshold) over; retiring the largest; of its children only
    # heavy operations is over (light 25 is not over 60): the path ends at RET/Heavy
    j = heads.index("BOTTLENECK")
    assert (f.node[i, j], got["BOTTLENECK"]) == (OFFSET + 11, pytest.approx(15.0))  # RET/Heavy


def test_level2_clamps_a_negative_difference_at_zero(env: FakeEnv) -> None:
    """8-bit rounding can leave a level-2 part a hair above its parent: the difference
    columns are clamped at 0 (spr-metrics.json ``max(0, ...)``), not shown negative."""
    fp, _ = env
    s, b = sampler(env, builtin("topdown2", "06_97"), HYBRID)
    fp.add(10, "app")
    script_slots(b, 10, {**FRAC, "topdown-br-mispredict": 0.11})  # > bad spec 0.10
    s.start()
    b.clock.advance(2.0)
    f = s.refresh()
    i = row(f, 10)
    heads = [h.strip() for h in f.headers]
    assert f.values[i, heads.index("%CLEAR")] == 0.0


def test_level2_refused_cleanly_where_the_pmu_has_level1_only(env: FakeEnv) -> None:
    """On an Ice Lake-like PMU (no topdown-heavy-ops...), the level-2 counters are refused
    one line each and their columns show '?'; the level-1 group still opens, slots first."""
    fp, _ = env
    s, b = sampler(env, builtin("topdown2", "06_8F"), INTEL)
    (g,) = s.plan.groups
    assert (g.attrs[0].type, g.attrs[0].config) == (CORE, SLOTS)
    assert s.plan.available.tolist() == [True] * 5 + [False] * 4 + [True]  # + UOP_DROPPING
    refused = [m for m in s.messages.lines() if "unknown event 'topdown-" in m]
    assert len(refused) == 4
    fp.add(10, "app")
    script_slots(b, 10, {k: FRAC[k] for k in list(FRAC)[:4]})
    s.start()
    b.clock.advance(2.0)
    f = s.refresh()
    assert (f.status[row(f, 10), 1:] == Status.UNREADABLE).all()


@pytest.mark.parametrize(("model", "sysfs"), [("06_7D", INTEL), ("06_97", HYBRID)])
def test_fp_assists_per_100_instructions(env: FakeEnv, model: str, sysfs: str) -> None:
    """ASSISTS.FP over instructions, both in one group: on a hybrid both on cpu_core, so
    the group's scaling cancels and the ratio is per P-core instruction."""
    fp, _ = env
    s, b = sampler(env, builtin("fp", model), sysfs)
    hw = [g for g in s.plan.groups if g.pmu != "software"]
    assert len(hw) == 1 and len(hw[0].attrs) == 3
    (ins, cyc) = ((CORE, 0xC0), (0, CORE << 32)) if sysfs == HYBRID else ((0, 1), (0, 0))
    fp.add(10, "app")
    b.script(10, cyc, 3e9)
    b.script(10, ins, 6e9)
    b.script(10, (CORE, ASSISTS_FP), 3e7)
    b.task(10).cpu_share = {CORE: 0.5, 8: 0.5}
    s.start()
    b.clock.advance(2.0)
    f = s.refresh()
    i = row(f, 10)
    got = {h.strip(): v for h, v in zip(f.headers, f.values[i].tolist(), strict=True)}
    assert (got["IPC"], got["%ASSIST"]) == pytest.approx((2.0, 0.5))
    # No instruction count on a hybrid: a cpu_core-only count is scaled by its group's
    # enabled/running, i.e. extrapolated over the E-core time; the ratios are not.
    assert ("Minstr" in got) == (sysfs == INTEL)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "i686", "i386"), reason="x86 cpuinfo")
@pytest.mark.parametrize(
    ("model", "variant"),
    [(126, "Ice Lake..Rocket Lake"), (143, "Sapphire Rapids+"), (151, "P-core"), (183, "P-core")],
)
def test_fake_cpuinfo_picks_the_variant(tmp_path: Path, model: int, variant: str) -> None:
    """/proc/cpuinfo's decimal family and model (Ice Lake-L 6/126, Sapphire Rapids 6/143,
    Alder Lake 6/151, Raptor Lake 6/183) as the command line reads them."""
    from tiptop.cli.screens import host_target

    info = tmp_path / "cpuinfo"
    info.write_text(
        f"processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: {model}\n"
    )
    s = {x.name: x for x in builtin_screens(host_target(str(info)))}
    desc = s["topdown2"].desc if variant == "Sapphire Rapids+" else s["topdown"].desc
    assert variant in desc
