"""Counter sets of the sampler: the per-task group plan, open groups, and batched reads.

A screen's counters become a :class:`CounterPlan`: one group per PMU (software events in
their own, each hardware PMU its own; on hybrid CPUs a generic event gives one binding
per core PMU, hence one group per core PMU), because the kernel refuses groups that mix
hardware PMUs (kernel/events/core.c, ``perf_event_open()``: "Don't allow group of multiple
hw events from different pmus", EINVAL). Every open group on one thread is an
``engine.count.units.Unit``; it keeps its opening read (``base``) and its previous read
(``last``) as the kernel's own ``PERF_FORMAT_GROUP`` words (``nr, time_enabled,
time_running, {value, id} * nr``, perf_event_open(2) "read_format"), so that a refresh
joins the bytes of every unit of a group kind and turns them into one numpy matrix: no
per-task numpy work.

Deltas of values and times are taken modulo 2**64 (the counters are u64); a delta above
2**63 can only be a counter that went backwards and counts as 0. Scaling follows perf:
``Δvalue * Δenabled / Δrunning`` when ``0 < Δrunning < Δenabled``; a counter summed over
several PMUs (hybrid) is never scaled, its raw counts are summed: each core PMU counts only
while the task runs on one of its CPUs (arch/x86/events/intel/core.c ``intel_pmu_filter()``),
so its ``Δrunning < Δenabled`` is not multiplexing and scaling would invent counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np

from tiptop.cells import STATUS_DTYPE, Code
from tiptop.engine.count.units import WORD, FdReads, Store, Unit, read_all
from tiptop.kernel.attr import Attr
from tiptop.readonly import mutable, readonly
from tiptop.vocab import PerfType, SwId

_HALF = np.uint64(1 << 63)
_CLOCKS = (SwId.CPU_CLOCK, SwId.TASK_CLOCK)


@readonly
class GroupDef:
    """One group kind opened on every task: its PMU, attrs, and each member's alias index."""

    pmu: str
    attrs: tuple[Attr, ...]
    alias_index: np.ndarray  # int64 (m,)

    @property
    def width(self) -> int:
        """Words in one read: 3 + 2 * members."""
        return 3 + 2 * len(self.attrs)


@mutable
class CounterPlan:
    """What to open on each task for a screen, and how members map to aliases."""

    aliases: tuple[str, ...]
    groups: list[GroupDef]
    #: Per alias: at least one binding opened at probe time.
    available: np.ndarray
    #: Per alias: summed over several PMUs (hybrid), so never scaled.
    multi: np.ndarray

    @cached_property
    def groups_per_alias(self) -> np.ndarray:
        """How many of the groups hold each alias (2 for a hybrid counter), at least 1."""
        nb = np.zeros(len(self.aliases))
        for g in self.groups:
            held = np.zeros(len(self.aliases), bool)  # not np.unique: it imports numpy.ma
            held[g.alias_index] = True
            nb += held
        return np.maximum(nb, 1)

    @cached_property
    def multi_in(self) -> list[np.ndarray | None]:
        """Per group: which of its members are summed over several PMUs (``multi``), or
        None where none is."""
        return [m if (m := self.multi[g.alias_index]).any() else None for g in self.groups]

    @cached_property
    def on_cpu_clocks(self) -> np.ndarray:
        """Per alias: a software ``task-clock`` or ``cpu-clock``, which counts the
        nanoseconds a task-bound event runs (perf_event_open(2), PERF_COUNT_SW_*_CLOCK)."""
        clocks = np.zeros(len(self.aliases), bool)
        for g in self.groups:
            for attr, alias in zip(g.attrs, g.alias_index.tolist(), strict=True):
                if attr.type == PerfType.SOFTWARE and attr.config in _CLOCKS:
                    clocks[alias] = True
        return clocks

    @property
    def fds_per_thread(self) -> int:
        """File descriptors one thread costs."""
        return sum(len(g.attrs) for g in self.groups)


@mutable
class Readout:
    """Per (row, alias) sums over the rows' units, as flat ``(n, k)`` float64 matrices."""

    raw: np.ndarray  # raw interval delta
    delta: np.ndarray  # scaled interval delta
    enabled: np.ndarray  # Σ Δtime_enabled of the groups holding the alias
    running: np.ndarray  # Σ Δtime_running
    total: np.ndarray  # scaled value since attach
    total_enabled: np.ndarray
    total_running: np.ndarray
    nread: np.ndarray  # units read that hold the alias
    #: Per row ``(n,)``: the longest one of its units ran over the interval, in ns
    #: (:func:`_ran`): what its counter window cannot be shorter than, where a unit is
    #: one thread's (``engine.assemble.row_facts``).
    longest: np.ndarray

    def take(self, rows: Sequence[int]) -> Readout:
        """The readout of some rows, in the given order."""
        idx = np.asarray(rows, np.int64)
        return Readout(**{f: getattr(self, f)[idx] for f in Readout.__dataclass_fields__})

    def did_not_run(self) -> np.ndarray:
        """Per row: some group was read and none was enabled during the interval, i.e.
        the task did not run (a task-bound context clock only ticks while the task is on
        a CPU, perf_event_open(2) "time_enabled")."""
        return (self.nread.sum(axis=1) > 0) & (self.enabled.sum(axis=1) == 0)

    def statuses(self, plan: CounterPlan, cumulative: bool = False) -> np.ndarray:
        """UNREADABLE where nothing was read, NOT_COUNTED where the task ran (enabled time
        advanced: per-task contexts only tick while the task is on a CPU) but the group was
        never scheduled on the PMU (Δrunning == 0), else OK."""
        ena = self.total_enabled if cumulative else self.enabled
        run = self.total_running if cumulative else self.running
        st = np.zeros(ena.shape, STATUS_DTYPE)
        st[(ena > 0) & (run == 0)] = Code.NOT_COUNTED
        st[(self.nread == 0) | ~plan.available[None, :]] = Code.UNREADABLE
        return st

    def running_fraction(self, plan: CounterPlan) -> np.ndarray:
        """Δrunning/Δenabled per counter: 1.0 when nothing was enabled, nan when unread;
        for a hybrid counter, relative to one PMU's enabled time (its groups split it)."""
        ena = self.enabled
        frac = np.divide(
            self.running * plan.groups_per_alias, ena, out=np.ones(ena.shape), where=ena > 0
        )
        np.minimum(frac, 1.0, out=frac)
        frac[self.nread == 0] = np.nan
        return frac


def on_cpu_seconds(readout: Readout, plan: CounterPlan) -> np.ndarray:
    """Per row, the seconds the task ran during the interval, from its groups' Δenabled:
    a per-task event's context clock only ticks while the task is on a CPU
    (``update_context_time()`` in kernel/events/core.c runs only while the task's context is
    scheduled in), and an inherited group's read adds its children's times (kernel/events/core.c
    ``__perf_read_group_add``). A process row sums its threads'. nan for a row with nothing
    read."""
    per_alias = readout.enabled / plan.groups_per_alias[None, :]
    secs = per_alias.max(axis=1, initial=0.0) / 1e9
    return np.where(readout.nread.max(axis=1, initial=0.0) > 0, secs, np.nan)


def _ran(counts: GroupCounts, clocks: np.ndarray) -> np.ndarray:
    """Per unit of one group kind, the ns it ran over the interval: its Δtime_enabled, or
    the Δcount of a task-clock or cpu-clock member (``clocks``, per member) where larger.
    A read stamps time_enabled first and reads the members after (kernel/events/core.c
    ``__perf_event_read``: ``perf_event_update_time``, then ``perf_pmu_read``), each clock
    at its own ``perf_clock()``: a vCPU its host stops between the two reads the clock
    ahead of time_enabled by as long as it stopped."""
    v, _, ena, _ = counts
    ran = ena[:, 0]
    if clocks.any():
        ran = np.maximum(ran, v[:, 0][:, clocks].max(axis=1))
    return ran


def _delta(cur: np.ndarray, prev: np.ndarray) -> np.ndarray:
    d = cur - prev  # u64 arithmetic wraps modulo 2**64
    d[d > _HALF] = 0
    return d


def _counts(
    multi: np.ndarray | None, d: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """From group-word deltas of one group kind (``(..., width)``): the raw member counts
    (``(..., members)``), the scaled ones (``multi``: the members summed over several PMUs,
    never scaled; ``CounterPlan.multi_in``), Δtime_enabled and Δtime_running (``(...)``),
    as float64."""
    v = d[..., 3::2].astype(np.float64)
    ena, run = d[..., 1].astype(np.float64), d[..., 2].astype(np.float64)
    mux = (run > 0) & (run < ena)
    scaled = v  # nothing multiplexed (always so for software events): nothing to scale
    if mux.any():
        scaled = v * np.divide(ena, run, out=np.ones(ena.shape), where=mux)[..., None]
    return v, scaled if multi is None else np.where(multi, v, scaled), ena, run


class Reading:
    """The reads of some rows' units in a fixed order (``units_per_row[i]``: the units of
    row ``i``), made once and read at every refresh while those rows and units stay
    (``engine.count.attach`` keeps one): the flat order, each unit's row and its store slot are
    worked out here, so a refresh does no Python work per unit beyond its read."""

    def __init__(self, plan: CounterPlan, units_per_row: Sequence[Sequence[Unit]]) -> None:
        self.plan = plan
        self.n = len(units_per_row)
        per_row = list(map(len, units_per_row))
        units = [u for us in units_per_row for u in us]
        rows = np.repeat(np.arange(self.n, dtype=np.int64), per_row)
        kinds = None
        if len(plan.groups) > 1:
            kinds = np.fromiter((u.gdef for u in units), np.int64, len(units))
        # Each row's cells are one unit's: one kind holding every alias in order, one unit
        # in each row.
        one_each = (
            len(plan.groups) == 1
            and len(units) == self.n
            and max(per_row, default=0) == 1
            and np.array_equal(plan.groups[0].alias_index, np.arange(len(plan.aliases)))
        )
        #: Per group kind: (its units, their rows, their slots, where their counts go in
        #: a field's sums (:func:`_cells`), or None when each row's cells are one unit's,
        #: their reads as one call), or None when it has none.
        self.kinds: list[
            tuple[list[Unit], np.ndarray, np.ndarray, np.ndarray | None, FdReads] | None
        ]
        self.kinds = []
        for g in range(len(plan.groups)):
            items, at = units, rows
            if kinds is not None:
                pick = np.flatnonzero(kinds == g)
                items, at = [units[j] for j in pick], rows[pick]
            if not items:
                self.kinds.append(None)
                continue
            slots = np.fromiter((u.slot for u in items), np.int64, len(items))
            cells = None if one_each else _cells(len(plan.aliases), at, plan.groups[g])
            reads = FdReads(items, plan.groups[g].width * 8)
            self.kinds.append((items, at, slots, cells, reads))
        #: Per group kind: which of its members are on-CPU clocks (:func:`_ran`).
        self.clocks = [plan.on_cpu_clocks[g.alias_index] for g in plan.groups]
        #: The :data:`_KEPT` fields of the ``(fields, n, k)`` sums of the last read told
        #: which rows moved (:meth:`read`): the rows and units are fixed for the
        #: reading's life, so they are stale never; None before one.
        self._last: np.ndarray | None = None

    def read(
        self, moved: np.ndarray | None = None
    ) -> tuple[Readout, list[tuple[int, Unit, OSError]]]:
        """Read every unit once and sum per (row, alias). Returns the readout and the
        units whose read failed as ``(row, unit, error)`` (their ``last`` unchanged).

        ``moved`` (per row; None: every row) says which rows' units are read: the others'
        task did not run since their last read (``engine.count.counters.RunClocks``), so
        they counted nothing over the interval and their totals are those of their last
        read: kept here from this reading's last read (:attr:`_last`), or, at its first
        (a new reading: other rows, or a task's units changed), made from their units'
        previous words, which their read would have given."""
        n, k = self.n, len(self.plan.aliases)
        # Per row, whether its units are read, where some are not; None: every row's.
        partly = None if moved is None or moved.all() else moved
        # The rows read and summed, where the others' sums are kept, and where each of
        # them sums among them (its own place where None).
        rows = place = None
        if partly is not None and self._last is not None:
            rows = np.flatnonzero(partly)
            place = np.zeros(n, np.intp)
            place[rows] = np.arange(len(rows))
        m = n if rows is None else len(rows)
        sums = np.zeros((len(_FIELDS), m * k))
        longest = np.zeros(m)
        failed: list[tuple[int, Unit, OSError]] = []
        for g, (gdef, kind) in enumerate(zip(self.plan.groups, self.kinds, strict=True)):
            if kind is None:
                continue
            items, at, slots, cells, reads = kind
            pick = None if partly is None else np.flatnonzero(partly[at])
            if pick is not None and rows is not None and not len(pick):
                continue  # none of its units' rows ran: their sums are kept below
            before = len(failed)
            bufs, took = _reads(gdef, items, at, reads, pick, failed)
            words = np.frombuffer(b"".join(bufs), WORD).reshape(-1, gdef.width)
            if pick is not None and rows is None:  # the units not read at their last words
                last = items[0].store.words[slots, 0]  # a copy
                last[took] = words
                fine = np.ones(len(items), bool)
                fine[pick] = False
                fine[took] = True
                took = np.flatnonzero(fine)
                words = last[took]
            unit_rows = at
            if pick is not None or len(failed) != before:  # the slots and rows summed
                unit_rows = (at if place is None else place[at])[took]
                slots, cells = slots[took], _cells(k, unit_rows, gdef)
            if not len(slots):
                continue
            counts = _interval_and_total(self.plan.multi_in[g], gdef, words, items[0].store, slots)
            per_unit = _per_unit(counts)
            ran = _ran(counts, self.clocks[g])
            if cells is None:  # each row's cells are its one unit's
                return self._kept(per_unit, ran, moved), failed
            np.maximum.at(longest, unit_rows, ran)
            # One bincount per field sums a row's units (a multi-threaded process's), also
            # where no row repeats (benchmarks/README.md, "Measured and dropped").
            flat = per_unit.reshape(len(_FIELDS), -1)
            for f in range(len(_FIELDS)):
                sums[f] += np.bincount(cells, weights=flat[f], minlength=m * k)
        fresh = sums.reshape(len(_FIELDS), m, k)
        if rows is not None and self._last is not None:
            # The rows not read: nothing over the interval, their totals as last read.
            every = np.zeros((len(_FIELDS), n, k))
            every[_KEPT] = self._last
            every[:, rows] = fresh
            fresh = every
            ran_all = np.zeros(n)
            ran_all[rows] = longest
            longest = ran_all
        return self._kept(fresh, longest, moved), failed

    def _kept(self, sums: np.ndarray, longest: np.ndarray, moved: np.ndarray | None) -> Readout:
        """The readout of ``sums`` (``(fields, n, k)``, :data:`_FIELDS`) and ``longest``,
        whose totals are kept (a copy: a readout's cells may be set by its user) where the
        read was told ``moved``: only such a read leaves rows unread."""
        if moved is not None:
            self._last = sums[_KEPT]
        return _readout(sums, longest)


def _reads(
    gdef: GroupDef,
    items: list[Unit],
    at: np.ndarray,
    reads: FdReads,
    pick: np.ndarray | None,
    failed: list[tuple[int, Unit, OSError]],
) -> tuple[list[bytes], np.ndarray]:
    """The reads of one group kind's units at the indices ``pick`` (every one where
    None): their words, and the indices of the units read fine; failures go to
    ``failed``."""
    idx = None if pick is None else pick.tolist()
    some = items if idx is None else [items[i] for i in idx]
    where = np.arange(len(items)) if pick is None else pick
    got = reads.read(idx)
    if got is not None:
        return got, where
    # One by one: failures and short reads sorted out.
    bufs, _, ok = read_all(some, at[where], failed, gdef.width * 8)
    if len(ok) != len(some):
        fine = {id(u) for u in ok}
        where = where[np.fromiter((id(u) in fine for u in some), bool, len(some))]
    return bufs, where


def _cells(k: int, at: np.ndarray, gdef: GroupDef) -> np.ndarray:
    """Where the counts of some units of group kind ``gdef`` in rows ``at`` go in a
    field's flat ``(n * k)`` sums (``k`` aliases): each unit's members' cells (its row's
    aliases), one index per ``(unit, member)`` shared by every field."""
    return (at[:, None] * k + gdef.alias_index[None, :]).ravel()


def read_units(
    plan: CounterPlan, units_per_row: Sequence[Sequence[Unit]]
) -> tuple[Readout, list[tuple[int, Unit, OSError]]]:
    """Read every unit once and sum per (row, alias) (a :class:`Reading` used once)."""
    return Reading(plan, units_per_row).read()


#: What :func:`_interval_and_total` makes of the reads of one group kind's units: the raw
#: and scaled member counts (``(units, 2, members)``) and Δtime_enabled, Δtime_running
#: (``(units, 2)``), each ``[:, 0]`` over the interval and ``[:, 1]`` since attach.
GroupCounts = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _interval_and_total(
    multi: np.ndarray | None, gdef: GroupDef, words: np.ndarray, store: Store, slots: np.ndarray
) -> GroupCounts:
    """The counts of the words read now (``words``, ``(units, width)``) of the units in
    ``slots`` of ``store`` (one group kind), since their previous reads and since their
    opening ones at once (one delta of the ``(units, 2, width)`` words); the words become
    the units' previous ones."""
    cur = words.reshape(-1, 1, gdef.width)
    held = store.words[slots]  # previous, opening
    store.words[slots, 0] = cur[:, 0]
    return _counts(multi, _delta(cur, held))


#: Readout's fields in the order :func:`_per_unit` lays them out.
_FIELDS = ("raw", "delta", "total", "enabled", "total_enabled", "running", "total_running", "nread")
#: The fields of :data:`_FIELDS` a row that did not run keeps from its last read: the
#: totals since attach and the units read (the others, the interval's, are 0).
_KEPT = [_FIELDS.index(f) for f in ("total", "total_enabled", "total_running", "nread")]


def _per_unit(counts: GroupCounts) -> np.ndarray:
    """The ``counts`` of one group kind's units as ``(fields, units, members)``, the fields
    in :data:`_FIELDS` order (a unit's times repeated for each of its members)."""
    v, scaled, ena, run = counts
    m, _, mem = v.shape
    out = np.empty((len(_FIELDS), m, mem))
    out[0] = v[:, 0]
    out[1:3] = scaled.transpose(1, 0, 2)  # interval, total
    out[3:5] = ena.T[:, :, None]
    out[5:7] = run.T[:, :, None]
    out[7] = 1.0
    return out


def _readout(fields: np.ndarray, longest: np.ndarray) -> Readout:
    """The readout of ``(fields, n, k)`` sums in :data:`_FIELDS` order and ``longest``."""
    return Readout(**dict(zip(_FIELDS, fields, strict=True)), longest=longest)


def unit_totals(plan: CounterPlan, units: Sequence[Unit]) -> np.ndarray:
    """Scaled counts since attach of some units, per alias, from their last reads (what a
    task keeps when its groups are closed while it lives: reclaim, read error)."""
    out = np.zeros(len(plan.aliases))
    for u in units:
        gdef = plan.groups[u.gdef]
        t = _delta(np.frombuffer(u.last, WORD), np.frombuffer(u.base, WORD))
        _, ts, _, _ = _counts(plan.multi_in[u.gdef], t[None, :])
        np.add.at(out, gdef.alias_index, ts[0])
    return out
