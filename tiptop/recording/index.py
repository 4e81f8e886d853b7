"""A loaded recording: its first header, its screens, and per refresh where its line is, its
time and the screen it was shown under (``tiptop.recording.reader`` fills it in one pass,
maybe in a thread); a refresh's line is read back and checked only when it is shown."""

from __future__ import annotations

import bisect
import json
import time
from array import array
from dataclasses import field
from typing import Protocol

from tiptop.outside import printable
from tiptop.readonly import mutable
from tiptop.recording import format as fmt
from tiptop.recording.inflate import Store
from tiptop.screens.model import ScreenSpec
from tiptop.workload import Workload, WorkloadKind


class Loader(Protocol):
    """What reads a recording into its index (``tiptop.recording.reader``)."""

    #: Whether the whole file was read (or reading stopped).
    done: bool

    def finish(self) -> None:
        """Wait until the file is read."""
        ...


#: Who runs in a cgroup a frame line numbers and no ``facts`` line names.
UNKNOWN = Workload(WorkloadKind.OTHER, "?")

#: The notes kept in full; past them, one says how many more there were.
MAX_NOTES = 20


@mutable
class Recording:
    """A loaded recording: its first header, its screens, and per frame where its line is,
    its time and the screen it was shown under."""

    path: str
    header: fmt.Header
    store: Store
    screens: list[ScreenSpec] = field(default_factory=list)
    #: Per screen (same order) the number it had while recording, each once.
    numbers: list[int] = field(default_factory=list)
    times: array = field(default_factory=lambda: array("d"))
    #: Per frame its recorded interval (``dt``: the time since the refresh before it was
    #: taken; nan when its line does not say).
    intervals: array = field(default_factory=lambda: array("d"))
    screen_of: array = field(default_factory=lambda: array("i"))
    _member: array = field(default_factory=lambda: array("i"))
    _off: array = field(default_factory=lambda: array("q"))
    _len: array = field(default_factory=lambda: array("q"))
    _line: array = field(default_factory=lambda: array("q"))
    #: tid -> [(first frame index, (pid, user, name, cmdline))], in frame order.
    facts: dict[int, list[tuple[int, tuple[int, str, str, str]]]] = field(default_factory=dict)
    #: number -> [(first frame index, who runs in a cgroup)], in frame order (a session
    #: appended numbers its own from 0).
    workloads: dict[int, list[tuple[int, Workload]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    dropped: int = 0  # notes past MAX_NOTES
    #: What reads the file (in a thread when loaded in the background).
    loader: Loader | None = None

    def __len__(self) -> int:
        return len(self.times)

    def note(self, line: int | None, what: str) -> None:
        """One note naming the file (and the line), kept up to :data:`MAX_NOTES`."""
        if len(self.notes) >= MAX_NOTES:
            self.dropped += 1
            return
        where = f"line {line}: " if line is not None else ""
        self.notes.append(f"{printable(self.path)}: {where}{what}")

    def all_notes(self) -> list[str]:
        """The notes, and how many more were not kept."""
        more = (
            [f"{printable(self.path)}: {self.dropped} more damaged lines"] if self.dropped else []
        )
        return self.notes + more

    def facts_of(self, tid: int, index: int) -> tuple[int, str, str, str]:
        """Task ``tid``'s facts as known at frame ``index``."""
        versions = self.facts.get(tid)
        if not versions:
            return (tid, "?", "?", "?")
        k = bisect.bisect_right(versions, index, key=lambda v: v[0]) - 1
        return versions[max(k, 0)][1]

    def workload_of(self, number: int, index: int) -> Workload:
        """Who ran in the cgroup numbered ``number`` at frame ``index`` (as ``?`` when
        the recording does not say)."""
        versions = self.workloads.get(number)
        if not versions:
            return UNKNOWN
        k = bisect.bisect_right(versions, index, key=lambda v: v[0]) - 1
        return versions[max(k, 0)][1]

    def add_screen(self, screen: ScreenSpec, number: int | None) -> None:
        """A screen found in the file, with the number it had while recording: ``number``
        unless another recorded screen has it or it is not known (a recording made before
        screens carried their number), else the smallest number no other one has."""
        if number is None or number in self.numbers:
            number = min(set(range(len(self.numbers) + 1)) - set(self.numbers))
        self.numbers.append(number)  # before the screen: a reader in another thread
        self.screens.append(screen)

    def number_of(self, screen: ScreenSpec) -> int:
        """The number ``screen`` had while recording (found by identity, then equality)."""
        for s, n in zip(self.screens, self.numbers, strict=False):
            if s is screen:
                return n
        return self.numbers[self.screens.index(screen)]

    def screen_numbered(self, wanted: str) -> ScreenSpec | None:
        """``-S`` on a recording: the screen numbered ``wanted`` while recording, else the
        first whose name contains it; None when none is."""
        if wanted.isascii() and wanted.isdigit():
            for s, n in zip(self.screens, self.numbers, strict=False):
                if n == int(wanted):
                    return s
            return None
        return next((s for s in self.screens if wanted in s.name), None)

    def screen_list(self) -> str:
        """The recorded screens as ``4 sched, 0 default, 1 branch``, for messages."""
        pairs = zip(self.numbers, self.screens, strict=False)
        return ", ".join(f"{n} {printable(s.name)}" for n, s in pairs)

    def shown_for(self, index: int, default: float) -> float:
        """How long frame ``index`` was on screen while recording: the next frame's
        recorded interval (not the gap to it, which spans the pause between two appended
        sessions), else the gap, else ``default`` (the last frame, or the next not read yet)."""
        if index + 1 >= len(self):
            return default
        dt = self.intervals[index + 1]
        if dt == dt and dt > 0:  # not nan
            return dt
        gap = self.times[index + 1] - self.times[index]
        return gap if gap > 0 else default

    def line_number(self, index: int) -> int:
        """The line (of the decompressed text) that holds frame ``index``."""
        return self._line[index]

    def record(self, index: int) -> object:
        """Frame ``index``'s line, parsed (:class:`~tiptop.recording.format.FormatError`
        when it does not parse)."""
        data = self.store.read(self._member[index], self._off[index], self._len[index])
        try:
            return json.loads(data)
        except (ValueError, RecursionError):
            raise fmt.FormatError("not JSON (damaged)") from None

    def frame(self, index: int) -> fmt.FrameLine:
        """Frame ``index``'s line parsed and checked (FormatError saying what is wrong)."""
        return fmt.frame_from(self.record(index))

    @property
    def loading(self) -> bool:
        """Whether the file is still being read (in the background)."""
        return self.loader is not None and not self.loader.done

    def wait(self, index: int | None = None) -> None:
        """Wait until frame ``index`` is read (None: the whole file) or the reading ends."""
        while self.loading and (index is None or len(self) <= index):
            time.sleep(0.01)

    def close(self) -> None:
        """Stop reading and close the file."""
        if self.loader is not None:
            self.loader.finish()
        self.store.close()


__all__ = ["MAX_NOTES", "Recording"]
