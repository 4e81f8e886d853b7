"""Instruction pointers of one process turned into ``(symbol, module)`` names.

Each address is placed in its executable mapping of ``/proc/PID/maps`` (proc(5)): a file
mapping gives the file and offset, looked up in the file's ELF symbols
(``tiptop.where.elf``); an anonymous one is looked up in the JIT's map file
``/tmp/perf-PID.map`` (perf's convention, tools/perf/Documentation/jit-interface.txt:
one ``START SIZE symbolname`` line per function, hex numbers), which the JVM's
perf-map-agent, V8's ``--perf-basic-prof`` and Python 3.12's ``-X perf`` write. Names
follow perf: an address no symbol holds is ``[module+0xOFFSET]`` (the ELF virtual address
in a file, the offset in the mapping otherwise), anonymous memory is ``//anon``, a file
replaced since it was mapped keeps its `` (deleted)`` mark, and an address outside every
mapping is ``[unknown]``. Special mappings keep their kernel names (``[vdso]``,
``[heap]``, ``[stack]``); the vDSO's functions are named from tiptop's own vDSO, the same
image (``SymbolCache.vdso``), as perf does.

The maps are read again at each :meth:`Resolver.refresh`; the last readable ones stand
for a process that exited since (its final samples are named with them). The JIT map is
read again when its size or modification time changes, and only when owned by root, by
this user or by the process's user (perf's rule for the file, which anyone could write in
/tmp).

Every name is outside text (a file's name, its symbols and the JIT map are the process's
user's to choose): ``/proc/PID/maps`` is read as bytes and its paths decoded losslessly
(``os.fsdecode``, for opening the files), and each ``(symbol, module)`` that
:meth:`Resolver.name` gives is printable (``tiptop.outside``), in every output format.
"""

from __future__ import annotations

import bisect
import os

from tiptop.outside import printable
from tiptop.readonly import readonly
from tiptop.where.elf import SymbolCache

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


def parse_jit_map(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, name)`` of each well-formed line of a perf map file, by start."""
    entries: list[tuple[int, int, str]] = []
    for line in text.splitlines():
        parts = line.split(None, 2)
        if len(parts) != 3:
            continue
        try:
            start, size = int(parts[0], 16), int(parts[1], 16)
        except ValueError:
            continue
        entries.append((start, start + size, parts[2].strip()))
    entries.sort()
    return entries


class JitMap:
    """``/tmp/perf-PID.map`` of one process (see the module's docstring for when it is
    read again and whose file is trusted)."""

    def __init__(self, pid: int, owner_uid: int, tmp: str = "/tmp") -> None:
        self.path = f"{tmp}/perf-{pid}.map"
        self.module = os.path.basename(self.path)
        self._owners = {0, os.geteuid(), owner_uid}
        self._identity: tuple[int, int] | None = None
        self._starts: list[int] = []
        self._entries: list[tuple[int, int, str]] = []

    def lookup(self, ip: int) -> str | None:
        """The JIT'd function holding ``ip``, or None."""
        self._reload()
        i = bisect.bisect_right(self._starts, ip) - 1
        if i >= 0 and ip < self._entries[i][1]:
            return self._entries[i][2]
        return None

    def _reload(self) -> None:
        try:
            st = os.stat(self.path)
        except OSError:
            self._identity, self._entries, self._starts = None, [], []
            return
        identity = (st.st_size, st.st_mtime_ns)
        if identity == self._identity:
            return
        self._identity = identity
        self._entries = []
        if st.st_uid in self._owners:
            try:
                with open(self.path, errors="replace") as f:
                    self._entries = parse_jit_map(f.read())
            except OSError:
                pass
        self._starts = [e[0] for e in self._entries]


class Resolver:
    """Names for the addresses of process ``pid`` (see the module's docstring)."""

    def __init__(
        self, pid: int, owner_uid: int, symbols: SymbolCache, proc_root: str = "/proc"
    ) -> None:
        self.pid = pid
        self._proc = f"{proc_root}/{pid}"
        self._symbols = symbols
        self._jit = JitMap(pid, owner_uid)
        self._maps: list[Mapping] = []
        self._starts: list[int] = []

    def refresh(self) -> bool:
        """Read the maps again; False when they could not be read (the process exited:
        the last ones read stand)."""
        try:
            with open(f"{self._proc}/maps", "rb") as f:
                text = os.fsdecode(f.read())
        except OSError:
            return False
        if not text:  # a zombie's maps are empty
            return False
        self._maps = parse_maps(text)
        self._starts = [m.start for m in self._maps]
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
        # A deleted file is still readable through the mapping's map_files link; a live
        # one through the process's root (another mount namespace: a container).
        opened = (
            f"{self._proc}/map_files/{m.start:x}-{m.end:x}"
            if deleted
            else f"{self._proc}/root{path}"
        )
        table = self._symbols.table(m.path, opened)
        if table is None and not deleted:
            table = self._symbols.table(m.path, path)
        vaddr = table.vaddr(file_offset) if table is not None else None
        if table is None or vaddr is None:
            return f"[{module}+{file_offset:#x}]", module
        symbol = table.symbol(vaddr)
        return (symbol if symbol is not None else f"[{module}+{vaddr:#x}]"), module


__all__ = ["ANON", "UNKNOWN", "JitMap", "Mapping", "Resolver", "parse_jit_map", "parse_maps"]
