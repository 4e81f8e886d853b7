"""AMD Zen 1 to Zen 5 (and Hygon) built-in screens (tiptop/screens/builtin/amd.yaml),
pinned without the hardware: the CPU gating (family and model ranges as
arch/x86/kernel/cpu/amd.c assigns Zen generations; Hygon's family 18h with Zen 1), the
event encodings from the kernel's tools/perf/pmu-events/arch/x86/amdzen* tables resolved
against the fake AMD sysfs (tests/data/sysfs/amd: event=config:0-7,32-35,
umask=config:8-15, cmask=config:24-31) to exact config words, the slot widths, what the
columns compute, and how many of the 6 core counters each screen takes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from tests.support import host_at
from tests.support.fake_backend import FakeBackend, FakeGroup
from tiptop.cells import Status
from tiptop.engine.count.plan import Planner
from tiptop.events import resolve
from tiptop.kernel.attr import Attr
from tiptop.messages import MessageLog
from tiptop.screens import NamedEvent, ScreenSpec, Target, builtin_screens, compile_column
from tiptop.screens.bottleneck import is_path

AMD_SYSFS = str(Path(__file__).resolve().parents[1] / "data" / "sysfs" / "amd")

#: Models of each generation, every range end of amd.c included.
ZEN = {
    #: Zen 1 (17_01: the generic "AMD EPYC" of hypervisors) and Hygon's family 18h.
    1: ["17_00", "17_01", "17_2F", "17_50", "17_5F", "18_00", "18_01", "18_FF"],
    2: ["17_30", "17_31", "17_4F", "17_60", "17_71", "17_7F", "17_90", "17_91", "17_A0", "17_AF"],
    3: ["19_00", "19_01", "19_0F", "19_20", "19_21", "19_50", "19_5F"],
    4: ["19_10", "19_11", "19_1F", "19_60", "19_61", "19_74", "19_A0", "19_AF"],
    5: ["1A_00", "1A_02", "1A_11", "1A_2F", "1A_40", "1A_44", "1A_4F", "1A_60", "1A_70", "1A_7F"],
}
#: One model past each range end, Zen 6 (1A_50, 1A_90) and models amd.c does not name:
#: the generic variants.
OTHERS = [
    "17_80",
    "17_8F",
    "17_92",
    "17_9F",
    "17_B0",
    "19_B0",
    "1A_30",
    "1A_3F",
    "1A_50",
    "1A_5F",
    "1A_80",
    "1A_90",
    "1A_FF",
    "16_00",
    "1B_00",
]

AMD_SCREENS = ("fp", "topdown", "topdown2", "memory")

#: Hand-computed encodings: text -> (perf type, config word) on the fake AMD core PMU (type 4).
INSTRUCTIONS = ("instructions", (0, 1))  # PERF_COUNT_HW_INSTRUCTIONS


def cpu(text: str, word: int) -> tuple[str, tuple[int, int]]:
    return (f"cpu/{text}/", (4, word))


CYC, RET = cpu("event=0x76", 0x76), cpu("event=0xc1", 0xC1)
UC = cpu("event=0x1c2", 0x1_0000_00C2)
SLOTS = {  # de_src_op_disp.all, de_no_dispatch_per_slot.*
    "DISP": cpu("event=0xaa,umask=0x07", 0x07AA),
    "FE": cpu("event=0x1a0,umask=0x01", 0x1_0000_01A0),
    "BE": cpu("event=0x1a0,umask=0x1e", 0x1_0000_1EA0),
}
L1_ZEN45 = {"CYC": CYC, "RET": RET, **SLOTS, "SMT": cpu("event=0x1a0,umask=0x60", 0x1_0000_60A0)}
QE = cpu("event=0xa9", 0xA9)


def l2(width: int, resync: tuple[str, tuple[int, int]]) -> dict[str, tuple[str, tuple[int, int]]]:
    return {
        "CYC": CYC,
        "RET": RET,
        "UC": UC,
        "DISP": SLOTS["DISP"],
        "MISP": cpu("event=0xc3", 0xC3),
        "RSY": resync,
        "CYC2": CYC,
        "FEL": cpu(f"event=0x1a0,umask=0x01,cmask={width:#x}", 0x1_0000_01A0 | width << 24),
        "FE": SLOTS["FE"],
        "BE": SLOTS["BE"],
        "LNC": cpu("event=0xd6,umask=0xa2", 0xA2D6),
        "NC": cpu("event=0xd6,umask=0x02", 0x02D6),
    }


def mem(l1m: int) -> dict[str, tuple[str, tuple[int, int]]]:
    return {
        "I": INSTRUCTIONS,
        "L1M": cpu(f"event=0x60,umask={l1m:#04x}", l1m << 8 | 0x60),
        "L2M": cpu("event=0x64,umask=0x08", 0x0864),
        "XCC": cpu("event=0x44,umask=0x14", 0x1444),
        "DRAM": cpu("event=0x44,umask=0x48", 0x4844),
    }


FLT = cpu("event=0x0e,umask=0x0e", 0x0E0E)
FLOPS_ALL = cpu("event=0x03,umask=0xff", 0xFF03)
ENCODINGS: dict[tuple[str, int], dict[str, tuple[str, tuple[int, int]]]] = {
    ("topdown", 2): {
        "CYC": CYC,
        "RET": RET,
        "DISP": cpu("event=0xaa,umask=0x03", 0x03AA),
        "QE": QE,
    },
    ("topdown", 3): {
        "CYC": CYC,
        "RET": RET,
        "DINT": cpu("event=0xab,umask=0x08", 0x08AB),
        "DFP": cpu("event=0xab,umask=0x04", 0x04AB),
        "QE": QE,
    },
    ("topdown", 4): L1_ZEN45,
    ("topdown", 5): L1_ZEN45,
    ("topdown2", 4): l2(6, cpu("event=0x96", 0x96)),
    ("topdown2", 5): l2(8, cpu("event=0x9f,umask=0x01", 0x019F)),
    ("fp", 1): {"I": INSTRUCTIONS, "FLOP": FLOPS_ALL, "FLT": FLT},
    ("fp", 2): {"I": INSTRUCTIONS, "FLOP": FLOPS_ALL, "FLT": FLT},
    ("fp", 3): {"I": INSTRUCTIONS, "FLOP": FLOPS_ALL, "FLT": FLT},
    ("fp", 4): {
        "I": INSTRUCTIONS,
        "FLOP": cpu("event=0x03,umask=0x1f", 0x1F03),
        "FLT": FLT,
        "SER": cpu("event=0x05,umask=0x0f", 0x0F05),
        "UC": UC,
    },
    ("fp", 5): {
        "I": INSTRUCTIONS,
        "FLOP": cpu("event=0x03,umask=0x0f", 0x0F03),
        "FLT": FLT,
        "UC": UC,
    },
    ("memory", 1): {k: v for k, v in mem(0xC8).items() if k in ("I", "L1M", "L2M")},
    ("memory", 2): {
        **{k: v for k, v in mem(0xC8).items() if k in ("I", "L1M", "L2M")},
        "LDR": cpu("event=0x43,umask=0x08", 0x0843),
        "RDR": cpu("event=0x43,umask=0x40", 0x4043),
    },
    ("memory", 3): mem(0xE8),
    ("memory", 4): mem(0xE8),
    ("memory", 5): mem(0xE0),
}


def screens(model: str) -> dict[str, ScreenSpec]:
    return {s.name: s for s in builtin_screens(Target("x86", model))}


def evaluate(screen: ScreenSpec, deltas: dict[str, float]) -> dict[str, float]:
    """Each column (but those of built-in variables such as %CPU) on one row of deltas."""
    env = {
        f"delta({k})": (np.array([v]), np.array([Status.OK], dtype=np.uint8))
        for k, v in deltas.items()
    }
    out = {}
    for c in screen.columns:
        expr = compile_column(c.expr)
        if not expr.builtins and not is_path(c.expr):  # the bottleneck: test_bottleneck.py
            out[c.header.strip()] = float(expr.evaluate(env)[0][0])
    return out


@pytest.mark.parametrize("gen", sorted(ZEN))
def test_each_zen_generation_picks_its_variants(gen: int) -> None:
    for model in ZEN[gen]:
        got = screens(model)
        want = [n for n in AMD_SCREENS if (n, gen) in ENCODINGS]
        if gen == 1:  # no pipeline metrics in amdzen1: the generic topdown
            assert "AMD" not in got["topdown"].desc
            want = [n for n in AMD_SCREENS if n == "topdown" or (n, gen) in ENCODINGS]
        assert [n for n in got if n in AMD_SCREENS] == want or gen == 1, model
        assert sorted(n for n in got if n in AMD_SCREENS) == sorted(want), model
        for name in (n for n in want if (n, gen) in ENCODINGS):
            # the description, then the deviations said after it (Hygon on Zen 1)
            assert got[name].desc.split(" [")[0].endswith(f"AMD Zen {gen})"), (model, name)


@pytest.mark.parametrize("model", OTHERS)
def test_other_amd_models_get_the_generic_screens(model: str) -> None:
    got = screens(model)
    assert list(got) == ["default", "branch", "cache", "topdown", "sched", "state"]
    assert "AMD" not in got["topdown"].desc
    assert [c.event for c in got["topdown"].counters] == [
        NamedEvent(n)
        for n in ("cycles", "instructions", "stalled-cycles-frontend", "stalled-cycles-backend")
    ]


@pytest.mark.parametrize(("name", "gen"), sorted(ENCODINGS))
def test_encodings_resolve_to_the_config_words(name: str, gen: int) -> None:
    want = ENCODINGS[(name, gen)]
    for model in (ZEN[gen][0], ZEN[gen][-1]):
        s = screens(model)[name]
        assert {c.alias: c.event for c in s.counters} == {
            a: NamedEvent(text) for a, (text, _) in want.items()
        }, model
    for alias, (text, word) in want.items():
        (b,) = resolve(text, sysfs_root=AMD_SYSFS)
        assert (b.attr.type, b.attr.config) == word, (name, gen, alias)


def counters_needed(screen: ScreenSpec) -> int:
    """Core counters a screen's events take together: fp_ret_sse_avx_ops (event 0x03) takes
    an even/odd pair (arch/x86/events/amd/core.c, amd_is_pair_event_code)."""
    words = [resolve(c.event.name, sysfs_root=AMD_SYSFS)[0].attr for c in screen.counters]  # type: ignore[union-attr]
    return sum(2 if a.type == 4 and a.config & 0xF_0000_00FF == 0x03 else 1 for a in words)


@pytest.mark.parametrize(
    ("name", "gen", "needed"),
    [
        ("topdown", 2, 4),
        ("topdown", 3, 5),
        ("topdown", 4, 6),
        ("topdown", 5, 6),
        ("fp", 1, 4),
        ("fp", 2, 4),
        ("fp", 3, 4),
        ("fp", 4, 6),
        ("fp", 5, 5),
        ("memory", 1, 3),
        ("memory", 2, 5),
        ("memory", 3, 5),
        ("memory", 4, 5),
        ("memory", 5, 5),
        ("topdown2", 4, 12),
        ("topdown2", 5, 12),
    ],
)
def test_counters_each_screen_takes(name: str, gen: int, needed: int) -> None:
    assert counters_needed(screens(ZEN[gen][0])[name]) == needed


@pytest.mark.parametrize("gen", [4, 5])
def test_topdown2_packs_into_two_whole_groups_on_six_counters(gen: int) -> None:
    """12 events on a 6-counter PMU: two groups, each holding whole columns, so that every
    column is a ratio of counts of one group (tiptop/engine/count/plan.py packing)."""
    s = screens(ZEN[gen][0])["topdown2"]
    backend = FakeBackend()
    backend.max_group_size[4] = 6
    plan = Planner(
        backend, host_at("/proc", AMD_SYSFS), MessageLog(), threads=False, kernel=False
    ).plan(s)
    groups = [{plan.plan.aliases[j] for j in g.alias_index} for g in plan.plan.groups]
    assert groups == [
        {"CYC", "RET", "UC", "DISP", "MISP", "RSY"},
        {"CYC2", "FEL", "FE", "BE", "LNC", "NC"},
    ]
    for c in s.columns:
        used = compile_column(c.expr).aliases
        assert any(used <= g for g in groups), c.header


@pytest.mark.parametrize("gen", [4, 5])
def test_the_groups_opened_per_task_hold_the_attrs_that_were_tried(gen: int) -> None:
    """The plan's groups hold the very Attr objects its packing tried on ourselves, so that
    the open memo (kernel.group.OpenedAttrs) matches each task's group to its key by
    identity, not by comparing 25 fields per attr, five attrs per task."""
    tried: list[Attr] = []

    class Recording(FakeBackend):
        def open_group(self, tid: int, attrs: Sequence[Attr]) -> FakeGroup:
            group = super().open_group(tid, attrs)
            tried.extend(attrs)
            return group

    backend = Recording()
    backend.max_group_size[4] = 6
    plan = Planner(
        backend, host_at("/proc", AMD_SYSFS), MessageLog(), threads=False, kernel=False
    ).plan(screens(ZEN[gen][0])["topdown2"])
    assert len(plan.plan.groups) == 2
    opened = {id(a) for a in tried}
    assert all(id(a) in opened for g in plan.plan.groups for a in g.attrs)


#: Counts that add up: width * cycles = dispatched + front-end + back-end + SMT slots.
CYCLES, RETIRED, DISPATCHED, FE_SLOTS, SMT_SLOTS = 1000.0, 2500.0, 2900.0, 700.0, 300.0
UCODE, MISPREDICTS, RESYNCS, FE_ALL_EMPTY, LOAD_NC, NOT_COMPLETE = 400, 30, 10, 50, 120, 200


def counts(width: int) -> dict[str, float]:
    be = width * CYCLES - DISPATCHED - FE_SLOTS - SMT_SLOTS
    return {
        "CYC": CYCLES,
        "CYC2": CYCLES,
        "RET": RETIRED,
        "DISP": DISPATCHED,
        "FE": FE_SLOTS,
        "BE": be,
        "SMT": SMT_SLOTS,
        "UC": UCODE,
        "MISP": MISPREDICTS,
        "RSY": RESYNCS,
        "FEL": FE_ALL_EMPTY,
        "LNC": LOAD_NC,
        "NC": NOT_COMPLETE,
    }


@pytest.mark.parametrize(("gen", "width"), [(4, 6), (5, 8)])
def test_level1_parts_sum_to_one(gen: int, width: int) -> None:
    got = evaluate(screens(ZEN[gen][0])["topdown"], counts(width))
    assert sum(got.values()) == pytest.approx(100.0)
    slots = width * CYCLES
    backend = slots - DISPATCHED - FE_SLOTS - SMT_SLOTS
    assert got == pytest.approx(
        {
            "%RET": 100 * RETIRED / slots,
            "%BADS": 100 * (DISPATCHED - RETIRED) / slots,
            "%FE": 100 * FE_SLOTS / slots,
            "%BE": 100 * backend / slots,
            "%SMT": 100 * SMT_SLOTS / slots,
        }
    )


@pytest.mark.parametrize(("gen", "width"), [(4, 6), (5, 8)])
def test_level2_parts_sum_to_their_level1_parent(gen: int, width: int) -> None:
    s = screens(ZEN[gen][0])
    one, two = evaluate(s["topdown"], counts(width)), evaluate(s["topdown2"], counts(width))
    assert two["%FASTP"] + two["%UCODE"] == pytest.approx(one["%RET"])
    assert two["%MISP"] + two["%RSYNC"] == pytest.approx(one["%BADS"])
    assert two["%FELAT"] + two["%FEBW"] == pytest.approx(one["%FE"])
    assert two["%BEMEM"] + two["%BECPU"] == pytest.approx(one["%BE"])
    assert sum(two.values()) + one["%SMT"] == pytest.approx(100.0)
    # The splits themselves (pipeline.json): latency = cycles with all slots empty / cycles.
    assert two["%FELAT"] == pytest.approx(100 * FE_ALL_EMPTY / CYCLES)
    assert two["%UCODE"] == pytest.approx(100 * UCODE / (width * CYCLES))
    assert two["%MISP"] == pytest.approx(one["%BADS"] * 30 / 40)
    assert two["%BEMEM"] == pytest.approx(one["%BE"] * 120 / 200)


@pytest.mark.parametrize("gen", [2, 3])
def test_zen2_zen3_topdown_is_ops_and_cycles(gen: int) -> None:
    disp = {"DISP": 900.0} if gen == 2 else {"DINT": 700.0, "DFP": 200.0}
    got = evaluate(
        screens(ZEN[gen][0])["topdown"], {"CYC": 1000.0, "RET": 810.0, "QE": 150.0, **disp}
    )
    assert got == pytest.approx({"OPC": 0.81, "%NORET": 10.0, "%OPQE": 15.0})


def test_fp_and_memory_columns() -> None:
    zen4 = screens(ZEN[4][0])
    got = evaluate(zen4["fp"], {"I": 2e6, "FLOP": 3e6, "FLT": 4e3, "SER": 2e3, "UC": 1e4})
    assert got == pytest.approx(
        {"Minstr": 2.0, "FLOP/I": 1.5, "%SAVXF": 0.2, "%SERZ": 0.1, "%UCODE": 0.5}
    )
    deltas = {"I": 1e6, "L1M": 3e4, "L2M": 1e4, "XCC": 1e3, "DRAM": 4e3}
    got = evaluate(zen4["memory"], deltas)
    assert got == pytest.approx(
        {"Minstr": 1.0, "L1DMISS": 3.0, "L2MISS": 1.0, "L3MISS": 0.5, "DRAM": 0.4}
    )
    zen1 = screens(ZEN[1][1])["memory"]  # 17_01
    got = evaluate(zen1, {"I": 1e6, "L1M": 3e4, "L2M": 1e4})
    assert got == pytest.approx({"Minstr": 1.0, "L1DMISS": 3.0, "L2MISS": 1.0})
    zen2 = screens(ZEN[2][0])["memory"]
    got = evaluate(zen2, {"I": 1e6, "L1M": 3e4, "L2M": 1e4, "LDR": 3e3, "RDR": 1e3})
    assert got == pytest.approx({"Minstr": 1.0, "L1DMISS": 3.0, "L2MISS": 1.0, "DRAM": 0.4})
