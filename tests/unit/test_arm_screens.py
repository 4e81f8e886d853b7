"""Arm64 built-in screens, pinned without the hardware: the gating (on the model strings of
tests/unit/test_arm_target.py) of the Neoverse V1/N2/V2 slot variants and of the
architectural-event ones, the event encodings resolved against the fake Arm sysfs
(tests/data/sysfs/arm64: an ``armv8_pmuv3_0`` PMU of type 10 whose ``events/`` hold the
kernel's ``event=0x00NN`` aliases of a Neoverse V1-like CPU, and an ``arm_spe_0`` that is no
CPU PMU), and the level-1 arithmetic through the sampler on the fake backend."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.support import host_at
from tests.support.fake_backend import FakeBackend
from tests.support.sampling import fake_env, row
from tiptop.cells import Status
from tiptop.engine.sampler import Sampler, SamplerConfig
from tiptop.errors import EventError
from tiptop.events import resolve, sysfs
from tiptop.frame import Frame
from tiptop.host import Clock
from tiptop.screens import NamedEvent, ScreenSpec, Target, builtin_screens, compile_column
from tiptop.screens.bottleneck import OFFSET, is_path, parse_path

ARM_SYSFS = str(Path(__file__).resolve().parents[1] / "data" / "sysfs" / "arm64")
PMU_TYPE = 10  # tests/data/sysfs/arm64/.../armv8_pmuv3_0/type

#: Alias -> event number, from tools/perf/pmu-events/arch/arm64/common-and-microarch.json.
COMMON = {
    "cpu_cycles": 0x11,
    "inst_retired": 0x08,
    "stall_frontend": 0x23,
    "stall_backend": 0x24,
    "stall_slot": 0x3F,
    "stall_slot_frontend": 0x3E,
    "stall_slot_backend": 0x3D,
    "op_retired": 0x3A,
    "op_spec": 0x3B,
    "inst_spec": 0x1B,
    "br_mis_pred": 0x10,
    "l1d_cache": 0x04,
    "l1d_cache_refill": 0x03,
    "l2d_cache_refill": 0x17,
    "ll_cache_miss_rd": 0x37,
    "l1d_tlb_refill": 0x05,
}

V1, N2, V2 = Target("arm64", "41_D40"), Target("arm64", "41_D49"), Target("arm64", "41_D4F")
#: AmpereOne, AmpereOneX, HiSilicon hip08 (Kunpeng 920): the slot variants of their tables.
AMPERE_ONE, AMPERE_ONE_X, HIP08 = (Target("arm64", m) for m in ("C0_AC3", "C0_AC4", "48_D01"))
#: FETCH_BUBBLE, hip08's implementation-defined event (hisilicon/hip08/core-imp-def.json).
FETCH_BUBBLE = 0x2014
#: Neoverse N1 (Graviton2, Ampere Altra), Ampere eMAG, Cortex-A72, an unknown or unread part.
OTHER_ARM = [Target("arm64", m) for m in ("41_D0C", "50_000", "41_D08", "41_D8E")] + [
    Target("arm64", None)
]


def screen(target: Target, name: str) -> ScreenSpec:
    (s,) = [s for s in builtin_screens(target) if s.name == name]
    return s


def test_arm_pmu_aliases_resolve_to_its_type() -> None:
    for alias, code in COMMON.items():
        (b,) = resolve(alias, sysfs_root=ARM_SYSFS)
        assert (b.pmu, b.attr.type, b.attr.config, b.attr.config1) == (
            "armv8_pmuv3_0",
            PMU_TYPE,
            code,
            0,
        ), alias
    assert sysfs.alias_pmus(ARM_SYSFS) == ["armv8_pmuv3_0"]  # not arm_spe_0: no cpus file
    assert sysfs.core_pmus(ARM_SYSFS) == []  # generic events stay plain PERF_TYPE_HARDWARE
    (b,) = resolve("cycles", sysfs_root=ARM_SYSFS)
    assert (b.attr.type, b.attr.config) == (0, 0)


def test_an_event_the_cpu_lacks_says_why() -> None:
    with pytest.raises(EventError, match=r"l3d_cache: not an event of PMU armv8_pmuv3_0.*PMCEID"):
        resolve("l3d_cache", sysfs_root=ARM_SYSFS)


def test_big_little_alias_binds_on_each_core_pmu(tmp_path: Path) -> None:
    devices = tmp_path / "bus" / "event_source" / "devices"
    for name, type_, events in (
        ("armv8_cortex_a53", 8, {"cpu_cycles": "0x0011"}),
        ("armv8_cortex_a72", 9, {"cpu_cycles": "0x0011", "stall_frontend": "0x0023"}),
    ):
        (devices / name / "format").mkdir(parents=True)
        (devices / name / "events").mkdir()
        (devices / name / "type").write_text(f"{type_}\n")
        (devices / name / "cpus").write_text("0-3\n")
        (devices / name / "format" / "event").write_text("config:0-15\n")
        for e, code in events.items():
            (devices / name / "events" / e).write_text(f"event={code}\n")
    root = str(tmp_path)
    got = [(b.pmu, b.attr.type, b.attr.config) for b in resolve("cpu_cycles", sysfs_root=root)]
    assert got == [("armv8_cortex_a53", 8, 0x11), ("armv8_cortex_a72", 9, 0x11)]
    got = [(b.pmu, b.attr.type, b.attr.config) for b in resolve("stall_frontend", sysfs_root=root)]
    assert got == [("armv8_cortex_a72", 9, 0x23)]


@pytest.mark.parametrize(
    ("target", "width", "name"), [(V1, 8, "Neoverse V1"), (N2, 5, "Neoverse N2"), (V2, 8, "V2")]
)
def test_neoverse_slot_topdown_gating_and_width(target: Target, width: int, name: str) -> None:
    s = screen(target, "topdown")
    assert f"% of {width} slots" in s.desc and name in s.desc
    names = {c.alias: c.event for c in s.counters}
    expect = {
        "CYC": "cpu_cycles",
        "SS": "stall_slot",
        "SSF": "stall_slot_frontend",
        "SSB": "stall_slot_backend",
        "OPR": "op_retired",
        "OPS": "op_spec",
    }
    expect["BMP"] = "br_mis_pred"  # V1, and N2/V2 since neoverse-n2-v2/metrics.json's fix
    assert names == {a: NamedEvent(e) for a, e in expect.items()}
    assert all(f"({width}*delta(CYC))" in c.expr.replace(" ", "") for c in s.columns[1:-1])
    assert s.columns[-1].expr.startswith("bottleneck(neoverse:")


@pytest.mark.parametrize("target", OTHER_ARM)
def test_other_arm_cores_get_the_stall_cycles_variant(target: Target) -> None:
    s = screen(target, "topdown")
    assert "STALL_FRONTEND" in s.desc and "slot" in s.desc
    assert [c.event for c in s.counters] == [
        NamedEvent(n) for n in ("cpu_cycles", "inst_retired", "stall_frontend", "stall_backend")
    ]
    exprs = [c.expr.replace(" ", "") for c in s.columns]
    assert exprs == [
        "CPU_TOT",
        "delta(INS)/delta(CYC)",
        "100*delta(SF)/delta(CYC)",
        "100*delta(SB)/delta(CYC)",
    ]


@pytest.mark.parametrize("target", [V1, N2, V2, *OTHER_ARM])
def test_every_arm_core_gets_the_memory_screen(target: Target) -> None:
    s = screen(target, "memory")
    assert "Arm" in s.desc
    assert {c.event.name for c in s.counters if isinstance(c.event, NamedEvent)} == {
        "inst_retired",
        "l1d_cache",
        "l1d_cache_refill",
        "l2d_cache_refill",
        "ll_cache_miss_rd",
        "l1d_tlb_refill",
    }
    assert len(s.counters) <= 6  # one group within the six event counters: never multiplexed


@pytest.mark.parametrize("target", [Target("x86", "19_11"), Target("x86", "06_55"), Target()])
def test_other_machines_never_get_the_arm_variants(target: Target) -> None:
    for s in builtin_screens(target):
        assert "Arm" not in s.desc, (target, s.name)


def _evaluate(s: ScreenSpec, deltas: dict[str, float]) -> list[float]:
    env = {
        f"delta({k})": (np.array([v]), np.array([Status.OK], dtype=np.uint8))
        for k, v in deltas.items()
    }
    cols = [c for c in s.columns[1:] if not is_path(c.expr)]  # the bottleneck: below
    return [float(compile_column(c.expr).evaluate(env)[0][0]) for c in cols]


@pytest.mark.parametrize(("target", "width"), [(N2, 5), (V2, 8), (V1, 8)])
def test_slot_level1_sums_to_one(target: Target, width: int) -> None:
    """Every slot is retiring, bad speculation, front-end or back-end bound when the stalled
    slots split into front and back end (sbsa.json); per mispredict V1 moves 4 cycles of
    slots from the front end to bad speculation, N2/V2 1 from the front end and 3 from the
    back end (arm/neoverse-v1, neoverse-n2-v2/metrics.json)."""
    cyc, ssf, ssb = 1000.0, 900.0, 1500.0
    deltas = {"CYC": cyc, "SS": ssf + ssb, "SSF": ssf, "SSB": ssb, "OPR": 3000.0, "OPS": 3600.0}
    deltas["BMP"] = 20.0
    ret, bad, fe, be = _evaluate(screen(target, "topdown"), deltas)
    assert ret + bad + fe + be == pytest.approx(100.0)
    issued = 1 - (ssf + ssb) / (width * cyc)
    assert ret == pytest.approx(100 * 3000 / 3600 * issued)
    fe_moved, be_moved = (4, 0) if target == V1 else (1, 3)
    assert be == pytest.approx(100 * ssb / (width * cyc) - 100 * be_moved * 20 / cyc)
    assert fe == pytest.approx(100 * ssf / (width * cyc) - 100 * fe_moved * 20 / cyc)


def test_memory_columns() -> None:
    s = screen(OTHER_ARM[0], "memory")
    deltas = {"INS": 2e6, "L1D": 8e5, "L1DM": 4e4, "L2DM": 1e4, "LLM": 2e3, "DTLBM": 500.0}
    assert _evaluate(s, deltas) == pytest.approx([2.0, 5.0, 20.0, 5.0, 1.0, 0.25])


#: Events' rates a second, by common event name or raw config (implementation defined).
Rates = dict[str | int, float]


def _config(event: str | int) -> int:
    """An event's config on the Arm PMU: a common event's by name, else the raw one."""
    return event if isinstance(event, int) else COMMON[event]


def _sampler(
    tmp_path: Path, sysfs_root: str, rates: Rates, target: Target = V1
) -> tuple[FakeBackend, Sampler, Frame]:
    """The Arm screen of ``target`` over the FAKE PMU, one 2 s refresh of a task counting
    ``rates`` a second: by common event name, or by raw config (implementation defined)."""
    fp, b = fake_env(tmp_path)
    fp.add(100, "compute", processor=1)
    for event, rate in rates.items():
        b.script(100, (PMU_TYPE, _config(event)), rate)
    b.max_group_size[PMU_TYPE] = 7  # six event counters and the cycle counter
    host = host_at(str(fp.root), sysfs_root, clock=Clock(monotonic=b.clock))
    sampler = Sampler(screen(target, "topdown"), SamplerConfig(), backend=b, host=host)
    sampler.start()
    b.clock.advance(2.0)
    fp.set_stat(100, "compute", utime=180, stime=20, processor=1)
    return b, sampler, sampler.refresh()


V1_RATES: Rates = {
    "cpu_cycles": 1e9,
    "stall_slot": 3e9,
    "stall_slot_frontend": 1e9,
    "stall_slot_backend": 2e9,
    "op_retired": 4e9,
    "op_spec": 5e9,
    "br_mis_pred": 1e7,
}


def test_neoverse_v1_topdown_through_the_sampler(tmp_path: Path) -> None:
    """8e9 slots/s, 3e9 of them stalled: retiring 4/5 x 5/8 = 50 %, bad speculation
    1/5 x 5/8 + 4 x 1e7/1e9 = 16.5 %, front end 1/8 - 4 % = 8.5 %, back end 2/8 = 25 %;
    the seven events in one group on the Arm PMU's type."""
    run = _sampler(tmp_path, ARM_SYSFS, V1_RATES)
    # BAD and BE are over their bounds (15%, 20%); BE (the tree's node 2) has the larger share
    _one_group_level1(run, [50.0, 16.5, 8.5, 25.0], (2, 25.0), [_config(e) for e in V1_RATES])


def _one_group_level1(
    run: tuple, values: list[float], bottleneck: tuple[int, float], configs: list[int]
) -> None:
    """Task 100's level 1 (``values``) and bottleneck cell (the tree's node, share) in a
    ``run`` of :func:`_sampler`, every cell OK, its events (``configs``) in one group on the
    Arm PMU."""
    b, sampler, frame = run
    i = row(frame, 100)
    assert list(frame.status[i]) == [Status.OK] * 6, sampler.messages.lines()
    np.testing.assert_allclose(frame.values[i, 1:5], values)
    node, share = bottleneck
    assert (frame.node[i, 5], frame.values[i, 5]) == (OFFSET + node, pytest.approx(share))
    groups = [attrs for tid, attrs in b.opens if tid == 100]
    assert len(groups) == 1 and {a.type for a in groups[0]} == {PMU_TYPE}
    assert sorted(a.config for a in groups[0]) == sorted(configs)
    sampler.close()


def test_missing_arm_event_gives_question_marks_and_the_reason(tmp_path: Path) -> None:
    """A CPU without STALL_SLOT (no events/stall_slot): retiring and bad speculation show '?',
    one line says why, the front- and back-end columns still count."""
    root = tmp_path / "sys"
    shutil.copytree(ARM_SYSFS, root)
    (root / "bus/event_source/devices/armv8_pmuv3_0/events/stall_slot").unlink()
    rates: Rates = {k: v for k, v in V1_RATES.items() if k != "stall_slot"}
    _b, sampler, frame = _sampler(tmp_path, str(root), rates)
    i = row(frame, 100)
    assert list(frame.status[i, 1:3]) == [Status.UNREADABLE] * 2  # shown as "?"
    np.testing.assert_allclose(frame.values[i, 3:5], [8.5, 25.0])
    assert frame.status[i, 5] == Status.UNREADABLE  # the bottleneck reads '?' too
    said = [m for m in sampler.messages.lines() if "stall_slot" in m]
    assert len(said) == 1 and "not an event of PMU armv8_pmuv3_0" in said[0], said
    sampler.close()


@pytest.mark.parametrize(
    ("target", "name", "tree"),
    [
        (AMPERE_ONE, "AmpereOne", "ampere"),
        (AMPERE_ONE_X, "AmpereOneX", "ampere"),
        (HIP08, "hip08", "hip08"),
    ],
)
def test_ampere_one_and_hip08_get_their_slot_topdown(target: Target, name: str, tree: str) -> None:
    """4 slots per cycle, the tables' level 1 (ampere/ampereone*/, hisilicon/hip08/
    metrics.json), their own tree; 3 event counters and the cycle counter."""
    s = screen(target, "topdown")
    assert "% of 4 slots" in s.desc and name in s.desc
    assert s.columns[-1].expr.startswith(f"bottleneck({tree}:")
    assert all("(4*delta(CYC))" in c.expr.replace(" ", "") for c in s.columns[1:5])
    assert len(s.counters) == 4 and s.breakdown == ("%RET", "%BADS", "%FE", "%BE")


def test_ampere_one_level1_worked_case() -> None:
    """4000 slots: 1600 ops retired of 2000 speculated, 1200 slots stalled in the back end:
    retiring 40 %, bad speculation 10 %, back end 30 %, front end the rest, 20 %."""
    deltas = {"CYC": 1000.0, "OPR": 1600.0, "OPS": 2000.0, "SSB": 1200.0}
    assert _evaluate(screen(AMPERE_ONE, "topdown"), deltas) == pytest.approx([40, 10, 20, 30])


def test_hip08_fetch_bubble_is_the_raw_event_on_the_arm_pmu() -> None:
    """Not among events/ (implementation defined): armv8_pmuv3_0's event term, config 0x2014
    on the PMU's own type, so it joins the common events' group."""
    (b,) = resolve("armv8_pmuv3_0/event=0x2014/", sysfs_root=ARM_SYSFS)
    assert (b.pmu, b.attr.type, b.attr.config) == ("armv8_pmuv3_0", PMU_TYPE, FETCH_BUBBLE)
    assert screen(HIP08, "topdown").counter("FB").event == NamedEvent("armv8_pmuv3_0/event=0x2014/")


def test_hip08_topdown_through_the_sampler(tmp_path: Path) -> None:
    """4e9 slots/s: 1.6e9 instructions retired of 2e9 speculated, 0.8e9 fetch bubbles:
    retiring 40 %, bad speculation 10 %, front end 20 %, back end the rest, 30 %; one group."""
    rates: Rates = {"cpu_cycles": 1e9, "inst_retired": 1.6e9, "inst_spec": 2e9, FETCH_BUBBLE: 0.8e9}
    run = _sampler(tmp_path, ARM_SYSFS, rates, HIP08)
    # FE (20 > 15) and BE (30 > 20) over their bounds: BE (the tree's node 2), the larger
    _one_group_level1(run, [40.0, 10.0, 20.0, 30.0], (2, 30.0), [0x08, 0x11, 0x1B, FETCH_BUBBLE])


#: Neoverse N2 at each MIDR revision before r0p3, and from it (r0p3, r1p0, unread).
N2_EARLY = [Target("arm64", "41_D49", r) for r in (0x00, 0x01, 0x02)]
N2_LATE = [Target("arm64", "41_D49", r) for r in (0x03, 0x10, None)]


@pytest.mark.parametrize("target", N2_EARLY + N2_LATE)
def test_neoverse_n2_variant_by_revision(target: Target) -> None:
    """r0p0-r0p2 get perf's corrected STALL_SLOT and STALL_SLOT_FRONTEND (less one slot per
    cycle, neoverse-n2-v2/metrics.json's strcmp_cpuid_str(0x410fd493)); r0p3 and later, and
    an N2 whose revision is unread, the table's default form."""
    s = screen(target, "topdown")
    exprs = [c.expr.replace(" ", "") for c in s.columns[1:5]]
    early = target in N2_EARLY
    assert ("r0p0-r0p2" in s.desc) is early and ("r0p3 and later" in s.desc) is not early
    corrected = ["(delta(SS)-delta(CYC))", "(delta(SS)-delta(CYC))", "(delta(SSF)-delta(CYC))"]
    for expr, term in zip(exprs, corrected, strict=False):
        assert (term in expr) is early, (target, expr)
    assert exprs[3] == "100*(delta(SSB)/(5*delta(CYC))-3*delta(BMP)/delta(CYC))"


def test_neoverse_n2_r0p2_worked_case() -> None:
    """The issue's case: on an r0p2 the erratum adds one slot per cycle to STALL_SLOT and
    STALL_SLOT_FRONTEND. True shares: retiring 63 %, front end 12 %, back end 25 %; the
    r0p3 formula reads the front end 20 points high (32 %) and names FE, the r0p2 variant
    names BE 25 % as perf does. Both sum to 100."""
    from tests.unit.test_bottleneck import evaluate

    cyc, ssf, ssb = 1000.0, 600.0 + 1000.0, 1250.0  # 5000 slots; the erratum's 1000 in SSF
    deltas = {"CYC": cyc, "SS": ssf + ssb, "SSF": ssf, "SSB": ssb, "OPR": 1e4, "OPS": 1e4}
    deltas["BMP"] = 0.0
    late, early = screen(N2_LATE[0], "topdown"), screen(N2_EARLY[2], "topdown")
    assert _evaluate(late, deltas) == pytest.approx([43.0, 0.0, 32.0, 25.0])
    assert _evaluate(early, deltas) == pytest.approx([63.0, 0.0, 12.0, 25.0])
    for s, want in ((late, ("FE", 32.0)), (early, ("BE", 25.0))):
        share, _status, _running, idx = evaluate(s, deltas)
        labels = parse_path(s.columns[-1].expr).labels
        assert labels[idx] == want[0] and share == pytest.approx(want[1])
