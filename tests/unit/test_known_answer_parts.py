"""The known-answer validation's pure parts, pinned without a PMU: the new kernels' bytes
(Intel SDM vol. 2 and the Arm ARM encodings), the level-1 fractions evaluated on slopes,
perf stat's spelling of tiptop's plan and its ``-x,`` output, the L1 size and CPU from sysfs.
The counting itself: tests/system/test_known_answer.py, tests/hwpmu/test_known_answer.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support.known_answer import (
    core_cpu,
    fractions,
    l1d_bytes,
    level1_columns,
    modifier,
    parse_csv,
    perf_events,
    spell,
)
from tiptop.engine.count.readout import GroupDef
from tiptop.events import resolve
from tiptop.kernel.attr import Attr
from tiptop.screens import ScreenSpec, Target, builtin_screens
from tiptop.selftest.code import INSTRUCTIONS, KERNELS, kernel_code

DATA = Path(__file__).resolve().parents[1] / "data" / "sysfs"


def _words(code: bytes) -> list[int]:
    return [int.from_bytes(code[i : i + 4], "little") for i in range(0, len(code), 4)]


def test_x86_new_kernel_bodies() -> None:
    """predict: ``test al, 0; jz +3; inc rcx; dec r8; jnz``; divide: ``div ecx; dec r8; jnz
    -7`` after ecx = 1, edx = 0, eax = 0xffffffff; add: 4 x ``add r64, 1``, 2 x ``nop``."""
    x86 = {k: kernel_code("x86_64", k) for k in ("predict", "mispredict", "divide", "add")}
    assert bytes.fromhex("a800 7403 48ffc1 49ffc8 75d6") in x86["predict"]
    assert bytes.fromhex("b901000000 31d2 b8ffffffff f7f1 49ffc8 75f9") in x86["divide"]
    add = bytes.fromhex("4883c001 4883c101 4883c201 4883c601 90 90 49ffc8 75e9")
    assert add in x86["add"]
    # the controlled pair: the same code but for the tested bit (al & 1 vs al & 0)
    diff = [
        i for i, (a, b) in enumerate(zip(x86["predict"], x86["mispredict"], strict=True)) if a != b
    ]
    assert [x86["predict"][i] for i in diff] == [0] and [x86["mispredict"][i] for i in diff] == [1]


def test_aarch64_new_kernel_bodies() -> None:
    """predict: ``tbz xzr, #0`` (always taken) where mispredict has ``tbz x13, #0``; divide:
    ``udiv x13, x13, x14``; add: 4 x ``add xN, xN, #1``, 2 x ``nop``; each ends ``subs; b.ne``
    back to its first body instruction."""
    p, m = _words(kernel_code("aarch64", "predict")), _words(kernel_code("aarch64", "mispredict"))
    diff = [i for i, (a, b) in enumerate(zip(p, m, strict=True)) if a != b]
    assert len(diff) == 1 and p[diff[0]] == 0x3600005F and m[diff[0]] == 0x3600004D
    d = _words(kernel_code("aarch64", "divide"))
    k = d.index(0x9ACE09AD)
    assert d[k - 2 : k] == [0xD2FFFFED, 0xD280002E]  # movz x13, #0xffff, lsl #48; movz x14, #1
    assert d[k + 1 : k + 3] == [0xF1000529, 0x54FFFFC1]  # subs x9; b.ne back 2
    a = _words(kernel_code("aarch64", "add"))
    k = a.index(0x910005AD)
    body = [0x910005AD, 0x910005CE, 0x910005EF, 0x91000484, 0xD503201F, 0xD503201F]
    assert a[k : k + 8] == [*body, 0xF1000529, 0x54FFFF21]  # b.ne back 7


def test_instruction_table_covers_the_kernels() -> None:
    """Every kernel has an exact count on both architectures but the two whose count depends
    on a random bit or on system calls."""
    for arch in ("x86_64", "aarch64"):
        assert set(INSTRUCTIONS[arch]) == set(KERNELS) - {"mispredict", "pingpong"}


def _zen4_topdown() -> ScreenSpec:
    (s,) = [s for s in builtin_screens(Target("x86", "19_11")) if s.name == "topdown"]
    return s


def test_fractions_are_the_columns_on_slopes() -> None:
    """Zen 4 (6 slots per cycle): per iteration 10 cycles, 30 ops retired, 36 dispatched,
    6 front-end, 12 back-end and 6 SMT slots lost -> 50 / 10 / 10 / 20 / 10 %, summing to 100."""
    s = _zen4_topdown()
    assert set(level1_columns(s)) == {"%RET", "%BADS", "%FE", "%BE", "%SMT"}
    slopes = {"CYC": 10.0, "RET": 30.0, "DISP": 36.0, "FE": 6.0, "BE": 12.0, "SMT": 6.0}
    fr = fractions(s, slopes)
    assert fr == pytest.approx(
        {"%RET": 50.0, "%BADS": 10.0, "%FE": 10.0, "%BE": 20.0, "%SMT": 10.0}
    )
    assert sum(fr.values()) == pytest.approx(100.0)
    assert np.isnan(fractions(s, {**slopes, "CYC": 0.0})["%RET"])


def test_perf_spelling_of_a_plan() -> None:
    """Generic events by perf's names, raw ones by PMU and configs, hybrid ones by PMU and
    name, each with its exclude bits as a modifier; one ``{...}`` per tiptop group."""
    amd = str(DATA / "amd")
    (be,) = resolve("cpu/event=0x1a0,umask=0x1e/", sysfs_root=amd)
    (ins,) = resolve("instructions", sysfs_root=amd)
    (l1m,) = resolve("L1-dcache-load-misses", sysfs_root=amd)
    assert spell(be.attr, "cpu") == "cpu/config=0x100001ea0/u"
    assert spell(ins.attr, "cpu") == "instructions:u"
    assert spell(l1m.attr, "cpu") == "L1-dcache-load-misses:u"
    atom, core = resolve("instructions", sysfs_root=str(DATA / "hybrid"))
    assert spell(atom.attr, "cpu_atom") == "cpu_atom/instructions/u"
    assert spell(core.attr, "cpu_core") == "cpu_core/instructions/u"
    cs = Attr(type=1, config=3, exclude_kernel=False)
    assert spell(cs, "software") == "context-switches:uk"
    assert modifier(Attr(type=9, config=0, exclude_kernel=False, exclude_hv=False)) == ""
    raw = Attr(type=4, config=0x8000, config1=0x3)
    assert spell(raw, "cpu") == "cpu/config=0x8000,config1=0x3/u"
    groups = [
        GroupDef("cpu", (ins.attr, be.attr), np.array([2, 0])),
        GroupDef("software", (cs,), np.array([1])),
    ]
    events, order = perf_events(groups)
    assert events == "{instructions:u,cpu/config=0x100001ea0/u},{context-switches:uk}"
    assert order == [2, 0, 1]


def test_perf_csv_values_in_order() -> None:
    """Values in event order, clocks in ns, perf's words kept for events it did not count."""
    text = (
        "# started on Mon\n\n"
        "300,,page-faults:u,724177,100.00,414.263,K/sec\n"
        "0.72,msec,task-clock:u,724177,100.00,0.014,CPUs utilized\n"
        "<not counted>,,cpu/config=0x76/u,0,0.00,,\n"
        "Events disabled\n"
    )
    assert parse_csv(text) == [300.0, 720000.0, "<not counted>"]


def test_l1d_size_and_core_cpu_from_sysfs(tmp_path: Path) -> None:
    """index0 is the L1 instruction cache here, index1 the L1 data cache (48K); a hybrid
    machine's child goes on a CPU of ``cpu_core``."""
    for ix, (level, kind, size) in enumerate(
        [("1", "Instruction", "32K"), ("1", "Data", "48K"), ("2", "Unified", "2048K")]
    ):
        d = tmp_path / "devices/system/cpu/cpu0/cache" / f"index{ix}"
        d.mkdir(parents=True)
        for name, value in (("level", level), ("type", kind), ("size", size)):
            (d / name).write_text(value + "\n")
    assert l1d_bytes(0, str(tmp_path)) == 48 * 1024
    assert l1d_bytes(1, str(tmp_path)) is None
    pmu = tmp_path / "bus/event_source/devices/cpu_core"
    pmu.mkdir(parents=True)
    import os

    mine = sorted(os.sched_getaffinity(0))
    (pmu / "cpus").write_text(f"{mine[0]}\n")
    assert core_cpu(str(tmp_path)) == mine[0]
