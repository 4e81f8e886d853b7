"""Loading a recording: one pass over its lines that keeps, per refresh, only where its line
is (the line itself is read again and checked when it is shown, ``Recording.frame``), with
every header, screen switch and task facts line applied as it comes. The pass may run in a
thread (``load(..., background=True)``): the recording then grows while it is shown, so an
hour of thousands of tasks shows at once rather than after inflating all of it.

Any file is survived: each line that is not what the format says (``tiptop.recording.format``)
is one note naming the file, the line and what is wrong, and reading goes on; the input
is bounded (:data:`~tiptop.recording.format.MAX_LINE` a line,
:data:`~tiptop.recording.format.MAX_BYTES` in all, a cut or damaged gzip member resumed at
the next one, ``tiptop.recording.inflate``), and only what no line of could be used is an
error (one line, :class:`~tiptop.errors.TiptopError`).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Mapping

from tiptop.errors import TiptopError
from tiptop.outside import printable
from tiptop.recording import format as fmt
from tiptop.recording.index import MAX_NOTES, Recording
from tiptop.recording.inflate import (
    MAGIC,
    MARK_EVERY,
    OUT,
    RESYNC_BACK,
    Inflater,
    Member,
    Store,
    find_member,
    open_recording,
)
from tiptop.screens.model import ScreenSpec

_HEAD = 64  # bytes of a line kept to tell a frame line and read its time
_BLANK = re.compile(rb"\n+")


def load(path: str, flag: str = "--replay", background: bool = False) -> Recording:
    """Read a recording's index; one line (TiptopError) when nothing in it can be shown.
    ``background``: return once the first refresh is found and read the rest in a thread
    (the recording grows as it is read: :attr:`Recording.loading`, :meth:`Recording.wait`),
    so a long recording shows at once."""
    fd = open_recording(path, flag)
    try:
        size = os.fstat(fd).st_size
        gz = os.pread(fd, 2, 0) == MAGIC[:2]
    except OSError as exc:
        os.close(fd)
        raise TiptopError(f"{flag}: cannot read '{printable(path)}': {exc.strerror}") from None
    loader = _Loader(path, Store(fd, gz), size)
    if background:
        loader.thread = threading.Thread(target=loader.run, name="recording-reader", daemon=True)
        loader.thread.start()
        loader.ready.wait()
    else:
        loader.run()
    rec = loader.rec
    if rec is None or not len(rec):
        loader.finish()
        os.close(fd)
        first = loader.pending[0] if loader.pending else None
        why = loader.why or (
            f"is not a tiptop recording (line {first[0]}: {first[1]})"
            if rec is None and first and first[0]
            else "has no refresh that can be shown"
        )
        if loader.error is not None:
            why = f"cannot be read: {loader.error}"
        raise TiptopError(f"{flag}: '{printable(path)}' {why}")
    rec.loader = loader
    return rec


class _Loader:
    """The one pass: decompressed bytes in, lines out, each applied to the recording."""

    def __init__(self, path: str, store: Store, size: int) -> None:
        self.path = path
        self.store = store
        self.size = size
        self.thread: threading.Thread | None = None
        self.ready = threading.Event()  # a first refresh found, or the end reached
        self.done = False
        self.error: str | None = None
        self.rec: Recording | None = None
        self.pending: list[tuple[int | None, str]] = []  # notes before the first header
        self.why: str | None = None
        self.lineno = 0
        self.total = 0
        self.damaged = 0
        self.stop = False
        self.facts = 0
        self.cut_header = False  # a first header cut short was let pass (_cut_header)
        self._member = 0
        self.screen = -1  # the index of the screen shown from here on
        self._new_line(0)

    # ---------------------------------------------------------------- input
    def run(self) -> None:
        """Read the whole file (a read error is said, and ends it)."""
        try:
            if self.store.gzip:
                self.read_gzip(self.store.fd, self.size)
            else:
                self.read_plain(self.store.fd)
        except OSError as exc:
            self.error = exc.strerror or str(exc)
            self.say(None, f"cannot be read further: {self.error}")
        finally:
            self.done = True
            self.ready.set()

    def finish(self) -> None:
        """Stop reading and wait for the thread reading, if any."""
        self.stop = True
        if self.thread is not None:
            self.thread.join()

    def read_plain(self, fd: int) -> None:
        """A plain file: one member, offsets are the file's."""
        self.store.members.append(Member(0))
        pos = 0
        while not self.stop:
            chunk = os.pread(fd, 1 << 20, pos)
            if not chunk:
                break
            self.feed(chunk, pos)
            pos += len(chunk)
        self.end_member(None)

    def read_gzip(self, fd: int, size: int) -> None:
        """Gzip members one after another; a cut or damaged one resumed at the next."""
        pos: int | None = 0
        while pos is not None and pos < size and not self.stop:
            if os.pread(fd, 3, pos) != MAGIC:
                nxt = find_member(fd, pos + 1, size)
                self.say(None, f"bytes {pos} to {nxt or size} are not gzip data: skipped")
                pos = nxt
                continue
            member = Member(pos)
            self._member = len(self.store.members)
            self.store.members.append(member)
            inf = Inflater(fd, pos)
            last_mark = 0
            while not inf.ended and not self.stop:
                start = inf.out
                self.feed(inf.step(min(OUT, MARK_EVERY)), start)
                if inf.out - last_mark >= MARK_EVERY and not inf.ended:
                    member.marks.append((inf.out, inf.pos, inf.d.copy()))
                    last_mark = inf.out
            pos = self._next_member(fd, size, inf, member)

    def _next_member(self, fd: int, size: int, inf: Inflater, member: Member) -> int | None:
        """Where reading goes on after a member: right after it, or after a failure at the
        next member header near it."""
        if inf.damaged_at is not None:
            at = inf.damaged_at
            nxt = find_member(fd, max(member.start + 1, at - RESYNC_BACK), size)
            if nxt is not None and abs(nxt - at) <= 2:  # the next session's member header
                self.end_member(f"compressed data cut short at byte {at} (recorder stopped?)")
            else:
                then = f"resumed at byte {nxt}" if nxt is not None else "nothing after it"
                self.end_member(f"compressed data damaged at byte {at}: {then}")
            return nxt
        if not inf.complete and not self.stop:
            self.end_member("compressed data ends early (recorder stopped?)")
            return None
        self.end_member(None)
        return inf.pos

    def feed(self, chunk: bytes, off: int) -> None:
        """Decompressed bytes at member offset ``off``, split into lines."""
        over = self.total + len(chunk) > fmt.MAX_BYTES
        if over:
            chunk = chunk[: max(fmt.MAX_BYTES - self.total, 0)]
        self.total += len(chunk)
        self._lines(chunk, off)
        if over and not self.stop:
            self.stop = True
            self.say(None, f"longer than {fmt.bytes_limit()}: the rest is not read")

    def _lines(self, chunk: bytes, off: int) -> None:
        i, n = 0, len(chunk)
        while i < n and not self.stop:
            if self.length == 0 and chunk[i] == 10:  # blank lines skipped in one go
                m = _BLANK.match(chunk, i)
                assert m is not None
                self.lineno += m.end() - i
                i = m.end()
                self._new_line(off + i)
                continue
            j = chunk.find(b"\n", i)
            end = n if j < 0 else j
            self._extend(chunk, i, end)
            if j < 0:
                break
            self.lineno += 1
            self._line_done()
            i = j + 1
            self._new_line(off + i)

    def end_member(self, why: str | None) -> None:
        """A member (or the file) ended: a line it left unfinished is dropped."""
        if self.length:
            self.lineno += 1
            self.say(self.lineno, "incomplete (recorder stopped?): dropped")
        if why:
            self.say(None, why)
        self._new_line(0)

    # ---------------------------------------------------------------- lines
    def _new_line(self, off: int) -> None:
        self.start = off
        self.length = 0
        self.head = b""
        self.parts: list[bytes] = []
        self.framing = False
        self.too_long = False
        self.last = 0

    def _extend(self, chunk: bytes, i: int, end: int) -> None:
        if end <= i:
            return
        self.length += end - i
        self.last = chunk[end - 1]
        if len(self.head) < _HEAD:
            self.head += chunk[i : min(end, i + _HEAD - len(self.head))]
            self.framing = self.head.startswith(b'{"t":')
        if self.framing or self.too_long:
            return
        if self.length > fmt.MAX_LINE:
            self.too_long, self.parts = True, []
            if self.rec is None and self.lineno == 0:  # not even a first line: not a recording
                self.why = (
                    f"is not a tiptop recording (its first line is longer than {fmt.line_limit()})"
                )
                self.stop = True
            return
        self.parts.append(chunk[i:end])

    def _line_done(self) -> None:
        line = self.lineno
        if self.length > fmt.MAX_LINE:
            return self._damaged(line, f"longer than {fmt.line_limit()}: skipped")
        if self.framing:
            return self._frame_line(line)
        text = b"".join(self.parts)
        if not text.strip():
            return self._damaged(line, "blank: skipped")
        try:
            d = json.loads(text)
        except (ValueError, RecursionError):
            return self._damaged(line, "not JSON (damaged): skipped")
        if not isinstance(d, dict):
            return self._damaged(line, "not a JSON object: skipped")
        try:
            self._apply(line, d)
        except fmt.FormatError as exc:
            self._damaged(line, f"{exc}: skipped")

    def _frame_line(self, line: int) -> None:
        t, dt = fmt.frame_times(self.head)
        if t is None or self.last != ord("}"):
            return self._damaged(line, "not a whole refresh (damaged): skipped")
        rec = self.rec
        if rec is None or self.screen < 0:
            return self._damaged(line, "a refresh before any usable header: skipped")
        if len(rec) >= fmt.MAX_FRAMES:
            self.stop = True
            return self.say(line, f"more than {fmt.MAX_FRAMES} refreshes: the rest is not read")
        if len(rec) and t < rec.times[-1]:
            t = rec.times[-1]  # time travel bisects the times: a clock set back keeps order
        # Where the line is first, its time last: a reader in another thread goes by
        # len(times) (CPython appends to an array atomically).
        rec.screen_of.append(self.screen)
        rec._member.append(self._member)
        rec._off.append(self.start)
        rec._len.append(self.length)
        rec._line.append(line)
        rec.intervals.append(dt)
        rec.times.append(t)
        self.ready.set()

    def _apply(self, line: int, d: Mapping[str, object]) -> None:
        """A header, ``screen`` or ``facts`` line."""
        if fmt.is_header(d):
            return self._header(line, d)
        rec = self.rec
        if rec is None:
            raise fmt.FormatError("before any usable header")
        if "screen" in d:
            self._show(fmt.screen_from_record(d["screen"]), fmt.screen_number(d["screen"]))
        elif "facts" in d:
            facts = fmt.facts_from(d)
            self.facts += len(facts)
            if self.facts > fmt.MAX_FACTS:
                raise fmt.FormatError(f"more than {fmt.MAX_FACTS} task facts")
            for tid, f in facts.items():
                rec.facts.setdefault(tid, []).append((len(rec), f))
        else:
            raise fmt.FormatError("neither a refresh, a screen nor task facts")

    def _header(self, line: int, d: Mapping[str, object]) -> None:
        try:
            header = fmt.header_from(d)
        except fmt.FormatError as exc:
            if self.rec is None and "recording format" in str(exc):
                self.why = f"is {exc}"
                self.stop = True
                return
            raise
        if self.rec is None:
            self.rec = Recording(self.path, header, self.store)
            for where, what in self.pending:
                self.rec.note(where, what)
        elif len(self.rec):
            gap = (header.started or self.rec.times[-1]) - self.rec.times[-1]
            self.say(line, f"a new session starts, {max(gap, 0):.0f} s after the last refresh")
        for problem in header.problems:
            self.say(line, problem)
        if header.screen is not None:
            self._show(header.screen, header.screen_number)

    def _show(self, screen: ScreenSpec, number: int | None) -> None:
        """The refreshes from here on were shown under ``screen``, numbered ``number`` in
        its session (kept once: a screen shown again, or again in another session, is the
        same screen, with the number it had first)."""
        assert self.rec is not None
        screens = self.rec.screens
        self.screen = screens.index(screen) if screen in screens else len(screens)
        if self.screen == len(screens):
            self.rec.add_screen(screen, number)

    def _damaged(self, line: int, what: str) -> None:
        self.damaged += 1
        if self.damaged > fmt.MAX_DAMAGED:
            self.stop = True
            what = f"more than {fmt.MAX_DAMAGED} damaged lines: the rest is not read"
        if self.rec is None and not self._cut_header():
            # A recording starts with its header: a file that does not is refused before
            # its body is read (a 4 GiB gzip bomb under a wrong first line is not inflated).
            self.why = self.why or f"is not a tiptop recording (line {line}: {what})"
            self.stop = True
        self.say(line, what)

    def _cut_header(self) -> bool:
        """Whether the line is the first header cut short (a recorder stopped while
        writing it, then a session appended to the file): once, reading goes on."""
        cut = not self.cut_header and b"".join(self.parts).startswith(b'{"tiptop_recording":')
        self.cut_header |= cut
        return cut

    def say(self, line: int | None, what: str) -> None:
        """A note, kept until the first header makes the recording."""
        if self.rec is None:
            if len(self.pending) < MAX_NOTES:
                self.pending.append((line, what))
        else:
            self.rec.note(line, what)


__all__ = ["load"]
