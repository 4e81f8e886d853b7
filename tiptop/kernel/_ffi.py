"""The only cffi code in tiptop: ``perf_event_open(2)`` and the optional libpfm4 calls.

ABI mode (``ffi.dlopen``), so no compiler is needed at install time, and out of line:
:data:`CDEF` is parsed once by cffi into the generated module ``tiptop/kernel/_perf_cffi.py``
(``python3 -m tiptop.kernel.ffi_gen`` writes it; ``tests/test_startup.py`` fails while it is
stale), so start-up neither imports pycparser nor parses C. ``struct
perf_event_attr`` is copied from ``include/uapi/linux/perf_event.h`` at
``PERF_ATTR_SIZE_VER8`` (136 bytes); the bitfield block is declared with cffi bitfields so
that the compiler's allocation rules (LSB first on little-endian) are followed, and the
layout is proven by ``tests/unit/test_perf_ffi.py``. glibc has no wrapper for the syscall
("glibc provides no wrapper", perf_event_open(2)), so it goes through variadic
``syscall(2)`` with every argument cast to its C type.
"""

from __future__ import annotations

import _thread
import errno
import os
import platform
from typing import Any, TypeAlias

from tiptop.errors import EventError, TiptopError
from tiptop.kernel._perf_cffi import ffi
from tiptop.kernel.attr import Attr

#: A cffi object (``struct perf_event_attr *``, the loaded libpfm4): its fields and functions
#: exist only at run time, parsed from :data:`CDEF`, so no type checker can name them.
CData: TypeAlias = Any

#: The C declarations used, compiled into ``tiptop/kernel/_perf_cffi.py`` (:func:`generate`).
CDEF = """
    struct perf_event_attr {
        uint32_t type;
        uint32_t size;
        uint64_t config;
        uint64_t sample_period;
        uint64_t sample_type;
        uint64_t read_format;
        uint64_t disabled : 1, inherit : 1, pinned : 1, exclusive : 1,
                 exclude_user : 1, exclude_kernel : 1, exclude_hv : 1, exclude_idle : 1,
                 mmap : 1, comm : 1, freq : 1, inherit_stat : 1,
                 enable_on_exec : 1, task : 1, watermark : 1, precise_ip : 2,
                 mmap_data : 1, sample_id_all : 1, exclude_host : 1, exclude_guest : 1,
                 exclude_callchain_kernel : 1, exclude_callchain_user : 1, mmap2 : 1,
                 comm_exec : 1, use_clockid : 1, context_switch : 1, write_backward : 1,
                 namespaces : 1, ksymbol : 1, bpf_event : 1, aux_output : 1, cgroup : 1,
                 text_poke : 1, build_id : 1, inherit_thread : 1, remove_on_exec : 1,
                 sigtrap : 1, reserved_1 : 26;
        uint32_t wakeup_events;
        uint32_t bp_type;
        uint64_t config1;
        uint64_t config2;
        uint64_t branch_sample_type;
        uint64_t sample_regs_user;
        uint32_t sample_stack_user;
        int32_t clockid;
        uint64_t sample_regs_intr;
        uint32_t aux_watermark;
        uint16_t sample_max_stack;
        uint16_t reserved_2;
        uint32_t aux_sample_size;
        uint32_t reserved_3;
        uint64_t sig_data;
        uint64_t config3;
    };
    long syscall(long number, ...);
    int mallopt(int param, int value);

    /* libpfm4 (perfmon/pfmlib.h, pfmlib_perf_event.h); pfm_os_t is an enum -> int. */
    typedef struct {
        struct perf_event_attr *attr;
        char **fstr;
        size_t size;
        int idx;
        int cpu;
        int flags;
        int pad0;
    } pfm_perf_encode_arg_t;
    int pfm_initialize(void);
    const char *pfm_strerror(int code);
    int pfm_get_os_event_encoding(const char *str, int dfl_plm, int os, void *arg);
"""

#: ``sizeof(struct perf_event_attr)`` as declared (PERF_ATTR_SIZE_VER8).
ATTR_SIZE = ffi.sizeof("struct perf_event_attr")
#: PERF_ATTR_SIZE_VER0: the smallest size the kernel accepts.
ATTR_SIZE_VER0 = 64

#: ``__NR_perf_event_open`` per ``platform.machine()`` (arch/x86/entry/syscalls/syscall_64.tbl
#: and include/uapi/asm-generic/unistd.h, used by arm64 and riscv64).
SYSCALL_NUMBERS = {"x86_64": 298, "amd64": 298, "aarch64": 241, "arm64": 241, "riscv64": 241}

_libc = ffi.dlopen(None)

#: This machine's syscall number as a C long (None where unknown: the first call says so).
_NR = ffi.cast("long", n) if (n := SYSCALL_NUMBERS.get(platform.machine())) else None

# Fields of Attr copied one to one into the C struct.
_ATTR_FIELDS = (
    "type",
    "config",
    "config1",
    "config2",
    "config3",
    "read_format",
    "disabled",
    "inherit",
    "inherit_thread",
    "pinned",
    "exclude_user",
    "exclude_kernel",
    "exclude_hv",
    "exclude_idle",
    "enable_on_exec",
    "sample_period",
    "sample_type",
    "freq",
    "exclude_callchain_kernel",
    "exclude_callchain_user",
    "sample_max_stack",
    "sample_id_all",
    "context_switch",
    "use_clockid",
    "clockid",
)


def syscall_number(machine: str | None = None) -> int:
    """``__NR_perf_event_open`` for ``machine`` (default: this one); TiptopError if unknown."""
    machine = machine or platform.machine()
    try:
        return SYSCALL_NUMBERS[machine]
    except KeyError:
        raise TiptopError(
            f"perf_event_open: unsupported architecture {machine!r} "
            f"(known: {', '.join(sorted(set(SYSCALL_NUMBERS)))})"
        ) from None


class Layouts:
    """The bytes of each :class:`Attr`'s struct once laid out, keyed by the Attr itself.

    A plan opens the same few attrs on every task: filling the bitfields is one cffi store
    per field, copying laid-out bytes one ``memmove``. An Attr is frozen and compares by
    value, and its struct's bytes depend on its fields only (``size`` is set per call, after
    the copy), so an entry is never stale; the memo grows with the distinct attrs opened
    (a few per screen, whatever the number of tasks)."""

    def __init__(self) -> None:
        self._bytes: dict[Attr, bytes] = {}

    def fill(self, c: CData, attr: Attr) -> None:
        """Set the zeroed struct ``c`` from ``attr`` (every field but ``size``)."""
        laid = self._bytes.get(attr)
        if laid is not None:
            ffi.memmove(c, laid, ATTR_SIZE)
            return
        for name in _ATTR_FIELDS:
            setattr(c, name, int(getattr(attr, name)))
        self._bytes[attr] = bytes(ffi.buffer(c))


#: The layouts of every struct this process hands the kernel (:func:`new_attr`).
LAYOUTS = Layouts()


def new_attr(attr: Attr, size: int = ATTR_SIZE) -> CData:
    """A zeroed ``struct perf_event_attr *`` filled from ``attr`` with ``size`` set."""
    c = ffi.new("struct perf_event_attr *")
    LAYOUTS.fill(c, attr)
    c.size = size
    return c


def attr_bytes(attr: Attr) -> bytes:
    """The exact bytes handed to the kernel for ``attr`` (for layout tests)."""
    return bytes(ffi.buffer(new_attr(attr)))


def perf_event_open(attr: Attr, pid: int, cpu: int, group_fd: int, flags: int) -> int:
    """Open one event; returns the fd or raises ``OSError`` with the kernel's errno
    (:func:`open_struct` of a new struct for ``attr``)."""
    return open_struct(new_attr(attr), c_int(pid), c_int(cpu), c_int(group_fd), c_flags(flags))


def c_int(n: int) -> CData:
    """``n`` as a C ``int``: what a variadic call needs told (``syscall(2)``'s arguments)."""
    return ffi.cast("int", n)


def c_flags(n: int) -> CData:
    """``n`` as the C ``unsigned long`` of perf_event_open's ``flags``."""
    return ffi.cast("unsigned long", n)


def open_struct(c: CData, pid: CData, cpu: CData, group_fd: CData, flags: CData) -> int:
    """perf_event_open(2) of the filled struct ``c`` (:func:`new_attr`), the other
    arguments given as their C types (:func:`c_int`, :func:`c_flags`), so that a caller
    opening one struct on many tasks casts each argument once and fills the struct once
    (the kernel only reads it, but for ``size`` below); the fd, or ``OSError`` with the
    kernel's errno.

    E2BIG means our struct is larger than this kernel's and the extra bytes are not zero;
    the kernel then writes the size it expects into ``size`` (perf_event_open(2), E2BIG),
    so retry once with that size when every byte past it is zero; the struct keeps it.
    """
    nr = _NR or ffi.cast("long", syscall_number())
    for _attempt in range(2):
        fd = _libc.syscall(nr, c, pid, cpu, group_fd, flags)
        if fd >= 0:
            return int(fd)
        err = ffi.errno
        if err != errno.E2BIG:
            break
        want = int(c.size)
        raw = bytes(ffi.buffer(c))
        if not (ATTR_SIZE_VER0 <= want < ATTR_SIZE) or any(raw[want:]):
            break
        c.size = want
    raise OSError(err, os.strerror(err))


# ----------------------------------------------------------------------------- malloc

#: mallopt(3) parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def keep_heap(nbytes: int) -> bool:
    """Have the C library's malloc serve blocks below ``nbytes`` from its heap and keep up
    to twice that of freed memory at its top, instead of a mmap(2)/munmap(2) pair and
    fresh pages (one page fault each) for every block of 128 KiB or more (mallopt(3),
    M_MMAP_THRESHOLD, M_TRIM_THRESHOLD). numpy allocates each array it makes with malloc:
    with thousands of tasks a refresh makes many such arrays (5000 rows of 5 counters:
    200 KB). ``nbytes`` at most 32 MiB (mallopt(3): the largest M_MMAP_THRESHOLD on 64-bit
    systems). Returns whether the library took both settings (not one without
    ``mallopt``, such as musl's)."""
    try:
        mallopt = _libc.mallopt
    except AttributeError:
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, nbytes)) and bool(mallopt(_M_TRIM_THRESHOLD, 2 * nbytes))


# ----------------------------------------------------------------------------- libpfm4

#: ``threading.Lock`` is this same lock type (its documentation: "a factory function which
#: returns an instance of the most efficient version of the concrete Lock class"); taken
#: from ``_thread``, the module beneath it, because a run needs no other part of threading.
_pfm_lock = _thread.allocate_lock()
_pfm: CData = None


def pfm_lib() -> CData:
    """The initialised libpfm4 library (loaded once), or ``EventError`` saying how to get it."""
    global _pfm
    with _pfm_lock:
        if _pfm is None:
            try:
                lib = ffi.dlopen("libpfm.so.4")
            except OSError as e:
                raise EventError(
                    "libpfm4 is not installed (libpfm.so.4 not found: "
                    f"{e}); install it (Debian: apt install libpfm4) or give the event "
                    "as cpu/event=0x..,umask=0x../"
                ) from None
            rc = lib.pfm_initialize()
            if rc != 0:
                msg = ffi.string(lib.pfm_strerror(rc)).decode(errors="replace")
                raise EventError(f"libpfm4 failed to initialise: {msg}")
            _pfm = lib
        return _pfm


# ----------------------------------------------------------------------------- generation


def generate() -> str:
    """The text of ``tiptop/kernel/_perf_cffi.py``: :data:`CDEF` compiled by cffi for the
    out-of-line ABI mode (``FFI.set_source(name, None)``), a module that needs only
    ``_cffi_backend`` at run time (``python3 -m tiptop.kernel.ffi_gen`` writes it). A
    developer's step: what it imports is not loaded by a run of tiptop."""
    import contextlib
    import io
    import tempfile

    import cffi

    builder = cffi.FFI()
    builder.cdef(CDEF)
    builder.set_source("tiptop.kernel._perf_cffi", None)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "_perf_cffi.py")
        with contextlib.redirect_stdout(io.StringIO()):  # cffi says "generating ..."
            builder.emit_python_code(path)
        with open(path, encoding="utf-8") as f:
            return f.read()


# ----------------------------------------------------------------------------- renameat2

#: ``__NR_renameat2`` per ``platform.machine()`` (arch/x86/entry/syscalls/syscall_64.tbl 316;
#: include/uapi/asm-generic/unistd.h 276, used by arm64 and riscv64).
RENAMEAT2_NUMBERS = {"x86_64": 316, "amd64": 316, "aarch64": 276, "arm64": 276, "riscv64": 276}
#: renameat2(2) flags (include/uapi/linux/fs.h).
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2


def renameat2(dir_fd: int, old: str, new: str, flags: int) -> None:
    """renameat2(2) of two names in the directory ``dir_fd`` (Python's os has no
    wrapper). Raises OSError with the kernel's errno, ENOSYS where this machine's syscall
    number is not known here."""
    number = RENAMEAT2_NUMBERS.get(platform.machine())
    if number is None:
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))
    fd = ffi.cast("int", dir_fd)
    rc = _libc.syscall(
        ffi.cast("long", number),
        fd,
        ffi.new("char[]", os.fsencode(old)),
        fd,
        ffi.new("char[]", os.fsencode(new)),
        ffi.cast("unsigned int", flags),
    )
    if rc != 0:
        err = ffi.errno
        raise OSError(err, os.strerror(err))
