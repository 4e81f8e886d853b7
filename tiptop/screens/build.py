"""From a reader's raw items to checked :class:`ScreenSpec` records: one semantics for XML
and YAML (docs/original.md sections 2.2-2.4).

Readers produce :class:`RawScreen`s (attribute text plus positions, in document order); this
module applies the original's rules: defaults ``(no name)``/``(no desc)``/``(unknown)``,
counters declared before use, the last declaration of an alias wins, ``type`` names or
numbers (``strtol`` base 0), ``arch``/``model`` gating (``tiptop.screens.gating``: substring
match of the ``%02X_%02X`` model string; our addition: ``19_10-19_1F`` range tokens), unused
counters dropped. Every problem becomes a
:class:`SpecError` with path, line and column in ``problems``; only the faulty counter or
column is dropped, never the rest of the file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import field

from tiptop.errors import SpecError
from tiptop.outside import printable, shown
from tiptop.readonly import Slotted, mutable
from tiptop.screens.columns import compiled
from tiptop.screens.expr import compile_column, evaluate_config
from tiptop.screens.gating import gate
from tiptop.screens.model import (
    ColumnSpec,
    ConfigSpec,
    CounterSpec,
    NamedEvent,
    NumericEvent,
    ScreenSpec,
    Target,
)
from tiptop.screens.printf import compile_format
from tiptop.screens.rcoptions import IGNORED_OPTIONS, RC_OPTIONS
from tiptop.vocab import TYPE_NAMES, PerfType

# Something that can only be an event name (perf/sysfs/libpfm4 spellings), never XML junk.
_EVENT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:/=,+@\-]*\Z")


class RawItem(Slotted):
    """One ``<counter>`` or ``<column>`` as written: attribute text and where it is. A
    :class:`~tiptop.readonly.Slotted` record: every start makes the built-in screens'
    600-odd items (tiptop.screens.builtin_data)."""

    __slots__ = ("attrs", "column", "kind", "line", "value_pos")

    def __init__(
        self,
        kind: str,
        attrs: dict[str, str],
        line: int | None = None,
        column: int | None = None,
        value_pos: dict[str, tuple[int | None, int | None]] | None = None,
    ) -> None:
        self.kind = kind  # "counter" | "column"
        self.attrs = attrs
        self.line = line
        self.column = column
        #: Position (line, 1-based column) of each attribute value's first character.
        self.value_pos = {} if value_pos is None else value_pos


@mutable
class RawScreen:
    """One ``<screen>`` as written; ``arch``/``model`` gate the whole screen (our addition)."""

    name: str | None
    desc: str | None
    items: list[RawItem] = field(default_factory=list)
    line: int | None = None
    column: int | None = None
    arch: str | None = None
    model: str | None = None
    #: Headers of the columns forming a breakdown (docs/screens.md, "breakdown").
    breakdown: tuple[str, ...] = ()


#: One ``options`` entry as read: name, value, line, column.
RawOption = tuple[str | None, str | None, int | None, int | None]


def parse_type(text: str) -> int:
    """A ``type`` attribute: a name of :data:`tiptop.vocab.TYPE_NAMES` or a number
    (``strtol`` base 0)."""
    t = text.strip()
    if t in TYPE_NAMES:
        return TYPE_NAMES[t]
    try:
        value = int(t, 0)
    except ValueError:
        if re.fullmatch(r"0[0-7]+", t):  # C octal, which Python's base 0 refuses
            value = int(t, 8)
        else:
            raise SpecError(f"Bad type '{shown(text)}'") from None
    if not 0 <= value < 1 << 32:
        raise SpecError(f"Bad type '{shown(text)}'")
    return value


def parse_event(config: str, type_text: str | None) -> NumericEvent | NamedEvent:
    """What a counter's ``config``/``type`` mean; raises SpecError (message without place)."""
    if type_text is not None:
        return NumericEvent(parse_type(type_text), evaluate_config(config))
    try:
        return NumericEvent(int(PerfType.HARDWARE), evaluate_config(config))
    except SpecError:
        if _EVENT_NAME.match(config.strip()):
            return NamedEvent(config.strip())
        raise


def parse_threshold(text: str) -> float:
    """A ``threshold`` attribute: a finite number."""
    try:
        value = float(text)
    except ValueError:
        raise SpecError(f"Bad threshold '{shown(text)}'") from None
    if not math.isfinite(value):
        raise SpecError(f"Bad threshold '{shown(text)}'")
    return value


def parse_bool(text: str) -> bool:
    """``1/0``, ``yes/no``, ``true/false`` (any case)."""
    t = text.strip().lower()
    if t in ("1", "yes", "true", "on"):
        return True
    if t in ("0", "no", "false", "off", ""):
        return False
    raise SpecError(f"Bad boolean '{shown(text)}'")


def build_options(
    items: list[tuple[str | None, str | None, int | None, int | None]],
    path: str | None,
    problems: list[SpecError],
) -> dict[str, str]:
    """``(name, value, line, column)`` in file order to the options dict (last one wins)."""
    out: dict[str, str] = {}
    for name, value, line, col in items:
        if name is None or value is None:
            problems.append(SpecError("Option needs a name and a value", path, line, col))
        elif name in RC_OPTIONS:
            out[name] = value
        elif name not in IGNORED_OPTIONS:
            problems.append(SpecError(f"Unknown option '{name}' ignored", path, line, col))
    return out


def screen_name(raw: RawScreen) -> str:
    """The name ``raw`` gets once built (:func:`build_screen`), by which a screen is
    picked, listed and replaced."""
    return printable(raw.name or "(no name)")


def build_screen(
    raw: RawScreen, target: Target, path: str | None, problems: list[SpecError]
) -> ScreenSpec | None:
    """The checked screen, or ``None`` when its own gate excludes ``target``."""
    # Names, descriptions and headers are printed to terminals (batch mode, messages): a
    # control character in them is kept as its escape (``\x1b``), never obeyed.
    name = screen_name(raw)
    desc = printable(raw.desc if raw.desc is not None else "(no desc)")
    why = gate(raw.arch, raw.model, target)
    if why is not None:
        problems.append(
            SpecError(f"Skipping screen '{name}' ({why} mismatch)", path, raw.line, raw.column)
        )
        return None
    b = _Building(name, target, path, problems)
    for item in raw.items:
        if item.kind == "counter":
            _add_counter(b, item)
        else:
            _add_column(b, item)
    _drop_unused(b)
    columns = tuple(c for c, _a in b.columns)
    return ScreenSpec(
        name=name,
        desc=desc,
        counters=tuple(b.counters.values()),
        columns=columns,
        source=path or "builtin",
        breakdown=_breakdown(raw, name, columns, path, problems),
    )


def _breakdown(
    raw: RawScreen,
    name: str,
    columns: tuple[ColumnSpec, ...],
    path: str | None,
    problems: list[SpecError],
) -> tuple[str, ...]:
    """The screen's breakdown headers (stripped), or () with a problem when one names a
    column the screen does not have (dropped, or gated out on this CPU): the parts left
    would not add up, so nothing is checked."""
    wanted = tuple(h.strip() for h in raw.breakdown)
    missing = [h for h in wanted if h not in {c.header.strip() for c in columns}]
    if wanted and (missing or len(set(wanted)) < 2):
        why = f"no column '{missing[0]}'" if missing else "fewer than two columns"
        msg = f"Breakdown of screen '{name}': {why}; not checked"
        problems.append(SpecError(msg, path, raw.line, raw.column))
        return ()
    return wanted


def build_config(
    options: list[RawOption],
    entries: list[RawScreen | SpecError],
    target: Target,
    path: str | None,
) -> ConfigSpec:
    """The checked configuration, for ``target``, of what a reader read
    (``tiptop.screens.yamlrc.read_yaml``): ``entries`` in file order, each a screen or the
    error that dropped one; ``options`` as ``(name, value, line, column)``."""
    config = ConfigSpec(path=path)
    for entry in entries:
        if isinstance(entry, SpecError):
            config.problems.append(entry)  # this screen is dropped, the rest kept
            continue
        screen = build_screen(entry, target, path, config.problems)
        if screen is not None:
            config.screens.append(screen)
    config.options = build_options(options, path, config.problems)
    return config


@mutable
class _Building:
    """A screen being built, in document order: what is declared so far, and where
    problems go."""

    name: str
    target: Target
    path: str | None
    problems: list[SpecError]
    counters: dict[str, CounterSpec] = field(default_factory=dict)
    #: Aliases of counters gated out on this CPU.
    skipped: set[str] = field(default_factory=set)
    #: Each kept column with the counter aliases it reads.
    columns: list[tuple[ColumnSpec, frozenset[str]]] = field(default_factory=list)

    def problem(self, msg: str, item: RawItem, attr: str | None = None) -> None:
        """A problem at ``attr``'s value of ``item`` (or at the item itself)."""
        line, col = item.value_pos.get(attr, (item.line, item.column)) if attr else (None, None)
        if line is None:
            line, col = item.line, item.column
        self.problems.append(SpecError(msg, self.path, line, col))


def _add_counter(b: _Building, item: RawItem) -> None:
    """Declare one counter; a second declaration of an alias replaces the first."""
    spec = _counter(item, b.name, b.target, b.problem)
    if isinstance(spec, str):
        b.skipped.add(spec)
    elif spec is not None:
        if spec.alias in b.counters:
            b.problem(
                f"Counter '{spec.alias}' declared again in screen '{b.name}':"
                " the last declaration wins",
                item,
                "alias",
            )
            del b.counters[spec.alias]
        b.counters[spec.alias] = spec


def _add_column(b: _Building, item: RawItem) -> None:
    """Keep one column, or report why it is dropped."""
    a = item.attrs
    header, fmt, text = a.get("header"), a.get("format"), a.get("expr")
    header = printable(header) if header is not None else None
    if not header:
        b.problem(f"Need a header for a column in screen '{b.name}'", item, "header")
        return
    where = f"column '{header}' in screen '{b.name}'"
    if not fmt:
        b.problem(f"Need a format for {where}", item, "format")
        return
    if text is None or not text.strip():
        b.problem(f"Need an expression for {where}", item, "expr")
        return
    try:
        compile_format(fmt)
    except SpecError as err:
        b.problem(f"{err.message} in column '{header}', screen '{b.name}'", item, "format")
        return
    aliases = _column_aliases(b, item, header, text)
    if aliases is None:
        return
    threshold, below = None, False
    try:
        if a.get("threshold") not in (None, ""):
            threshold = parse_threshold(a["threshold"])
        if a.get("threshold_below") is not None:
            below = parse_bool(a["threshold_below"])
    except SpecError as err:
        b.problem(f"{err.message} in column '{header}', screen '{b.name}': ignored", item)
    spec = ColumnSpec(
        header=header,
        format=fmt,
        expr=text,
        desc=a["desc"] if a.get("desc") is not None else "(unknown)",
        threshold=threshold,
        threshold_below=below,
        line=item.line,
        column=item.column,
        table_metric=a.get("table_metric") or None,
    )
    b.columns.append((spec, aliases))


def _column_aliases(b: _Building, item: RawItem, header: str, text: str) -> frozenset[str] | None:
    """The counter aliases a column's expression reads, or ``None`` (reported) when it does
    not compile or reads a counter not declared before it (or skipped on this CPU)."""
    line, col = item.value_pos.get("expr", (item.line, item.column))
    try:
        # Kept (tiptop.screens.columns): the plan and every evaluator reuse this one.
        expr = compiled(text)
    except SpecError:
        err = _placed(text, b.path, line, col)
        err.message = (
            f"Invalid expression in column '{header}', screen '{b.name}':"
            f" {err.message}; column ignored"
        )
        err.args = (err.message,)
        b.problems.append(err)
        return None
    missing = sorted(expr.aliases - b.counters.keys())
    if not missing:
        return expr.aliases
    gone = [m for m in missing if m in b.skipped]
    if gone:
        msg = (
            f"Column '{header}' in screen '{b.name}' needs counter '{gone[0]}',"
            " skipped on this CPU: column ignored"
        )
    else:
        msg = f"Undeclared counter '{missing[0]}' in screen '{b.name}': column ignored"
    b.problem(msg, item, "expr")
    return None


def _placed(text: str, path: str | None, line: int | None, column: int | None) -> SpecError:
    """The error of an expression that does not compile, placed in its file (compiled
    again: only a faulty one is)."""
    try:
        compile_column(text, path=path, line=line, column=column)
    except SpecError as err:
        return err
    raise AssertionError(f"{text!r} compiles placed but not alone")


def _drop_unused(b: _Building) -> None:
    """Drop, with a note, the counters no kept column reads (they would take an fd)."""
    used = set().union(*(al for _c, al in b.columns)) if b.columns else set()
    for alias, spec in list(b.counters.items()):
        if alias not in used:
            b.problems.append(
                SpecError(
                    f"Unused counter '{alias}' in screen '{b.name}'", b.path, spec.line, spec.column
                )
            )
            del b.counters[alias]


def _counter(
    item: RawItem, screen: str, target: Target, problem: Callable[..., None]
) -> CounterSpec | str | None:
    """The counter, its alias when gated out, or ``None`` after reporting a problem."""
    a = item.attrs
    alias = a.get("alias")
    if not alias:
        problem(f"Need a alias for a counter in screen '{screen}'", item, "alias")
        return None
    config = a.get("config")
    if config is None or not config.strip():
        problem(f"Need a config for counter '{alias}' in screen '{screen}'", item, "config")
        return None
    why = gate(a.get("arch"), a.get("model"), target)
    if why is not None:
        problem(f"Skipping counter '{alias}' in screen '{screen}' ({why} mismatch)", item)
        return alias
    try:
        if a.get("type") is not None:
            parse_type(a["type"])
    except SpecError:
        problem(f"Bad type '{shown(a['type'])}': ignoring counter '{alias}'", item, "type")
        return None
    try:
        event = parse_event(config, a.get("type"))
    except SpecError as err:
        problem(
            f"Bad config '{shown(config)}': ignoring counter '{alias}' ({err.message})",
            item,
            "config",
        )
        return None
    return CounterSpec(
        alias=alias,
        event=event,
        config=config,
        type=a.get("type"),
        arch=a.get("arch"),
        model=a.get("model"),
        line=item.line,
        column=item.column,
        table_event=a.get("table_event") or None,
    )
