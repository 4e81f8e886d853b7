"""Files a watched task controls, opened and read as untrusted: the ELF files it maps and
its JIT map file ``/tmp/perf-PID.map`` are the process's user's to make, and so is what
stands at their names by the time they are read (issue 52, item 2).

* :func:`open_untrusted` opens with ``O_NOFOLLOW`` (a symbolic link at the name is refused,
  ELOOP: never read through a link to ``/dev/zero`` or to a root-only file),
  ``O_NONBLOCK`` (a FIFO at the name does not block the open) and ``O_NOCTTY``, then
  ``fstat``s what it opened: only a regular file is read (a FIFO, a device, a directory,
  a socket are refused), and only one owned by one of the given users where that matters
  (perf's rule for map files, ``tiptop.where.resolve``).
* :class:`Budget` bounds a read in bytes and in time: a file is read in chunks, each one
  checked against what is left of both, and a read past either ends with
  :class:`Refused`, saying which. A signal still ends tiptop: a read is never longer
  than its budget, after which the loop sees the stop request.

A refusal is a :class:`Refused` whose ``why`` is the phrase of the one line the caller says
(through the message log, under a key of its own) about what was skipped.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable, Collection

from tiptop.files import file_kind

#: ``say(key, line)``: the message log's, one line per key (a rule, not a file: however
#: many files a task makes, the lines stay few).
Say = Callable[[str, str], object]

#: The bytes of one read: large enough for few system calls, small enough that a budget
#: is checked often.
CHUNK = 1 << 20


class Refused(Exception):
    """A file not read, or not read whole; ``why`` says which rule, as a phrase, and
    ``rule`` names it in one word (a message key: one line per rule, however many files)."""

    def __init__(self, why: str, rule: str) -> None:
        super().__init__(why)
        self.why = why
        self.rule = rule


class Budget:
    """What a read may still take: ``size`` bytes (None: no bound) until the monotonic
    ``deadline``."""

    def __init__(self, seconds: float, size: int | None = None) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.size = size

    def take(self, n: int) -> None:
        """Count ``n`` bytes about to be read; :class:`Refused` when over the bytes or
        past the deadline."""
        if time.monotonic() > self.deadline:
            raise Refused(f"took over {self.seconds:g} s to read", "time")
        if self.size is not None:
            if n > self.size:
                raise Refused("larger than a file of its kind may be", "size")
            self.size -= n


def open_untrusted(
    path: str, owners: Collection[int] | None = None, *, follow: bool = False
) -> tuple[int, os.stat_result]:
    """A read-only descriptor of the regular file at ``path`` and its ``fstat``.
    :class:`Refused` when ``path`` is a symbolic link (unless ``follow``: a
    ``/proc/PID/map_files`` entry, whose link is the kernel's own to the very file mapped),
    not a regular file, or not owned by one of ``owners`` (when given); ``OSError`` when it
    cannot be opened at all."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags | (0 if follow else os.O_NOFOLLOW))
    except OSError as err:
        if err.errno == errno.ELOOP:  # the name is a symbolic link (open(2), O_NOFOLLOW)
            raise Refused("a symbolic link (never followed)", "link") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{file_kind(st.st_mode)}, not a regular file", "kind")
        if owners is not None and st.st_uid not in owners:
            raise Refused(f"owned by uid {st.st_uid}, neither this user nor the process's", "owner")
    except (Refused, OSError):
        os.close(fd)
        raise
    return fd, st


def read_bounded(fd: int, offset: int, size: int, budget: Budget) -> bytes:
    """``size`` bytes of ``fd`` from ``offset`` (fewer at its end), read in chunks under
    ``budget`` (:class:`Refused` when it runs out)."""
    parts: list[bytes] = []
    done = 0
    while done < size:
        n = min(CHUNK, size - done)
        budget.take(n)
        part = os.pread(fd, n, offset + done)
        if not part:
            break
        parts.append(part)
        done += len(part)
    return b"".join(parts)


__all__ = ["CHUNK", "Budget", "Refused", "Say", "open_untrusted", "read_bounded"]
