"""A recording's bytes, read within bounds: a plain file, or gzip members one after another
(each recording session appends one), decompressed piece by piece and never whole.

A member cut short (a recorder killed, a disk full) is followed by the next session's member:
inflating the first runs into the second's header and fails there. What decoded before the
failing byte is kept (the failing call is done again in smaller pieces, down to single
bytes), and reading goes on at the next gzip member header (RFC 1952: ``1f 8b 08``) found
near the failure. Reading a line again later starts from a saved inflate state
(``zlib.Decompress.copy``, taken every :data:`MARK_EVERY` bytes), so a long recording is
never held decompressed in memory.
"""

from __future__ import annotations

import bisect
import os
import stat
import zlib
from dataclasses import field

from tiptop.errors import TiptopError
from tiptop.outside import printable
from tiptop.readonly import mutable

#: A gzip member's first bytes: magic and method deflate (RFC 1952, 2.3.1).
MAGIC = b"\x1f\x8b\x08"
#: Compressed bytes given to one inflate call; decompressed bytes one call may give.
PIECE = 1 << 16
OUT = 1 << 20
#: Decompressed bytes between saved inflate states.
MARK_EVERY = 4 << 20
#: How far before a failure a member header is looked for (the bytes a cut member's
#: last, unfinished block turned into output before the inflater saw it was wrong).
RESYNC_BACK = 1 << 20
_SALVAGE = 1024  # a failing call is done again in pieces of this size, then byte by byte


def open_recording(path: str, flag: str) -> int:
    """A read-only descriptor of the regular file ``path``; anything else (``/dev/zero``, a
    FIFO, a directory, a device) is refused with one line before it is opened (opening a
    FIFO wakes its writer, a device may act on an open): ``stat`` first, then the file the
    name leads to opened without following a link put there since, never blocking, and
    checked again (``fstat``)."""
    shown = printable(path)
    target = os.path.realpath(path)  # a link to a recording is read; its target checked
    try:
        if not stat.S_ISREG(os.stat(target).st_mode):
            raise TiptopError(f"{flag}: '{shown}' is not a regular file: not read")
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise TiptopError(f"{flag}: cannot read '{shown}': {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise TiptopError(f"{flag}: cannot read '{shown}': {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise TiptopError(f"{flag}: '{shown}' is not a regular file: not read")
    return fd


@mutable
class Member:
    """One gzip member: where it starts, and inflate states saved along it
    (decompressed offset, compressed offset, state)."""

    start: int
    marks: list[tuple[int, int, zlib._Decompress]] = field(default_factory=list)


class Inflater:
    """One gzip member inflated from compressed offset ``pos`` (``out``: the decompressed
    offset reached); :meth:`step` gives the next bytes. ``ended``: the member is done (or the
    file); ``damaged_at``: the byte where inflating failed, if it did."""

    def __init__(self, fd: int, pos: int, d: zlib._Decompress | None = None, out: int = 0) -> None:
        self.fd = fd
        self.pos = pos
        self.out = out
        self.d = d if d is not None else zlib.decompressobj(16 + zlib.MAX_WBITS)
        self.ended = False
        self.complete = False  # the member's trailer was read
        self.damaged_at: int | None = None

    def step(self, limit: int = OUT) -> bytes:
        """At most ``limit`` (> 0) more decompressed bytes."""
        if self.ended:
            return b""
        inp = os.pread(self.fd, PIECE, self.pos)
        if not inp:
            self.ended = True  # the file ends inside the member
            return b""
        saved = self.d.copy()
        try:
            out = self.d.decompress(inp, limit)
        except zlib.error:
            self.d = saved
            return self._salvage(inp, limit)
        self._advance(len(inp) - len(self.d.unconsumed_tail) - len(self.d.unused_data), out)
        return out

    def _advance(self, used: int, out: bytes) -> None:
        self.pos += used
        self.out += len(out)
        if self.d.eof:
            self.ended = self.complete = True

    def _salvage(self, inp: bytes, limit: int) -> bytes:
        """``inp`` fed again in small pieces, then byte by byte, to keep what decodes before
        the failing byte (a failing call gives nothing)."""
        outs: list[bytes] = []
        got = i = 0
        for size in (_SALVAGE, 1):
            end = len(inp) if size == _SALVAGE else min(i + _SALVAGE, len(inp))
            while i < end:
                piece = inp[i : i + size]
                saved = self.d.copy()
                try:
                    o = self.d.decompress(piece)  # at most 1032 bytes out per byte in
                except zlib.error:
                    self.d = saved
                    break
                outs.append(o)
                got += len(o)
                i += len(piece)
                if self.d.eof or got >= limit:
                    out = b"".join(outs)
                    self._advance(i - len(self.d.unused_data), out)
                    return out
            else:
                out = b"".join(outs)  # no failure in these pieces after all
                self._advance(i, out)
                return out
        out = b"".join(outs)
        self._advance(i, out)
        self.ended = True
        self.damaged_at = self.pos
        return out


def find_member(fd: int, start: int, size: int) -> int | None:
    """The offset of the first gzip member header at or after ``start``."""
    pos = start
    while pos < size:
        block = os.pread(fd, PIECE + len(MAGIC) - 1, pos)
        k = block.find(MAGIC)
        if k >= 0:
            return pos + k
        if len(block) < PIECE + len(MAGIC) - 1:
            return None
        pos += PIECE
    return None


class Store:
    """Random access to a recording's lines by (member, offset, length): a plain file is one
    member read with ``pread``; a gzip member is inflated from its nearest saved state (the
    state after the last read kept, so reading in order inflates once)."""

    def __init__(self, fd: int, gzip: bool) -> None:
        self.fd = fd
        self.gzip = gzip
        self.members: list[Member] = []
        self._cursor: tuple[int, Inflater] | None = None

    def read(self, member: int, off: int, length: int) -> bytes:
        """The ``length`` bytes at decompressed offset ``off`` of ``member`` (fewer when
        they cannot be read back)."""
        if not self.gzip:
            out = []
            while length > 0:
                b = os.pread(self.fd, min(length, 1 << 30), off)
                if not b:
                    break
                out.append(b)
                off += len(b)
                length -= len(b)
            return b"".join(out)
        inf = self._inflater(member, off)
        parts: list[bytes] = []
        end = off + length
        while inf.out < end and not inf.ended:
            start = inf.out
            got = inf.step(min(OUT, end - inf.out))
            if start + len(got) > off:
                parts.append(got[max(off - start, 0) :])
        self._cursor = (member, inf)
        return b"".join(parts)

    def _inflater(self, member: int, off: int) -> Inflater:
        if self._cursor is not None:
            m, inf = self._cursor
            if m == member and inf.out <= off and not inf.ended:
                return inf
        marks = self.members[member].marks
        k = bisect.bisect_right(marks, off, key=lambda mark: mark[0]) - 1
        if k < 0:
            return Inflater(self.fd, self.members[member].start)
        out, pos, state = marks[k]
        return Inflater(self.fd, pos, state.copy(), out)

    def close(self) -> None:
        """Close the file."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


__all__ = ["MAGIC", "Inflater", "Member", "Store", "find_member", "open_recording"]
