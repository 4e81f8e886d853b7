"""The records a configuration file turns into: screens, counters, columns, options.

Pure data (read-only records compared by value, ``tiptop.readonly``), shared by the XML and
YAML readers, the exporters, the built-in screens and the sampler. Records end in ``Spec``
to keep them apart from runtime objects. Imports from tiptop only ``errors``, ``vocab``
and ``readonly``.
"""

from __future__ import annotations

from dataclasses import field

from tiptop.errors import SpecError
from tiptop.readonly import by_value, mutable
from tiptop.vocab import event_name


def delta_key(alias: str) -> str:
    """The evaluation-environment key of ``delta(alias)``; the bare alias is its absolute value."""
    return f"delta({alias})"


@by_value
class NumericEvent:
    """An event given the original's way: a ``perf_event_attr`` type and config number."""

    type: int
    config: int


@by_value
class NamedEvent:
    """An event given by name (``cycles``, ``cpu/event=0x3c/``, ``FP_ASSIST.ANY``), resolved
    against this machine by ``tiptop.events`` when a screen is bound, never while loading."""

    name: str


@by_value
class Target:
    """The CPU that ``arch``/``model`` gating compares against: ``arch`` is ``"x86"``,
    ``"arm64"``..., ``model`` the original's ``%02X_%02X`` family_model string or ``None``;
    on Arm, ``revision`` is the MIDR's variant and revision as ``variant << 4 | revision``
    (``0x03`` for r0p3), ``None`` when unknown (tiptop.screens.gating's ``:rVpR`` tokens)."""

    arch: str | None = None
    model: str | None = None
    revision: int | None = None

    def shown(self) -> str:
        """The model as the gates see it: ``19_11``, ``41_D49 r0p2``."""
        if self.model is None or self.revision is None:
            return self.model or ""
        return f"{self.model} r{self.revision >> 4}p{self.revision & 0xF}"


@by_value
class VariantChoice:
    """Which variant of one built-in screen name this CPU got, and why: the variants are
    gated by ``arch``/``model`` (``tiptop.screens.gating.gate``) and the first that admits
    the target is used. Data, so that ``--check``, the help window and the message log
    each say it their way."""

    name: str
    target: Target
    #: Per variant, in file order: ``(desc, arch, model)`` as written.
    variants: tuple[tuple[str, str | None, str | None], ...]
    #: Index of the variant used, or ``None`` when no gate admits the target.
    picked: int | None

    @property
    def desc(self) -> str | None:
        """The description of the variant used."""
        return None if self.picked is None else self.variants[self.picked][0]

    @property
    def generic(self) -> bool:
        """The variant used has no gate while others are for named CPUs: a fallback."""
        if self.picked is None or len(self.variants) < 2:
            return False
        _desc, arch, model = self.variants[self.picked]
        return arch is None and model is None

    def cpu(self) -> str:
        """The target as the gates see it: ``x86 19_11``, ``arm64``."""
        arch, model = self.target.arch, self.target.shown()
        if arch is None:
            return "an unknown CPU"
        return f"{arch} {model}" if model else f"{arch} (model unknown)"

    def why(self) -> str:
        """Why this variant (or none): ``x86 19_11 is in its model list``, ``generic: no
        variant for x86 1A_80``, ``no variant for x86 19_11``."""
        if self.picked is None:
            return f"no variant for {self.cpu()}"
        _desc, arch, model = self.variants[self.picked]
        if model is not None:
            return f"{self.cpu()} is in its model list"
        if arch is not None:
            return f"the CPU is {self.target.arch}"
        if len(self.variants) == 1:
            return "its only variant, for any CPU"
        return f"generic: no variant for {self.cpu()}"

    def note(self) -> str | None:
        """One line for the message log when the generic variant stands in, else None."""
        if not self.generic:
            return None
        others = len(self.variants) - 1
        return (
            f"{self.name}: no variant for {self.cpu()} ({others} are for other CPUs); "
            f"the generic one is used: {self.desc}"
        )


@by_value
class CounterSpec:
    """One ``<counter>``: an alias bound to an event.

    ``config`` and ``type`` keep the text the user wrote (for export); ``event`` is what it
    means. ``line``/``column`` locate the declaration for messages.
    """

    alias: str
    event: NumericEvent | NamedEvent
    config: str
    type: str | None = None
    arch: str | None = None
    model: str | None = None
    line: int | None = None
    column: int | None = None
    #: The event of the vendor's table this encodes (``INT_MISC.UOP_DROPPING``; perf's
    #: ``name@term=value@`` for a table event with a modifier), checked against the kernel's
    #: tables by tests/unit/test_oracle_*.py; None for a counter no table names.
    table_event: str | None = None

    @property
    def event_label(self) -> str:
        """The event as perf names it (``cycles``, ``cpu/event=0x3c/``; a numeric one by
        ``tiptop.vocab.event_name``, else its config text): what a status line says
        rather than the screen's alias (``CYCLE``)."""
        if isinstance(self.event, NamedEvent):
            return self.event.name
        return event_name(self.event.type, self.event.config) or self.config


@by_value
class ColumnSpec:
    """One ``<column>``: a header, a printf format for one double, and an expression.

    The header's width is the cell width for ``-``/``?`` placeholders. ``threshold``, when
    set, highlights cells whose value exceeds it (``threshold_below`` for "less is worse").
    """

    header: str
    format: str
    expr: str
    desc: str = "(unknown)"
    threshold: float | None = None
    threshold_below: bool = False
    line: int | None = None
    column: int | None = None
    #: The vendor metric (perf's ``MetricName``) whose value this column shows, in percent
    #: when the metric's ScaleUnit is ``100%``; checked on random counts by the oracle tests.
    table_metric: str | None = None

    def written(self) -> dict[str, str | float | bool | None]:
        """The column as a recording's header stores it, the expression as the user wrote
        it (``tiptop.recording.format``): never read for its meaning outside screens."""
        return {
            "header": self.header,
            "format": self.format,
            "expr": self.expr,
            "desc": self.desc,
            "threshold": self.threshold,
            "threshold_below": self.threshold_below,
        }


@by_value
class ScreenSpec:
    """A named set of counters and the columns computed from them."""

    name: str
    desc: str
    counters: tuple[CounterSpec, ...] = ()
    columns: tuple[ColumnSpec, ...] = ()
    #: Where it came from: a file path, or ``"builtin"``.
    source: str = "builtin"
    #: For a built-in: which of its name's variants this is and why (not compared).
    variant: VariantChoice | None = field(default=None, compare=False)
    #: Headers (stripped) of the columns that split one whole into percentages adding up
    #: to 100, such as a top-down level 1 (docs/screens.md, "breakdown"); () for none.
    breakdown: tuple[str, ...] = ()

    def breakdown_columns(self) -> tuple[int, ...]:
        """Indices of the :attr:`breakdown` columns, in screen order."""
        names = set(self.breakdown)
        return tuple(i for i, c in enumerate(self.columns) if c.header.strip() in names)

    def counter(self, alias: str) -> CounterSpec:
        """The counter declared as ``alias``."""
        for c in self.counters:
            if c.alias == alias:
                return c
        raise KeyError(alias)


@mutable
class ConfigSpec:
    """A whole loaded file: options in file order (last one wins), screens, and every
    problem met while loading (each a :class:`SpecError` with path, line and column; the
    faulty column or counter was dropped, the rest kept)."""

    path: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    screens: list[ScreenSpec] = field(default_factory=list)
    problems: list[SpecError] = field(default_factory=list)
