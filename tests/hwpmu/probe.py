"""Which PERF_TYPE_HARDWARE events open on this machine, asked with ctypes on purpose
(independently of tiptop's binding, so the expectations do not come from the code under test)."""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import struct

_NR = {"x86_64": 298, "aarch64": 241}  # __NR_perf_event_open (asm/unistd.h)

#: PERF_COUNT_HW_* of the default screen's counters (include/uapi/linux/perf_event.h).
DEFAULT_SCREEN_EVENTS = {"CYCLE": 0, "INSN": 1, "MISS": 3, "BR": 5, "BUS": 6}


@functools.cache
def hw_event_error(config: int) -> str | None:
    """``None`` when PERF_TYPE_HARDWARE ``config`` opens on the caller (user mode), else the
    errno name (``ENOENT`` where the PMU lacks the event)."""
    attr = bytearray(128)
    struct.pack_into("<IIQ", attr, 0, 0, 128, config)
    struct.pack_into("<Q", attr, 40, (1 << 5) | (1 << 6))  # exclude_kernel, exclude_hv
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    buf = (ctypes.c_char * 128).from_buffer(attr)
    fd = libc.syscall(
        ctypes.c_long(_NR[platform.machine()]),
        buf,
        ctypes.c_int(0),
        ctypes.c_int(-1),
        ctypes.c_int(-1),
        ctypes.c_ulong(8),  # PERF_FLAG_FD_CLOEXEC
    )
    if fd < 0:
        return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
    os.close(fd)
    return None
