"""Every counter-reading column of every built-in screen that names no vendor metric, on
fixed counts: its value, written out here from the column's description and its source (the
original's screens, the YAML comments), not read from its expression. A column that names a
metric (``table_metric``) is checked against the kernel's tables instead
(tests/unit/test_oracle_screens.py); between the two, a change of one event in any column
fails a test, which tests/mutate_columns.py checks by making such changes. No PMU needed."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from tiptop.cells import STATUS_DTYPE
from tiptop.screens.build import RawScreen
from tiptop.screens.builtin_data import SCREENS
from tiptop.screens.expr import compile_column
from tiptop.screens.model import delta_key

#: A column's value from the counts (and ``INTERVAL``, seconds) of one row.
Want = Callable[[dict[str, float]], float]


def _variant_id(fname: str, raw: RawScreen) -> str:
    """``file:name:first-model`` (``any`` for an ungated variant), as the oracle tests."""
    first = (raw.model or "any").split(";")[0].split("-")[0]
    return f"{fname}:{raw.name}:{first}"


VARIANTS = {_variant_id(f, r): r for f, rs in SCREENS.items() for r in rs}

#: Counts that no two events share, and far apart, so that reading one event for another
#: moves every ratio; each variant's counters take them in order.
SPREAD = (2.3e9, 1.7e9, 3.1e8, 4.7e7, 5.9e6, 6.1e5, 7.3e4, 8.9e3, 9.7e2, 1.13e2)


def spread(raw: RawScreen, **given: float) -> dict[str, float]:
    """Each counter of ``raw`` at its :data:`SPREAD` count (``given`` ones as given)."""
    aliases = dict.fromkeys(i.attrs["alias"] for i in raw.items if i.kind == "counter")
    counts = dict(zip(aliases, SPREAD, strict=False))
    return {**counts, **given, "INTERVAL": 2.0}


def pct(a: float, b: float) -> float:
    return 100 * a / b


#: The original's first columns over cycles ``C`` and instructions ``I``.
CYCLES_INSTRUCTIONS: dict[str, Want] = {
    "Mcycle": lambda c: c["C"] / 1e6,
    "Minstr": lambda c: c["I"] / 1e6,
    "IPC": lambda c: c["I"] / c["C"],
}

#: Per variant: extra count sets (keyword counts on top of :func:`spread`) where a column's
#: clamp would hide a change, and each column's value.
CASES: dict[str, tuple[list[dict[str, float]], dict[str, Want]]] = {
    "default.yaml:default:any": (
        [],
        {
            "Mcycle": lambda c: c["CYCLE"] / 1e6,
            "Minstr": lambda c: c["INSN"] / 1e6,
            "IPC": lambda c: c["INSN"] / c["CYCLE"],
            "%MISS": lambda c: pct(c["MISS"], c["INSN"]),
            "%BMIS": lambda c: pct(c["BR"], c["INSN"]),
            "%BUS": lambda c: c["BUS"] / c["INSN"],
        },
    ),
    "branch.yaml:branch:any": (
        [],
        {
            "%MIS/I": lambda c: pct(c["BMISS"], c["INSTR"]),
            "%MISP": lambda c: pct(c["BMISS"], c["BR"]),
            "%BR/I": lambda c: pct(c["BR"], c["INSTR"]),
        },
    ),
    "original-x86.yaml:uOps:06_2A": (
        [],
        {
            **CYCLES_INSTRUCTIONS,
            "Muops": lambda c: c["UOP"] / 1e6,
            "uPI": lambda c: c["UOP"] / c["I"],
            "macrof": lambda c: c["MACROF"] / c["I"],
        },
    ),
    "original-x86.yaml:FP:06_2A": (
        [],
        {
            **CYCLES_INSTRUCTIONS,
            "%x87": lambda c: pct(c["x87"], c["I"]),
            "SSES": lambda c: pct(c["sp"], c["I"]),
            "SSED": lambda c: pct(c["dp"], c["I"]),
            "%assist": lambda c: pct(c["Assist"], c["I"]),
        },
    ),
    "original-x86.yaml:mem:06_2A": (
        [],
        {
            "I(M)": lambda c: c["I"] / 1e6,
            "L1iMiss": lambda c: c["L1MissI"],
            "L1i": lambda c: pct(c["L1MissI"], c["I"]),
            "L2iMiss": lambda c: c["L2MissI"],
            "L2i": lambda c: pct(c["L2MissI"], c["I"]),
            "L2dMiss": lambda c: c["L2MissD"],
            "L2d": lambda c: pct(c["L2MissD"], c["I"]),
            "L3Miss": lambda c: c["L3Miss"],
            "L3": lambda c: pct(c["L3Miss"], c["I"]),
        },
    ),
    "original-x86.yaml:imix:06_1A": (
        [],
        {
            **CYCLES_INSTRUCTIONS,
            "%LD/I": lambda c: pct(c["LD"], c["I"]),
            "%ST/I": lambda c: pct(c["ST"], c["I"]),
            "%FP/I": lambda c: pct(c["x87"], c["I"]),
            "%BR/I": lambda c: pct(c["brr"], c["I"]),
        },
    ),
    "fp.yaml:fp:06_1A": (
        [],
        {
            "Minstr": CYCLES_INSTRUCTIONS["Minstr"],
            "IPC": CYCLES_INSTRUCTIONS["IPC"],
            "%ASSIST": lambda c: pct(c["A"], c["I"]),
        },
    ),
    "fp.yaml:fp:06_2A": ([], {"%ASSIST": lambda c: pct(c["A"], c["I"])}),
    "cache.yaml:cache:any": (
        [],
        {
            "Minstr": lambda c: c["I"] / 1e6,
            "L1DMISS": lambda c: pct(c["L1M"], c["I"]),
            "LLCMISS": lambda c: pct(c["LLCM"], c["I"]),
        },
    ),
    "amd.yaml:fp:19_10": (
        [],
        {
            "Minstr": lambda c: c["I"] / 1e6,
            "FLOP/I": lambda c: c["FLOP"] / c["I"],
            "%SERZ": lambda c: pct(c["SER"], c["I"]),
            "%UCODE": lambda c: pct(c["UC"], c["I"]),
        },
    ),
    "amd.yaml:fp:1A_00": (
        [],
        {
            "Minstr": lambda c: c["I"] / 1e6,
            "FLOP/I": lambda c: c["FLOP"] / c["I"],
            "%UCODE": lambda c: pct(c["UC"], c["I"]),
        },
    ),
    **{
        f"amd.yaml:fp:{first}": (
            [],
            {
                "Minstr": lambda c: c["I"] / 1e6,
                "FLOP/I": lambda c: c["FLOP"] / c["I"],
                "%SAVXF": lambda c: pct(c["FLT"], c["I"]),
            },
        )
        for first in ("19_00", "17_30", "17_00")  # Zen 3, Zen 2, Zen 1: sse_avx_stalls
    },
    "amd.yaml:topdown:19_00": (
        [],
        {
            "OPC": lambda c: c["RET"] / c["CYC"],
            "%OPQE": lambda c: pct(c["QE"], c["CYC"]),
        },
    ),
    "amd.yaml:topdown:17_30": (
        [],
        {
            "OPC": lambda c: c["RET"] / c["CYC"],
            "%NORET": lambda c: 100 * (1 - c["RET"] / c["DISP"]),
            "%OPQE": lambda c: pct(c["QE"], c["CYC"]),
        },
    ),
    **{
        f"amd.yaml:memory:{first}": ([], {"Minstr": lambda c: c["I"] / 1e6})
        for first in ("19_10", "1A_00")  # Zen 4, Zen 5: the rest name their metrics
    },
    "amd.yaml:memory:19_00": (
        [],
        {
            "Minstr": lambda c: c["I"] / 1e6,
            "L1DMISS": lambda c: pct(c["L1M"], c["I"]),
            "L2MISS": lambda c: pct(c["L2M"], c["I"]),
            "L3MISS": lambda c: pct(c["XCC"] + c["DRAM"], c["I"]),
            "DRAM": lambda c: pct(c["DRAM"], c["I"]),
        },
    ),
    "amd.yaml:memory:17_30": (
        [],
        {
            "Minstr": lambda c: c["I"] / 1e6,
            "L1DMISS": lambda c: pct(c["L1M"], c["I"]),
            "L2MISS": lambda c: pct(c["L2M"], c["I"]),
            "DRAM": lambda c: pct(c["LDR"] + c["RDR"], c["I"]),
        },
    ),
    "amd.yaml:memory:17_00": (
        [],
        {
            "Minstr": lambda c: c["I"] / 1e6,
            "L1DMISS": lambda c: pct(c["L1M"], c["I"]),
            "L2MISS": lambda c: pct(c["L2M"], c["I"]),
        },
    ),
    "arm.yaml:memory:any": ([], {"Minstr": lambda c: c["INS"] / 1e6}),
    # Lunar Lake, Arrow Lake: no tma_* in 6.12, each field over slots (topdown.txt).
    "topdown.yaml:topdown:06_BD": (
        [],
        {
            "%RET": lambda c: pct(c["RET"], c["S"]),
            "%BADS": lambda c: pct(c["BAD"], c["S"]),
            "%FE": lambda c: pct(c["FE"], c["S"]),
            "%BE": lambda c: pct(c["BE"], c["S"]),
            "%HEAVY": lambda c: pct(c["HVY"], c["S"]),
        },
    ),
    "topdown.yaml:topdown:any": (
        [],
        {
            "IPC": lambda c: c["I"] / c["C"],
            "%FESTL": lambda c: pct(c["SF"], c["C"]),
            "%BESTL": lambda c: pct(c["SB"], c["C"]),
        },
    ),
    # Level 2 as the fields are, the complements clamped at 0: a second set where each
    # subset field exceeds its parent (8-bit rounding), so the clamps are read too.
    "intel.yaml:topdown2:06_BD": (
        [{"HVY": 4e9, "BRM": 4e9, "FL": 4e9, "MB": 4e9}],
        {
            "%HEAVY": lambda c: pct(c["HVY"], c["S"]),
            "%LIGHT": lambda c: pct(max(0.0, c["RET"] - c["HVY"]), c["S"]),
            "%BRMIS": lambda c: pct(c["BRM"], c["S"]),
            "%CLEAR": lambda c: pct(max(0.0, c["BAD"] - c["BRM"]), c["S"]),
            "%FLAT": lambda c: pct(c["FL"], c["S"]),
            "%FBW": lambda c: pct(max(0.0, c["FE"] - c["FL"]), c["S"]),
            "%MEM": lambda c: pct(c["MB"], c["S"]),
            "%CORE": lambda c: pct(max(0.0, c["BE"] - c["MB"]), c["S"]),
        },
    ),
    "intel.yaml:fp:06_7D": ([], {"%ASSIST": lambda c: pct(c["A"], c["I"])}),
    "intel.yaml:fp:06_97": (
        [],
        {
            "IPC": lambda c: c["I"] / c["C"],
            "%ASSIST": lambda c: pct(c["A"], c["I"]),
        },
    ),
    # Molka et al. ICPE'17 Fig. 10, each part clamped to [0, cycles]: sets where the store
    # buffer, the L1D-pending stalls or the fill/queue-full cycles lead, and where a part
    # exceeds the cycles.
    "memory.yaml:memory:06_3C": (
        [
            {"C": 1e9, "NOEX": 6e8, "L1DP": 3e8, "SB": 1e8, "FBF": 2e7, "SQF": 4e7},
            {"C": 1e9, "NOEX": 6e8, "L1DP": 1e8, "SB": 3e8, "FBF": 2e7, "SQF": 4e7},
            {"C": 1e9, "NOEX": 6e8, "L1DP": 5e8, "SB": 1e8, "FBF": 2e8, "SQF": 1e8},
            {"C": 1e9, "NOEX": 1.2e9, "L1DP": 1.1e9, "SB": 1e8, "FBF": 7e8, "SQF": 4e8},
            {"C": 1e9, "NOEX": 5e8, "L1DP": 7e8, "SB": 1e8, "FBF": 2e7, "SQF": 4e7},
        ],
        {
            "%PROD": lambda c: pct(max(c["C"] - c["NOEX"], 0.0), c["C"]),
            "%STALL": lambda c: pct(min(c["NOEX"], c["C"]), c["C"]),
            "%MEM": lambda c: pct(_mem(c), c["C"]),
            "%BW": lambda c: pct(_bw(c), c["C"]),
            "%LAT": lambda c: pct(max(_mem(c) - _bw(c), 0.0), c["C"]),
            "%OTH": lambda c: pct(max(min(c["NOEX"], c["C"]) - _mem(c), 0.0), c["C"]),
        },
    ),
    "sched.yaml:sched:any": (
        [],
        {
            "CPUms": lambda c: c["TC"] / 1e6,
            "%TASK": lambda c: 100 * c["TC"] / 1e9 / c["INTERVAL"],
            "CSW/s": lambda c: c["CS"] / c["INTERVAL"],
            "MIGR/s": lambda c: c["MIG"] / c["INTERVAL"],
            "FLT/s": lambda c: c["PF"] / c["INTERVAL"],
        },
    ),
    "sched.yaml:state:any": (
        [],
        {
            "CSW/s": lambda c: c["CS"] / c["INTERVAL"],
            "FLT/s": lambda c: c["PF"] / c["INTERVAL"],
        },
    ),
}


def _mem(c: dict[str, float]) -> float:
    """Memory-bound cycles: max(RESOURCE_STALLS.SB, STALLS_L1D_PENDING), at most cycles."""
    return min(max(c["SB"], c["L1DP"]), c["C"])


def _bw(c: dict[str, float]) -> float:
    """Bandwidth-bound cycles: max(RESOURCE_STALLS.SB, FB_FULL + SQ_FULL), at most cycles."""
    return min(max(c["SB"], c["FBF"] + c["SQF"]), c["C"])


def counter_reading(raw: RawScreen) -> list[dict[str, str]]:
    """The columns of ``raw`` that read a counter (its bottleneck column reads columns)."""
    return [
        i.attrs
        for i in raw.items
        if i.kind == "column"
        and not i.attrs["expr"].lstrip().startswith("bottleneck")
        and compile_column(i.attrs["expr"]).aliases
    ]


def unnamed() -> set[tuple[str, str]]:
    """``(variant, header)`` of every counter-reading column that names no metric."""
    return {
        (vid, col["header"].strip())
        for vid, raw in VARIANTS.items()
        for col in counter_reading(raw)
        if not col.get("table_metric")
    }


def value(expr: str, counts: dict[str, float]) -> float:
    """``expr`` on one row of ``counts`` (deltas; ``INTERVAL`` as the built-in)."""
    ok = np.zeros(1, STATUS_DTYPE)
    env = {delta_key(a): (np.array([v]), ok) for a, v in counts.items() if a != "INTERVAL"}
    env["INTERVAL"] = (np.array([counts["INTERVAL"]]), ok)
    return float(compile_column(expr).evaluate(env, 1)[0][0])


def test_every_unnamed_counter_column_has_a_value_test() -> None:
    """The table above covers exactly the counter-reading columns that name no metric: a
    new column gets a value test or a table_metric, and a stale entry goes."""
    assert len(VARIANTS) == sum(len(rs) for rs in SCREENS.values())  # one id each
    listed = {(vid, h) for vid, (_sets, wants) in CASES.items() for h in wants}
    assert listed == unnamed()


@pytest.mark.parametrize(("vid", "header"), sorted(unnamed()))
def test_column_value_on_fixed_counts(vid: str, header: str) -> None:
    """The column equals its formula on the spread counts and on each extra set."""
    raw = VARIANTS[vid]
    sets, wants = CASES[vid]
    (col,) = [c for c in counter_reading(raw) if c["header"].strip() == header]
    for given in [{}, *sets]:
        counts = spread(raw, **given)
        want = wants[header](counts)
        assert math.isclose(value(col["expr"], counts), want, rel_tol=1e-12), (vid, header)
