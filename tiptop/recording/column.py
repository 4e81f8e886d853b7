"""One column of a recording over time, per task, read fast for ``--plot``.

A day at one refresh a second is 86,400 refreshes: evaluating each as a whole frame
(``replay.decode``: every counter checked, every column evaluated, a ``Frame`` built) took
67 s for 20,000. Here each refresh's line is parsed and only what the column reads is
checked (its counters and the per-task lists its built-ins read: ``format.frame_from``),
refreshes are evaluated together in batches of up to :data:`BATCH` (one call of the
evaluator a replay uses, over their rows stacked, for a screen holding that column alone),
and the points are reduced as they come to at most ``width`` time bins per task, keeping
each bin's smallest and largest value: a spike in a day's plot stays one pixel column
wide instead of being averaged away, and the memory held does not grow with the day.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator

import numpy as np

from tiptop.cells import STATUS_DTYPE, Code
from tiptop.errors import printable
from tiptop.messages import MessageLog
from tiptop.readonly import mutable
from tiptop.recording import format as fmt
from tiptop.recording.index import Recording
from tiptop.recording.replay import counter_cells, counter_map, row_facts
from tiptop.screens.columns import Kind, screen_columns
from tiptop.screens.evaluate import evaluator_for
from tiptop.screens.model import ScreenSpec
from tiptop.screens.variables import TIME_NAMES

#: Refreshes evaluated together (their rows stacked).
BATCH = 512
#: The most task rows read for one plot (about a day of refreshes a second of 90 tasks);
#: past it every n-th refresh is read (:meth:`ColumnReader.stride`). SAMPLES refreshes
#: spread over the range tell how many rows it holds.
ROWS = 8_000_000
SAMPLES = 64
#: The per-task lists each built-in variable reads (``format._TASK_KEYS``); ``cpu`` is
#: always read (the tasks drawn are those that used the most CPU time).
_BUILTIN_KEYS = {
    "CPU_TOT": ("cpu", "cs"),
    "CPU_SYS": ("sys", "ss"),
    "CPU_USER": ("usr", "ss"),
    "PROC_ID": ("proc",),
    "INTERVAL": ("w",),
    "TIME_RUN": ("run", "nth"),
    "TIME_WAIT": ("wait", "nth"),
    "TIME_THROTTLED": ("thr", "nth"),
    "TIME_IO": ("io", "nth"),
    "TIME_SLEEP": ("run", "wait", "io", "nth"),
    "CPU_LIMIT": ("lim",),
}
#: The lists read as unknown (NaN) where a line lacks them: where the time went.
_UNKNOWN_UNLESS_READ = frozenset(("run", "wait", "thr", "io", "lim", "cpus"))


@mutable
class Series:
    """One task's line: its label, its points (times and values; nan: a gap) and the CPU
    seconds it used over the range."""

    label: str
    times: np.ndarray
    values: np.ndarray
    cpu_seconds: float = 0.0


class ColumnReader:
    """Column ``column`` of ``screen`` over a recording, per task (pid, or tid when threads
    were recorded; ``pid``: that task only), reduced to at most ``width`` time bins of a
    smallest and a largest value when there are more than ``2 * width`` refreshes. A
    damaged refresh is one message in ``messages`` and is skipped."""

    def __init__(
        self,
        rec: Recording,
        screen: ScreenSpec,
        column: int,
        *,
        width: int = 1000,
        pid: int | None = None,
        messages: MessageLog | None = None,
    ) -> None:
        self.rec = rec
        self.pid = pid
        self.messages = messages if messages is not None else MessageLog()
        self.width = width
        self.screen, self.column = _one_column(screen, column)
        record = screen_columns(self.screen)[self.column]
        builtins = record.compiled.builtins if record.compiled is not None else frozenset()
        if record.kind is Kind.BOTTLENECK:  # its path starts where the time went
            builtins |= TIME_NAMES
        self.task_keys = {"cpu", *(k for b in builtins for k in _BUILTIN_KEYS.get(b, ()))}
        self.events = {x for c in self.screen.counters for x in (c.alias, c.config)}
        # A breakdown is judged with its refresh's interval: a batch holds one interval.
        self.by_interval = bool(self.screen.breakdown)
        #: Cells evaluated, and those of them that had a value.
        self.cells = 0
        self.valued = 0
        #: The column's counters found in the recording, and those with a cell counted
        #: (to say why a column has no value).
        self.recorded: set[str] = set()
        self.counted: set[str] = set()
        #: The tasks met, by key (pid, or tid with threads): each one's slot in the arrays
        #: below, its label, its CPU seconds; its points raw (chunks of times and values)
        #: or per time bin (smallest, largest, rows seen).
        self._slots: dict[int, int] = {}
        self._labels: list[str] = []
        self._cpu = np.zeros(0)
        self._raw: list[list[tuple[np.ndarray, np.ndarray]]] = []
        self._low = np.zeros((0, width))
        self._high = np.zeros((0, width))
        self._seen = np.zeros((0, width), np.int64)

    def read(self, first: int, last: int) -> dict[int, Series]:
        """The tasks' series over frames ``first`` to ``last`` (inclusive): every one, or
        every ``step``-th when they hold more than :data:`ROWS` task rows (:meth:`stride`)."""
        if last < first:
            return {}
        step = self.stride(first, last)
        t0, t1 = self.rec.times[first], self.rec.times[last]
        binned = (last - first) // step + 1 > 2 * self.width and t1 > t0
        for lines in self._batches(first, last, step):
            self._add(lines, t0, t1, binned)
        return {key: self._series(slot, t0, t1, binned) for key, slot in self._slots.items()}

    def stride(self, first: int, last: int) -> int:
        """1, or the step that keeps the task rows read within :data:`ROWS`, from the rows
        of up to :data:`SAMPLES` refreshes spread over the range (said in one message).
        Reading and checking a refresh's line costs about a microsecond a task row
        (benchmarks/README.md, "--plot"): the largest recording the reader takes, 4 GiB of
        refreshes, took minutes to draw whole (issue 52)."""
        count = last - first + 1
        picks = range(first, last + 1, max(count // SAMPLES, 1))
        sizes = [len(line.tid) for line in (self._line(i) for i in picks) if line is not None]
        rows = sum(sizes) / max(len(sizes), 1) * count
        if rows <= ROWS:
            return 1
        step = math.ceil(rows / ROWS)
        self.messages.say(
            "plot:stride",
            f"{printable(self.rec.path)}: {count:,} refreshes of about {rows / count:,.0f} "
            f"tasks, more than --plot reads in a minute: every {step}th drawn (each time "
            "bin's extremes among those); --from/--to draw every refresh of a shorter span",
        )
        return step

    def why_none(self) -> str:
        """Why the column had no value: its counters not recorded, not counted, or each
        cell ``-`` or ``?`` all the same (a ratio of zeros)."""
        aliases = [c.alias for c in self.screen.counters]
        missing = [a for a in aliases if a not in self.recorded]
        if missing:
            return f"{', '.join(missing)} not recorded"
        uncounted = [a for a in aliases if a not in self.counted]
        if uncounted:
            return f"{', '.join(uncounted)} not counted where it was recorded (no hardware PMU?)"
        return "every cell is - or ? (a ratio of zeros?)"

    # ------------------------------------------------------------------ reading

    def _batches(
        self, first: int, last: int, step: int
    ) -> Iterator[list[tuple[int, fmt.FrameLine]]]:
        """Runs of checked refreshes (every ``step``-th) that one evaluator call can take:
        the same recorded screen and counters (and interval, for a breakdown), at most
        :data:`BATCH`."""
        batch: list[tuple[int, fmt.FrameLine]] = []
        key = None
        for i in range(first, last + 1, step):
            line = self._line(i)
            if line is None:
                continue
            k = (self.rec.screen_of[i], tuple(line.counters), self.by_interval and line.dt)
            if batch and (k != key or len(batch) >= BATCH):
                yield batch
                batch = []
            key = k
            batch.append((i, line))
        if batch:
            yield batch

    def _line(self, index: int) -> fmt.FrameLine | None:
        """Frame ``index`` checked as far as the column reads it; None (and a message)
        when damaged."""
        recorded = self.rec.screens[self.rec.screen_of[index]]
        # What counter_map may bind: this screen's aliases, and the recorded aliases of
        # the same events.
        aliases = self.events | {
            c.alias for c in recorded.counters if c.config in self.events or c.alias in self.events
        }
        try:
            return fmt.frame_from(self.rec.record(index), aliases, self.task_keys)
        except fmt.FormatError as exc:
            line = self.rec.line_number(index)
            note = f"{self.rec.path}: line {line}: {exc}: refresh skipped"
            self.messages.say(f"replay:line:{line}", note)
            return None

    # ------------------------------------------------------------------ evaluating

    def _evaluate(self, batch: list[tuple[int, fmt.FrameLine]]) -> tuple[np.ndarray, np.ndarray]:
        """The column's values (nan where not OK) and the rows' %CPU over the stacked rows
        of ``batch``."""
        index, line = batch[0]
        aliases = tuple(line.counters)
        recorded = self.rec.screens[self.rec.screen_of[index]]
        where = tuple(counter_map(self.screen, recorded, aliases).items())
        self.recorded.update(a for a, _ in where)
        merged = _stacked([x for _, x in batch])
        stacked = row_facts(merged)
        counters = counter_cells(merged, len(merged.tid))[2]
        ok = (counters.status == Code.OK).any(axis=0)
        self.counted.update(a for a, j in where if ok[j])
        out = evaluator_for(self.screen, where).evaluate(stacked, counters)
        values, status = out.values[:, self.column], out.status[:, self.column]
        return np.where(status == Code.OK, values, np.nan), stacked.cpu_total

    def _add(
        self, batch: list[tuple[int, fmt.FrameLine]], t0: float, t1: float, binned: bool
    ) -> None:
        """A batch's rows added to their tasks' points, all tasks at once."""
        values, cpu = self._evaluate(batch)
        sizes = [len(x.tid) for _, x in batch]
        times = np.repeat(np.array([x.t for _, x in batch]), sizes)
        dts = np.repeat(np.array([x.dt for _, x in batch]), sizes)
        keys, name_at = self._keys(batch, sizes)
        rows = np.arange(len(keys))
        if self.pid is not None:
            mine = keys == self.pid
            keys, values, times, dts, cpu, rows = (
                a[mine] for a in (keys, values, times, dts, cpu, rows)
            )
        self.cells += len(values)
        self.valued += int(np.isfinite(values).sum())
        used = np.where(np.isfinite(cpu), cpu, 0.0) * dts / 100.0
        uniq, first_row, inverse = np.unique(keys, return_index=True, return_inverse=True)
        slots = np.array(
            [
                self._slot(key, name_at, int(rows[row]))
                for key, row in zip(uniq.tolist(), first_row.tolist(), strict=True)
            ],
            np.intp,
        )
        task = slots[inverse]
        self._cpu += np.bincount(task, used, minlength=len(self._cpu))
        if binned:
            bins = ((times - t0) / (t1 - t0) * self.width).astype(np.int64).clip(0, self.width - 1)
            np.fmin.at(self._low, (task, bins), values)  # fmin/fmax: a nan (no value) loses
            np.fmax.at(self._high, (task, bins), values)
            np.add.at(self._seen, (task, bins), 1)
            return
        order = np.argsort(task, kind="stable")  # each task's rows together, in time order
        ordered = task[order]
        for slot in slots.tolist():
            low, high = np.searchsorted(ordered, [slot, slot + 1])
            mine = order[low:high]
            self._raw[slot].append((times[mine], values[mine]))

    def _slot(self, key: int, name_at: Callable[[int], str], row: int) -> int:
        """The slot of the task ``key``, made (labelled with its name at stacked row
        ``row``) when it is new."""
        slot = self._slots.get(key)
        if slot is not None:
            return slot
        slot = self._slots[key] = len(self._labels)
        self._labels.append(f"{key} {name_at(row)}")
        self._raw.append([])
        if slot >= len(self._cpu):  # room for twice as many tasks
            more = max(len(self._cpu), 16)
            self._cpu = np.concatenate([self._cpu, np.zeros(more)])
            self._low = np.concatenate([self._low, np.full((more, self.width), np.nan)])
            self._high = np.concatenate([self._high, np.full((more, self.width), np.nan)])
            self._seen = np.concatenate([self._seen, np.zeros((more, self.width), np.int64)])
        return slot

    def _keys(
        self, batch: list[tuple[int, fmt.FrameLine]], sizes: list[int]
    ) -> tuple[np.ndarray, Callable[[int], str]]:
        """Per stacked row its task's key (pid, or tid with threads), and a task's name
        at a stacked row. A tid's pid is looked up once per batch where its recorded facts
        do not change within the batch (the facts of a tid change when it is reused)."""
        tids = np.concatenate([x.tid for _, x in batch])
        frame_of = np.repeat(np.array([i for i, _ in batch], np.int64), sizes)
        first, last = batch[0][0], batch[-1][0]
        uniq, inverse = np.unique(tids, return_inverse=True)
        pids = uniq.copy()  # a tid without recorded facts is its own pid
        changing = []
        for u, tid in enumerate(uniq.tolist()):
            if tid in self.rec.facts:
                facts = self.rec.facts_of(tid, first)
                if facts is self.rec.facts_of(tid, last):
                    pids[u] = facts[0]
                else:
                    changing.append(u)
        keys = pids[inverse]
        for u in changing:
            at = np.flatnonzero(inverse == u)
            keys[at] = [self.rec.facts_of(int(tids[r]), int(frame_of[r]))[0] for r in at.tolist()]
        threads = np.repeat(np.array([x.threads for _, x in batch]), sizes)
        keys = np.where(threads, tids, keys)

        def name_at(row: int) -> str:
            return self.rec.facts_of(int(tids[row]), int(frame_of[row]))[2]

        return keys, name_at

    def _series(self, slot: int, t0: float, t1: float, binned: bool) -> Series:
        """A task's points: raw, or two per time bin it was seen in (its smallest and
        largest value at the bin's middle; one nan where it had none: a gap)."""
        label, cpu = self._labels[slot], float(self._cpu[slot])
        if not binned:
            raw = self._raw[slot]
            times = np.concatenate([t for t, _ in raw]) if raw else np.zeros(0)
            values = np.concatenate([v for _, v in raw]) if raw else np.zeros(0)
            return Series(label, times, values, cpu)
        seen = np.flatnonzero(self._seen[slot])
        middle = t0 + (seen + 0.5) * (t1 - t0) / self.width
        times = np.repeat(middle, 2)
        values = np.stack([self._low[slot, seen], self._high[slot, seen]], axis=1).ravel()
        return Series(label, times, values, cpu)


def _stacked(lines: list[fmt.FrameLine]) -> fmt.FrameLine:
    """Frame lines of the same counters as one: their rows one after another, a list some
    lack filled as a replay reads a list a line lacks (``row_facts``, ``counter_cells``),
    each row's interval its ``w`` (``INTERVAL`` reads it; the evaluator's ``interval``
    is the first line's, which a breakdown's batch all share)."""
    if len(lines) == 1 and lines[0].values["w"] is not None:
        return lines[0]
    sizes = [len(x.tid) for x in lines]

    def task(key: str) -> np.ndarray | None:
        if all(x.values[key] is None for x in lines):
            return None
        # A list a line lacks reads 0 (row_facts' default), its interval for ``w``, and a
        # part of where the time went unknown.
        default = np.nan if key in _UNKNOWN_UNLESS_READ else 0.0
        return np.concatenate(
            [
                _filled(x.values[key], m, x.dt if key == "w" else default)
                for x, m in zip(lines, sizes, strict=True)
            ]
        )

    values = {key: task(key) for key in lines[0].values}
    values["w"] = np.concatenate(
        [_filled(x.values["w"], m, x.dt) for x, m in zip(lines, sizes, strict=True)]
    )
    counters: dict[str, dict[str, np.ndarray]] = {}
    for a in lines[0].counters:
        parts = [(x.counters[a], m) for x, m in zip(lines, sizes, strict=True)]
        c = {
            "d": np.concatenate([p["d"] for p, _ in parts]),
            "st": np.concatenate([p.get("st", np.zeros(m, STATUS_DTYPE)) for p, m in parts]),
            "r": np.concatenate([p.get("r", np.ones(m)) for p, m in parts]),
        }
        c["s"] = np.concatenate([p.get("s", p["d"]) for p, _ in parts])
        if any("T" in p for p, _ in parts):
            c["T"] = np.concatenate([p.get("T", np.full(m, np.nan)) for p, m in parts])
            c["Ts"] = np.concatenate(
                [
                    p.get("Ts", p.get("st", np.zeros(m, STATUS_DTYPE)))
                    if "T" in p
                    else np.full(m, Code.UNREADABLE, STATUS_DTYPE)
                    for p, m in parts
                ]
            )
        counters[a] = c
    first = lines[0]
    return dataclasses.replace(
        first, tid=np.concatenate([x.tid for x in lines]), values=values, counters=counters
    )


def _filled(a: np.ndarray | None, n: int, default: float) -> np.ndarray:
    """``a``, or ``n`` times ``default`` when there is none."""
    return np.full(n, default) if a is None else a


def _one_column(screen: ScreenSpec, column: int) -> tuple[ScreenSpec, int]:
    """``screen`` reduced to ``column`` (with the breakdown it is part of, judged as on
    screen) and the counters they read, and the column's index there."""
    whole = screen.breakdown_columns()
    keep = sorted({*whole, column}) if column in whole else [column]
    columns = tuple(screen.columns[i] for i in keep)
    breakdown = screen.breakdown if column in whole else ()
    reduced = dataclasses.replace(screen, columns=columns, breakdown=breakdown)
    read = {a for c in screen_columns(reduced) for a in c.bare | c.deltas}
    counters = tuple(c for c in screen.counters if c.alias in read)
    return dataclasses.replace(reduced, counters=counters), keep.index(column)


__all__ = ["BATCH", "ROWS", "SAMPLES", "ColumnReader", "Series"]
