"""``/tmp/perf-PID.map``: the functions a JIT compiled, named by the process that ran them.

perf's convention (tools/perf/Documentation/jit-interface.txt): one ``START SIZE
symbolname`` line per function, hex numbers, appended as functions are compiled; the JVM's
perf-map-agent, V8's ``--perf-basic-prof`` and Python 3.12's ``-X perf`` write it.

The file is the process's user's to make, in a directory anyone writes, so it is read as
untrusted (``tiptop.where.untrusted``, issue 52 item 2):

* only a regular file, never through a symbolic link, never blocking on a FIFO; and only
  one owned by root or by this user, as perf requires (``dso__load`` in
  tools/perf/util/symbol.c: "not owned by current user or root, ignoring it"), or by the
  process's own user, whose file can name only that process's own code;
* at most :data:`MAX_BYTES` and :data:`MAX_LINES` of it, read at most
  :data:`READ_SECONDS` per refresh: a larger file is read on over the next refreshes, from
  where the last read stopped;
* read again only when it changed: lines appended (the file grew) are read from where the
  last read ended; a file replaced, cut, or touched is read again from its start, but not
  sooner than :data:`FULL_GAP` times what its last whole read cost, so a file touched
  every half second costs a tenth of the CPU at most.

Each refusal or cut is one line, said once per rule (``say(key, line)``, the message
log's). The functions are kept compact (``tiptop.where.functions``), their names decoded
and made printable only when a sample falls in them.
"""

from __future__ import annotations

import os
import time
from array import array

import numpy as np

from tiptop.where.functions import Functions
from tiptop.where.untrusted import CHUNK, Budget, Refused, Say, open_untrusted, read_bounded

#: The most bytes of a JIT map read (a large JVM's map is a few MiB).
MAX_BYTES = 16 << 20
#: The most lines read.
MAX_LINES = 250_000
#: The most seconds spent reading it per refresh.
READ_SECONDS = 0.25
#: A whole read again waits this many times what the last one cost.
FULL_GAP = 10


def parse_lines(data: bytes, room: int = MAX_LINES) -> tuple[list[int], list[int], list[bytes]]:
    """Starts, sizes and names of the well-formed lines of ``data`` (whole lines), at most
    ``room`` of them."""
    starts: list[int] = []
    sizes: list[int] = []
    names: list[bytes] = []
    for line in data.split(b"\n"):
        if len(starts) >= room:
            break
        parts = line.split(None, 2)
        if len(parts) != 3:
            continue
        try:
            start, size = int(parts[0], 16), int(parts[1], 16)
        except ValueError:
            continue
        if 0 <= start < 2**64 and 0 <= size < 2**64:
            starts.append(start)
            sizes.append(size)
            names.append(parts[2].strip())
    return starts, sizes, names


class JitMap:
    """The JIT map of process ``pid`` whose user is ``owner_uid`` (see the module's
    docstring); :meth:`refresh` once per refresh, then :meth:`lookup`."""

    def __init__(self, pid: int, owner_uid: int, say: Say, tmp: str = "/tmp") -> None:
        self.path = f"{tmp}/perf-{pid}.map"
        self.module = os.path.basename(self.path)
        self._say = say
        self._owners = {0, os.geteuid(), owner_uid}
        self.functions: Functions | None = None
        self._forget()
        self._next_whole = 0.0

    def _forget(self) -> None:
        """Drop what was read: the next read starts from the file's start."""
        self._file: tuple[int, int] | None = None  # (device, inode)
        self._seen = (-1, -1)  # (size, mtime) at the last look
        self._done = 0  # bytes read from its start
        self._starts: array[int] = array("Q")
        self._sizes: array[int] = array("Q")
        self._names: array[int] = array("q")
        self._blob = bytearray()
        self.functions = None

    def lookup(self, ip: int) -> str | None:
        """The JIT'd function holding ``ip``, or None."""
        return self.functions.symbol(ip) if self.functions is not None else None

    def refresh(self) -> None:
        """Read what changed since the last refresh, within the bounds."""
        try:
            fd, st = open_untrusted(self.path, self._owners)
        except Refused as refused:
            self._forget()
            self._say(f"where:jit:{refused.rule}", f"{self.path} not read: {refused.why}")
            return
        except OSError:  # none (the usual case), or not readable
            self._forget()
            return
        try:
            self._read(fd, st)
        finally:
            os.close(fd)

    def _read(self, fd: int, st: os.stat_result) -> None:
        """Read on from where the last read ended, or from the start (module docstring)."""
        seen = (st.st_size, st.st_mtime_ns)
        same = self._file == (st.st_dev, st.st_ino)
        if not (same and (seen == self._seen or st.st_size > self._seen[0])):
            if time.monotonic() < self._next_whole:
                return  # changed in place: read again later, the old names meanwhile
            self._forget()
        self._file, self._seen = (st.st_dev, st.st_ino), seen
        end = min(st.st_size, MAX_BYTES)
        if self._done >= end or len(self._starts) >= MAX_LINES:
            return
        whole = self._done == 0
        began = time.monotonic()
        budget = Budget(READ_SECONDS)
        added = 0
        while self._done < end and len(self._starts) < MAX_LINES:
            try:  # a chunk at a time, so that what is held stays small
                chunk = read_bounded(fd, self._done, min(CHUNK, end - self._done), budget)
            except Refused:  # out of time: the rest at the next refresh (nothing skipped)
                break
            lines = chunk[: chunk.rfind(b"\n") + 1]  # whole lines; a line being written, later
            if not lines:
                break  # no whole line in a chunk: not a map
            added += self._add(*parse_lines(lines, MAX_LINES - len(self._starts)))
            self._done += len(lines)
        if added:
            self.functions = Functions(
                np.frombuffer(self._starts, np.uint64),
                np.frombuffer(self._sizes, np.uint64),
                np.frombuffer(self._names, np.int64),
                self._blob,  # only appended to: the offsets read stay right
            )
        if whole:
            self._next_whole = time.monotonic() + FULL_GAP * (time.monotonic() - began)
        self._cut(st.st_size)

    def _add(self, starts: list[int], sizes: list[int], names: list[bytes]) -> int:
        """Keep new functions; how many."""
        for name in names:
            self._names.append(len(self._blob))
            self._blob += name + b"\0"
        self._starts.extend(starts)
        self._sizes.extend(sizes)
        return len(starts)

    def _cut(self, size: int) -> None:
        """Say once that the file is larger than what is read of it."""
        if len(self._starts) >= MAX_LINES:
            self._say("where:jit:lines", f"{self.path}: read its first {MAX_LINES:,} lines only")
        elif self._done >= MAX_BYTES and size > MAX_BYTES:
            self._say("where:jit:bytes", f"{self.path}: read its first {MAX_BYTES >> 20} MiB only")


__all__ = ["FULL_GAP", "MAX_BYTES", "MAX_LINES", "READ_SECONDS", "JitMap", "parse_lines"]
