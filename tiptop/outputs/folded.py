"""``--where PID --folded FILE``: the run's call stacks as folded stacks, the text that
flamegraph.pl, inferno and speedscope read (Brendan Gregg's ``stackcollapse`` output): one
line per distinct stack, its frames from the outermost caller to the function sampled,
joined by ``;``, then a space and its samples over the whole run.

    [libc.so.6+0x27249];main;a;work 2412
    [libc.so.6+0x27249];main;b;work 803

The counts add up to the samples taken. The file is written again whole at each refresh,
so that it always holds the run so far, one line per stack (a run ended by a signal or
``-n`` leaves a whole file). The command line opens it as tiptop's other output files
are (``tiptop.files.open_regular``: never through a symbolic link, a regular file only) and
hands the descriptor over.

Bounded: at most :data:`MAX_STACKS` distinct stacks are kept; samples of stacks met after
that are counted on one ``[other stacks]`` line. A frame is its symbol, printable already
(``tiptop.outside``), with ``;`` written ``\\x3b`` (a JIT's names may hold one: a Java
signature) so that a frame never splits in two.
"""

from __future__ import annotations

import os
from collections import Counter

from tiptop.errors import TiptopError
from tiptop.outside import printable
from tiptop.where.profile import Profile

__all__ = ["MAX_STACKS", "OTHER_STACKS", "FoldedFile", "folded_line"]

#: The most distinct stacks kept over a run.
MAX_STACKS = 50_000
#: The line that counts the samples of stacks met past :data:`MAX_STACKS`.
OTHER_STACKS = "[other stacks]"


def folded_line(frames: tuple[str, ...], count: int) -> str:
    """One folded line: ``frames`` (symbols, outermost first) joined by ``;``, and
    ``count``."""
    return ";".join(f.replace(";", "\\x3b") for f in frames) + f" {count}"


class FoldedFile:
    """The folded stacks of a run, kept and written at each :meth:`add` to ``fd``, the
    file ``path`` opened for writing, which it closes (see the module's docstring);
    :class:`TiptopError` with one line when the file cannot be written."""

    def __init__(self, fd: int, path: str) -> None:
        self.path = path
        self._fd = fd
        self._stacks: Counter[tuple[str, ...]] = Counter()
        self._other = 0

    @property
    def samples(self) -> int:
        """The samples counted so far."""
        return self._stacks.total() + self._other

    def add(self, profile: Profile) -> None:
        """Count ``profile``'s stacks and write the file again."""
        for stack in profile.stacks:
            frames = tuple(symbol for symbol, _module in stack.frames)
            if frames in self._stacks or len(self._stacks) < MAX_STACKS:
                self._stacks[frames] += stack.weight
            else:
                self._other += stack.weight
        self._write()

    def _write(self) -> None:
        lines = [folded_line(frames, n) for frames, n in sorted(self._stacks.items())]
        if self._other:
            lines.append(f"{OTHER_STACKS} {self._other}")
        data = "".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape")
        try:
            os.ftruncate(self._fd, 0)
            view = memoryview(data)
            at = 0
            while at < len(view):
                at += os.pwrite(self._fd, view[at:], at)
        except OSError as exc:
            raise TiptopError(
                f"--folded: cannot write '{printable(self.path)}': {exc.strerror}"
            ) from None

    def close(self) -> None:
        """Close the file (written at the last refresh)."""
        os.close(self._fd)
