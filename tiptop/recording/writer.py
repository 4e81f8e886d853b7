"""``--record FILE``: every refresh appended to FILE, for ``--replay`` and ``--plot``.

JSON lines, gzip when the name ends in ``.gz`` (``tiptop.recording.format``; docs/guide.md,
"Recording format"): a header line, a ``screen`` line when the screen shown changes, then per
refresh an optional ``facts`` line (pid, user, name and command line of the
tasks first seen or changed: they are not repeated every refresh) and one frame line holding
the refresh's time and interval and, per task (columns of equal length), its tid, %CPU facts
and per counter the raw delta, scaled delta, running total, running fraction and status.
Floats are written with ``repr`` (json's), so a replay evaluates exactly the numbers shown;
an integral float is written as an integer (shorter, read back as the same float).

Each refresh is flushed (gzip: a sync flush), so a recorder killed mid-run leaves every
refresh but the one being written; the reader drops that one with a note. A write that fails
(a full disk) is one line (``TiptopError``), not a traceback. Appending to such a file keeps
all of it: a session starts on a line of its own (gzip: in a member of its own, which the
reader finds after the cut one, ``tiptop.recording.inflate``).

The file holds every user's command lines: it is created mode 0600, and a symbolic link or
anything but a regular file is refused (another user's link in ``/tmp`` is not followed).
It is ``flock``-ed while written: a second recorder on it is refused with one line naming
the first one's PID, before writing anything; a file system where ``flock`` fails (NFS
without lockd) is refused, and so is a file another user owns.

:class:`RecordingSource` wraps any ``FrameSource``: its ``refresh()`` writes the frame then
returns it, so neither the batch loop nor the live view knows recording is on.
"""

from __future__ import annotations

import errno
import fcntl
import gzip
import io
import json
import os
import time
from collections.abc import Sequence

import numpy as np

from tiptop.cells import Code
from tiptop.errors import TiptopError, UsageError
from tiptop.files import open_regular
from tiptop.frame import Context, Frame, FrameSource, SourceWrapper
from tiptop.outside import printable
from tiptop.recording.format import (
    FORMAT_VERSION,
    TIME_KEYS,
    JsonObject,
    JsonValue,
    screen_record,
)
from tiptop.screens.columns import screen_columns
from tiptop.screens.model import ScreenSpec


def numbers(a: np.ndarray) -> list[int | float | None]:
    """A float array as JSON values: integral floats as ints, nan as null, others as is."""
    a = np.asarray(a, np.float64)
    finite = np.isfinite(a)
    integral = finite & (np.abs(a) < 2.0**53)
    integral[integral] = a[integral] == np.trunc(a[integral])
    integral &= ~((a == 0) & np.signbit(a))  # -0.0 stays a float
    if integral.all():
        ints: list[int] = a.astype(np.int64).tolist()
        return list(ints)
    floats: list[float] = a.tolist()
    out: list[int | float | None] = list(floats)
    for i in np.flatnonzero(integral).tolist():
        out[i] = int(floats[i])
    for i in np.flatnonzero(np.isnan(a)).tolist():
        out[i] = None
    return out


def _ints(a: np.ndarray) -> list[int]:
    return np.asarray(a).astype(np.int64).tolist()


def bare_aliases(screen: ScreenSpec) -> frozenset[str]:
    """The counter aliases ``screen``'s columns read bare (their running total, not
    ``delta(alias)``): only those have their totals recorded (they are most of a
    recording's size otherwise, and no built-in screen reads them)."""
    bare = screen_columns(screen).bare
    return frozenset(c.alias for c in screen.counters if c.alias in bare)


def frame_record(frame: Frame, totals: frozenset[str] | None = None) -> JsonObject:
    """One refresh as its frame line (``tid`` and every per-task list in row order); the
    running totals of the ``totals`` aliases only (None: of all)."""
    n = len(frame)
    tid = _ints(frame.tid)
    d: JsonObject = {
        "t": float(frame.timestamp),
        "dt": float(frame.interval),
        "it": frame.iteration,
        "th": frame.threads,
        "n": frame.tasks_total,
        "tid": tid,
        "nth": _ints(frame.num_threads),
        "cpu": numbers(frame.cpu_total),
    }
    if frame.dead.any():
        d["dead"] = _ints(frame.dead)
    for key, x in (("usr", frame.cpu_user), ("sys", frame.cpu_sys), ("proc", frame.processor)):
        d[key] = numbers(x)
    if frame.window is not None and (frame.window != frame.interval).any():
        d["w"] = numbers(frame.window)  # each row's counter window (INTERVAL)
    if frame.cpu_status.any():
        d["cs"] = _ints(frame.cpu_status[:, 0])
        d["ss"] = _ints(frame.cpu_status[:, 1])
    if (frame.time_status == Code.OK).any():  # where the time went, read for this screen
        d |= time_record(frame)
    if frame.context is not None:
        d["ctx"] = context_record(frame.context)
    k: JsonObject = {}
    for j, alias in enumerate(frame.counters):
        raw, st = frame.counter_delta[:, j], frame.counter_status[:, j]
        c: JsonObject = {"d": numbers(raw), "st": _ints(st)}
        implied = np.where(st == Code.OK, raw, np.nan)
        if not np.array_equal(frame.counter_scaled[:, j], implied, equal_nan=True):
            c["s"] = numbers(frame.counter_scaled[:, j])
        if totals is None or alias in totals:
            c["T"] = numbers(frame.counter_total[:, j])
        run = frame.counter_running[:, j]
        if not (run == 1.0).all():
            c["r"] = numbers(run)
        tst = frame.counter_total_status
        if not np.array_equal(tst[:, j], st):
            c["Ts"] = _ints(tst[:, j])
        k[alias] = c
    d["k"] = k
    assert len(tid) == n
    return d


def time_record(frame: Frame) -> JsonObject:
    """Where each row's time went, as a frame line holds it: each part in % of the interval
    (null: unknown, ``tiptop.recording.format.TIME_KEYS``), the cgroup's CPU limit and the
    CPUs allowed (null: none, not read)."""
    d: JsonObject = {
        key: numbers(np.where(frame.time_status[:, j] == Code.OK, frame.time_percent[:, j], np.nan))
        for j, key in enumerate(TIME_KEYS)
    }
    if not np.isnan(frame.cpu_limit).all():
        d["lim"] = numbers(frame.cpu_limit)
    if not np.isnan(frame.cpus_allowed).all():
        d["cpus"] = numbers(frame.cpus_allowed)
    return d


def context_record(c: Context) -> JsonObject:
    """What the machine did over the refresh, as a frame line's ``ctx`` holds it."""
    psi: JsonObject = {p.resource: [p.some, p.full] for p in c.pressure}
    return {"cpus": c.cpus, "run": c.runnable, "steal": c.steal, "psi": psi}


class Recorder:
    """Appends refreshes to one file; ``header`` (host, kernel, CPU, version...) is merged
    into the header line, written with the first refresh's screen. ``numbering``: the
    session's screens in the order they are numbered (``--list-screens``, the live tasks
    line): each screen recorded carries its number there, so a replay shows and takes
    (``-S``) the numbers seen while recording."""

    def __init__(self, path: str, header: JsonObject, numbering: Sequence[ScreenSpec] = ()) -> None:
        self.path = path
        self.header = header
        self.numbering = tuple(numbering)
        self._facts: dict[int, list[JsonValue]] = {}
        self._screen: ScreenSpec | None = None
        self._totals: frozenset[str] = frozenset()
        raw = os.fdopen(open_for_append(path), "ab")
        try:
            lock(raw.fileno(), path)
            if not path.endswith(".gz") and _ends_unfinished(raw.fileno()):
                raw.write(b"\n")  # a line cut short by a crash or a full disk stays apart
        except OSError as exc:
            raw.close()
            raise TiptopError(
                f"--record: cannot write '{printable(path)}': {exc.strerror}"
            ) from None
        except TiptopError:
            raw.close()
            raise
        self._f: gzip.GzipFile | io.BufferedWriter = (
            gzip.GzipFile(fileobj=raw, mode="ab") if path.endswith(".gz") else raw
        )
        self._raw = raw

    def write(self, frame: Frame, screen: ScreenSpec) -> None:
        """Append one refresh (a header line first when the screen is new)."""
        lines: list[JsonObject] = []
        if screen is not self._screen:
            head: JsonObject = (
                {"tiptop_recording": FORMAT_VERSION, **self.header} if self._screen is None else {}
            )
            lines.append({**head, "screen": {**screen_record(screen), **self._number(screen)}})
            self._screen = screen
            self._totals = bare_aliases(screen)
        new: dict[str, JsonValue] = {}
        for i, tid in enumerate(frame.tid.tolist()):
            pid = int(frame.pid[i])
            facts: list[JsonValue] = [pid, frame.user[i], frame.name[i], frame.cmdline[i]]
            if self._facts.get(tid) != facts:
                self._facts[tid] = new[str(tid)] = facts
        if new:
            lines.append({"facts": new})
        lines.append(frame_record(frame, self._totals))
        text = "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines)
        try:
            self._f.write(text.encode("utf-8", "surrogateescape"))
            self._f.flush()
        except OSError as exc:
            raise TiptopError(
                f"--record: cannot write '{printable(self.path)}': {exc.strerror}"
            ) from None

    def _number(self, screen: ScreenSpec) -> dict[str, int]:
        """``{"number": N}``: the screen's number in the session (the header's
        ``screen_index`` for the first screen when it is not among ``numbering``)."""
        for i, s in enumerate(self.numbering):
            if s is screen:
                return {"number": i}
        first = self.header.get("screen_index")
        return {"number": first} if self._screen is None and isinstance(first, int) else {}

    def close(self) -> None:
        """Finish the file (gzip trailer); a failure here is one line too."""
        if self._raw.closed:
            return
        try:
            self._f.close()
            if self._f is not self._raw:
                self._raw.close()
        except OSError as exc:
            raise TiptopError(
                f"--record: cannot write '{printable(self.path)}': {exc.strerror}"
            ) from None


def open_for_append(path: str) -> int:
    """A descriptor appending to the regular file ``path``, created mode 0600 (a symbolic
    link or anything else is refused with one line: ``tiptop.files``). A file another user
    owns is refused too: a name planted in a shared directory (another user's empty 0644
    file in /tmp) would receive every task's command line, readable by that user."""
    try:
        fd = open_regular(path, os.O_RDWR | os.O_APPEND, 0o600, "--record")
    except OSError as exc:
        raise TiptopError(f"--record: cannot open '{printable(path)}': {exc.strerror}") from None
    owner = os.fstat(fd).st_uid
    if owner != os.geteuid():
        os.close(fd)
        raise TiptopError(
            f"--record: '{printable(path)}' belongs to uid {owner}, not to this user: not "
            "written (it would hold every task's command line; name a file of your own)"
        )
    return fd


def lock(fd: int, path: str) -> None:
    """Hold an exclusive ``flock`` on the recording until it is closed: two recorders
    appending to one gzip file would interleave their members' bytes and lose most of
    both. A file another process holds is refused with one line naming it, before
    anything is written. So is a file where ``flock`` fails (ENOLCK: NFS without lockd;
    EOPNOTSUPP), exit status 2: there two recorders would run unseen and keep 2-8 of 300
    refreshes between them."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = lock_holder(fd)
        who = f"process {holder}" if holder is not None else "another process"
        raise TiptopError(
            f"--record: '{printable(path)}' is being recorded by {who}: not written "
            "(one recorder per file; name another file)"
        ) from None
    except OSError as exc:
        name = errno.errorcode.get(exc.errno or 0, str(exc.errno))
        raise UsageError(
            f"--record: '{printable(path)}' cannot be locked here (flock: {name}): not "
            "written (a second recorder could not be kept out; record to a local file "
            "system)"
        ) from None


def lock_holder(fd: int, locks: str = "/proc/locks") -> int | None:
    """The PID holding a ``flock`` on ``fd``'s file, from /proc/locks (proc(5): ``1:
    FLOCK ADVISORY WRITE PID MAJOR:MINOR:INODE 0 EOF``); None when it cannot be told."""
    st = os.fstat(fd)
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open(locks) as f:
            for line in f:
                fields = line.split()
                if fields[1:2] == ["FLOCK"] and len(fields) > 5 and fields[5] == where:
                    return int(fields[4]) if fields[4].isdigit() else None
    except OSError:
        pass
    return None


def _ends_unfinished(fd: int) -> bool:
    """Whether the file is not empty and its last byte is not a newline."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


class RecordingSource(SourceWrapper):
    """A ``FrameSource`` that records every frame of ``source`` (everything else passes
    through to it)."""

    def __init__(self, source: FrameSource, recorder: Recorder) -> None:
        super().__init__(source)
        self.recorder = recorder

    def start(self) -> None:
        """The wrapped source's baselines; the header's ``started`` is now (the batch
        preamble's time is taken within milliseconds of it)."""
        self.recorder.header.setdefault("started", time.time())
        self.source.start()

    def refresh(self) -> Frame:
        """The wrapped source's frame, recorded."""
        frame = self.source.refresh()
        self.recorder.write(frame, self.source.screen)
        return frame

    def close(self) -> None:
        """Close the wrapped source, then the file."""
        try:
            self.source.close()
        finally:
            self.recorder.close()


__all__ = ["Recorder", "RecordingSource", "frame_record", "numbers", "open_for_append"]
