"""Pure parsing of group reads, on bytes built with ``struct``."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from tiptop.kernel import parse_group_read
from tiptop.kernel.group import group_read_size


def pack_group_read(
    values: list[int], ids: list[int], time_enabled: int, time_running: int
) -> bytes:
    """The bytes the kernel returns for a ``PERF_FORMAT_GROUP | ID | TOTAL_TIME_*`` read:
    ``nr, time_enabled, time_running, {value, id} * nr`` (perf_event_open(2), "read_format")."""
    words = [len(values), time_enabled, time_running]
    for v, i in zip(values, ids, strict=True):
        words += [v, i]
    return struct.pack(f"<{len(words)}Q", *words)


def test_read_size() -> None:
    assert group_read_size(1) == 40
    assert group_read_size(4) == 24 + 16 * 4


def test_parse_in_order() -> None:
    buf = struct.pack("<7Q", 2, 24_600_000, 24_500_000, 24_600_123, 31, 12208, 32)
    r = parse_group_read(buf, [31, 32])
    assert r.values.tolist() == [24_600_123, 12208]
    assert r.values.dtype == np.uint64
    assert (r.time_enabled, r.time_running) == (24_600_000, 24_500_000)


def test_parse_maps_ids_not_positions() -> None:
    buf = pack_group_read([30, 10, 20], [103, 101, 102], 5, 4)
    r = parse_group_read(buf, [101, 102, 103])
    assert r.values.tolist() == [10, 20, 30]


def test_parse_full_u64_range() -> None:
    big = 2**64 - 1
    r = parse_group_read(pack_group_read([big], [7], 1, 1), [7])
    assert int(r.values[0]) == big


@pytest.mark.parametrize(
    ("buf", "ids", "msg"),
    [
        (b"", [1], "too short"),
        (struct.pack("<3Q", 2, 1, 1), [1, 2], "too short for nr=2"),
        (pack_group_read([1, 2], [5, 6], 1, 1), [5, 9], "event id 9 missing"),
    ],
)
def test_parse_errors(buf: bytes, ids: list[int], msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        parse_group_read(buf, ids)


class _RawGroup:
    """A kernel-like group whose read words list the members in a given id order."""

    def __init__(self, ids: list[int], order: list[int], values: list[int]) -> None:
        self.ids = np.asarray(ids, np.uint64)
        self.n_fds = len(ids)
        self._buf = pack_group_read([values[k] for k in order], [ids[k] for k in order], 10, 10)

    def read_raw(self) -> bytes:
        return self._buf

    def read(self):  # type: ignore[no-untyped-def]
        return parse_group_read(self._buf, self.ids)

    def close(self) -> None:
        self.n_fds = 0


def test_unit_maps_values_by_id_when_the_words_are_out_of_open_order() -> None:
    """The batched reads use the raw words by position only once the ids are seen in open
    order; otherwise the unit parses each read by id (values never land on the wrong
    counter)."""
    from tiptop.engine.count.units import Unit

    in_order = Unit(_RawGroup([7, 9], [0, 1], [100, 200]), 0)
    assert in_order.raw
    swapped = Unit(_RawGroup([7, 9], [1, 0], [100, 200]), 0)
    assert not swapped.raw
    assert np.frombuffer(swapped.base, np.uint64)[3::2].tolist() == [100, 200]


def test_unit_deltas_wrap_modulo_2_64() -> None:
    """A u64 counter that wraps gives its true delta; one that goes backwards gives 0."""
    from tiptop.engine.count.readout import _delta

    cur = np.array([[5, 2**63 - 1]], np.uint64)
    prev = np.array([[2**64 - 3, 2**63]], np.uint64)
    assert _delta(cur, prev).tolist() == [[8, 0]]


def test_opened_attrs_are_made_once_per_plan_tuple_and_afresh_for_a_list() -> None:
    from tiptop.kernel.attr import GROUP_READ_FORMAT, Attr
    from tiptop.kernel.group import _as_opened

    attrs = (Attr(type=1, config=0), Attr(type=1, config=2))
    opened = _as_opened(attrs)
    assert [(a.config, a.disabled, a.read_format) for a in opened] == [
        (0, True, GROUP_READ_FORMAT),  # enabled with the whole group once it is in
        (2, False, GROUP_READ_FORMAT),
    ]
    assert _as_opened(attrs) is opened  # kept: the plan opens it on every task
    assert not _as_opened((Attr(type=1, config=0, enable_on_exec=True),))[0].disabled
    mutable = list(attrs)
    assert _as_opened(mutable)[0].config == 0
    mutable[0] = Attr(type=1, config=5)  # a list may change: never taken from the memo
    assert _as_opened(mutable)[0].config == 5
