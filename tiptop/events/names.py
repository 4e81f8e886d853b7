"""The name tables of generic events: perf's spellings and the original tiptop's.

``PERF_TYPE_HARDWARE`` and ``PERF_TYPE_SOFTWARE`` names follow perf-list(1); cache names
follow perf's ``evsel__hw_cache`` tables (``tools/perf/util/evsel.c``): a cache, an
operation and an optional result, joined by ``-``.
"""

from __future__ import annotations

from tiptop.kernel.consts import HwCacheId, HwCacheOp, HwCacheResult, HwId, SwId, hw_cache_config

#: perf's hardware event names (and aliases) -> config.
HARDWARE = {
    "cycles": HwId.CPU_CYCLES,
    "cpu-cycles": HwId.CPU_CYCLES,
    "instructions": HwId.INSTRUCTIONS,
    "cache-references": HwId.CACHE_REFERENCES,
    "cache-misses": HwId.CACHE_MISSES,
    "branch-instructions": HwId.BRANCH_INSTRUCTIONS,
    "branches": HwId.BRANCH_INSTRUCTIONS,
    "branch-misses": HwId.BRANCH_MISSES,
    "bus-cycles": HwId.BUS_CYCLES,
    "stalled-cycles-frontend": HwId.STALLED_CYCLES_FRONTEND,
    "idle-cycles-frontend": HwId.STALLED_CYCLES_FRONTEND,
    "stalled-cycles-backend": HwId.STALLED_CYCLES_BACKEND,
    "idle-cycles-backend": HwId.STALLED_CYCLES_BACKEND,
    "ref-cycles": HwId.REF_CPU_CYCLES,
}

#: The canonical perf name per hardware config (for bindings made from numbers).
HARDWARE_NAME = {
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

#: The original tiptop's predefined upper-case names (docs/original.md section 2.3), plus the
#: three it compiled out, as generic hardware events.
PREDEFINED = {h.name: h for h in HwId}

#: perf's software event names (and aliases) -> config.
SOFTWARE = {
    "cpu-clock": SwId.CPU_CLOCK,
    "task-clock": SwId.TASK_CLOCK,
    "page-faults": SwId.PAGE_FAULTS,
    "faults": SwId.PAGE_FAULTS,
    "context-switches": SwId.CONTEXT_SWITCHES,
    "cs": SwId.CONTEXT_SWITCHES,
    "cpu-migrations": SwId.CPU_MIGRATIONS,
    "migrations": SwId.CPU_MIGRATIONS,
    "minor-faults": SwId.PAGE_FAULTS_MIN,
    "major-faults": SwId.PAGE_FAULTS_MAJ,
    "alignment-faults": SwId.ALIGNMENT_FAULTS,
    "emulation-faults": SwId.EMULATION_FAULTS,
    "dummy": SwId.DUMMY,
    "cgroup-switches": SwId.CGROUP_SWITCHES,
}

SOFTWARE_NAME = {
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


def cache_name(config: int) -> str:
    """perf's name for a HW_CACHE config (``L1-dcache-load-misses``)."""
    cache, op, result = config & 0xFF, (config >> 8) & 0xFF, (config >> 16) & 0xFF
    try:
        c = _CACHES[HwCacheId(cache)][0]
        o = _OPS[HwCacheOp(op)][0]
        r = HwCacheResult(result)
    except ValueError:
        return f"hw_cache/0x{config:x}/"
    return f"{c}-{o}s" if r is HwCacheResult.ACCESS else f"{c}-{o}-misses"
