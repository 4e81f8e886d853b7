"""Records: dataclasses that compile only what they use when their module is imported.

On Python 3.11 a dataclass gets each method it is given compiled from source (``exec``) as
its module is imported: ``__init__``, ``__repr__``, ``__eq__``, and for ``frozen=True``
also ``__setattr__``, ``__delattr__`` and ``__hash__``. A run imports about a hundred
records; what they cost is the bulk of what our own modules cost at each start
(benchmarks/README.md, "Start-up"). Three kinds, each given one ``__repr__``, shared, in
place of one compiled per class (the same text as a dataclass's, ``Name(field=value,
...)``; a record's own ``__repr__`` stays):

* ``@readonly``: made once, then only read (a result, a plan, a parse tree, the options).
  For the type checker it is ``@dataclass(frozen=True)``: assigning one of its fields is an
  error (``typing.dataclass_transform`` with ``frozen_default``, PEP 681). At run time it is
  compared and hashed by identity, so only ``__init__`` is compiled. None of these records
  is compared by value, and many hold numpy arrays or compiled functions, whose ``==`` has
  no single truth value: a generated ``__eq__`` would raise, and a generated ``__hash__``
  would fail on the array.
* ``@by_value``: read-only too, and compared and hashed by value (a screen's specs, a
  counter's ``Attr``, the sampler's settings: keys of memos and of the plan). ``__init__``,
  ``__eq__`` and ``__hash__`` are compiled; ``frozen=True``'s ``__setattr__`` and
  ``__delattr__`` are not, the type checker's guard standing for them as for
  ``@readonly``.
* ``@mutable``: working state (a scan, a frame being filled), assigned as it goes and
  compared by identity: ``__init__`` alone. The records made per task, which keep their
  fields in ``__slots__``, stay ``@dataclass(eq=False, slots=True)``.

The guard that ``frozen=True`` gave at run time is the type checker's, which CI runs on
tiptop/.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, TypeVar, dataclass_transform

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_Record = TypeVar("_Record")


@dataclass_transform(frozen_default=True, eq_default=False)
def readonly(cls: type[_Record]) -> type[_Record]:
    """``cls`` made a read-only record told apart by identity (the module's docstring)."""
    return _shared_repr(dataclasses.dataclass(cls, eq=False, repr=False))


@dataclass_transform(frozen_default=True, eq_default=True)
def by_value(cls: type[_Record]) -> type[_Record]:
    """``cls`` made a read-only record compared and hashed by value (the module's
    docstring): ``unsafe_hash`` gives it the ``__hash__`` that ``frozen=True`` gave, from
    the fields compared."""
    return _shared_repr(dataclasses.dataclass(cls, unsafe_hash=True, repr=False))


@dataclass_transform(eq_default=False)
def mutable(cls: type[_Record]) -> type[_Record]:
    """``cls`` made a record of working state told apart by identity (the module's
    docstring)."""
    return _shared_repr(dataclasses.dataclass(cls, eq=False, repr=False))


def _shared_repr(record: type[_Record]) -> type[_Record]:
    """``record``, a dataclass made with ``repr=False``, given :func:`_record_repr` unless
    it wrote its own ``__repr__``."""
    if "__repr__" not in record.__dict__:
        # setattr: to the type checker a class's methods are not assigned after it is made.
        setattr(record, "__repr__", _record_repr)  # noqa: B010
    return record


def _record_repr(self: DataclassInstance) -> str:
    """A record as a dataclass's generated ``__repr__`` writes it."""
    shown = (f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if f.repr)
    return f"{type(self).__qualname__}({', '.join(shown)})"
