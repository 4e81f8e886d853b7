"""Function symbols of ELF files, read with pyelftools (its only importer), cached per
``(path, build-id)``.

A table comes from ``.symtab`` when the file has one, else ``.dynsym`` (what a stripped
library still exports), as perf does (tools/perf/util/symbol-elf.c); only defined function
symbols count (``STT_FUNC``, ``STT_GNU_IFUNC``). An address is looked up as perf's
``map__map_ip`` would: the file offset of the sample (``/proc/PID/maps``) turned into the
ELF virtual address through the ``PT_LOAD`` segment that holds it (``p_vaddr - p_offset``).

:class:`SymbolCache` is owned by one profiler (``tiptop.where.profile``). An entry is stale
when the file's identity (device, inode, size, modification time) changes: the file is then
read again for its build-id, and a table already read for the same ``(path, build-id)``
is kept (a binary rebuilt the same, or copied back in place).
"""

from __future__ import annotations

import bisect
import io
import os
from typing import BinaryIO

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import NoteSection, SymbolTableSection

from tiptop.outside import printable
from tiptop.readonly import readonly
from tiptop.where.untrusted import Refused, Say, open_untrusted

_FUNCTION_TYPES = ("STT_FUNC", "STT_LOOS")  # STT_LOOS is STT_GNU_IFUNC in pyelftools


@readonly
class Segment:
    """One ``PT_LOAD`` program header: file bytes ``[offset, offset + size)`` are loaded at
    virtual address ``vaddr``."""

    offset: int
    size: int
    vaddr: int


class SymbolTable:
    """One ELF file's function symbols by address and its loadable segments."""

    def __init__(
        self, names: list[tuple[int, int, str]], segments: list[Segment], build_id: str
    ) -> None:
        # Aliases at one address (``memcpy`` and ``__memcpy_avx``): the longest stands,
        # then the first by name (``__vdso_clock_gettime`` before ``clock_gettime``).
        names.sort(key=lambda n: (n[0], -n[1], n[2]))
        kept = [n for i, n in enumerate(names) if i == 0 or n[0] != names[i - 1][0]]
        self.starts = [s for s, _, _ in kept]
        self._ends = [s + size for s, size, _ in kept]
        self._names = [n for _, _, n in kept]
        self.segments = segments
        self.build_id = build_id

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
        i = bisect.bisect_right(self.starts, vaddr) - 1
        if i >= 0 and (vaddr < self._ends[i] or vaddr == self.starts[i]):
            return self._names[i]
        return None


def read_table(path: str) -> SymbolTable:
    """The symbol table of the ELF file at ``path``; raises OSError when unreadable and
    ELFError (or ValueError) when it is not an ELF file pyelftools can read."""
    with open(path, "rb") as f:
        return read_elf(f)


def read_elf(f: BinaryIO) -> SymbolTable:
    """The symbol table of the ELF image in ``f`` (a file, or bytes read from memory)."""
    elf = ELFFile(f)
    segments = [
        Segment(int(seg["p_offset"]), int(seg["p_filesz"]), int(seg["p_vaddr"]))
        for seg in elf.iter_segments()
        if seg["p_type"] == "PT_LOAD"
    ]
    names: list[tuple[int, int, str]] = []
    for section_name in (".symtab", ".dynsym"):
        section = elf.get_section_by_name(section_name)
        if not isinstance(section, SymbolTableSection):
            continue
        for sym in section.iter_symbols():
            if (
                sym["st_info"]["type"] in _FUNCTION_TYPES
                and sym["st_shndx"] != "SHN_UNDEF"
                and sym["st_value"]
            ):
                names.append((int(sym["st_value"]), int(sym["st_size"]), sym.name))
        if names:
            break
    return SymbolTable(names, segments, _build_id(elf))


def _build_id(elf: ELFFile) -> str:
    """The file's GNU build-id in hex, or "" when it has none."""
    section = elf.get_section_by_name(".note.gnu.build-id")
    if isinstance(section, NoteSection):
        for note in section.iter_notes():
            if note["n_type"] == "NT_GNU_BUILD_ID":
                return str(note["n_desc"])
    return ""


class SymbolCache:
    """Symbol tables by ``(path, build-id)``, found through each file's identity (see the
    module's docstring for what makes an entry stale). A file that cannot be read as ELF
    is remembered as such (None) under the same identity."""

    def __init__(self, say: Say = lambda key, line: None) -> None:
        self._say = say
        self._vdso: SymbolTable | bool | None = False  # False: not read yet
        self._by_identity: dict[str, tuple[tuple[int, int, int, int], SymbolTable | None]] = {}
        self._by_build_id: dict[tuple[str, str], SymbolTable] = {}

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
            self._say(
                f"where:elf:{refused.rule}",
                f"symbols of {printable(path)} not read: {refused.why}",
            )
            return None
        except OSError:
            return None
        try:
            return self._read(path, fd, st)
        finally:
            os.close(fd)

    def _read(self, path: str, fd: int, st: os.stat_result) -> SymbolTable | None:
        identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        known = self._by_identity.get(path)
        if known is not None and known[0] == identity:
            return known[1]
        try:
            with os.fdopen(os.dup(fd), "rb") as f:
                table: SymbolTable | None = read_elf(f)
        except (OSError, ELFError, ValueError):
            table = None
        if table is not None and table.build_id:
            table = self._by_build_id.setdefault((path, table.build_id), table)
        self._by_identity[path] = (identity, table)
        return table

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
        return read_elf(io.BytesIO(image))
    except (OSError, ELFError, ValueError):
        return None


__all__ = ["Segment", "SymbolCache", "SymbolTable", "read_elf", "read_table"]
