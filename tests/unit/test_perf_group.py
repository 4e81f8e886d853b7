"""Pure parsing of group reads, on bytes built with ``struct``."""

from __future__ import annotations

import errno
import struct

import numpy as np
import pytest

from tiptop.kernel import _ffi, parse_group_read
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


def test_a_group_read_out_of_open_order_is_refused_at_open() -> None:
    """A unit uses the words by position, once it saw the ids in open order at its first
    read (the kernel's order, ``perf_read_group()``); a group listing them otherwise is
    closed and refused (EIO), never read with values on the wrong counter."""
    from tests.support.fake_backend import FakeBackend
    from tiptop.engine.count.units import Stores, Unit
    from tiptop.errors import CounterError
    from tiptop.kernel.attr import Attr

    b = FakeBackend(default_rate=1.0)
    stores = Stores(b)
    attrs = [Attr(type=1, config=0), Attr(type=1, config=2)]
    in_order = Unit(b.open_group(7, attrs), 0, stores)
    assert np.frombuffer(in_order.base, np.uint64)[4::2].tolist() == list(in_order.group.ids)
    swapped = b.open_group(7, attrs)
    kernel_s = swapped.words

    def members_swapped() -> bytes:
        w = np.frombuffer(kernel_s(), np.uint64).copy()
        w[3:] = w[3:].reshape(-1, 2)[::-1].ravel()  # the {value, id} pairs, last first
        return w.tobytes()

    swapped.words = members_swapped  # type: ignore[method-assign]
    with pytest.raises(CounterError) as e:
        Unit(swapped, 0, stores)
    assert e.value.errno == errno.EIO and swapped.n_fds == 0 and swapped not in b.groups


def test_unit_deltas_wrap_modulo_2_64() -> None:
    """A u64 counter that wraps gives its true delta; one that goes backwards gives 0."""
    from tiptop.engine.count.readout import _delta

    cur = np.array([[5, 2**63 - 1]], np.uint64)
    prev = np.array([[2**64 - 3, 2**63]], np.uint64)
    assert _delta(cur, prev).tolist() == [[8, 0]]


def test_opened_attrs_are_made_once_per_plan_tuple_and_for_what_a_list_holds() -> None:
    from tiptop.kernel.attr import GROUP_READ_FORMAT, Attr
    from tiptop.kernel.group import _as_opened

    attrs = (Attr(type=1, config=0), Attr(type=1, config=2))
    opened = _as_opened(attrs)
    assert [(a.config, a.disabled, a.read_format) for a in opened.attrs] == [
        (0, True, GROUP_READ_FORMAT),  # enabled with the whole group once it is in
        (2, False, GROUP_READ_FORMAT),
    ]
    assert opened.enable_after
    # Each struct holds what its attr lays out (the bytes handed to the kernel).
    assert [bytes(_ffi.ffi.buffer(c)) for c in opened.structs] == [
        _ffi.attr_bytes(a) for a in opened.attrs
    ]
    assert _as_opened(attrs) is opened  # kept: the plan opens it on every task
    assert _as_opened(tuple(attrs)) is opened  # an equal tuple is the same group
    on_exec = _as_opened((Attr(type=1, config=0, enable_on_exec=True),))
    assert not on_exec.attrs[0].disabled and not on_exec.enable_after
    mutable = list(attrs)
    assert _as_opened(mutable) is opened  # looked up by what the list holds now
    mutable[0] = Attr(type=1, config=5)
    assert _as_opened(mutable).attrs[0].config == 5


def test_opened_attrs_kept_are_never_another_group_s() -> None:
    """Kept by the whole attrs: groups that differ only in what decides the leader's
    ``disabled`` (its own ``disabled``, ``enable_on_exec``) or the read format, opened
    one after the other, each get what a fresh memo makes for them."""
    from tiptop.kernel.attr import Attr
    from tiptop.kernel.group import OpenedAttrs, _as_opened

    lead, member = Attr(type=1, config=0), Attr(type=1, config=2)
    groups = [
        (lead, member),
        (lead.replace(enable_on_exec=True), member),
        (lead.replace(disabled=True), member),
        (lead, member.replace(read_format=0)),
    ]
    for attrs in groups:
        kept, fresh = _as_opened(attrs), OpenedAttrs()(attrs)
        assert (kept.attrs, kept.enable_after) == (fresh.attrs, fresh.enable_after), attrs


def test_opened_attrs_find_a_plan_tuple_by_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tuple a plan hands for every task is found again without hashing or comparing
    its attrs; an equal tuple made anew is found by value; past ``GIVEN_KEPT`` tuples kept
    by identity, each is still given its own group."""
    from tiptop.kernel import group
    from tiptop.kernel.attr import Attr

    memo = group.OpenedAttrs()
    attrs = (Attr(type=1, config=0), Attr(type=1, config=2))
    opened = memo(attrs)
    calls: list[str] = []
    eq, hash_ = Attr.__eq__, Attr.__hash__

    def counted_eq(a: object, b: object) -> object:
        calls.append("eq")
        return eq(a, b)

    def counted_hash(a: Attr) -> int:
        calls.append("hash")
        return hash_(a)

    monkeypatch.setattr(Attr, "__eq__", counted_eq)
    monkeypatch.setattr(Attr, "__hash__", counted_hash)
    assert memo(attrs) is opened
    assert calls == []
    assert memo((Attr(type=1, config=0), Attr(type=1, config=2))) is opened
    assert calls.count("hash") == 2
    for k in range(group.GIVEN_KEPT + 3):
        other = (Attr(type=1, config=k),)
        assert memo(other).attrs[0].config == k
        assert memo(other) is memo(other)
    assert len(memo._given) <= group.GIVEN_KEPT
    assert memo(attrs) is opened
