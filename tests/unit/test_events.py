"""Event names -> attrs: fake sysfs trees (exact config words) and this machine's /sys."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiptop.errors import EventError
from tiptop.events import EventBinding, is_hybrid, resolve, resolve_numeric
from tiptop.events.sysfs import Format, parse_format
from tiptop.kernel import pfm
from tiptop.kernel.explain import NO_PMU

DATA = Path(__file__).resolve().parents[1] / "data" / "sysfs"
INTEL, AMD, HYBRID, NOPMU = (str(DATA / n) for n in ("intel", "amd", "hybrid", "nopmu"))


def one(name: str, root: str) -> EventBinding:
    (b,) = resolve(name, sysfs_root=root)
    return b


@pytest.mark.parametrize(
    ("name", "type_", "config"),
    [
        ("cycles", 0, 0),
        ("cpu-cycles", 0, 0),
        ("CPU_CYCLES", 0, 0),
        ("instructions", 0, 1),
        ("INSTRUCTIONS", 0, 1),
        ("cache-references", 0, 2),
        ("cache-misses", 0, 3),
        ("CACHE_MISSES", 0, 3),
        ("branch-instructions", 0, 4),
        ("branches", 0, 4),
        ("branch-misses", 0, 5),
        ("BRANCH_MISSES", 0, 5),
        ("bus-cycles", 0, 6),
        ("stalled-cycles-frontend", 0, 7),
        ("stalled-cycles-backend", 0, 8),
        ("ref-cycles", 0, 9),
        ("L1-dcache-loads", 3, 0x00000),
        ("L1-dcache-load-misses", 3, 0x10000),
        ("L1-dcache-stores", 3, 0x00100),
        ("L1-dcache-store-misses", 3, 0x10100),
        ("L1-dcache-prefetches", 3, 0x00200),
        ("L1-icache-load-misses", 3, 0x10001),
        ("LLC-loads", 3, 0x00002),
        ("LLC-load-misses", 3, 0x10002),
        ("LLC-store-misses", 3, 0x10102),
        ("dTLB-load-misses", 3, 0x10003),
        ("iTLB-load-misses", 3, 0x10004),
        ("branch-loads", 3, 0x00005),
        ("branch-load-misses", 3, 0x10005),
        ("node-load-misses", 3, 0x10006),
        ("task-clock", 1, 1),
        ("cpu-clock", 1, 0),
        ("page-faults", 1, 2),
        ("faults", 1, 2),
        ("minor-faults", 1, 5),
        ("major-faults", 1, 6),
        ("context-switches", 1, 3),
        ("cs", 1, 3),
        ("cpu-migrations", 1, 4),
        ("migrations", 1, 4),
        ("alignment-faults", 1, 7),
        ("emulation-faults", 1, 8),
        ("r1c4", 4, 0x1C4),
        ("r003C", 4, 0x3C),
    ],
)
def test_generic_names(name: str, type_: int, config: int) -> None:
    b = one(name, INTEL)
    assert (b.attr.type, b.attr.config) == (type_, config)
    # Default flags: the sampler sets exclude_* later.
    assert b.attr.exclude_kernel is True and b.attr.disabled is False


def test_generic_without_pmu_still_resolves() -> None:
    # The kernel decides (ENOENT at open); resolving must not fail on a PMU-less VM.
    assert one("cycles", NOPMU).attr.config == 0


@pytest.mark.parametrize(
    ("text", "field", "ranges"),
    [
        ("config:0-7", "config", ((0, 7),)),
        ("config:0-7,32-35", "config", ((0, 7), (32, 35))),
        ("config1:1,6-10,44", "config1", ((1, 1), (6, 10), (44, 44))),
        ("config3:0-63", "config3", ((0, 63),)),
    ],
)
def test_parse_format(text: str, field: str, ranges: tuple) -> None:
    assert parse_format(text) == Format(field, ranges)


def test_split_field_places_high_bits() -> None:
    f = parse_format("config1:1,6-10,44")
    assert f.width == 7
    # bit0 -> 1, bits1-5 -> 6-10, bit6 -> 44
    assert f.place(0b1000011) == (1 << 1) | (1 << 6) | (1 << 44)
    with pytest.raises(ValueError):
        f.place(1 << 7)


@pytest.mark.parametrize(
    ("name", "root", "type_", "words"),
    [
        ("cpu/event=0x3c/", INTEL, 4, {"config": 0x3C}),
        ("cpu/event=0xca,umask=0x1e,cmask=1/", INTEL, 4, {"config": 0x1001ECA}),
        ("cpu/event=0xc2,inv,cmask=1/", INTEL, 4, {"config": 0x18000C2}),
        ("cpu/event=0x2e,umask=0x41,edge/", INTEL, 4, {"config": 0x4412E}),
        ("cpu/event=0xcd,umask=1,ldlat=3/", INTEL, 4, {"config": 0x1CD, "config1": 3}),
        ("cpu/config=0x1234,config1=5/", INTEL, 4, {"config": 0x1234, "config1": 5}),
        ("cpu/mem-loads/", INTEL, 4, {"config": 0x1CD, "config1": 3}),
        ("cpu/slots/", INTEL, 4, {"config": 0x400}),
        ("slots", INTEL, 4, {"config": 0x400}),
        ("topdown-retiring", INTEL, 4, {"config": 0x8000}),
        ("msr/tsc/", INTEL, 10, {"config": 0}),
        ("msr/event=0x5/", INTEL, 10, {"config": 5}),
        # AMD: event is split over config:0-7,32-35.
        ("cpu/event=0x1c4,umask=3/", AMD, 4, {"config": 0x1000003C4}),
        ("cpu/event=0xfff,umask=0xff,inv/", AMD, 4, {"config": 0xF0080FFFF}),
        ("cpu/cpu-cycles/", AMD, 4, {"config": 0x76}),
        ("cache-misses", AMD, 0, {"config": 3}),
        ("msr/tsc/", AMD, 9, {"config": 0}),
        ("cpu_core/event=0xc0,umask2=0x1/", HYBRID, 4, {"config": 0x100000000C0}),
        ("cpu_atom/event=0xc0/", HYBRID, 8, {"config": 0xC0}),
        ("cpu_atom/instructions/", HYBRID, 8, {"config": 0xC0}),
    ],
)
def test_sysfs_syntax(name: str, root: str, type_: int, words: dict[str, int]) -> None:
    b = one(name, root)
    assert b.attr.type == type_
    got = {k: getattr(b.attr, k) for k in ("config", "config1", "config2", "config3")}
    assert got == {"config": 0, "config1": 0, "config2": 0, "config3": 0, **words}


def test_alias_scale_and_unit() -> None:
    b = one("power/energy-pkg/", INTEL)
    assert (b.pmu, b.attr.type, b.attr.config) == ("power", 23, 2)
    assert b.scale == pytest.approx(2.3283064365386963e-10)
    assert b.unit == "Joules"


def test_hybrid_expands_generic_events() -> None:
    assert is_hybrid(HYBRID) and not is_hybrid(INTEL)
    got = [
        (b.name, b.pmu, b.attr.type, b.attr.config) for b in resolve("cycles", sysfs_root=HYBRID)
    ]
    assert got == [
        ("cpu_atom/cycles/", "cpu_atom", 0, 0x800000000),
        ("cpu_core/cycles/", "cpu_core", 0, 0x400000000),
    ]
    cache = resolve("LLC-load-misses", sysfs_root=HYBRID)
    assert [(b.attr.type, b.attr.config) for b in cache] == [(3, 0x800010002), (3, 0x400010002)]
    # Software events are not per core PMU.
    assert len(resolve("task-clock", sysfs_root=HYBRID)) == 1
    # The sysfs alias exists on both core PMUs: one binding each.
    assert [b.attr.type for b in resolve("instructions", sysfs_root=HYBRID)] == [0, 0]
    # cpu_core/cycles/ is the generic event on that PMU only (extended type).
    assert one("cpu_core/cycles/", HYBRID).attr.config == 0x400000000
    # slots only on cpu_core.
    assert [b.pmu for b in resolve("slots", sysfs_root=HYBRID)] == ["cpu_core"]


def test_resolve_numeric() -> None:
    (b,) = resolve_numeric(0, 1, sysfs_root=INTEL)
    assert (b.name, b.attr.type, b.attr.config) == ("instructions", 0, 1)
    (b,) = resolve_numeric(3, 0x10002, sysfs_root=INTEL)
    assert b.name == "LLC-load-misses"
    (b,) = resolve_numeric(1, 2, sysfs_root=INTEL)
    assert b.name == "page-faults"
    (b,) = resolve_numeric(4, 0x1C4, sysfs_root=INTEL)
    assert b.name == "r1c4"
    (b,) = resolve_numeric(10, 0, sysfs_root=INTEL)
    assert (b.pmu, b.attr.type) == ("msr", 10)
    assert [b.attr.config for b in resolve_numeric(0, 0, sysfs_root=HYBRID)] == [
        0x800000000,
        0x400000000,
    ]


@pytest.mark.parametrize(
    ("name", "root", "needle"),
    [
        ("bogus-event", INTEL, "unknown event 'bogus-event'"),
        ("", INTEL, "empty"),
        ("nope/event=1/", INTEL, "no PMU named 'nope'"),
        ("cpu/bogus=1/", INTEL, "no term 'bogus'"),
        ("cpu/event=0x1ff/", INTEL, "does not fit in 8 bits"),
        ("cpu/event=zz/", INTEL, "bad value 'zz'"),
        ("cpu/needs-param/", INTEL, "needs a value"),
        ("cpu/cycles-ct/", INTEL, "no term 'in_tx'"),
        ("cpu//", INTEL, "no terms"),
        # Ice Lake+ topdown's leader where sysfs shows no CPU PMU (a VM without a virtual
        # one): the reason, not advice to spell it as a perf or vendor name.
        ("slots", NOPMU, "'slots': not a perf name, and no CPU PMU here"),
        ("topdown-retiring", NOPMU, NO_PMU),
        ("bogus-event", NOPMU, "no CPU PMU here whose events/ could define it"),
    ],
)
def test_errors(name: str, root: str, needle: str) -> None:
    with pytest.raises(EventError, match=None) as e:
        resolve(name, sysfs_root=root)
    assert needle in str(e.value)


def test_vendor_name_without_libpfm_is_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    from tiptop.kernel import _ffi

    def missing() -> None:
        raise EventError("libpfm4 is not installed; install it or use cpu/event=0x..,umask=0x../")

    monkeypatch.setattr(_ffi, "pfm_lib", missing)
    with pytest.raises(EventError, match="libpfm4"):
        resolve("FP_ASSIST.ANY", sysfs_root=INTEL)


def test_pfm_syntax() -> None:
    assert pfm.to_pfm_syntax("FP_ASSIST.ANY") == "FP_ASSIST:ANY"
    assert pfm.to_pfm_syntax("skl::UOPS_ISSUED.ANY") == "skl::UOPS_ISSUED:ANY"


# ------------------------------------------------------------------ this machine's /sys


def _pmu(name: str) -> str | None:
    path = Path("/sys/bus/event_source/devices") / name / "type"
    return path.read_text().strip() if path.exists() else None


def test_real_sysfs_msr_tsc() -> None:
    t = _pmu("msr")
    if t is None:
        pytest.skip("no msr PMU in /sys here")
    b = one("msr/tsc/", "/sys")
    assert (b.pmu, b.attr.type, b.attr.config) == ("msr", int(t), 0)


def test_real_sysfs_cpu_event() -> None:
    t = _pmu("cpu")
    if t is None:
        pytest.skip("no cpu PMU in /sys here")
    b = one("cpu/event=0x76/", "/sys")
    assert (b.attr.type, b.attr.config) == (int(t), 0x76)
