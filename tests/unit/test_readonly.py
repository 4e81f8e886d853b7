"""Read-only records (tiptop/readonly.py): told apart by identity at run time, never by a
field-by-field ``==`` that arrays cannot answer; assignments refused by the type checker."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mypy import api as mypy_api

from tiptop.readonly import by_value, mutable, readonly
from tiptop.screens.frames import RowLabels
from tiptop.screens.syntax import parse


def test_records_are_told_apart_by_identity() -> None:
    """A record holding arrays: ``==`` is identity (a field-by-field ``__eq__`` raised "the
    truth value of an array is ambiguous"), and it is hashable (a generated ``__hash__``
    failed on the array)."""

    def labels() -> RowLabels:
        return RowLabels(np.array([1, 2]), np.array([1, 1]), ["u", "u"], ["a", "b"], ["a", "b"])

    a, b = labels(), labels()
    assert a == a and a != b and a != copy.copy(a)
    assert len({a, b}) == 2
    assert dataclasses.replace(a, user=["v", "v"]).user == ["v", "v"]


def test_equal_parse_trees_are_two_trees() -> None:
    assert parse("delta(INSN) / 2") != parse("delta(INSN) / 2")


def test_nothing_is_compiled() -> None:
    """What each record costs at import: no ``__eq__``, ``__hash__``, ``__setattr__`` or
    ``__delattr__`` (frozen=True made all four); an ``__init__`` whose code is every
    record's (made from the fields, not compiled per class); one ``__repr__`` shared by
    all records, writing what a dataclass's writes. A record's own ``__repr__`` and
    ``__init__`` stay."""

    @readonly
    class Rec:
        x: int
        s: str
        hidden: int = dataclasses.field(default=0, repr=False)

    @readonly
    class Other:
        y: float

    @readonly
    class Own:
        x: int

        def __init__(self, x: int) -> None:
            object.__setattr__(self, "x", x + 1)

        def __repr__(self) -> str:
            return "own"

    @dataclasses.dataclass
    class Plain:
        x: int
        s: str
        hidden: int = dataclasses.field(default=0, repr=False)

    made = {
        name
        for name in ("__init__", "__eq__", "__hash__", "__setattr__", "__delattr__")
        if name in vars(Rec)
    }
    assert made == {"__init__"}
    assert vars(Rec)["__init__"].__code__ is vars(Other)["__init__"].__code__
    assert vars(Rec)["__repr__"] is vars(Other)["__repr__"]
    assert repr(Rec(3, "a'b", 7)) == repr(Plain(3, "a'b", 7)).replace("Plain", "Rec")
    assert repr(Other(0.5)) == "test_nothing_is_compiled.<locals>.Other(y=0.5)"
    assert repr(Own(1)) == "own" and Own(1).x == 2


def test_value_records_compare_and_hash_by_value_and_make_three() -> None:
    """``@by_value``: equal fields are equal records with one hash (a memo's key), as
    ``frozen=True`` made them; what is made is ``__init__``, ``__eq__`` and ``__hash__``,
    not ``__setattr__``/``__delattr__`` nor a ``__repr__`` of its own; a field with
    ``compare=False`` takes no part, as in a dataclass."""

    @by_value
    class Key:
        x: int
        s: str
        note: str = dataclasses.field(default="", compare=False)

    @dataclasses.dataclass(frozen=True)
    class Frozen:
        x: int
        s: str
        note: str = dataclasses.field(default="", compare=False)

    made = {
        name
        for name in ("__init__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__repr__")
        if name in vars(Key)
    }
    assert made == {"__init__", "__eq__", "__hash__", "__repr__"}
    assert vars(Key)["__repr__"] is vars(RowLabels)["__repr__"]
    a, b, c = Key(1, "a", "x"), Key(1, "a", "y"), Key(2, "a")
    assert a == b and hash(a) == hash(b) == hash(Frozen(1, "a")) and a != c
    assert {a: 1}[b] == 1 and len({a, b, c}) == 2
    assert dataclasses.replace(a, x=2) == c
    assert repr(a) == repr(Frozen(1, "a", "x")).replace("Frozen", "Key")


def test_working_records_are_told_apart_by_identity() -> None:
    """``@mutable``: assigned as it goes, ``==`` is identity, ``__init__`` alone made."""

    @mutable
    class Work:
        n: int = 0
        seen: list[int] = dataclasses.field(default_factory=list)

    a, b = Work(), Work()
    a.n += 1
    a.seen.append(3)
    assert (a.n, b.n, b.seen) == (1, 0, []) and a != Work(1, [3]) and a == a
    assert {n for n in ("__init__", "__eq__", "__hash__") if n in vars(Work)} == {"__init__"}
    assert repr(a).endswith("Work(n=1, seen=[3])")


def _fields_of(record: Any) -> dict[str, object]:
    return {f.name: getattr(record, f.name, "unset") for f in dataclasses.fields(record)}


def _outcome(make: Callable[..., object], args: tuple, kwargs: dict) -> object:
    """The fields ``make(*args, **kwargs)`` gives, or that it raised ``TypeError``."""
    try:
        return _fields_of(make(*args, **kwargs))
    except TypeError:
        return TypeError


CALLS: list[tuple[tuple, dict]] = [
    ((1,), {}),
    ((1, "s"), {}),
    ((1, "s", [2]), {}),
    ((1,), {"tags": [3], "opt": "t"}),
    ((), {"x": 1, "flag": True}),
    ((), {}),
    ((1, "s", [2], 4), {}),
    ((1,), {"x": 2}),
    ((1,), {"nope": 2}),
    ((1,), {"derived": 2}),
    ((1, "s", [2], True), {}),
]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_init_does_what_the_compiled_one_does(args: tuple, kwargs: dict) -> None:
    """For each call, a record's ``__init__`` gives the fields a dataclass's compiled one
    gives, or raises ``TypeError`` where it does: positional then keyword arguments,
    defaults, a new ``default_factory()`` each time, a field without ``init`` made from
    its factory, a keyword-only field, ``__post_init__``; too many, unknown, repeated or
    missing arguments refused."""

    def body() -> dict[str, object]:
        return {
            "__annotations__": {
                "x": "int",
                "opt": "str",
                "tags": "list[int]",
                "derived": "list[int]",
                "flag": "bool",
                "post": "int",
            },
            "opt": "o",
            "tags": dataclasses.field(default_factory=list),
            "derived": dataclasses.field(default_factory=lambda: [9], init=False),
            "flag": dataclasses.field(default=False, kw_only=True),
            "post": dataclasses.field(default=0, init=False),
            "__post_init__": lambda self: setattr(self, "post", self.x * 10),
        }

    ours: type = readonly(type("Rec", (), body()))
    compiled: type = dataclasses.dataclass(type("Rec", (), body()), eq=False)
    want = _outcome(compiled, args, kwargs)
    assert _outcome(ours, args, kwargs) == want
    if want is not TypeError:
        a, b = ours(*args, **kwargs), ours(*args, **kwargs)
        assert a.derived is not b.derived
        assert len(args) > 2 or "tags" in kwargs or a.tags is not b.tags


def _value_body(shape: str) -> dict[str, object]:
    """A class body of fields ``shape`` names: ``c`` compared, ``n`` not compared, ``h``
    compared and kept out of the hash, ``o`` not compared but hashed."""
    made = {
        "c": dataclasses.field(),
        "n": dataclasses.field(compare=False),
        "h": dataclasses.field(hash=False),
        "o": dataclasses.field(compare=False, hash=True),
    }
    names = [f"{kind}{i}" for i, kind in enumerate(shape)]
    body: dict[str, object] = {"__annotations__": dict.fromkeys(names, "object")}
    for name in names:
        body[name] = copy.copy(made[name[0]])
    return body


VALUES = [(1, 1), (1, 2), (float("nan"), float("nan")), ((1, 2), (1, 2)), ("a", "b")]


@pytest.mark.parametrize("shape", ["", "c", "cc", "cn", "nc", "ccc", "ch", "co", "n", "cnh"])
def test_value_eq_and_hash_are_what_a_dataclass_compiles(shape: str) -> None:
    """``@by_value``'s ``__eq__`` and ``__hash__``, made from the fields, answer as those a
    dataclass compiles with ``eq=True, unsafe_hash=True`` for every pair of records drawn
    from ``VALUES`` (NaN: the same object is equal in a tuple), against another class with
    the same fields (never equal: NotImplemented both ways), with a field compared or not,
    hashed or not."""
    ours: type = by_value(type("Key", (), _value_body(shape)))
    compiled: type = dataclasses.dataclass(type("Key", (), _value_body(shape)), unsafe_hash=True)
    other: type = by_value(type("Key", (), _value_body(shape)))
    nan = VALUES[2][0]
    for first, second in VALUES:
        a = [first if i % 2 == 0 else second for i in range(len(shape))]
        b = [second if i % 2 == 0 else first for i in range(len(shape))]
        for x, y in ((a, a), (a, b), ([nan] * len(shape), [nan] * len(shape))):
            assert (ours(*x) == ours(*y)) is (compiled(*x) == compiled(*y))
            assert (ours(*x) != ours(*y)) is (compiled(*x) != compiled(*y))
            assert hash(ours(*x)) == hash(compiled(*x))
        assert ours(*a) != other(*a) and ours(*a).__eq__(compiled(*a)) is NotImplemented
    assert vars(ours)["__eq__"].__code__ is vars(other)["__eq__"].__code__


def test_the_type_checker_refuses_an_assignment(tmp_path: Path) -> None:
    """For mypy a read-only record, and one compared by value, is frozen
    (``dataclass_transform(frozen_default=True)``): the guard that ``frozen=True`` gave at
    run time. A working record is not."""
    src = tmp_path / "use.py"
    src.write_text(
        "from tiptop.readonly import by_value, mutable, readonly\n\n\n"
        "@readonly\nclass Rec:\n    x: int\n\n\n"
        "@by_value\nclass Key:\n    x: int\n\n\n"
        "@mutable\nclass Work:\n    x: int\n\n\n"
        "r, k, w = Rec(1), Key(1), Work(1)\nr.x = 2\nk.x = 2\nw.x = 2\n"
    )
    out, err, status = mypy_api.run(
        ["--no-incremental", "--python-version", "3.11", "--follow-imports", "silent", str(src)]
    )
    assert status == 1, out + err
    assert 'use.py:20: error: Property "x" defined in "Rec" is read-only' in out
    assert 'use.py:21: error: Property "x" defined in "Key" is read-only' in out
    assert "use.py:22" not in out and "Found 2 errors" in out


def test_slotted_records_repr_their_slots_and_take_no_other_attribute() -> None:
    """A :class:`~tiptop.readonly.Slotted` record (a task, made by the hundred each
    refresh): its ``repr`` writes every slot, the subclass's after its bases', as a
    dataclass's does; a slot its ``__init__`` left unset says so; and an attribute it does
    not declare is refused (no ``__dict__``), as ``slots=True`` did."""
    from tiptop.engine.scan.task import Task
    from tiptop.readonly import Slotted

    class Base(Slotted):
        __slots__ = ("a",)

        def __init__(self) -> None:
            self.a = 1

    class Rec(Base):
        __slots__ = ("b", "c")

        def __init__(self) -> None:
            super().__init__()
            self.b = "x'y"

    assert repr(Rec()).endswith('Rec(a=1, b="x\'y", c=<unset>)')
    t = Task(7, 7, 1000, 0, "root", "t", "t", 1, "S", 0, 0, 0)
    assert "tid=7" in repr(t) and "key=(7, 1000)" in repr(t) and "new=True" in repr(t)
    with pytest.raises(AttributeError):
        t.cpu_totl = 1.0  # type: ignore[attr-defined]
