"""Numeric constants of the perf_event ABI (``include/uapi/linux/perf_event.h``): read
format, ioctls, open flags, libpfm4 values.

The event vocabulary (``enum perf_type_id``, ``perf_hw_id``, ``perf_sw_ids``, the cache ids)
and its names are in :mod:`tiptop.vocab`, which the screens read too; dynamic PMU types
are read from sysfs by ``tiptop.events``.
"""

from __future__ import annotations

from enum import IntEnum

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
