"""A column's ``format``: the one printf checker, used when a screen file is loaded and when
a cell is formatted (``tiptop.table``), so a format the loader accepts always prints.

A format is printf(3) for ONE double: literal text, ``%%``, and exactly one
``%[flags][width][.precision][l]conversion`` with flags from ``-+ #0`` and a conversion of
``f F e E g G``. ``l`` is accepted and has no effect, as C99 says for these conversions
(``%6.2lf`` is the same as ``%6.2f``); other length modifiers are refused (``L`` would
read a ``long double``). Width and precision are at most :data:`MAX_FIELD`: a cell is a
screen column, and ``%1000f`` would build a 1000-character cell per row.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from tiptop.errors import SpecError, printable, shown

__all__ = ["MAX_FIELD", "compile_format"]

#: The widest field width or precision a format may ask for (docs/screens.md).
MAX_FIELD = 64

_CONV = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\d*)(?:\.(?P<prec>\d*))?(?P<len>l?)(?P<conv>.?)")
_CONVERSIONS = "fFeEgG"


def compile_format(fmt: str) -> Callable[[float], str]:
    """Compile a column's printf format for one double into a function.

    The conversion becomes a Python format spec, so user text is never used with the ``%``
    operator. Raises :class:`SpecError` ``Bad format '...': why`` for anything else.
    """
    return _compile_format(fmt)


@functools.lru_cache(maxsize=256)
def _compile_format(fmt: str) -> Callable[[float], str]:
    literal: list[str] = []  # the text before the conversion, then the text after it
    prefix: str | None = None
    spec = ""
    pos = 0
    while pos < len(fmt):
        if fmt[pos] != "%":
            literal.append(fmt[pos])
            pos += 1
            continue
        if fmt.startswith("%%", pos):
            literal.append("%")
            pos += 2
            continue
        m = _CONV.match(fmt, pos)
        assert m is not None  # every group may be empty
        if prefix is not None:
            raise _bad(fmt, "more than one conversion (one value per cell)")
        spec = _spec(fmt, m)
        prefix, literal = "".join(literal), []
        pos = m.end()
    if prefix is None:
        raise _bad(fmt, "no conversion (need one of %f, %e, %g)")
    suffix = "".join(literal)
    if printable(prefix + suffix) != prefix + suffix:  # ESC, a newline: every cell would obey it
        raise _bad(fmt, "a control character (a cell is printed text)")
    template = "{:" + spec + "}"

    def fmt_one(value: float) -> str:
        return prefix + template.format(value) + suffix

    return fmt_one


def _spec(fmt: str, m: re.Match[str]) -> str:
    """The Python format spec of one matched conversion; SpecError when it is not one."""
    conv = m.group("conv")
    if not conv or conv not in _CONVERSIONS:
        what = repr(m.group("len") + conv) if conv else "end of format"
        raise _bad(fmt, f"unsupported conversion {what} (use f, e or g)")
    for what, name in (("width", "width"), ("prec", "precision")):
        digits = (m.group(what) or "").lstrip("0")
        # Length first: int() of over 4,300 digits is a ValueError (sys.int_info).
        if len(digits) > len(str(MAX_FIELD)) or (digits and int(digits) > MAX_FIELD):
            raise _bad(fmt, f"{name} {shown(digits)} is over {MAX_FIELD} (a cell is a column)")
    return _py_spec(m.group("flags"), m.group("width"), m.group("prec"), conv)


def _py_spec(flags: str, width: str, prec: str | None, conv: str) -> str:
    """printf flags/width/precision/conversion as a ``format()`` spec (same output)."""
    align = "<" if "-" in flags else ""
    sign = "+" if "+" in flags else (" " if " " in flags else "")
    alt = "#" if "#" in flags else ""
    zero = "0" if ("0" in flags and not align) else ""
    # printf: a precision of "." alone means 0; absent means 6 (Python's default too).
    precision = "" if prec is None else "." + (prec or "0")
    return f"{align}{sign}{alt}{zero}{width}{precision}{conv}"


def _bad(fmt: str, why: str) -> SpecError:
    return SpecError(f"Bad format '{shown(fmt)}': {why}")
