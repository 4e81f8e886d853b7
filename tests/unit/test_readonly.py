"""Read-only records (tiptop/readonly.py): told apart by identity at run time, never by a
field-by-field ``==`` that arrays cannot answer; assignments refused by the type checker."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import numpy as np
from mypy import api as mypy_api

from tiptop.readonly import readonly
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


def test_only_init_is_made() -> None:
    """What each record costs at import: ``__init__`` alone; no ``__eq__``, ``__hash__``,
    ``__setattr__`` or ``__delattr__`` (frozen=True made all four), and one ``__repr__``
    shared by all records, writing what a dataclass's writes. A record's own ``__repr__``
    stays."""

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
    assert vars(Rec)["__repr__"] is vars(Other)["__repr__"]
    assert repr(Rec(3, "a'b", 7)) == repr(Plain(3, "a'b", 7)).replace("Plain", "Rec")
    assert repr(Other(0.5)) == "test_only_init_is_made.<locals>.Other(y=0.5)"
    assert repr(Own(1)) == "own"


def test_the_type_checker_refuses_an_assignment(tmp_path: Path) -> None:
    """For mypy a read-only record is frozen (``dataclass_transform(frozen_default=True)``):
    the guard that ``frozen=True`` gave at run time."""
    src = tmp_path / "use.py"
    src.write_text(
        "from tiptop.readonly import readonly\n\n\n"
        "@readonly\nclass Rec:\n    x: int\n\n\n"
        "r = Rec(1)\nr.x = 2\n"
    )
    out, err, status = mypy_api.run(
        ["--no-incremental", "--python-version", "3.11", "--follow-imports", "silent", str(src)]
    )
    assert status == 1, out + err
    assert 'use.py:10: error: Property "x" defined in "Rec" is read-only' in out
