"""``FdReads`` on real perf groups: the units' reads as one call over their leaders' fd
numbers give each unit's own words, and stop as soon as a unit of their store is closed
(its number may be another group's by then)."""

from __future__ import annotations

import numpy as np

from tiptop.engine.count.units import WORD, FdReads, Stores, Unit
from tiptop.kernel import Attr, PerfBackend, open_group

#: task-clock then page-faults (software events: every machine opens them).
ATTRS = [Attr(type=1, config=1), Attr(type=1, config=2)]
#: The stores of the units of this module's tests.
STORES = Stores(PerfBackend())


def _ids(words: bytes) -> list[int]:
    """The event ids of one group read (``nr, enabled, running, {value, id} * nr``)."""
    return np.frombuffer(words, WORD)[4::2].tolist()


def test_one_call_reads_each_unit_s_own_group_in_order() -> None:
    units = [Unit(open_group(0, ATTRS), 0, STORES) for _ in range(3)]
    try:
        nbytes = len(units[0].read())
        got = FdReads(units, nbytes).read()
        assert got is not None and len(got) == 3
        assert [_ids(b) for b in got] == [_ids(u.read()) for u in units]
        assert all(np.frombuffer(b, WORD)[0] == 2 for b in got)
    finally:
        for u in units:
            u.close()


def test_a_closed_unit_s_number_is_not_read_again() -> None:
    """Closing one unit ends the one-call reads of every reading made before: the group
    opened next takes the closed leader's fd number, and a kept number would read it."""
    units = [Unit(open_group(0, ATTRS), 0, STORES) for _ in range(3)]
    reads = FdReads(units, len(units[0].read()))
    closed_fd = units[1].group.fds[0]
    units[1].close()
    other = Unit(open_group(0, ATTRS), 0, STORES)
    try:
        assert other.group.fds[0] == closed_fd  # the lowest free number (open(2))
        assert reads.read() is None
    finally:
        for u in (*units, other):
            u.close()


def test_units_of_two_owners_are_not_read_in_one_call() -> None:
    """Each owner's units are kept in its own stores: a reading over units of two is not
    one call (a close in either would not tell the other's)."""
    units = [
        Unit(open_group(0, ATTRS), 0, STORES),
        Unit(open_group(0, ATTRS), 0, Stores(PerfBackend())),
    ]
    try:
        assert FdReads(units, len(units[0].read())).read() is None
        assert FdReads(units[:1], len(units[0].read())).read() is not None
    finally:
        for u in units:
            u.close()
