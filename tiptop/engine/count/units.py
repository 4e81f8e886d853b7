"""One open counter group on one thread (:class:`Unit`) and the reads of a refresh's units.

A unit keeps its opening read (``base``) and its previous read (``last``) as the kernel's
own ``PERF_FORMAT_GROUP`` words (``nr, time_enabled, time_running, {value, id} * nr``,
perf_event_open(2) "read_format"), in one row (its ``slot``) of the :class:`Store` of its
read's width, so that a refresh takes the previous reads of all its units with one numpy
index, not one Python object per unit; ``engine.count.readout`` turns the words of every unit
into deltas. Every backend gives these words (``tiptop.kernel.backend.Group``), so every
unit is read the same way: a refresh reads every unit once, in one call over their
leaders' fd numbers while none was closed (:class:`FdReads`, ``Backend.read_leaders``),
else in one loop of bare reads (:func:`read_all`); an error or a short read sends it unit
by unit through the translating read, a group changing under the read (ECHILD) read again.
"""

from __future__ import annotations

import errno
import struct
import time
from collections.abc import Callable, Sequence
from itertools import pairwise

import numpy as np

from tiptop.errors import GroupChanging
from tiptop.kernel.backend import Backend, Group
from tiptop.kernel.errors import translate

#: One word of a group read (perf_event_open(2): u64, this machine's byte order).
WORD = np.dtype("<u8")


class Store:
    """The previous and opening reads of the open units of one :class:`Stores` whose reads
    are ``width`` words long: one slot each (taken at open and given back at close),
    ``words[slot]`` holding the previous read then the opening one, so that one index
    takes both.

    ``released`` counts the slots given back: an :class:`FdReads` made over some units of
    the store holds their leaders' fd numbers, good while none of those units is closed (a
    closed number may be another file's by then); a unit is closed only through
    :meth:`Unit.close`, which gives its slot back, so the numbers are stale once
    ``released`` moved since they were taken."""

    def __init__(self, width: int, backend: Backend) -> None:
        self.width = width
        #: The backend whose groups the units are (their leaders are read through it).
        self.backend = backend
        self.words = np.zeros((0, 2, width), WORD)
        self._free: list[int] = []
        #: Slots given back so far.
        self.released = 0

    @property
    def last(self) -> np.ndarray:
        """Each slot's previous read (a view: assigning to it sets the reads)."""
        return self.words[:, 0]

    @property
    def base(self) -> np.ndarray:
        """Each slot's opening read (a view)."""
        return self.words[:, 1]

    def put(self, words: bytes) -> int:
        """A slot holding ``words`` as both its opening and its previous read."""
        if not self._free:
            n = len(self.words)
            grown = max(16, 2 * n)
            more = np.zeros((grown - n, 2, self.width), WORD)
            self.words = np.concatenate([self.words, more])
            self._free = list(range(grown - 1, n - 1, -1))
        slot = self._free.pop()
        self.words[slot] = np.frombuffer(words, WORD)
        return slot

    def release(self, slot: int) -> None:
        """Give ``slot`` back (its unit is closed)."""
        self._free.append(slot)
        self.released += 1


class Stores:
    """The stores of the units one owner opens through ``backend`` (the sampler's
    ``Attacher``, a self-test run), one per read width: units read together must share
    one (:class:`FdReads`). Made with the owner and dropped with it; nothing is shared
    between owners."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._by_width: dict[int, Store] = {}

    def store(self, nbytes: int) -> Store:
        """The store of the units whose reads are ``nbytes`` long."""
        width = nbytes // WORD.itemsize
        st = self._by_width.get(width)
        if st is None:
            st = self._by_width[width] = Store(width, self.backend)
        return st


def _rising(ids: tuple[int, ...]) -> bool:
    """Whether each id is above the one before it."""
    return all(a < b for a, b in pairwise(ids))


def _closed() -> bytes:
    raise OSError(errno.EBADF, "counter group is closed")


class Unit:
    """One open group on one thread, with its first and previous reads (``base``,
    ``last``: bytes, kept in row ``slot`` of ``store``, one of ``stores``)."""

    __slots__ = ("gdef", "group", "slot", "store", "words")

    def __init__(self, group: Group, gdef: int, stores: Stores) -> None:
        self.group = group
        self.gdef = gdef
        #: What a refresh calls for this unit's words: the group's bare read (errors and
        #: length checked by the caller, :func:`read_all`); never a bound method of the
        #: unit, a reference cycle each.
        self.words: Callable[[], bytes] = group.bare_read()
        opened = False
        try:
            first = _read(self)
            # The words are used by position: the kernel lists the leader then the
            # siblings in attach order (kernel/events/core.c, perf_read_group()), which is
            # open order. Checked once here by the ids listed, which rise in open order:
            # the kernel numbers each event as it makes it (perf_event_alloc(), one
            # counter for all), so no id is asked of it per member (PERF_EVENT_IOC_ID).
            if not _rising(struct.unpack_from(f"<{len(first) // 8}Q", first)[4::2]):
                raise translate(OSError(errno.EIO, "group read out of open order"))
            opened = True
        finally:
            if not opened:  # a failed first read: nothing stays open
                group.close()
        self.store = stores.store(len(first))
        self.slot = self.store.put(first)

    @property
    def base(self) -> bytes:
        """The opening read's words."""
        return self.store.base[self.slot].tobytes()

    @property
    def last(self) -> bytes:
        """The previous read's words."""
        return self.store.last[self.slot].tobytes()

    def read(self) -> bytes:
        """The group's words now, errors translated and a short read an ``OSError``."""
        return self.group.read_raw()

    def close(self) -> None:
        """Close the group's fds; a later read fails (EBADF), never reads a reused fd.
        Its slot is given back once."""
        if self.words is not _closed:
            self.store.release(self.slot)
        self.words = _closed
        self.group.close()


#: Seconds a refresh waits before reading again the groups still changing after 8 reads,
#: each pause followed by 8 more reads of those still changing. The kernel refuses to sum
#: an inherited group whose copy in a thread is being made or torn down (ECHILD:
#: kernel/events/core.c ``__perf_read_group_add()``): short, unless the thread doing it is
#: preempted or threads come and go without a break (tests/system/test_churn_soak.py), when
#: reading again at once can meet the next copy; a pause lets the churn pass.
CHANGING_PAUSES = (0.001, 0.002, 0.004, 0.008)


def _read(u: Unit, tries: int = 8) -> bytes:
    """``u.read()``, read again at once (up to ``tries`` times in all) while the kernel
    says the inherited group is changing under the read (``GroupChanging``, ECHILD)."""
    for _ in range(tries - 1):
        try:
            return u.read()
        except GroupChanging:
            continue
    return u.read()


def read_all(
    units: list[Unit], rows: np.ndarray, failed: list[tuple[int, Unit, OSError]], nbytes: int
) -> tuple[list[bytes], np.ndarray, list[Unit]]:
    """One read of each unit (``rows``: the row of each; ``nbytes``: the size of one
    read): the words read, their rows and units; failures go to ``failed``. Every read
    succeeding at its first try is the common case (once per task per refresh), so it runs
    as one loop of bare reads without a ``try`` per unit; the first error or a short read
    hands over to :func:`_read_rest`."""
    bufs: list[bytes] = []
    add = bufs.append
    try:
        for u in units:
            add(u.words())
    except OSError as e:
        return _read_rest(units, rows, failed, bufs, translate(e), nbytes)
    if sum(map(len, bufs)) != nbytes * len(units):
        return _read_rest(units, rows, failed, bufs, None, nbytes)
    return bufs, rows, units


class FdReads:
    """The reads of some units of one store as one ``Backend.read_leaders`` call over
    their leaders' fd numbers, rather than each unit's own call. The numbers are taken
    here and are good while no slot of the store was given back (see :class:`Store`):
    :meth:`read` says None then, or when a read fails or comes short, and
    :func:`read_all` reads the units one by one instead."""

    def __init__(self, units: Sequence[Unit], nbytes: int) -> None:
        self.nbytes = nbytes
        store = self.store = units[0].store if units else None
        self.released = store.released if store is not None else 0
        same = all(u.store is store and u.group.fds for u in units)
        self.fds: list[int] | None = [u.group.fds[0] for u in units] if same else None

    def read(self, pick: Sequence[int] | None = None) -> list[bytes] | None:
        """The words of each unit in order (of the units at the indices ``pick`` only,
        where given), or None (see the class doc)."""
        fds, store, n = self.fds, self.store, self.nbytes
        if fds is None or store is None or store.released != self.released:
            return None
        if pick is not None:
            fds = [fds[i] for i in pick]
        try:
            bufs = store.backend.read_leaders(fds, n)
        except OSError:
            return None
        return bufs if sum(map(len, bufs)) == n * len(bufs) else None


def _read_rest(
    units: list[Unit],
    rows: np.ndarray,
    failed: list[tuple[int, Unit, OSError]],
    bufs: list[bytes],
    error: OSError | None,
    nbytes: int,
) -> tuple[list[bytes], np.ndarray, list[Unit]]:
    """:func:`read_all` unit by unit once a bare read failed or came short: the whole
    reads of ``bufs`` are kept; ``error`` is that of the unit after them (None for a short
    read); every other unit is read through ``Unit.read`` (translated, length checked). A
    group changing under the read is read again (:func:`_read`: 8 tries in all) and, still
    changing, again after each of :data:`CHANGING_PAUSES` (15 ms at most, once per pass);
    any other error goes to ``failed``."""
    got: list[bytes | OSError] = []
    for j, u in enumerate(units):
        if j < len(bufs) and len(bufs[j]) == nbytes:
            got.append(bufs[j])
            continue
        try:
            if j == len(bufs) and error is not None:
                raise error
            got.append(u.read())
        except GroupChanging:
            got.append(_tried(u, 7))
        except OSError as e:
            got.append(e)
    for pause in CHANGING_PAUSES:
        changing = [j for j, b in enumerate(got) if isinstance(b, GroupChanging)]
        if not changing:
            break
        time.sleep(pause)
        for j in changing:
            got[j] = _tried(units[j], 8)
    words: list[bytes] = []
    kept: list[int] = []
    ok: list[Unit] = []
    for j, (u, b) in enumerate(zip(units, got, strict=True)):
        if isinstance(b, OSError):
            failed.append((int(rows[j]), u, b))
            continue
        words.append(b)
        kept.append(j)
        ok.append(u)
    return words, rows[np.asarray(kept, np.int64)], ok


def _tried(u: Unit, tries: int) -> bytes | OSError:
    """:func:`_read`, its error returned rather than raised."""
    try:
        return _read(u, tries)
    except OSError as e:
        return e
