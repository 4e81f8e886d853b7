"""Records: dataclasses that compile nothing when their module is imported.

On Python 3.11 a dataclass gets each method it is given compiled from source (``exec``) as
its module is imported: ``__init__``, ``__repr__``, ``__eq__``, and for ``frozen=True``
also ``__setattr__``, ``__delattr__`` and ``__hash__``. A run imports about a hundred
records; what they cost is the bulk of what our own modules cost at each start
(benchmarks/README.md, "Start-up"). Three kinds, each given one ``__repr__``, shared, in
place of one compiled per class (the same text as a dataclass's, ``Name(field=value,
...)``; a record's own ``__repr__`` stays), and an ``__init__`` made from its fields
without compiling (:func:`_assigning_init`; a record's own ``__init__`` stays):

* ``@readonly``: made once, then only read (a result, a plan, a parse tree, the options).
  For the type checker it is ``@dataclass(frozen=True)``: assigning one of its fields is an
  error (``typing.dataclass_transform`` with ``frozen_default``, PEP 681). At run time it is
  compared and hashed by identity, so nothing else is made. None of these records
  is compared by value, and many hold numpy arrays or compiled functions, whose ``==`` has
  no single truth value: a generated ``__eq__`` would raise, and a generated ``__hash__``
  would fail on the array.
* ``@by_value``: read-only too, and compared and hashed by value (a screen's specs, a
  counter's ``Attr``, the sampler's settings: keys of memos and of the plan). Its
  ``__eq__`` and ``__hash__`` are made from its fields too (:func:`_value_methods`: what a
  dataclass compiles with ``eq=True, unsafe_hash=True``); ``frozen=True``'s
  ``__setattr__`` and ``__delattr__`` are not made, the type checker's guard standing for
  them as for ``@readonly``.
* ``@mutable``: working state (a scan, a frame being filled), assigned as it goes and
  compared by identity.

The records made by the hundred at each refresh or start (a task, the built-in screens'
items) are :class:`Slotted` classes instead: their fields in ``__slots__`` and an
``__init__`` written out, as fast as the one a dataclass compiles and compiled with their
module's bytecode, not as it is imported; they are compared by identity.

The guard that ``frozen=True`` gave at run time is the type checker's, which CI runs on
tiptop/.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, dataclass_transform

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_Record = TypeVar("_Record")


@dataclass_transform(frozen_default=True, eq_default=False)
def readonly(cls: type[_Record]) -> type[_Record]:
    """``cls`` made a read-only record told apart by identity (the module's docstring)."""
    return _made(dataclasses.dataclass(cls, init=False, eq=False, repr=False))


@dataclass_transform(frozen_default=True, eq_default=True)
def by_value(cls: type[_Record]) -> type[_Record]:
    """``cls`` made a read-only record compared and hashed by value (the module's
    docstring): its ``__hash__`` is the one ``frozen=True`` gave, from the fields
    compared."""
    record = _made(dataclasses.dataclass(cls, init=False, eq=False, repr=False))
    eq, hash_ = _value_methods(record)
    if "__eq__" not in record.__dict__:
        setattr(record, "__eq__", eq)  # noqa: B010
    setattr(record, "__hash__", hash_)  # noqa: B010
    return record


@dataclass_transform(eq_default=False)
def mutable(cls: type[_Record]) -> type[_Record]:
    """``cls`` made a record of working state told apart by identity (the module's
    docstring)."""
    return _made(dataclasses.dataclass(cls, init=False, eq=False, repr=False))


def _made(record: type[_Record]) -> type[_Record]:
    """``record``, a dataclass made with ``init=False`` and ``repr=False``, given
    :func:`_assigning_init`'s ``__init__`` and :func:`_record_repr`, each unless it wrote
    its own."""
    # setattr: to the type checker a class's methods are not assigned after it is made.
    if "__init__" not in record.__dict__:
        setattr(record, "__init__", _assigning_init(record))  # noqa: B010
    if "__repr__" not in record.__dict__:
        setattr(record, "__repr__", _record_repr)  # noqa: B010
    return record


def _assigning_init(record: type) -> Callable[..., None]:
    """The ``__init__`` a dataclass would compile for ``record``, made from its fields
    instead, so that importing a record compiles nothing (Python's dataclasses
    documentation, "__init__", "default_factory", "kw_only", "__post_init__"): the fields
    with ``init`` are its parameters, in order, those with ``kw_only`` by keyword only; a
    field not given takes its ``default`` or a new ``default_factory()``, one without
    ``init`` too; then the record's ``__post_init__``, when it has one. An ``InitVar`` is
    not supported: no record has one. The values go into the instance's ``__dict__`` at
    once (a record is never frozen at run time)."""
    fields = dataclasses.fields(record)
    params = [f for f in fields if f.init]
    positional = tuple(f.name for f in params if not f.kw_only)
    accepted = frozenset(f.name for f in params)
    required = tuple(f.name for f in params if _default_of(f) is None)
    optional = tuple((f.name, d) for f in params if (d := _default_of(f)) is not None)
    derived = tuple((f.name, d) for f in fields if not f.init and (d := _default_of(f)) is not None)
    post_init: Callable[[object], None] | None = getattr(record, "__post_init__", None)
    name = f"{record.__qualname__}.__init__()"

    def __init__(self: object, *args: object, **kwargs: object) -> None:
        if len(args) > len(positional):
            raise TypeError(
                f"{name} takes {len(positional) + 1} positional arguments but "
                f"{len(args) + 1} were given"
            )
        # The keys are checked as sets (one C call each, not a Python loop per key): most
        # records of a refresh are made by keyword, ``Frame`` with some forty.
        if not accepted.issuperset(kwargs):
            key = next(k for k in kwargs if k not in accepted)
            raise TypeError(f"{name} got an unexpected keyword argument {key!r}")
        values = kwargs  # a new dict at each call (the language reference, "Function definitions")
        if args:
            values = dict(zip(positional, args, strict=False))
            if not values.keys().isdisjoint(kwargs):
                key = next(k for k in kwargs if k in values)
                raise TypeError(f"{name} got multiple values for argument {key!r}")
            values.update(kwargs)
        if len(values) < len(accepted):
            for key, default in optional:
                if key not in values:
                    values[key] = default()
            missing = [key for key in required if key not in values]
            if missing:
                raise TypeError(f"{name} missing required arguments: {', '.join(missing)}")
        for key, default in derived:
            values[key] = default()
        self.__dict__.update(values)
        if post_init is not None:
            post_init(self)

    __init__.__qualname__ = f"{record.__qualname__}.__init__"
    return __init__


def _value_methods(
    record: type,
) -> tuple[Callable[[object, object], object], Callable[[object], int]]:
    """The ``__eq__`` and ``__hash__`` a dataclass would compile for ``record`` with
    ``eq=True, unsafe_hash=True`` (Python's dataclasses documentation, "eq",
    "unsafe_hash", "field"), made from its fields instead: equal when ``other`` is of the
    very same class and the fields with ``compare`` are equal, as tuples; the hash of the
    tuple of the fields with ``hash``, or with ``compare`` where ``hash`` is None. The
    values are taken from the instance's ``__dict__``, where its ``__init__`` put them:
    faster than an attribute lookup each, though not than the compiled methods."""
    fields = dataclasses.fields(record)
    compared = _values_of(tuple(f.name for f in fields if f.compare))
    hashed = _values_of(tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)))

    def __eq__(self: object, other: object) -> object:
        if other.__class__ is self.__class__:
            return compared(self.__dict__) == compared(other.__dict__)
        return NotImplemented

    def __hash__(self: object) -> int:
        return hash(hashed(self.__dict__))

    __eq__.__qualname__ = f"{record.__qualname__}.__eq__"
    __hash__.__qualname__ = f"{record.__qualname__}.__hash__"
    return __eq__, __hash__


def _values_of(names: tuple[str, ...]) -> Callable[[dict[str, object]], tuple[object, ...]]:
    """A function giving the tuple of a mapping's values at ``names``: ``itemgetter``'s own
    tuple from two names on, one made for fewer (it gives one name's value bare)."""
    if len(names) >= 2:
        return operator.itemgetter(*names)
    if names:
        (name,) = names
        return lambda values: (values[name],)
    return lambda values: ()


def _default_of(f: dataclasses.Field[object]) -> Callable[[], object] | None:
    """What makes field ``f``'s value when none is given: its ``default_factory``, or a
    function giving its ``default``; None when it has neither."""
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory
    if f.default is not dataclasses.MISSING:
        default = f.default
        return lambda: default
    return None


def _record_repr(self: DataclassInstance) -> str:
    """A record as a dataclass's generated ``__repr__`` writes it."""
    shown = (f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if f.repr)
    return f"{type(self).__qualname__}({', '.join(shown)})"


class Slotted:
    """Base of the records made by the hundred (the module's docstring): their fields are
    the ``__slots__`` of the classes below it, set by their own ``__init__``; ``repr``
    writes them as a dataclass's does, ``Name(field=value, ...)``, in ``__slots__``
    order."""

    __slots__ = ()

    def __repr__(self) -> str:
        names = (n for c in reversed(type(self).__mro__) for n in c.__dict__.get("__slots__", ()))
        shown = (f"{n}={_slot_text(self, n)}" for n in names)
        return f"{type(self).__qualname__}({', '.join(shown)})"


def _slot_text(record: Slotted, name: str) -> str:
    """The ``repr`` of ``record``'s slot ``name``, or ``<unset>`` where nothing was put."""
    try:
        return repr(getattr(record, name))
    except AttributeError:
        return "<unset>"
