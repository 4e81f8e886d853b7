"""Run modes as a type: what a run does (:class:`Mode`), derived once from the command line,
and the options each mode takes (:data:`MODES`). An option that the run's mode does not
take is refused here, in one place, with one line (a :class:`~tiptop.errors.UsageError`:
exit status 2), never silently ignored (issue 50: ``tiptop -b --from 10:00`` showed live
data as if it were a recording).

Modelled on below's ``enum Command``: one mode per run, each with the settings it reads. The
original's modes (live, batch, ``--list-screens``; ``-h`` and ``-v`` take anything, as help
does) take every option of the original, as it did (docs/original.md section 1); each mode
added since declares the options its code reads. A configuration file's ``<options>`` are
never refused: only what the command line says is checked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING

from tiptop.choices import Format, SeriesBy
from tiptop.errors import UsageError
from tiptop.options.argv import Action
from tiptop.outside import shown
from tiptop.readonly import readonly

if TYPE_CHECKING:
    from tiptop.options import Options

__all__ = ["COMMAND", "MODES", "Mode", "ModeSpec", "asked", "settle", "spec_of"]


class Mode(StrEnum):
    """What a run does; its value is the word messages use."""

    HELP = "help"
    VERSION = "version"
    LIST_SCREENS = "list-screens"
    EXPORT = "export"
    LIST_EVENTS = "list-events"
    CHECK = "check"
    SELFTEST = "selftest"
    PLOT = "plot"
    REPLAY = "replay"
    SERVE = "serve"
    TEXTFILE = "textfile"
    WHERE = "where"
    WHY = "why"
    BATCH = "batch"
    LIVE = "live"


#: The ``-- command args`` of the command line, named as an option is (an ``Action.name``).
COMMAND = "command"

#: What every run takes: the configuration file (``-W``, ``--only-conf``); ``-g``, which the
#: original took and which does nothing; ``-b``, which asks not to take the terminal over,
#: as no mode but live mode does.
CONFIG = frozenset({"config_dir", "only_conf", "debug", "batch"})
#: The original's options (docs/original.md section 1), by ``Action.name``.
ORIGINAL = CONFIG | frozenset(
    {
        "show_cmdline",
        "cpu_threshold",
        "delay",
        "error_file",
        "show_epoch",
        "show_threads",
        "show_kernel",
        "show_idle",
        "max_iter",
        "collect",
        "output",
        "only",
        "screen",
        "sticky",
        "show_timestamp",
        "user",
        "show_user",
        "watch",
        COMMAND,
    }
)
#: What the table shows (``Options.view``): a replay shows it as a live run would.
VIEW = frozenset(
    {"show_cmdline", "cpu_threshold", "show_epoch", "show_idle", "only", "sticky"}
    | {"show_timestamp", "user", "show_user", "watch"}
)
#: What a sampler watches and how (``Options.sampler_config``), less the view's part.
SAMPLER = frozenset({"show_kernel", "collect", "cpu_threshold", "only", "user", "show_cmdline"})
#: A batch run's output and pace.
BATCH_OUT = frozenset({"batch", "output", "format", "delay", "max_iter"})
#: What ``--by cgroup`` reads: who runs in a cgroup, and whether cgroups count whole.
CGROUPS = frozenset({"series_by", "runtime_root", "task_counters"})
#: The exporter's options (docs/exporter.md).
EXPORTER = CGROUPS | {"series_expiry", "plot_top", "textfile", "screen"}


@readonly
class ModeSpec:
    """One mode: the options that ask for it (``selectors``, by ``Action.name``; none for
    live and batch), how messages name it, the options it takes, and the ``--format``
    values it prints (``prints`` says what)."""

    mode: Mode
    selectors: frozenset[str]
    spelled: str
    takes: frozenset[str]
    formats: tuple[Format, ...] = tuple(Format)
    prints: str = ""


def _spec(
    mode: Mode,
    selectors: set[str],
    takes: frozenset[str],
    *,
    spelled: str = "",
    formats: tuple[Format, ...] = tuple(Format),
    prints: str = "",
) -> ModeSpec:
    first = min(selectors) if selectors else ""
    return ModeSpec(
        mode,
        frozenset(selectors),
        spelled or f"--{first.replace('_', '-')}",
        takes | selectors,
        formats,
        prints,
    )


#: Every mode, in the order that picks one when a command line asks for several (the first
#: asked for is the run's mode; the others' options are then refused, one at a time).
MODES: tuple[ModeSpec, ...] = (
    # Help and versions first, before any file is read: they take anything (help's habit).
    _spec(Mode.HELP, {"help"}, frozenset(), spelled="--help"),
    _spec(Mode.VERSION, {"version", "legalese"}, frozenset(), spelled="-v"),
    _spec(Mode.LIST_SCREENS, {"list_screens"}, ORIGINAL),
    _spec(Mode.EXPORT, {"export"}, CONFIG),
    _spec(Mode.LIST_EVENTS, {"list_events"}, CONFIG),
    _spec(Mode.CHECK, {"check"}, CONFIG),
    _spec(
        Mode.SELFTEST,
        {"selftest"},
        CONFIG | {"screen", "format"},
        formats=(Format.TEXT, Format.JSON),
        prints="a report",
    ),
    _spec(
        Mode.PLOT,
        {"plot"},
        CONFIG | {"output", "plot_column", "plot_top", "screen", "time_from", "time_to", "only"},
    ),
    _spec(
        Mode.REPLAY,
        {"replay"},
        CONFIG | VIEW | BATCH_OUT | {"screen", "time_from", "time_to", "series_by"},
    ),
    _spec(Mode.SERVE, {"serve"}, CONFIG | SAMPLER | EXPORTER | {"web_config", "delay", "max_iter"}),
    _spec(Mode.TEXTFILE, {"textfile"}, CONFIG | SAMPLER | EXPORTER | {"delay", "max_iter"}),
    _spec(
        Mode.WHERE,
        {"where"},
        CONFIG | BATCH_OUT | {"where_depth", "where_min_share", "where_top_down", "folded"},
    ),
    _spec(
        Mode.WHY,
        {"why"},
        CONFIG | BATCH_OUT | {"screen", "show_kernel", "error_file", "record"},
        formats=(Format.TEXT, Format.JSON),
        prints="a tree",
    ),
    _spec(Mode.BATCH, set(), ORIGINAL | CGROUPS | {"format", "record"}, spelled="batch mode"),
    _spec(Mode.LIVE, set(), ORIGINAL | CGROUPS | {"record"}, spelled="live mode"),
)

_BY_MODE = {spec.mode: spec for spec in MODES}

_ONE_TASK = frozenset({Mode.WHY, Mode.WHERE})
_EXPORTING = frozenset({Mode.SERVE, Mode.TEXTFILE})
_RECORDED = frozenset({Mode.REPLAY, Mode.PLOT})
_VIEWS = frozenset({Mode.LIVE, Mode.REPLAY})

#: A sharper line than the generic one for a few mixes users try, by (option, modes);
#: ``{mode}`` is the mode as messages name it.
_HINTS: dict[tuple[str, frozenset[Mode]], str] = {
    (COMMAND, _ONE_TASK): "{mode} takes the PID of a running process, not a command after --",
    (COMMAND, _EXPORTING): "{mode}: no command after -- (export what runs)",
    ("record", _EXPORTING): "--record does not work with {mode}: run two tiptops",
    ("output", _EXPORTING): "-o does not work with {mode} (it writes no batch output)",
    (COMMAND, _RECORDED): "-- command: not with {mode} (it reads a recording)",
    ("record", _RECORDED): "--record does not work with {mode}: copy the file instead",
    ("format", _VIEWS): "--format: batch output (-b); a live view has no format",
}


def _hint(spec: ModeSpec, name: str) -> str | None:
    """The sharper line for option ``name`` in ``spec``'s mode, if there is one."""
    for (option, modes), line in _HINTS.items():
        if option == name and spec.mode in modes:
            return line.format(mode=spec.spelled)
    return None


def spec_of(mode: Mode) -> ModeSpec:
    """The declaration of ``mode``."""
    return _BY_MODE[mode]


def asked(actions: Sequence[Action]) -> ModeSpec | None:
    """The mode that the command line's options ask for (the first in :data:`MODES`'s
    order), or None when none does (live or batch: :func:`settle` tells which)."""
    names = {a.name for a in actions}
    return next((spec for spec in MODES if spec.selectors & names), None)


def settle(opts: Options, actions: Sequence[Action], *, tty: bool) -> Options:
    """``opts`` with its mode (and whether the run takes the terminal over) derived, once;
    raises :class:`UsageError` with one line for the first option the mode does not take.
    ``tty``: whether standard output is a terminal (live mode wants one)."""
    spec = asked(actions)
    to_file = opts.batch or opts.output is not None or not tty
    if spec is None:
        spec = spec_of(Mode.BATCH if to_file else Mode.LIVE)
    live = spec.mode is Mode.LIVE or (spec.mode is Mode.REPLAY and not to_file)
    _check(spec, live, actions, opts)
    return dataclasses.replace(opts, mode=spec.mode, live=live)


def _check(spec: ModeSpec, live: bool, actions: Sequence[Action], opts: Options) -> None:
    """One line for the first option of the command line that ``spec`` does not take, or
    for a value it does not take."""
    items = [(a.name, a.spelled or a.name) for a in actions]
    items += [(COMMAND, "-- command")] if opts.command else []
    for name, spelled in items:
        if name == "format" and live:
            raise UsageError(_hint(spec_of(Mode.LIVE), name) or name)
        if name not in spec.takes:
            raise UsageError(_refusal(spec, name, spelled))
    if opts.format not in spec.formats:
        raise UsageError(
            f"{spec.spelled} prints {spec.prints}: --format {' or '.join(spec.formats)}, "
            f"not {opts.format}"
        )
    _check_values(spec, {name for name, _ in items}, opts)


def _refusal(spec: ModeSpec, name: str, spelled: str) -> str:
    """The line refusing option ``name`` (written ``spelled``) in ``spec``'s mode."""
    hint = _hint(spec, name)
    if hint is not None:
        return hint
    other = next((s for s in MODES if name in s.selectors), None)
    if other is not None:
        return f"{spelled} and {spec.spelled}: one at a time"
    owners = [s for s in MODES if name in s.takes]
    if owners and all(s.selectors for s in owners):
        return f"{spelled}: only with {_either([s.spelled for s in owners])}"
    return f"{spelled}: not with {spec.spelled}"


def _either(words: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _check_values(spec: ModeSpec, given: set[str], opts: Options) -> None:
    """The values a mode takes of an option it shares (``given``: the options the command
    line names): ``--by`` (live and batch: cgroup rows only), ``--top`` (the exporter:
    with ``--by pid``), ``-p`` (``--plot``: a PID). ``--replay`` takes ``--by cgroup``
    (rows by cgroup of a recording that holds who ran in them), as live and batch do."""
    viewing = spec.mode in (Mode.LIVE, Mode.BATCH, Mode.REPLAY)
    if "series_by" in given and viewing and opts.series_by is not SeriesBy.CGROUP:
        raise UsageError(
            f"--by {opts.series_by}: only with --serve or --textfile "
            "(live and batch mode and --replay take --by cgroup)"
        )
    exporting = spec.mode in (Mode.SERVE, Mode.TEXTFILE)
    if "plot_top" in given and exporting and opts.series_by is not SeriesBy.PID:
        raise UsageError(f"--top: with {spec.spelled}, only with --by pid")
    by_cgroup = opts.series_by is SeriesBy.CGROUP
    if "task_counters" in given and not by_cgroup:
        raise UsageError("--task-counters: only with --by cgroup")
    # Live mode reads who runs in each cgroup for its G key (rows by cgroup) too.
    if "runtime_root" in given and not by_cgroup and spec.mode is not Mode.LIVE:
        raise UsageError("--runtime-root: only with --by cgroup (or in live mode)")
    if spec.mode is Mode.PLOT and opts.only_name is not None:
        raise UsageError(
            f"-p {shown(opts.only_name)}: --plot takes a PID (a name is for live and batch)"
        )
