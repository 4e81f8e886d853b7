"""The running kernel's functions by address, from ``/proc/kallsyms`` (proc(5)): the kernel
frames of the call chains that off-CPU samples carry (``tiptop.where.offcpu``), named as
perf names them (module ``[kernel.kallsyms]``).

The file is the kernel's, not the watched process's: it is read once, when a kernel
address is first named, and kept while the profiler lives (a module loaded later is named
``[kernel.kallsyms+0xADDRESS]``). Only text symbols count (types ``t``, ``T``, ``w``,
``W``); a function ends where the next one begins. Without the right to see kernel
addresses (``kernel.kptr_restrict``, CAP_SYSLOG) every address reads as 0, and the kernel's
frames are then ``[kernel.kallsyms+0x...]``.
"""

from __future__ import annotations

import numpy as np

from tiptop.where.functions import Functions

#: perf's module name for the kernel's own code (tools/perf/util/machine.c).
KERNEL = "[kernel.kallsyms]"
#: The most bytes of ``/proc/kallsyms`` read (a distribution kernel's is ~10 MB).
MAX_BYTES = 64 << 20
_TEXT = (b"t", b"T", b"w", b"W")


def read_kallsyms(path: str = "/proc/kallsyms") -> Functions | None:
    """The kernel's text symbols, or None when they cannot be read or are hidden (every
    address 0)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES)
    except OSError:
        return None
    starts: list[int] = []
    offsets: list[int] = []
    blob = bytearray()
    for line in data.split(b"\n"):
        parts = line.split(None, 3)
        if len(parts) < 3 or parts[1] not in _TEXT:
            continue
        try:
            start = int(parts[0], 16)
        except ValueError:
            continue
        if start:
            starts.append(start)
            offsets.append(len(blob))
            blob += parts[2] + b"\0"
    if not starts:
        return None
    order = np.argsort(np.array(starts, np.uint64), kind="stable")
    first = np.array(starts, np.uint64)[order]
    ends = np.append(first[1:], first[-1] + np.uint64(1))
    sizes = np.empty(len(first), np.uint64)
    sizes[order] = ends - first
    return Functions(np.array(starts, np.uint64), sizes, np.array(offsets, np.int64), bytes(blob))


__all__ = ["KERNEL", "read_kallsyms"]
