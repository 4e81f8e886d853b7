"""Replay of a ``--record`` file: a ``FrameSource`` that evaluates the recorded counters again.

The recording is loaded by ``tiptop.recording.reader`` (each refresh's line read again and
checked when shown). Each refresh is shown under the screen that was shown when it was
recorded (a screen switch, a session appended under another screen), unless a screen was
picked (``-S``, the live Left/Right keys, a screen given to :class:`ReplaySource`): that one
then shows every refresh.

The columns of a replayed frame are computed by the evaluator the sampler uses
(``tiptop.screens.evaluate``): the built-in variables from the recorded CPU facts
(``tiptop.screens.variables.environment``), ``alias`` and ``delta(alias)`` from the
recorded totals and scaled deltas, and any screen can be shown: a counter it needs that was
not recorded reads ``?``.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from tiptop.cells import STATUS_DTYPE, Code
from tiptop.frame import Frame, FrameSource, SamplerConfig
from tiptop.messages import MessageLog
from tiptop.recording.format import TIME_KEYS, FormatError, FrameLine
from tiptop.recording.index import Recording
from tiptop.screens.evaluate import CounterCells, evaluator_for
from tiptop.screens.frames import FrameFacts, RowLabels, evaluated_frame
from tiptop.screens.model import ScreenSpec
from tiptop.screens.variables import RowFacts, TimeFacts

STEP_KEYS = {"[": -1, "]": +1}
JUMP_KEYS = {"{": -60.0, "}": +60.0}
#: ``)`` plays twice as fast, ``(`` half as fast (``+``/``-`` switch screens, as in the
#: original; ``/`` searches and ``*`` is left alone, as in htop); the speed stays from 1/64
#: to 64 times the recorded pace (or the ``-d`` delay).
SPEED_KEYS = {")": 2.0, "(": 0.5}
SPEEDS = (1 / 64, 64.0)
#: The shortest time a frame is shown (at most 20 a second: the keys stay answered).
MIN_SHOW = 0.05
#: How often a paused replay, or one at its last frame, is refreshed (a file still being
#: read grows, and its notes come).
IDLE_REFRESH = 1.0


def _clock(t: float) -> str:
    """A recorded time as the replay says it: ``2026-11-23 10:32:05`` (local time)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def counter_map(
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


def _or(
    x: np.ndarray | None, n: int, default: float, dtype: npt.DTypeLike = np.float64
) -> np.ndarray:
    return np.full(n, default, dtype) if x is None else x.astype(dtype, copy=False)


def counter_cells(line: FrameLine, n: int) -> tuple[tuple[str, ...], np.ndarray, CounterCells]:
    """The recorded counters in line order: their aliases, raw deltas and cells."""
    aliases = tuple(line.counters)
    k = len(aliases)
    raw, scaled, total = np.zeros((n, k)), np.zeros((n, k)), np.zeros((n, k))
    run = np.ones((n, k))
    st = np.zeros((n, k), STATUS_DTYPE)
    tst = np.zeros((n, k), STATUS_DTYPE)
    for j, a in enumerate(aliases):
        c = line.counters[a]
        raw[:, j] = c["d"]
        st[:, j] = _or(c.get("st"), n, 0, STATUS_DTYPE)
        scaled[:, j] = np.where(st[:, j] == Code.OK, c.get("s", raw[:, j]), np.nan)
        total[:, j] = _or(c.get("T"), n, np.nan)
        run[:, j] = _or(c.get("r"), n, 1.0)
        tst[:, j] = c["Ts"] if "Ts" in c else st[:, j]
        if "T" not in c:  # totals are recorded only for aliases a column reads bare
            tst[:, j] = Code.UNREADABLE
    return aliases, raw, CounterCells(scaled, st, total, tst, run)


def row_facts(line: FrameLine) -> RowFacts:
    """A frame line's per-task facts as the evaluator's built-ins read them (a list the
    line lacks: its default)."""
    v, n = line.values, len(line.tid)
    time = None
    if any(v.get(key) is not None for key in TIME_KEYS):  # recorded where the screen read it
        percent = np.stack([_or(v.get(key), n, np.nan) for key in TIME_KEYS], axis=1)
        status = np.where(np.isnan(percent), Code.UNREADABLE, Code.OK).astype(STATUS_DTYPE)
        threads = np.ones(n) if line.threads else np.maximum(_or(v["nth"], n, 1.0), 1.0)
        limit, cpus = _or(v.get("lim"), n, np.nan), _or(v.get("cpus"), n, np.nan)
        time = TimeFacts(percent, status, threads, limit, cpus)
    return RowFacts(
        cpu_total=_or(v["cpu"], n, 0.0),
        cpu_sys=_or(v["sys"], n, 0.0),
        cpu_user=_or(v["usr"], n, 0.0),
        processor=_or(v["proc"], n, 0.0),
        interval=line.dt,
        total_status=_or(v["cs"], n, 0, STATUS_DTYPE),
        split_status=_or(v["ss"], n, 0, STATUS_DTYPE),
        window=v["w"],
        time=time,
    )


def decode(rec: Recording, index: int, screen: ScreenSpec) -> Frame:
    """Frame ``index`` of ``rec`` with ``screen``'s columns evaluated (by the evaluator of
    ``screen`` over the counters recorded then, ``evaluator_for``);
    :class:`~tiptop.recording.format.FormatError` when its line is damaged."""
    line = rec.frame(index)
    tid, v = line.tid, line.values
    n = len(tid)
    facts = [rec.facts_of(t, index) for t in tid.tolist()]
    nth = _or(v["nth"], n, 1, np.int64)
    pid = np.array([f[0] for f in facts], np.int64)
    row = row_facts(line)
    aliases, raw, cells_in = counter_cells(line, n)
    recorded = rec.screens[rec.screen_of[index]]
    evaluator = evaluator_for(screen, tuple(counter_map(screen, recorded, aliases).items()))
    labels = RowLabels(
        tid, pid, [f[1] for f in facts], [f[2] for f in facts], [f[3] for f in facts]
    )
    refresh = FrameFacts(
        iteration=index if line.it is None else line.it,
        timestamp=line.t,
        interval=line.dt,
        threads=line.threads,
        tasks_total=n if line.tasks_total is None else line.tasks_total,
        context=line.context,
    )
    return evaluated_frame(
        evaluator,
        refresh,
        labels,
        row,
        cells_in,
        aliases=aliases,
        raw=raw,
        num_threads=nth,
        dead=_or(v["dead"], n, 0, bool),
    )


class ReplaySource(FrameSource):
    """A recording as a ``FrameSource``: each recorded refresh is shown for as long as it
    was on screen while recording (its next refresh's recorded interval), or for ``delay``
    seconds when one is given (``-d``), divided by the speed (:data:`SPEED_KEYS`); a
    refresh asked for sooner (a key) shows the same frame again. :meth:`due_in` tells the
    live view when the next one is due; :meth:`key` steps, jumps, pauses and changes the
    speed. Frames ``first`` to ``last`` (inclusive) only.

    Each frame is shown under the screen recorded with it, or under ``screen`` once one is
    picked (given here or to :meth:`reconfigure`). A damaged frame line is one message
    naming its line and shows no rows."""

    def __init__(
        self,
        rec: Recording,
        screen: ScreenSpec | None = None,
        *,
        first: int = 0,
        last: int | None = None,
        delay: float | None = None,
        messages: MessageLog | None = None,
    ) -> None:
        self.rec = rec
        self.picked = screen
        self.first = first
        self._last = last
        self.cursor = first
        #: Seconds each frame is shown; None: as long as it was while recording.
        self.delay = delay
        self.speed = 1.0
        self._live_delay: float | None = None  # the live view's delay last seen (due_in)
        self.paused = False
        self.messages = messages if messages is not None else MessageLog()
        self._noted = 0
        self.say_notes()
        self._shown = False
        self._next = 0.0

    @property
    def last(self) -> int:
        """The last frame shown: the one given, else the last read so far (a recording read
        in the background grows)."""
        return len(self.rec) - 1 if self._last is None else self._last

    def say_notes(self) -> None:
        """The recording's notes not said yet (more come while it is read)."""
        notes = self.rec.notes
        for note in notes[self._noted :]:
            self.messages.say(f"replay:{note}", note)
        self._noted = len(notes)
        if self.rec.dropped and not self.rec.loading:
            more = self.rec.all_notes()[-1]
            self.messages.say(f"replay:{more}", more)

    def screen_for(self, index: int) -> ScreenSpec:
        """The screen frame ``index`` is shown under."""
        if self.picked is not None:
            return self.picked
        return self.rec.screens[self.rec.screen_of[index]] if len(self.rec) else self.rec.screens[0]

    @property
    def screen(self) -> ScreenSpec:  # type: ignore[override]  # read-only: the cursor's
        """The screen of the frame at the cursor."""
        return self.screen_for(min(self.cursor, max(len(self.rec) - 1, 0)))

    def start(self) -> None:
        """Nothing to take: the next refresh shows the current recorded refresh."""
        self._shown = False

    def frame(self, index: int) -> Frame | None:
        """Recorded refresh ``index`` under its screen; None (and a message) when its line
        is damaged."""
        screen = self.screen_for(index)
        self.say_notes()
        try:
            return decode(self.rec, index, screen)
        except FormatError as exc:
            line = self.rec.line_number(index)
            note = f"{self.rec.path}: line {line}: {exc}: refresh skipped"
            self.messages.say(f"replay:line:{line}", note)
            return None

    def shown_for(self, index: int) -> float:
        """Seconds frame ``index`` is shown at the current speed: as long as it was while
        recording (``Recording.shown_for``), or the ``-d`` delay."""
        if self.delay is not None:
            base = self.delay
        else:
            base = self.rec.shown_for(index, self.rec.header.interval or 1.0)
        return max(base / self.speed, MIN_SHOW)

    def recorded(self) -> Iterator[Frame]:
        """Every recorded refresh from ``first`` to ``last`` in order, as the file is read
        (a batch replay); a damaged one is skipped (its message said). The cursor follows,
        so :attr:`screen` is the screen of the frame just given; the notes of the file's
        end are said when it ends."""
        i = self.first
        while True:
            self.rec.wait(i)  # the file may still be being read
            if i > self.last:
                break
            self.cursor = i
            frame = self.frame(i)
            if frame is not None:
                yield frame
            i += 1
        self.say_notes()  # what reading the end of the file found
        self.say_end()

    def say_end(self) -> None:
        """Say, once, that the replay reached the last refresh asked for (a notice: batch
        prints it on stderr, the live ``e`` window lists it)."""
        if not len(self.rec) or self.last < self.first:
            return
        t0, t1 = (_clock(self.rec.times[i]) for i in (self.first, self.last))
        n = self.last - self.first + 1
        what = "the recording" if self._last is None else "--to"
        said = f"replay: the end of {what}: {n} refreshes, {t0} to {t1}"
        self.messages.say("replay:end", said, notice=True)

    def refresh(self) -> Frame:
        """The recorded refresh at the cursor, moving on first when it is time to (a
        refresh asked for sooner, by a key, shows the same one)."""
        now = time.monotonic()
        # A timer may fire a hair early: a millisecond is not worth a whole frame late.
        due = self._shown and not self.paused and now >= self._next - 0.001
        if due and self.cursor < self.last:
            self.cursor += 1
            # From when it was due, not from now: a late timer does not slow the pace.
            self._next = max(self._next + self.shown_for(self.cursor), now + MIN_SHOW)
        elif not self._shown:
            self._next = now + self.shown_for(self.cursor)
        self._shown = True
        frame = self.frame(self.cursor) if len(self.rec) and self.cursor <= self.last else None
        return Frame.empty(tuple(c.header for c in self.screen.columns)) if frame is None else frame

    def due_in(self, delay: float) -> float:
        """Seconds until the next frame is due. ``delay`` is the live view's: when the
        ``d`` key changes it, frames are shown that long from then on."""
        if self._live_delay is not None and delay != self._live_delay:
            self.delay, self.speed = delay, 1.0
            self._shown = False  # the new delay counts from now
        self._live_delay = delay
        if self.paused or self.cursor >= self.last:
            return IDLE_REFRESH
        return max(self._next - time.monotonic(), 0.0)

    def key(self, key: str) -> bool:
        """Time travel: ``[``/``]`` one refresh back/forward, ``{``/``}`` a minute back/forward,
        space pauses or resumes, ``)``/``(`` twice/half as fast; True when ``key`` was one
        of these."""
        if key in SPEED_KEYS:
            low, high = SPEEDS
            before, self.speed = self.speed, min(max(self.speed * SPEED_KEYS[key], low), high)
            now = time.monotonic()  # what is left of the frame on screen, at the new speed
            self._next = now + max(self._next - now, 0.0) * before / self.speed
            return True
        if key == " ":
            self.paused = not self.paused
        elif key in STEP_KEYS:
            self.cursor = min(max(self.cursor + STEP_KEYS[key], self.first), self.last)
        elif key in JUMP_KEYS and len(self.rec):
            t = self.rec.times[self.cursor] + JUMP_KEYS[key]
            i = bisect.bisect_left(self.rec.times, t)
            if JUMP_KEYS[key] < 0 and (i >= len(self.rec) or self.rec.times[i] > t):
                i -= 1
            self.cursor = min(max(i, self.first), self.last)
        else:
            return False
        self._shown = False  # the next refresh shows the new position without moving on
        return True

    def title(self) -> str:
        """``replay DAY HH:MM:SS`` of the refresh shown (``paused`` when it is), its place
        (``(end)`` at the last one of a file read whole), and the speed with the keys that
        change it, for the title line."""
        if not len(self.rec):
            return "replay (empty)"
        t = _clock(self.rec.times[self.cursor])
        loading = self.rec.loading and self._last is None  # still being read
        ended = self.cursor >= self.last and not loading
        state = " paused" if self.paused else ""
        more = "+" if loading else " (end)" if ended else ""
        place = f"{self.cursor - self.first + 1}/{self.last - self.first + 1}{more}"
        if ended:
            self.say_end()
        return f"replay {t}{state} {place} {self.pace()} () faster, ( slower)"

    def pace(self) -> str:
        """The speed in words: ``1x`` (of the recorded pace), or ``every 0.5 s`` (``-d``)."""
        if self.delay is not None:
            return f"every {max(self.delay / self.speed, MIN_SHOW):g} s"
        return f"{self.speed:g}x" if self.speed >= 1 else f"1/{1 / self.speed:g}x"

    def reconfigure(
        self, screen: ScreenSpec | None = None, config: SamplerConfig | None = None
    ) -> None:
        """Show every frame under ``screen`` (a screen picked) when it is not the one shown
        now; other settings are the recording's."""
        if screen is not None and screen is not self.screen:
            self.picked = screen
        self._shown = False

    def close(self) -> None:
        """Close the recording's file; stop moving on."""
        self.paused = True
        self.rec.close()


__all__ = ["ReplaySource", "counter_cells", "counter_map", "decode", "row_facts"]
