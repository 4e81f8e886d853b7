"""Read-only records: dataclasses the type checker keeps from being assigned to, compared
by identity.

A record made once and then only read (a result, a plan, a parse tree, the options) is
declared ``@readonly``. For the type checker it is ``@dataclass(frozen=True)``: assigning
one of its fields is an error (``typing.dataclass_transform`` with ``frozen_default``, PEP
681). At run time it is ``@dataclass(eq=False)``:

* compared and hashed by identity. None of these records is compared by value, and many
  hold numpy arrays or compiled functions, whose ``==`` has no single truth value: a
  generated ``__eq__`` would raise, and a generated ``__hash__`` would fail on the array.
* not frozen at run time. On Python 3.11 a frozen dataclass gets its ``__setattr__``,
  ``__delattr__`` and ``__hash__`` compiled from source (``exec``) when its module is
  imported, like its ``__init__``, ``__repr__`` and ``__eq__``; four of those six are
  dropped here, the bulk of what records cost each start (benchmarks/README.md,
  "Start-up"). The guard they gave is the type checker's, which CI runs on tiptop/.
* given one ``__repr__``, shared, in place of one compiled per class: the same text as a
  dataclass's (``Name(field=value, ...)``), one ``exec`` fewer a record at import.

A record that is compared, or used as a key, by value (a screen's specs, a counter's
``Attr``, the sampler's settings) stays ``@dataclass(frozen=True)``; mutable working state
(a scan, a frame being filled) is ``@dataclass(eq=False)``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, TypeVar, dataclass_transform

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_Record = TypeVar("_Record")


@dataclass_transform(frozen_default=True, eq_default=False)
def readonly(cls: type[_Record]) -> type[_Record]:
    """``cls`` made a read-only record (see the module's docstring)."""
    own_repr = "__repr__" in cls.__dict__
    record = dataclasses.dataclass(cls, eq=False, repr=False)
    if not own_repr:
        # setattr: to the type checker a class's methods are not assigned after it is made.
        setattr(record, "__repr__", _record_repr)  # noqa: B010
    return record


def _record_repr(self: DataclassInstance) -> str:
    """A record as a dataclass's generated ``__repr__`` writes it."""
    shown = (f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if f.repr)
    return f"{type(self).__qualname__}({', '.join(shown)})"
