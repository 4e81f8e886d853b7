"""Instruction pointers of one process turned into ``(symbol, module)`` names.

Each address is placed in its executable mapping of ``/proc/PID/maps`` (proc(5)): a file
mapping gives the file and offset, looked up in the file's ELF symbols
(``tiptop.where.elf``); an anonymous one is looked up in the JIT's map file
``/tmp/perf-PID.map`` (``tiptop.where.jitmap``), read at most once a refresh, when a
sample falls in anonymous memory. Names
follow perf: an address no symbol holds is ``[module+0xOFFSET]`` (the ELF virtual address
in a file, the offset in the mapping otherwise), anonymous memory is ``//anon``, a file
replaced since it was mapped keeps its `` (deleted)`` mark, and an address outside every
mapping is ``[unknown]``. Special mappings keep their kernel names (``[vdso]``,
``[heap]``, ``[stack]``); the vDSO's functions are named from tiptop's own vDSO, the same
image (``SymbolCache.vdso``), as perf does.

The maps are read again at each :meth:`Resolver.refresh`; the last readable ones stand
for a process that exited since (its final samples are named with them).

Every name is outside text (a file's name, its symbols and the JIT map are the process's
user's to choose): ``/proc/PID/maps`` is read as bytes and its paths decoded losslessly
(``os.fsdecode``, for opening the files), and each ``(symbol, module)`` that
:meth:`Resolver.name` gives is printable (``tiptop.outside``), in every output format.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable

from tiptop.outside import printable
from tiptop.readonly import readonly
from tiptop.where.elf import SymbolCache, SymbolTable
from tiptop.where.jitmap import JitMap
from tiptop.where.untrusted import Say

#: perf's names (tools/perf/util/map.c, symbol.c).
UNKNOWN = "[unknown]"
ANON = "//anon"
DELETED = " (deleted)"


@readonly
class Mapping:
    """One executable line of ``/proc/PID/maps``: ``[start, end)`` maps ``path`` (or a
    special name, or "" for anonymous memory) from file offset ``offset``."""

    start: int
    end: int
    offset: int
    path: str


def parse_maps(text: str) -> list[Mapping]:
    """The executable mappings of a ``/proc/PID/maps`` text, by start address."""
    found: list[Mapping] = []
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 5 or "x" not in parts[1]:
            continue
        start, _, end = parts[0].partition("-")
        path = parts[5] if len(parts) == 6 else ""
        found.append(Mapping(int(start, 16), int(end, 16), int(parts[2], 16), path))
    found.sort(key=lambda m: m.start)
    return found


class Resolver:
    """Names for the addresses of process ``pid`` (see the module's docstring); what
    cannot be read is said through ``say(key, line)``."""

    def __init__(
        self,
        pid: int,
        owner_uid: int,
        symbols: SymbolCache,
        proc_root: str = "/proc",
        say: Say = lambda key, line: None,
    ) -> None:
        self.pid = pid
        self._proc = f"{proc_root}/{pid}"
        self._symbols = symbols
        self._jit = JitMap(pid, owner_uid, say)
        self._jit_read = False  # whether the JIT map was looked at since the maps were
        self._maps: list[Mapping] = []
        self._starts: list[int] = []
        #: Per mapping (by start) looked at since the maps were read, its file's table.
        self._tables: dict[int, SymbolTable | None] = {}

    def refresh(self, still: Callable[[], bool] = lambda: True) -> bool:
        """Read the maps again; False when they could not be read, or when ``still()``
        says, once they are read, that they may not be the process's (it exited: another
        may have its PID). Then the last maps read stand, for its last samples."""
        try:
            with open(f"{self._proc}/maps", "rb") as f:
                text = os.fsdecode(f.read())
        except OSError:
            return False
        if not text or not still():  # a zombie's maps are empty
            return False
        self._maps = parse_maps(text)
        self._starts = [m.start for m in self._maps]
        self._jit_read = False
        self._tables = {}
        self._symbols.new_refresh()
        return True

    def name(self, ip: int) -> tuple[str, str]:
        """``(symbol, module)`` for instruction pointer ``ip``, both printable."""
        symbol, module = self._name(ip)
        return printable(symbol), printable(module)

    def _name(self, ip: int) -> tuple[str, str]:
        i = bisect.bisect_right(self._starts, ip) - 1
        if i < 0 or ip >= self._maps[i].end:
            return UNKNOWN, UNKNOWN
        m = self._maps[i]
        if not m.path or m.path.startswith("[anon"):
            if not self._jit_read:
                self._jit.refresh()
                self._jit_read = True
            jitted = self._jit.lookup(ip)
            if jitted is not None:
                return jitted, self._jit.module
            return f"[{ANON}+{ip - m.start:#x}]", ANON
        if m.path == "[vdso]":
            vdso = self._symbols.vdso()
            vaddr = vdso.vaddr(ip - m.start) if vdso is not None else None
            symbol = vdso.symbol(vaddr) if vdso is not None and vaddr is not None else None
            if symbol is not None:
                return symbol, m.path
        if m.path.startswith("["):  # [vdso], [heap], [stack], [uprobes]...
            return f"[{m.path[1:-1]}+{ip - m.start:#x}]", m.path
        return self._file_name(m, ip)

    def _file_name(self, m: Mapping, ip: int) -> tuple[str, str]:
        deleted = m.path.endswith(DELETED)
        path = m.path.removesuffix(DELETED)
        module = os.path.basename(path) + (DELETED if deleted else "")
        file_offset = ip - m.start + m.offset
        if m.start not in self._tables:
            self._tables[m.start] = self._table(m, path, deleted)
        table = self._tables[m.start]
        vaddr = table.vaddr(file_offset) if table is not None else None
        if table is None or vaddr is None:
            return f"[{module}+{file_offset:#x}]", module
        symbol = table.symbol(vaddr)
        return (symbol if symbol is not None else f"[{module}+{vaddr:#x}]"), module

    def _table(self, m: Mapping, path: str, deleted: bool) -> SymbolTable | None:
        """The symbols of the file ``m`` maps. A deleted file is still readable through
        the mapping's map_files link (the kernel's own link to the very file mapped); a
        live one through the process's root (another mount namespace: a container), else
        at its path here."""
        if deleted:
            return self._symbols.table(
                m.path, f"{self._proc}/map_files/{m.start:x}-{m.end:x}", follow=True
            )
        table = self._symbols.table(m.path, f"{self._proc}/root{path}")
        return table if table is not None else self._symbols.table(m.path, path)


__all__ = ["ANON", "UNKNOWN", "Mapping", "Resolver", "parse_maps"]
