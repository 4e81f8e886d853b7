"""Replay of a ``--record`` file: a ``FrameSource`` that evaluates the recorded counters again.

A recording (written by ``tiptop.recording``; docs/guide.md describes the format) is
JSON lines, gzip when the name ends in ``.gz``: a header line (``tiptop_recording``: the
format version, host, kernel, CPU, screen...), then per refresh a ``facts`` line for the
tasks first seen or changed (pid, user, name, command line) and a frame line (time, and per
task its numbers and per counter its raw, scaled and total values, running fraction and
status). A header line later in the file (a second run appended, or a screen switch)
changes the screen from there on.

Loading keeps the frame lines as bytes and parses one only when it is shown, so a long
recording opens in the time it takes to decompress it. A last line cut short (the recorder
was killed mid-write) is dropped with a note; so is any other line that does not parse.

The columns of a replayed frame are computed by the evaluator the sampler uses
(``tiptop.screens.evaluate``): the built-in variables from the recorded CPU facts
(``tiptop.screens.variables.environment``), ``alias`` and ``delta(alias)`` from the
recorded totals and scaled deltas, and any screen can be shown: a counter it needs that was
not recorded reads ``?``.
"""

from __future__ import annotations

import bisect
import json
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tiptop.cells import STATUS_DTYPE, Code
from tiptop.errors import TiptopError
from tiptop.frame import Frame, FrameSource
from tiptop.messages import MessageLog
from tiptop.screens.evaluate import CounterCells, Evaluator
from tiptop.screens.expr import ColumnExpr, compile_columns
from tiptop.screens.model import ColumnSpec, CounterSpec, NamedEvent, ScreenSpec
from tiptop.screens.variables import RowFacts

#: The recording format this reader understands (``tiptop.recording`` writes it).
FORMAT_VERSION = 1

_STEP_KEYS = {"[": -1, "]": +1}
_JUMP_KEYS = {"{": -60.0, "}": +60.0}


def screen_from_record(d: dict[str, Any]) -> ScreenSpec:
    """The screen a recording's header describes (events kept as names, never resolved)."""
    counters = tuple(
        CounterSpec(c["alias"], NamedEvent(c["config"]), c["config"], c.get("type"))
        for c in d.get("counters", ())
    )
    columns = tuple(
        ColumnSpec(
            c["header"],
            c["format"],
            c["expr"],
            c.get("desc", "(unknown)"),
            c.get("threshold"),
            bool(c.get("threshold_below", False)),
        )
        for c in d.get("columns", ())
    )
    return ScreenSpec(
        d["name"], d.get("desc", ""), counters, columns, source="recording",
        breakdown=tuple(d.get("breakdown", ())),  # absent from recordings made before it
    )  # fmt: skip


@dataclass
class Recording:
    """A loaded recording: its first header, and per frame its line, time and screen."""

    path: str
    header: dict[str, Any]
    lines: list[bytes] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    #: Index into ``screens`` of the screen recorded with each frame.
    screen_of: list[int] = field(default_factory=list)
    screens: list[ScreenSpec] = field(default_factory=list)
    #: tid -> [(first frame index, [pid, user, name, cmdline])], in frame order.
    facts: dict[int, list[tuple[int, list[Any]]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.lines)

    def facts_of(self, tid: int, index: int) -> list[Any]:
        """Task ``tid``'s facts as known at frame ``index``."""
        versions = self.facts.get(tid)
        if not versions:
            return [tid, "?", "?", "?"]
        k = bisect.bisect_right(versions, index, key=lambda v: v[0]) - 1
        return versions[max(k, 0)][1]

    def record(self, index: int) -> dict[str, Any]:
        """Frame ``index``'s line, parsed."""
        return json.loads(self.lines[index])


def _read_bytes(path: str) -> tuple[bytes, str | None]:
    """The file's bytes, decompressed when it is gzip; a stream cut short gives what was
    written before the cut and a note."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise TiptopError(f"--replay: cannot read '{path}': {exc.strerror}") from None
    if raw[:2] != b"\x1f\x8b":
        return raw, None
    out: list[bytes] = []
    while raw:  # member by member: a recording appended to is several gzip members
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out.append(d.decompress(raw))
        except zlib.error:
            return b"".join(out), "the compressed stream is damaged"
        if not d.eof:
            return b"".join(out), "the compressed stream ends early (recorder stopped)"
        raw = d.unused_data
    return b"".join(out), None


def load(path: str) -> Recording:
    """Read a recording; one line (TiptopError) when it is not one this version reads."""
    data, note = _read_bytes(path)
    lines = data.split(b"\n")
    head = lines[0] if lines else b""
    try:
        header = json.loads(head)
    except ValueError:
        raise TiptopError(f"--replay: '{path}' is not a tiptop recording") from None
    _check_header(path, header)
    rec = Recording(path, header, notes=[note] if note else [])
    rec.screens.append(screen_from_record(header["screen"]))
    last = len(lines) - 1
    for i, line in enumerate(lines[1:], 1):
        if not line.strip():
            continue
        if line.startswith(b'{"t":'):
            try:
                t = float(line[5 : line.index(b",", 5)])
            except ValueError:
                t = None
            if t is not None and line.endswith(b"}"):
                rec.lines.append(line)
                rec.times.append(t)
                rec.screen_of.append(len(rec.screens) - 1)
                continue
        else:
            try:
                d = json.loads(line)
            except ValueError:
                d = None
            if isinstance(d, dict):
                _apply(rec, d, path)
                continue
        where = "last line" if i == last else f"line {i + 1}"
        rec.notes.append(f"{path}: {where} is incomplete (recorder stopped?): dropped")
    return rec


def _check_header(path: str, header: Any) -> None:
    if not isinstance(header, dict) or "tiptop_recording" not in header:
        raise TiptopError(f"--replay: '{path}' is not a tiptop recording")
    version = header["tiptop_recording"]
    if version != FORMAT_VERSION:
        raise TiptopError(
            f"--replay: '{path}' is recording format {version}; "
            f"this tiptop reads format {FORMAT_VERSION}"
        )


def _apply(rec: Recording, d: dict[str, Any], path: str) -> None:
    """A facts line, or a later header (new screen) line."""
    if "facts" in d:
        for tid, facts in d["facts"].items():
            rec.facts.setdefault(int(tid), []).append((len(rec.lines), facts))
    elif "tiptop_recording" in d:
        _check_header(path, d)
        rec.screens.append(screen_from_record(d["screen"]))
    elif "screen" in d:
        rec.screens.append(screen_from_record(d["screen"]))


def _arr(x: Any, n: int, default: float = 0.0, dtype: Any = np.float64) -> np.ndarray:
    if x is None:
        return np.full(n, default, dtype)
    return np.array(x, dtype=np.float64).astype(dtype)


def _counter_map(
    screen: ScreenSpec, recorded: ScreenSpec | None, aliases: tuple[str, ...]
) -> dict[str, int]:
    """Which recorded counter each of ``screen``'s aliases reads: the same alias bound to
    the same event, else the recorded counter of that event under another alias; an alias
    of an event not recorded is absent (its cells read ``?``)."""
    where = {a: j for j, a in enumerate(aliases)}
    config = {c.alias: c.config for c in recorded.counters} if recorded else {}
    by_event = {config.get(a, a): j for a, j in where.items()}
    out: dict[str, int] = {}
    for c in screen.counters:
        if c.alias in where and config.get(c.alias, c.config) == c.config:
            out[c.alias] = where[c.alias]
        elif c.config in by_event:
            out[c.alias] = by_event[c.config]
    return out


def decode(
    rec: Recording, index: int, screen: ScreenSpec, columns: list[ColumnExpr | None]
) -> Frame:
    """Frame ``index`` of ``rec`` with ``screen``'s columns evaluated (``columns`` compiled)."""
    d = rec.record(index)
    tid = np.array(d.get("tid", []), np.int64)
    n = len(tid)
    facts = [rec.facts_of(int(t), index) for t in tid]
    nth = _arr(d.get("nth"), n, 1, np.int64)
    pid = np.array([f[0] for f in facts], np.int64)
    row = RowFacts(
        cpu_total=_arr(d.get("cpu"), n), cpu_sys=_arr(d.get("sys"), n),
        cpu_user=_arr(d.get("usr"), n), processor=_arr(d.get("proc"), n),
        interval=float(d["dt"]), total_status=_arr(d.get("cs"), n, 0, STATUS_DTYPE),
        split_status=_arr(d.get("ss"), n, 0, STATUS_DTYPE),
    )  # fmt: skip
    aliases = tuple(d.get("k", {}))
    k = len(aliases)
    raw, scaled, total = np.zeros((n, k)), np.zeros((n, k)), np.zeros((n, k))
    run = np.ones((n, k))
    st = np.zeros((n, k), STATUS_DTYPE)
    tst = np.zeros((n, k), STATUS_DTYPE)
    for j, a in enumerate(aliases):
        c = d["k"][a]
        raw[:, j] = _arr(c["d"], n)
        scaled[:, j] = (
            _arr(c["s"], n) if "s" in c else np.where(np.isnan(raw[:, j]), np.nan, raw[:, j])
        )
        st[:, j] = _arr(c.get("st"), n, 0, STATUS_DTYPE)
        scaled[:, j] = np.where(st[:, j] == Code.OK, scaled[:, j], np.nan)
        total[:, j] = _arr(c.get("T"), n, np.nan)
        run[:, j] = _arr(c.get("r"), n, 1.0)
        tst[:, j] = _arr(c["Ts"], n, 0, STATUS_DTYPE) if "Ts" in c else st[:, j]
        if "T" not in c:  # totals are recorded only for aliases a column reads bare
            tst[:, j] = Code.UNREADABLE
    recorded = rec.screens[rec.screen_of[index]] if rec.screen_of else None
    evaluator = Evaluator(screen, _counter_map(screen, recorded, aliases), columns)
    cells = evaluator.evaluate(row, CounterCells(scaled, st, total, tst, run))
    markers = [
        "-" if t != p else "+" if m > 1 else " " for t, p, m in zip(tid, pid, nth, strict=True)
    ]
    return Frame(
        iteration=int(d.get("it", index)), timestamp=float(d["t"]), interval=float(d["dt"]),
        threads=bool(d.get("th", False)), headers=tuple(c.header for c in screen.columns),
        counters=aliases, tid=tid, pid=pid, marker=markers,
        user=[f[1] for f in facts], name=[f[2] for f in facts], cmdline=[f[3] for f in facts],
        num_threads=nth, dead=_arr(d.get("dead"), n, 0, bool), cpu_total=row.cpu_total,
        values=cells.values, status=cells.status, running=cells.running, counter_delta=raw,
        counter_running=run, counter_status=st, tasks_total=int(d.get("n", n)),
        cpu_user=row.cpu_user, cpu_sys=row.cpu_sys, processor=row.processor,
        cpu_status=np.stack([row.total_status, row.split_status], axis=1),
        counter_scaled=scaled, counter_total=total, counter_total_status=tst,
    )  # fmt: skip


class ReplaySource(FrameSource):
    """A recording as a ``FrameSource``: each refresh shows the next recorded refresh (one
    per ``delay`` seconds at most, so a key that refreshes the view does not skip ahead);
    :meth:`key` steps, jumps and pauses. Frames ``first`` to ``last`` (inclusive) only."""

    def __init__(
        self, rec: Recording, screen: ScreenSpec, *, first: int = 0, last: int | None = None,
        delay: float = 1.0, messages: MessageLog | None = None,
    ) -> None:  # fmt: skip
        self.rec = rec
        self.screen = screen
        self.first = first
        self.last = len(rec) - 1 if last is None else last
        self.cursor = first
        self.delay = delay
        self.paused = False
        self.messages = messages if messages is not None else MessageLog()
        for note in rec.notes:
            self.messages.say(f"replay:{note}", note)
        self._columns = compile_columns(screen)
        self._shown = False
        self._next = 0.0

    def start(self) -> None:
        """Nothing to take: the next refresh shows the current recorded refresh."""
        self._shown = False

    def frame(self, index: int) -> Frame:
        """Recorded refresh ``index`` under the current screen."""
        return decode(self.rec, index, self.screen, self._columns)

    def refresh(self) -> Frame:
        """The recorded refresh at the cursor, moving on first when it is time to."""
        now = time.monotonic()
        if self._shown and not self.paused and now >= self._next and self.cursor < self.last:
            self.cursor += 1
            self._next = now + 0.9 * self.delay
        elif not self._shown:
            self._next = now + 0.9 * self.delay
        self._shown = True
        if not len(self.rec) or self.cursor > self.last:
            return Frame.empty(tuple(c.header for c in self.screen.columns))
        return self.frame(self.cursor)

    def key(self, key: str) -> bool:
        """Time travel: ``[``/``]`` one refresh back/forward, ``{``/``}`` a minute back/forward,
        space pauses or resumes; True when ``key`` was one of these."""
        if key == " ":
            self.paused = not self.paused
        elif key in _STEP_KEYS:
            self.cursor = min(max(self.cursor + _STEP_KEYS[key], self.first), self.last)
        elif key in _JUMP_KEYS and len(self.rec):
            t = self.rec.times[self.cursor] + _JUMP_KEYS[key]
            i = bisect.bisect_left(self.rec.times, t)
            if _JUMP_KEYS[key] < 0 and (i >= len(self.rec) or self.rec.times[i] > t):
                i -= 1
            self.cursor = min(max(i, self.first), self.last)
        else:
            return False
        self._shown = False  # the next refresh shows the new position without moving on
        return True

    def title(self) -> str:
        """``replay HH:MM:SS`` of the refresh shown (``paused`` when it is), for the title."""
        if not len(self.rec):
            return "replay (empty)"
        t = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.rec.times[self.cursor]))
        state = " paused" if self.paused else ""
        return f"replay {t}{state} {self.cursor - self.first + 1}/{self.last - self.first + 1}"

    def reconfigure(self, screen: Any = None, **changes: Any) -> None:
        """Switch screen (columns evaluated again); other settings are the recording's."""
        if screen is not None:
            self.screen = screen
            self._columns = compile_columns(screen)
        self._shown = False

    def close(self) -> None:
        """Nothing is held open: the recording was read whole; stop moving on."""
        self.paused = True


__all__ = ["FORMAT_VERSION", "Recording", "ReplaySource", "decode", "load", "screen_from_record"]
