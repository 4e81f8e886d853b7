"""Function names by address, kept compact: the table an ELF file's symbols and a JIT map
are both read into (``tiptop.where.elf``, ``tiptop.where.resolve``).

A table holds, per function, its start and end (numpy arrays sorted by start) and where its
name begins in one blob of bytes (an ELF string table as read, or a JIT map's names joined
by NULs); a name ends at its NUL, or after :data:`MAX_NAME` bytes, and is decoded (made
printable, ``tiptop.outside``) only when a sample first falls in it. So a table costs about
24 bytes a function plus its names, whatever the file claims, and :attr:`Functions.nbytes`
says how much (the symbol cache's bound, ``tiptop.where.elf.SymbolCache``).

At one start address the longest function stands, then the first by name (aliases such
as ``memcpy`` and ``__memcpy_avx``, ``__vdso_clock_gettime`` and ``clock_gettime``), as
perf's ``choose_best_symbol`` prefers (tools/perf/util/symbol.c).
"""

from __future__ import annotations

import numpy as np

from tiptop.outside import decoded

#: The most bytes of one name kept (a C++ name rarely passes 1 KiB); a longer name, or one
#: whose NUL is missing, is cut there and shown ending in ``...``.
MAX_NAME = 1024
#: Decoded names kept per table (a profile names the few functions its samples fell in;
#: at most ~0.5 MB of names, long ones included).
_MEMO = 512
_TOP = np.uint64(2**64 - 1)


class Functions:
    """Functions by address (see the module's docstring). ``starts`` and ``sizes`` (any
    order, one per function) and ``names`` (where each name begins in ``blob``)."""

    def __init__(
        self, starts: np.ndarray, sizes: np.ndarray, names: np.ndarray, blob: bytes | bytearray
    ) -> None:
        starts = np.asarray(starts, np.uint64)
        sizes = np.asarray(sizes, np.uint64)
        names = np.asarray(names, np.int64)
        longest_first = -np.minimum(sizes, np.uint64(2**62)).astype(np.int64)
        order = np.lexsort((longest_first, starts))
        starts, sizes, names = starts[order], sizes[order], names[order]
        first = np.ones(len(starts), bool)
        first[1:] = starts[1:] != starts[:-1]
        self._blob = blob
        names = self._first_by_name(starts, sizes, names, first)
        self.starts = starts[first]
        # An end past the top of the address space stops there.
        self._ends = self.starts + np.minimum(sizes[first], _TOP - self.starts)
        self._names = names[first]
        self._memo: dict[int, str] = {}

    def _first_by_name(
        self, starts: np.ndarray, sizes: np.ndarray, names: np.ndarray, first: np.ndarray
    ) -> np.ndarray:
        """``names`` with each kept function's name the first by name among the aliases of
        its start and size (a few per library: only those are compared)."""
        tie = np.zeros(len(starts), bool)
        tie[1:] = ~first[1:] & (sizes[1:] == sizes[:-1])
        if not tie.any():
            return names
        names = names.copy()
        for i in np.flatnonzero(tie).tolist():
            kept = i - 1
            while not first[kept]:
                kept -= 1
            if self._raw(int(names[i])) < self._raw(int(names[kept])):
                names[kept] = names[i]
        return names

    def __len__(self) -> int:
        return len(self.starts)

    @property
    def nbytes(self) -> int:
        """What the table holds, in bytes: its arrays and its names' blob."""
        return int(self.starts.nbytes + self._ends.nbytes + self._names.nbytes) + len(self._blob)

    def symbol(self, address: int) -> str | None:
        """The function whose bytes hold ``address`` (a function of size 0 holds its own
        address only), or None."""
        i = int(np.searchsorted(self.starts, np.uint64(address), side="right")) - 1
        if i < 0:
            return None
        start = int(self.starts[i])
        if address < int(self._ends[i]) or address == start:
            return self.name(i)
        return None

    def name(self, i: int) -> str:
        """The name of the ``i``-th function by address, printable."""
        known = self._memo.get(i)
        if known is None:
            if len(self._memo) >= _MEMO:
                self._memo.clear()
            raw = self._raw(int(self._names[i]))
            cut = len(raw) > MAX_NAME
            known = self._memo[i] = decoded(raw[:MAX_NAME]) + ("..." if cut else "")
        return known

    def _raw(self, offset: int) -> bytes:
        """The bytes of the name at ``offset``, up to its NUL: at most :data:`MAX_NAME`,
        and one more when it is longer (cut)."""
        end = self._blob.find(b"\0", offset, offset + MAX_NAME + 1)
        return bytes(self._blob[offset : end if end >= 0 else offset + MAX_NAME + 1])


def from_entries(entries: list[tuple[int, int, bytes]]) -> Functions:
    """A table of ``(start, size, name)`` entries (tests, and small tables)."""
    blob = bytearray()
    offsets = []
    for _start, _size, name in entries:
        offsets.append(len(blob))
        blob += name + b"\0"
    return Functions(
        np.array([e[0] for e in entries], np.uint64),
        np.array([e[1] for e in entries], np.uint64),
        np.array(offsets, np.int64),
        bytes(blob),
    )


__all__ = ["MAX_NAME", "Functions", "from_entries"]
