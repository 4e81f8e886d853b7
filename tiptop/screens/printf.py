"""A column's ``format``: the one printf checker, used when a screen file is loaded and when
a cell is formatted (``tiptop.table``), so a format the loader accepts always prints.

A format is printf(3) for ONE double: literal text, ``%%``, and exactly one
``%[flags][width][.precision][l]conversion`` with flags from ``-+ #0`` and a conversion of
``f F e E g G``. ``l`` is accepted and has no effect, as C99 says for these conversions
(``%6.2lf`` is the same as ``%6.2f``); other length modifiers are refused (``L`` would
read a ``long double``). Width and precision are at most :data:`MAX_FIELD`: a cell is a
screen column, and ``%1000f`` would build a 1000-character cell per row.

:class:`RowFormat` compiles a screen's formats once into ``str.format`` templates that give
a row's whole middle (each cell right-aligned to its header's width, ``-``/``?`` for cells
that are not OK, one space after each: docs/original.md 6.2) in one call per row. A
``bottleneck(...)`` column's cell is its node's label and the share in the column's format
(tiptop/screens/bottleneck.py).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

from tiptop.cells import PLACEHOLDER, SUSPECT_MARK, Status
from tiptop.errors import SpecError
from tiptop.outside import printable, shown
from tiptop.screens.bottleneck import format_path
from tiptop.screens.columns import Kind, column_record
from tiptop.screens.model import ColumnSpec, ScreenSpec

__all__ = [
    "MAX_FIELD",
    "RowFormat",
    "check_formats",
    "compile_format",
    "format_parts",
    "row_format",
]

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


def format_parts(fmt: str) -> tuple[str, str, str]:
    """``(prefix, spec, suffix)`` of a column's format: the literal text before the
    conversion, the conversion as a Python format spec, and the literal text after it
    (``%%`` already made ``%``), so ``prefix + format(value, spec) + suffix`` is the printf
    output. Raises :class:`SpecError` as :func:`compile_format` does."""
    return _format_parts(fmt)


@functools.lru_cache(maxsize=256)
def _compile_format(fmt: str) -> Callable[[float], str]:
    prefix, spec, suffix = _format_parts(fmt)
    template = "{:" + spec + "}"

    def fmt_one(value: float) -> str:
        return prefix + template.format(value) + suffix

    return fmt_one


@functools.lru_cache(maxsize=256)
def _format_parts(fmt: str) -> tuple[str, str, str]:
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
    return prefix, spec, suffix


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


# --------------------------------------------------------------------------- rows


class RowFormat:
    """A screen's cells compiled once: for each combination of cell statuses met, one
    ``str.format`` template giving a row's whole middle (every cell and its separating
    space) in one call; columns whose cell cannot be one format field (see
    :func:`_field`) take the cell-by-cell path."""

    def __init__(self, columns: Sequence[ColumnSpec]) -> None:
        records = [column_record(c) for c in columns]
        self.fmts = [compile_format(c.format) for c in columns]
        self.widths = [len(c.header) for c in columns]
        #: The bottleneck columns' formatters of a share and its node (label and share).
        self.paths = {
            j: format_path(r.labels, self.fmts[j])
            for j, r in enumerate(records)
            if r.kind is Kind.BOTTLENECK
        }
        self.fields = [
            None if j in self.paths else _field(j, c.format, len(c.header))
            for j, c in enumerate(columns)
        ]
        self._templates: dict[bytes, str | None] = {}

    def cells(self, values: list[float], codes: bytes, nodes: Sequence[int] = ()) -> list[str]:
        """Each cell, at least its header's width (rjust is a no-op for the usual format as
        wide as its header), so rows line up under the header; placeholders otherwise.
        ``nodes``: the cells' nodes (``Frame.node``), read in the bottleneck columns."""
        return [
            self._cell(j, v, nodes).rjust(self.widths[j])
            if c == 0
            else _marked(self._cell(j, v, nodes)).rjust(self.widths[j])
            if c == Status.SUSPECT
            else PLACEHOLDER[Status(c)].rjust(self.widths[j])
            for j, (v, c) in enumerate(zip(values, codes, strict=True))
        ]

    def _cell(self, j: int, value: float, nodes: Sequence[int]) -> str:
        path = self.paths.get(j)
        return self.fmts[j](value) if path is None else path(value, nodes[j])

    def text(self, values: list[float], codes: bytes, nodes: Sequence[int] = ()) -> str:
        """Every cell followed by one space, as one string."""
        try:
            template = self._templates[codes]
        except KeyError:
            template = self._templates[codes] = self._template(codes)
        if template is None:
            return "".join(c + " " for c in self.cells(values, codes, nodes))
        return template.format(*values)

    def _template(self, codes: bytes) -> str | None:
        parts = []
        for j, c in enumerate(codes):
            if c == Status.SUSPECT:
                return None  # the cell-by-cell path marks it
            if c == 0:
                f = self.fields[j]
                if f is None:
                    return None
                parts.append(f)
            else:
                parts.append(_literal(PLACEHOLDER[Status(c)].rjust(self.widths[j])))
            parts.append(" ")
        return "".join(parts)


def _marked(text: str) -> str:
    """A SUSPECT cell: its value one place left, then :data:`SUSPECT_MARK`."""
    return (text[1:] if text.startswith(" ") else text) + SUSPECT_MARK


@functools.lru_cache(maxsize=64)
def row_format(columns: tuple[ColumnSpec, ...]) -> RowFormat:
    """The compiled :class:`RowFormat` of a screen's columns (built once per screen)."""
    return RowFormat(columns)


#: A spec of :func:`format_parts`: flags, width, then precision and conversion.
_SPEC = re.compile(r"(?P<flags>(?P<left><)?[+ ]?#?(?P<zero>0)?)(?P<width>\d*)(?P<rest>.*)\Z")


def _field(j: int, fmt: str, width: int) -> str | None:
    """Cell ``j`` as one replacement field of a row template, or ``None`` when it cannot
    be one. The cell is ``(prefix + format(v, spec) + suffix).rjust(width)``: the rjust is a
    no-op when the spec's own width fills the header; otherwise, with no prefix and plain
    right alignment, a wider spec pads the same spaces; else it stays a separate step."""
    prefix, spec, suffix = format_parts(fmt)
    m = _SPEC.match(spec)
    assert m is not None  # every group may be empty
    if max(int(m["width"] or 0), 1) + len(prefix) + len(suffix) < width:
        if prefix or m["left"] or m["zero"]:
            return None
        spec = f"{m['flags']}{width - len(suffix)}{m['rest']}"
    return f"{_literal(prefix)}{{{j}:{spec}}}{_literal(suffix)}"


def _literal(text: str) -> str:
    """``text`` as literal text of a ``str.format`` template."""
    return text.replace("{", "{{").replace("}", "}}")


def check_formats(screen: ScreenSpec) -> None:
    """Raise :class:`SpecError` (with the column's location) if a format cannot be used."""
    for col in screen.columns:
        try:
            compile_format(col.format)
        except SpecError as exc:
            raise SpecError(
                f"screen '{screen.name}', column '{col.header.strip()}': {exc.message}",
                screen.source if screen.source != "builtin" else None,
                col.line,
                col.column,
            ) from None
