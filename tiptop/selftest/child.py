"""The self-test's child process: maps the kernels' machine code and runs them on request.

``python3 -m tiptop.selftest.child RFD WFD`` maps every kernel of ``tiptop.selftest.code``
for this machine into its own page (written while ``PROT_READ|PROT_WRITE``, then switched to
``PROT_READ|PROT_EXEC`` with mprotect(2), so no page is ever writable and executable at once),
says ``ok PID`` (its own pid: a wrapper such as ``perf stat`` may have started it) or
``refused: why`` on stdout, then reads ``KERNEL N [RING]`` lines on stdin and calls the kernel
with ``(N, RFD, WFD, buf)``: the kernel itself says ready, waits, runs and says done on the
pipes (see ``tiptop.selftest.code``). ``RING`` sets the bytes of a chase kernel's ring (default
``CHASE_BYTES``). A fault in a kernel ends this child, never tiptop.

Everything here is stdlib (``mmap``, ``ctypes``): the child must start fast and import nothing
of tiptop beyond the code tables.
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import random
import sys

from tiptop.selftest.code import CHASE_BYTES, LINE, PAGE, kernel_code

_PROT_READ, _PROT_WRITE, _PROT_EXEC = 1, 2, 4  # include/uapi/asm-generic/mman-common.h
_KERNEL_FN = ctypes.CFUNCTYPE(None, ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_void_p)


class Mapped:
    """One kernel's code in its own executable page."""

    def __init__(self, code: bytes) -> None:
        size = -(-len(code) // PAGE) * PAGE
        self.map = mmap.mmap(-1, size, prot=_PROT_READ | _PROT_WRITE)
        self.map.write(code)
        self._ref = ctypes.c_char.from_buffer(self.map)  # kept: the mapping stays put
        self.addr = ctypes.addressof(self._ref)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        if libc.mprotect(self.addr, size, _PROT_READ | _PROT_EXEC) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        self.fn = _KERNEL_FN(self.addr)


def fresh_pages(n: int) -> mmap.mmap:
    """``n`` anonymous pages never touched (the ``touch`` kernel faults each once); no
    transparent huge pages, which would take one fault per 2 MiB (Documentation/admin-guide/
    mm/transhuge.rst)."""
    m = mmap.mmap(-1, max(n, 1) * PAGE)
    advice = getattr(mmap, "MADV_NOHUGEPAGE", None)
    if advice is not None:
        with contextlib.suppress(OSError):
            m.madvise(advice)
    return m


def ring(size: int) -> mmap.mmap:
    """``size`` bytes holding one cycle through all their cache lines in a random order: at
    each line, the address of the next (a pointer chase: no prefetcher guesses it), every
    page touched before any counting starts."""
    m = fresh_pages(size // PAGE)
    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    order = list(range(1, size // LINE))
    random.Random(1).shuffle(order)
    words = (ctypes.c_uint64 * (size // 8)).from_buffer(m)
    prev = 0
    for line in order:
        words[prev * (LINE // 8)] = base + line * LINE
        prev = line
    words[prev * (LINE // 8)] = base
    del words
    return m


def serve(rfd: int, wfd: int, arch: str) -> int:
    """Map the kernels, then run the ones asked for on stdin until it closes."""
    from tiptop.selftest.code import KERNELS

    try:
        kernels = {name: Mapped(kernel_code(arch, name)) for name in KERNELS}
    except KeyError:
        print(f"refused: no kernels for {arch}", flush=True)
        return 3
    except (OSError, ValueError) as e:
        why = os.strerror(e.errno) if isinstance(e, OSError) and e.errno else str(e)
        print(f"refused: an executable mapping was refused ({why}): a W^X policy", flush=True)
        return 3
    print(f"ok {os.getpid()}", flush=True)
    rings: dict[int, mmap.mmap] = {}
    for line in sys.stdin:
        name, n, *size = line.split()
        count = int(n)
        nbytes = int(size[0]) if size else CHASE_BYTES.get(name, 0)
        if name in CHASE_BYTES and nbytes not in rings:
            rings[nbytes] = ring(nbytes)
        buf = fresh_pages(count) if name == "touch" else rings.get(nbytes)
        ref = ctypes.c_char.from_buffer(buf) if buf is not None else None
        kernels[name].fn(count, rfd, wfd, ctypes.addressof(ref) if ref is not None else None)
        del ref
        if name == "touch" and buf is not None:
            buf.close()
    return 0


if __name__ == "__main__":
    sys.exit(serve(int(sys.argv[1]), int(sys.argv[2]), os.uname().machine))
