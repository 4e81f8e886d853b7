"""The perf_event vocabulary, in one leaf module: event types and ids, and their names.

The numbers are the fixed values of the perf_event ABI (``include/uapi/linux/perf_event.h``:
``enum perf_type_id``, ``perf_hw_id``, ``perf_sw_ids``, ``perf_hw_cache_id``,
``_op_id``, ``_op_result_id``). The names are perf's spellings (perf-list(1); cache names
follow perf's ``evsel__hw_cache`` tables in ``tools/perf/util/evsel.c``: a cache, an
operation and an optional result, joined by ``-``) and the original tiptop's upper-case
names (docs/screens.md, "Predefined config names"). The screens (``type`` and ``config``
attributes, perf-style names of numeric events), the event resolver, the kernel's error
explanations and ``--list-events`` all read these tables. Imports nothing from tiptop.
"""

from __future__ import annotations

from enum import IntEnum


class PerfType(IntEnum):
    """``enum perf_type_id``: the fixed values of ``perf_event_attr.type``."""

    HARDWARE = 0
    SOFTWARE = 1
    TRACEPOINT = 2
    HW_CACHE = 3
    RAW = 4
    BREAKPOINT = 5


class HwId(IntEnum):
    """``enum perf_hw_id``: ``config`` values for ``PERF_TYPE_HARDWARE``."""

    CPU_CYCLES = 0
    INSTRUCTIONS = 1
    CACHE_REFERENCES = 2
    CACHE_MISSES = 3
    BRANCH_INSTRUCTIONS = 4
    BRANCH_MISSES = 5
    BUS_CYCLES = 6
    STALLED_CYCLES_FRONTEND = 7
    STALLED_CYCLES_BACKEND = 8
    REF_CPU_CYCLES = 9


class SwId(IntEnum):
    """``enum perf_sw_ids``: ``config`` values for ``PERF_TYPE_SOFTWARE``."""

    CPU_CLOCK = 0
    TASK_CLOCK = 1
    PAGE_FAULTS = 2
    CONTEXT_SWITCHES = 3
    CPU_MIGRATIONS = 4
    PAGE_FAULTS_MIN = 5
    PAGE_FAULTS_MAJ = 6
    ALIGNMENT_FAULTS = 7
    EMULATION_FAULTS = 8
    DUMMY = 9
    BPF_OUTPUT = 10
    CGROUP_SWITCHES = 11


class HwCacheId(IntEnum):
    """``enum perf_hw_cache_id``: bits 0-7 of a ``PERF_TYPE_HW_CACHE`` config."""

    L1D = 0
    L1I = 1
    LL = 2
    DTLB = 3
    ITLB = 4
    BPU = 5
    NODE = 6


class HwCacheOp(IntEnum):
    """``enum perf_hw_cache_op_id``: bits 8-15 of a ``PERF_TYPE_HW_CACHE`` config."""

    READ = 0
    WRITE = 1
    PREFETCH = 2


class HwCacheResult(IntEnum):
    """``enum perf_hw_cache_op_result_id``: bits 16-23 of a ``PERF_TYPE_HW_CACHE`` config."""

    ACCESS = 0
    MISS = 1


def hw_cache_config(cache: int, op: int, result: int) -> int:
    """``config = id | (op << 8) | (result << 16)`` (perf_event_open(2), PERF_TYPE_HW_CACHE)."""
    return int(cache) | (int(op) << 8) | (int(result) << 16)


#: The canonical perf name per hardware config (for bindings made from numbers).
HARDWARE_NAME: dict[int, str] = {
    HwId.CPU_CYCLES: "cycles",
    HwId.INSTRUCTIONS: "instructions",
    HwId.CACHE_REFERENCES: "cache-references",
    HwId.CACHE_MISSES: "cache-misses",
    HwId.BRANCH_INSTRUCTIONS: "branch-instructions",
    HwId.BRANCH_MISSES: "branch-misses",
    HwId.BUS_CYCLES: "bus-cycles",
    HwId.STALLED_CYCLES_FRONTEND: "stalled-cycles-frontend",
    HwId.STALLED_CYCLES_BACKEND: "stalled-cycles-backend",
    HwId.REF_CPU_CYCLES: "ref-cycles",
}

#: perf's hardware event names (canonical, then aliases) -> config.
HARDWARE = {
    **{name: h for h, name in HARDWARE_NAME.items()},
    "cpu-cycles": HwId.CPU_CYCLES,
    "branches": HwId.BRANCH_INSTRUCTIONS,
    "idle-cycles-frontend": HwId.STALLED_CYCLES_FRONTEND,
    "idle-cycles-backend": HwId.STALLED_CYCLES_BACKEND,
}

#: The canonical perf name per software config.
SOFTWARE_NAME: dict[int, str] = {
    SwId.CPU_CLOCK: "cpu-clock",
    SwId.TASK_CLOCK: "task-clock",
    SwId.PAGE_FAULTS: "page-faults",
    SwId.CONTEXT_SWITCHES: "context-switches",
    SwId.CPU_MIGRATIONS: "cpu-migrations",
    SwId.PAGE_FAULTS_MIN: "minor-faults",
    SwId.PAGE_FAULTS_MAJ: "major-faults",
    SwId.ALIGNMENT_FAULTS: "alignment-faults",
    SwId.EMULATION_FAULTS: "emulation-faults",
    SwId.DUMMY: "dummy",
    SwId.BPF_OUTPUT: "bpf-output",
    SwId.CGROUP_SWITCHES: "cgroup-switches",
}

#: perf's software event names (canonical, then aliases) -> config. ``bpf-output`` is left
#: out: it is the channel of ``bpf_perf_event_output()`` (bpf-helpers(7)), not a count.
SOFTWARE = {
    **{name: s for s, name in SOFTWARE_NAME.items() if s is not SwId.BPF_OUTPUT},
    "faults": SwId.PAGE_FAULTS,
    "cs": SwId.CONTEXT_SWITCHES,
    "migrations": SwId.CPU_MIGRATIONS,
}

#: The names a screen's ``type`` attribute accepts (docs/screens.md): every fixed type but
#: BREAKPOINT, which needs ``bp_addr``/``bp_type`` that a screen cannot give.
TYPE_NAMES: dict[str, int] = {t.name: int(t) for t in PerfType if t is not PerfType.BREAKPOINT}

#: The original tiptop's upper-case names of generic hardware events (its predefined
#: ``config`` names, plus the three it compiled out).
HARDWARE_UPPER: dict[str, int] = {h.name: int(h) for h in HwId}

#: Every name a counter ``config`` expression accepts (docs/screens.md, "Predefined config
#: names"): the generic hardware events, then the cache, operation (``OP_``) and result
#: (``RESULT_``) fields of a HW_CACHE config. The original had all but NODE and the three
#: compiled-out hardware events.
CONFIG_NAMES: dict[str, int] = {
    **HARDWARE_UPPER,
    **{c.name: int(c) for c in HwCacheId},
    **{f"OP_{o.name}": int(o) for o in HwCacheOp},
    **{f"RESULT_{r.name}": int(r) for r in HwCacheResult},
}

# perf's evsel__hw_cache, evsel__hw_cache_op, evsel__hw_cache_result (lower-cased).
_CACHES = {
    HwCacheId.L1D: ("L1-dcache", "l1-d", "l1d", "l1-data"),
    HwCacheId.L1I: ("L1-icache", "l1-i", "l1i", "l1-instruction"),
    HwCacheId.LL: ("LLC", "l2"),
    HwCacheId.DTLB: ("dTLB", "d-tlb", "data-tlb"),
    HwCacheId.ITLB: ("iTLB", "i-tlb", "instruction-tlb"),
    HwCacheId.BPU: ("branch", "branches", "bpu", "btb", "bpc"),
    HwCacheId.NODE: ("node",),
}
_OPS = {
    HwCacheOp.READ: ("load", "loads", "read"),
    HwCacheOp.WRITE: ("store", "stores", "write"),
    HwCacheOp.PREFETCH: ("prefetch", "prefetches", "speculative-read", "speculative-load"),
}
_RESULTS = {
    HwCacheResult.ACCESS: ("refs", "reference", "ops", "access"),
    HwCacheResult.MISS: ("misses", "miss"),
}

_CACHE_BY_NAME = {a.lower(): c for c, names in _CACHES.items() for a in names}
_OP_BY_NAME = {a: o for o, names in _OPS.items() for a in names}
_RESULT_BY_NAME = {a: r for r, names in _RESULTS.items() for a in names}


def parse_cache_name(name: str) -> int | None:
    """The HW_CACHE config for ``L1-dcache-load-misses`` and friends, else None.

    ``<cache>-<op>`` counts accesses, ``<cache>-<op>-<result>`` either, and
    ``<cache>-<result>`` means a read (as in perf). Case-insensitive.
    """
    low = name.lower()
    for cname in sorted(_CACHE_BY_NAME, key=len, reverse=True):
        if not low.startswith(cname + "-"):
            continue
        rest = low[len(cname) + 1 :]
        cache = _CACHE_BY_NAME[cname]
        for oname, op in _OP_BY_NAME.items():
            if rest == oname:
                return hw_cache_config(cache, op, HwCacheResult.ACCESS)
            if rest.startswith(oname + "-") and rest[len(oname) + 1 :] in _RESULT_BY_NAME:
                return hw_cache_config(cache, op, _RESULT_BY_NAME[rest[len(oname) + 1 :]])
        if rest in _RESULT_BY_NAME:
            return hw_cache_config(cache, HwCacheOp.READ, _RESULT_BY_NAME[rest])
    return None


def cache_name(config: int) -> str | None:
    """perf's name for a HW_CACHE config (``L1-dcache-load-misses``); None when a field is
    not one of the enums or bits above 23 are set."""
    cache, op, result = config & 0xFF, (config >> 8) & 0xFF, (config >> 16) & 0xFF
    if config >> 24:
        return None
    try:
        c = _CACHES[HwCacheId(cache)][0]
        o = _OPS[HwCacheOp(op)][0]
        r = HwCacheResult(result)
    except ValueError:
        return None
    return f"{c}-{o}s" if r is HwCacheResult.ACCESS else f"{c}-{o}-misses"


def event_name(type_: int, config: int) -> str | None:
    """perf's name for a numeric event (``cycles``, ``task-clock``, ``LLC-load-misses``,
    ``r1c2``), or None when the pair has no generic name (a dynamic PMU type, an unknown
    id, a hybrid PMU type in ``config[63:32]``)."""
    if type_ == PerfType.HARDWARE:
        return HARDWARE_NAME.get(config)
    if type_ == PerfType.SOFTWARE:
        return SOFTWARE_NAME.get(config)
    if type_ == PerfType.HW_CACHE:
        return cache_name(config)
    if type_ == PerfType.RAW:
        return f"r{config:x}"
    return None
