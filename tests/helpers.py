"""Small helpers shared by the tests (no fixtures here; see conftest.py)."""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import struct

_NR = {"x86_64": 298, "aarch64": 241}


@functools.cache
def hardware_pmu_error() -> str | None:
    """``None`` when ``cycles`` opens on this machine, else the errno name it fails with.

    Uses ctypes on purpose, independently of tiptop's own binding, so a bug in the
    binding cannot make the hardware tests skip themselves.
    """
    nr = _NR.get(platform.machine())
    if nr is None:
        return f"unsupported architecture {platform.machine()}"
    attr = bytearray(128)
    # type=HARDWARE(0), size=128, config=CPU_CYCLES(0), exclude_kernel|exclude_hv bits 5,6.
    struct.pack_into("<IIQ", attr, 0, 0, 128, 0)
    struct.pack_into("<Q", attr, 40, (1 << 5) | (1 << 6))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    buf = (ctypes.c_char * 128).from_buffer(attr)
    fd = libc.syscall(
        ctypes.c_long(nr), buf, ctypes.c_int(0), ctypes.c_int(-1), ctypes.c_int(-1),
        ctypes.c_ulong(8),
    )
    if fd < 0:
        return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
    os.close(fd)
    return None
