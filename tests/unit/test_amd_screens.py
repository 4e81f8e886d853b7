"""AMD Zen 4 / Zen 5 built-in screens, pinned without the hardware: the CPU gating (family
and model as arch/x86/kernel/cpu/amd.c assigns Zen generations), the event encodings from the
kernel's tools/perf/pmu-events/arch/x86/amdzen4|5 tables resolved against the fake AMD sysfs
(tests/data/sysfs/amd: event=config:0-7,32-35, umask=config:8-15), and the slot width."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tiptop.cells import Status
from tiptop.events import resolve
from tiptop.screens import NamedEvent, ScreenSpec, Target, builtin_screens, compile_column

AMD_SYSFS = str(Path(__file__).resolve().parents[1] / "data" / "sysfs" / "amd")

ZEN4 = [Target("x86", m) for m in ("19_10", "19_11", "19_1F", "19_61", "19_74", "19_A0", "19_AF")]
ZEN5 = [Target("x86", m) for m in ("1A_00", "1A_02", "1A_11", "1A_24", "1A_44", "1A_70", "1A_7F")]
#: Zen 2 (17_31, 17_71), Zen 3 (19_01, 19_21, 19_50) and models amd.c does not name.
GENERIC = [Target("x86", m) for m in ("17_31", "17_71", "19_01", "19_21", "19_50", "19_B0",
                                      "1A_30", "1A_50", "1A_80", "1A_FF")]  # fmt: skip

#: alias -> (event text, config word on the AMD core PMU); kernel table event names:
#: ls_not_halted_cyc 0x76, ex_ret_ops 0xc1, de_src_op_disp.all 0xaa/0x07,
#: de_no_dispatch_per_slot.{no_ops_from_frontend 0x01, backend_stalls 0x1e,
#: smt_contention 0x60} on event 0x1a0.
TOPDOWN = {
    "CYC": ("cpu/event=0x76/", 0x76),
    "RET": ("cpu/event=0xc1/", 0xC1),
    "DISP": ("cpu/event=0xaa,umask=0x07/", 0x07AA),
    "FE": ("cpu/event=0x1a0,umask=0x01/", 0x1_0000_01A0),
    "BE": ("cpu/event=0x1a0,umask=0x1e/", 0x1_0000_1EA0),
    "SMT": ("cpu/event=0x1a0,umask=0x60/", 0x1_0000_60A0),
}


def topdown(target: Target) -> ScreenSpec:
    (s,) = [s for s in builtin_screens(target) if s.name == "topdown"]
    return s


@pytest.mark.parametrize(("targets", "width"), [(ZEN4, 6), (ZEN5, 8)])
def test_zen_topdown_encodings_and_width(targets: list[Target], width: int) -> None:
    for t in targets:
        s = topdown(t)
        assert f"{width}-wide" in s.desc, t
        assert {c.alias: c.event for c in s.counters} == {
            a: NamedEvent(text) for a, (text, _) in TOPDOWN.items()
        }
        for alias, (text, word) in TOPDOWN.items():
            (b,) = resolve(text, sysfs_root=AMD_SYSFS)
            assert (b.attr.type, b.attr.config) == (4, word), alias
        exprs = {c.header.strip(): c.expr.replace(" ", "") for c in s.columns}
        slots = f"({width}*delta(CYC))"
        assert exprs == {
            "%CPU": "CPU_TOT",
            "%RET": f"100*delta(RET)/{slots}",
            "%BADS": f"100*(delta(DISP)-delta(RET))/{slots}",
            "%FE": f"100*delta(FE)/{slots}",
            "%BE": f"100*delta(BE)/{slots}",
            "%SMT": f"100*delta(SMT)/{slots}",
        }


@pytest.mark.parametrize("width", [6, 8])
def test_zen_topdown_level1_sums_to_one(width: int) -> None:
    """A level-1 breakdown covers every slot: retiring + bad speculation + frontend + backend
    + SMT contention = 1 when the counts add up (dispatched + idle slots = width * cycles)."""
    t = ZEN4[0] if width == 6 else ZEN5[0]
    s = topdown(t)
    cycles, ret, disp, fe, smt = 1000.0, 2500.0, 2900.0, 700.0, 300.0
    be = width * cycles - disp - fe - smt
    deltas = {"CYC": cycles, "RET": ret, "DISP": disp, "FE": fe, "BE": be, "SMT": smt}
    env = {
        f"delta({k})": (np.array([v]), np.array([Status.OK], dtype=np.uint8))
        for k, v in deltas.items()
    }
    parts = [compile_column(c.expr).evaluate(env)[0][0] for c in s.columns[1:]]
    assert sum(parts) == pytest.approx(100.0)
    assert parts[0] == pytest.approx(100 * ret / (width * cycles))


@pytest.mark.parametrize("target", GENERIC)
def test_other_amd_models_get_the_generic_topdown(target: Target) -> None:
    s = topdown(target)
    assert "AMD" not in s.desc
    assert [c.event for c in s.counters] == [
        NamedEvent(n)
        for n in ("cycles", "instructions", "stalled-cycles-frontend", "stalled-cycles-backend")
    ]
