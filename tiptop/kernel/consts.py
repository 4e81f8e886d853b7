"""Numeric constants of the perf_event ABI as IntEnums (``include/uapi/linux/perf_event.h``).

Only fixed ABI values live here; dynamic PMU types are read from sysfs by ``tiptop.events``.
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


#: "PERF_TYPE_HARDWARE: 0xEEEEEEEE000000AA ... EEEEEEEE: PMU type ID" (uapi perf_event.h):
#: on hybrid CPUs generic and cache events carry the core PMU's type in config[63:32].
PERF_PMU_TYPE_SHIFT = 32


class Ioctl(IntEnum):
    """``PERF_EVENT_IOC_*`` request numbers (asm-generic ``_IO``/``_IOR``/``_IOW`` rules)."""

    ENABLE = 0x2400
    DISABLE = 0x2401
    REFRESH = 0x2402
    RESET = 0x2403
    PERIOD = 0x40082404
    SET_OUTPUT = 0x2405
    SET_FILTER = 0x40082406
    ID = 0x80082407


#: ``perf_event_open`` flags (perf_event_open(2)); tiptop always passes FD_CLOEXEC.
PERF_FLAG_FD_NO_GROUP = 1
PERF_FLAG_FD_OUTPUT = 2
PERF_FLAG_PID_CGROUP = 4
PERF_FLAG_FD_CLOEXEC = 8

#: ioctl argument: apply ENABLE/DISABLE/RESET to the whole group.
PERF_IOC_FLAG_GROUP = 1

#: libpfm4: ``pfm_os_t`` and privilege-level masks (perfmon/pfmlib.h).
PFM_OS_PERF_EVENT = 1
PFM_OS_PERF_EVENT_EXT = 2
PFM_PLM0 = 0x1
PFM_PLM3 = 0x8
PFM_PLMH = 0x10
PFM_SUCCESS = 0
PFM_ERR_NOTFOUND = -4
