"""Function symbols of ELF files, read within bounds: the ELF header and the program headers
through pyelftools (its only importer), the section headers and the symbol table with numpy;
cached by the file's identity.

A table comes from ``.symtab`` when the file has one, else ``.dynsym`` (what a stripped
library still exports), as perf does (tools/perf/util/symbol-elf.c); only defined function
symbols count (``STT_FUNC``, ``STT_GNU_IFUNC``). An address is looked up as perf's
``map__map_ip`` would: the file offset of the sample (``/proc/PID/maps``) turned into the
ELF virtual address through the ``PT_LOAD`` segment that holds it (``p_vaddr - p_offset``).

The file is the watched process's user's to make (issue 52, item 2): a crafted one claimed
10,000,000 symbols in 12 KB of sparse file, or a million sections, or names without a NUL,
that pyelftools read one Python object at a time (minutes, deaf to signals) or to the end
of the file once per symbol (gigabytes). So a read is bounded (:func:`read_elf`):

* every table the file claims is checked against the file's size before it is read (its
  headers, the symbol table, its string table), and against a cap: :data:`MAX_SECTIONS`,
  :data:`MAX_SEGMENTS`, :data:`MAX_ENTRIES` symbols scanned, :data:`MAX_FUNCTIONS` kept,
  :data:`MAX_STRINGS` bytes of names;
* symbols are read a chunk at a time into numpy arrays and filtered there (a function,
  defined, at an address), never one Python object per entry; a name is read up to its
  NUL or ``tiptop.where.functions.MAX_NAME`` bytes, when first shown;
* what pyelftools and numpy read goes through a stream that counts its bytes and the time
  (``tiptop.where.untrusted.Budget``: :data:`READ_SECONDS` a file); past either the file is
  refused, and tiptop goes on. A refresh reads files for :data:`REFRESH_SECONDS` at most
  (the rest at the next one), so a stop asked by a signal is seen within a second or two.

A file refused says why in one line per rule (``say``); its table is then None.

:class:`SymbolCache` is owned by one profiler (``tiptop.where.profile``): tables by their
file's identity (device, inode, size, modification time), not its name, within bounds in
count and bytes, the least recently used dropped first.
"""

from __future__ import annotations

import io
import os
import struct
import time
from collections import OrderedDict
from typing import IO, BinaryIO, cast

import numpy as np
from elftools.common.exceptions import ELFError
from elftools.construct.core import ConstructError
from elftools.elf.elffile import ELFFile

from tiptop.outside import printable
from tiptop.readonly import readonly
from tiptop.where.functions import Functions
from tiptop.where.untrusted import CHUNK, Budget, Refused, Say, open_untrusted

#: The most section headers read (a linked program or library has a few dozen).
MAX_SECTIONS = 4096
#: The most program headers read (a dozen, usually).
MAX_SEGMENTS = 512
#: The most symbol entries scanned in one table (a large unstripped C++ program: ~2 M).
MAX_ENTRIES = 4_000_000
#: The most functions kept of one table.
MAX_FUNCTIONS = 1_000_000
#: The most bytes of a string table read and kept.
MAX_STRINGS = 32 << 20
#: The most seconds and bytes one file's read may take.
READ_SECONDS = 0.5
READ_BYTES = 256 << 20
#: The most tables the cache keeps, and the most bytes they may hold in all (a table
#: larger than that is used, then dropped: read again when next needed).
CACHE_TABLES = 64
CACHE_BYTES = 64 << 20
#: The most seconds spent reading files in one refresh: a file not read by then is read
#: at a later refresh (its samples named by module and offset meanwhile).
REFRESH_SECONDS = 1.0

#: Section types (ELF gABI, "Section Header").
SHT_SYMTAB, SHT_STRTAB, SHT_NOBITS, SHT_DYNSYM = 2, 3, 8, 11
#: Symbol types counted as functions: ``STT_FUNC`` and ``STT_GNU_IFUNC``.
_FUNCTION_TYPES = (2, 10)

#: Section header and symbol entry layouts by ELF class (ELF gABI; elf(5)).
_SHDR = {
    32: [
        ("name", "u4"),
        ("type", "u4"),
        ("flags", "u4"),
        ("addr", "u4"),
        ("offset", "u4"),
        ("size", "u4"),
        ("link", "u4"),
        ("info", "u4"),
        ("addralign", "u4"),
        ("entsize", "u4"),
    ],
    64: [
        ("name", "u4"),
        ("type", "u4"),
        ("flags", "u8"),
        ("addr", "u8"),
        ("offset", "u8"),
        ("size", "u8"),
        ("link", "u4"),
        ("info", "u4"),
        ("addralign", "u8"),
        ("entsize", "u8"),
    ],
}
_SYM = {
    32: [
        ("name", "u4"),
        ("value", "u4"),
        ("size", "u4"),
        ("info", "u1"),
        ("other", "u1"),
        ("shndx", "u2"),
    ],
    64: [
        ("name", "u4"),
        ("info", "u1"),
        ("other", "u1"),
        ("shndx", "u2"),
        ("value", "u8"),
        ("size", "u8"),
    ],
}

#: What pyelftools raises on a malformed file.
ELF_ERRORS = (ELFError, ConstructError, ValueError, struct.error)


@readonly
class Segment:
    """One ``PT_LOAD`` program header: file bytes ``[offset, offset + size)`` are loaded at
    virtual address ``vaddr``."""

    offset: int
    size: int
    vaddr: int


class SymbolTable:
    """One ELF file's function symbols by address and its loadable segments."""

    def __init__(self, functions: Functions, segments: list[Segment]) -> None:
        self.functions = functions
        self.segments = segments

    @property
    def starts(self) -> list[int]:
        """The functions' start addresses, in order."""
        starts: list[int] = self.functions.starts.tolist()
        return starts

    @property
    def nbytes(self) -> int:
        """What the table holds, in bytes."""
        return self.functions.nbytes + 64 * len(self.segments)

    def vaddr(self, file_offset: int) -> int | None:
        """The virtual address of byte ``file_offset`` of the file, or None when no
        loadable segment holds it."""
        for seg in self.segments:
            if seg.offset <= file_offset < seg.offset + seg.size:
                return file_offset - seg.offset + seg.vaddr
        return None

    def symbol(self, vaddr: int) -> str | None:
        """The function whose bytes hold ``vaddr`` (a symbol of size 0 holds its own
        address only), or None."""
        return self.functions.symbol(vaddr)


class BoundedStream(io.RawIOBase):
    """A file as pyelftools reads it, each read counted against ``budget``
    (:class:`Refused` past it)."""

    def __init__(self, f: IO[bytes], budget: Budget) -> None:
        super().__init__()
        self._f = f
        self._budget = budget

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if not 0 <= offset < 2**63:  # a header's offset, as a crafted file claims it
            raise ELFError(f"an offset of {offset}")
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            raise ValueError("an unbounded read")
        self._budget.take(size)
        return self._f.read(size)


def read_table(path: str) -> SymbolTable:
    """The symbol table of the ELF file at ``path`` (tests; the profiler reads through
    :class:`SymbolCache`); raises :class:`Refused`, OSError or one of
    :data:`ELF_ERRORS`."""
    fd, st = open_untrusted(path)
    with os.fdopen(fd, "rb") as f:
        return read_elf(f, st.st_size)


def read_elf(f: BinaryIO, size: int, budget: Budget | None = None) -> SymbolTable:
    """The symbol table of the ELF image in ``f`` of ``size`` bytes (a file, or bytes read
    from memory), read within ``budget`` (default: :data:`READ_SECONDS` and
    :data:`READ_BYTES`). Raises :class:`Refused` (which bound), or one of
    :data:`ELF_ERRORS` for a file that is not ELF."""
    budget = budget or Budget(READ_SECONDS, READ_BYTES)
    stream = BoundedStream(f, budget)
    elf = ELFFile(cast(IO[bytes], stream))  # a file object all the same (io.RawIOBase)
    bits = elf.elfclass
    order = "<" if elf.little_endian else ">"
    segments = _segments(elf, size)
    sections = _section_headers(elf, stream, size, bits, order)
    for kind in (SHT_SYMTAB, SHT_DYNSYM):
        found = np.flatnonzero(sections["type"] == kind)
        if not len(found):
            continue
        functions = _functions(stream, sections, int(found[0]), size, bits, order)
        if len(functions):
            return SymbolTable(functions, segments)
    return SymbolTable(Functions(np.zeros(0), np.zeros(0), np.zeros(0), b""), segments)


def _segments(elf: ELFFile, size: int) -> list[Segment]:
    """The ``PT_LOAD`` program headers, when their table lies within the file."""
    n = elf.num_segments()
    if n > MAX_SEGMENTS:
        raise Refused(f"claims {n:,} program headers (at most {MAX_SEGMENTS:,} read)", "headers")
    if elf["e_phoff"] + n * elf["e_phentsize"] > size:
        raise Refused("its program headers lie past its end", "size")
    return [
        Segment(int(seg["p_offset"]), int(seg["p_filesz"]), int(seg["p_vaddr"]))
        for seg in elf.iter_segments()
        if seg["p_type"] == "PT_LOAD"
    ]


def _section_headers(
    elf: ELFFile, stream: BoundedStream, size: int, bits: int, order: str
) -> np.ndarray:
    """The section header table as a numpy record array, when it lies within the file and
    within :data:`MAX_SECTIONS`."""
    n = elf.num_sections()
    dtype = np.dtype([(name, order + kind) for name, kind in _SHDR[bits]])
    if n == 0:
        return np.zeros(0, dtype)
    if n > MAX_SECTIONS:
        raise Refused(f"claims {n:,} sections (at most {MAX_SECTIONS:,} read)", "headers")
    if elf["e_shentsize"] != dtype.itemsize:
        raise ELFError(f"section headers of {elf['e_shentsize']} bytes")
    if elf["e_shoff"] + n * dtype.itemsize > size:
        raise Refused("its section headers lie past its end", "size")
    stream.seek(elf["e_shoff"])
    return np.frombuffer(stream.read(n * dtype.itemsize), dtype)


def _functions(
    stream: BoundedStream, sections: np.ndarray, index: int, size: int, bits: int, order: str
) -> Functions:
    """The defined functions of the symbol table at section ``index``, its names from the
    string table it links to; each checked against the file's size and the caps."""
    table = sections[index]
    dtype = np.dtype([(name, order + kind) for name, kind in _SYM[bits]])
    link = int(table["link"])
    if int(table["entsize"]) != dtype.itemsize or not 0 < link < len(sections):
        raise ELFError("a symbol table of another layout")
    strings = sections[link]
    if int(strings["type"]) != SHT_STRTAB:
        raise ELFError("a symbol table whose names are not a string table")
    for part in (table, strings):
        if int(part["offset"]) + int(part["size"]) > size:
            claimed = int(part["size"])
            raise Refused(f"a section claims {claimed:,} bytes past its end", "size")
    entries = int(table["size"]) // dtype.itemsize
    if entries > MAX_ENTRIES:
        raise Refused(f"claims {entries:,} symbols (at most {MAX_ENTRIES:,} read)", "symbols")
    if int(strings["size"]) > MAX_STRINGS:
        raise Refused(f"{int(strings['size']):,} bytes of names (at most {MAX_STRINGS:,})", "size")
    starts, sizes, names = [], [], []
    per_chunk = CHUNK // dtype.itemsize
    kept = 0
    for first in range(0, entries, per_chunk):
        count = min(per_chunk, entries - first)
        stream.seek(int(table["offset"]) + first * dtype.itemsize)
        chunk = np.frombuffer(stream.read(count * dtype.itemsize), dtype)
        mine = np.isin(chunk["info"] & 0xF, _FUNCTION_TYPES)
        mine &= (chunk["shndx"] != 0) & (chunk["value"] != 0)
        mine &= chunk["name"] < int(strings["size"])
        chunk = chunk[mine][: MAX_FUNCTIONS - kept]
        starts.append(chunk["value"].astype(np.uint64))
        sizes.append(chunk["size"].astype(np.uint64))
        names.append(chunk["name"].astype(np.int64))
        kept += len(chunk)
        if kept >= MAX_FUNCTIONS:
            break
    stream.seek(int(strings["offset"]))
    blob = stream.read(int(strings["size"]))
    return Functions(np.concatenate(starts), np.concatenate(sizes), np.concatenate(names), blob)


#: A file's identity: device, inode, size, modification time (ns).
Identity = tuple[int, int, int, int]


class SymbolCache:
    """Symbol tables by their file's identity, the least recently used dropped past
    :data:`CACHE_TABLES` tables or :data:`CACHE_BYTES` bytes in all. A file that cannot be
    read as ELF is remembered as such (None) under its identity.

    Stale when the file changes (another identity: the entry is never looked up again
    and ages out). Keyed by what the file is, not by its name: a process that renames the
    file it maps every second (``maps`` shows each new name) finds the same table, and
    one that maps ever new files cannot grow the cache past its bounds."""

    def __init__(self, say: Say = lambda key, line: None) -> None:
        self._say = say
        self._vdso: SymbolTable | bool | None = False  # False: not read yet
        self._tables: OrderedDict[Identity, SymbolTable | None] = OrderedDict()
        self._bytes = 0
        self._until = time.monotonic() + REFRESH_SECONDS

    def __len__(self) -> int:
        return len(self._tables)

    @property
    def nbytes(self) -> int:
        """The bytes of the tables kept."""
        return self._bytes

    def new_refresh(self) -> None:
        """A refresh begins: its files may take :data:`REFRESH_SECONDS` to read."""
        self._until = time.monotonic() + REFRESH_SECONDS

    def table(
        self, path: str, opened: str | None = None, *, follow: bool = False
    ) -> SymbolTable | None:
        """The table of the file mapped as ``path``, read from ``opened`` (default
        ``path``: a process in another mount namespace is read through
        ``/proc/PID/root``) as an untrusted file (``tiptop.where.untrusted``: never
        through a link unless ``follow``, a regular file only); None when it cannot be
        read, said once per reason."""
        try:
            fd, st = open_untrusted(opened or path, follow=follow)
        except Refused as refused:
            self._refused(path, refused)
            return None
        except OSError:
            return None
        try:
            return self._read(path, fd, st)
        finally:
            os.close(fd)

    def _refused(self, path: str, refused: Refused) -> None:
        self._say(
            f"where:elf:{refused.rule}", f"symbols of {printable(path)} not read: {refused.why}"
        )

    def _read(self, path: str, fd: int, st: os.stat_result) -> SymbolTable | None:
        identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if identity in self._tables:
            self._tables.move_to_end(identity)
            return self._tables[identity]
        if time.monotonic() > self._until:
            return None  # this refresh has read enough: the file at a later one
        table: SymbolTable | None = None
        try:
            with os.fdopen(os.dup(fd), "rb") as f:
                table = read_elf(f, st.st_size)
        except Refused as refused:
            self._refused(path, refused)
        except (OSError, *ELF_ERRORS):
            pass  # not ELF, or damaged: named by module and offset
        self._keep(identity, table)
        return table

    def _keep(self, identity: Identity, table: SymbolTable | None) -> None:
        """Keep ``table``, dropping the least recently used past the bounds."""
        self._tables[identity] = table
        self._bytes += table.nbytes if table is not None else 0
        while len(self._tables) > CACHE_TABLES or (
            self._bytes > CACHE_BYTES and len(self._tables) > 1
        ):
            _old, dropped = self._tables.popitem(last=False)
            self._bytes -= dropped.nbytes if dropped is not None else 0

    def vdso(self) -> SymbolTable | None:
        """The symbols of the kernel's vDSO, read once from this process's own mapping,
        as perf does (tools/perf/util/vdso.c): every process of this kernel and ABI maps
        the same image, which does not change while the kernel runs. None when it cannot
        be read."""
        if self._vdso is False:
            self._vdso = _own_vdso()
        return self._vdso if isinstance(self._vdso, SymbolTable) else None


def _own_vdso() -> SymbolTable | None:
    """This process's ``[vdso]`` image (``/proc/self/maps``, ``/proc/self/mem``), read."""
    try:
        with open("/proc/self/maps") as f:
            line = next((ln for ln in f if ln.rstrip().endswith("[vdso]")), None)
        if line is None:
            return None
        start, _, end = line.split()[0].partition("-")
        with open("/proc/self/mem", "rb") as mem:
            mem.seek(int(start, 16))
            image = mem.read(int(end, 16) - int(start, 16))
        return read_elf(io.BytesIO(image), len(image))
    except (OSError, Refused, *ELF_ERRORS):
        return None


__all__ = [
    "CACHE_BYTES",
    "CACHE_TABLES",
    "ELF_ERRORS",
    "MAX_ENTRIES",
    "MAX_FUNCTIONS",
    "MAX_SECTIONS",
    "MAX_STRINGS",
    "BoundedStream",
    "Segment",
    "SymbolCache",
    "SymbolTable",
    "read_elf",
    "read_table",
]
