"""Every run-time option in one read-only, typed record, and the one place where sources
are merged.

The record is built once from the rc file and the command line (:func:`merge`); whatever
changes later (``-- CMD``'s PID, a live key) makes a new record with
:func:`dataclasses.replace`, so every consumer reads fields of a record that cannot change
under it, and a field that does not exist is a type error, not a default.

Order (docs/original.md section 1): built-in defaults, then the rc file's
``<options>``, then the command line. As in the original, command-line *toggles invert*
the value the file set, options with a value replace it, and the file's options apply
as :data:`tiptop.screens.rcoptions.RC_OPTIONS` says (some OR-set, ``x = x || atoi(v)``, the
others assigned). The command line is parsed into a list of :class:`Action` by
:mod:`.argv`; value parsers are in :mod:`.values`. Imports only ``errors``, ``screens``,
``cells`` and ``table``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, assert_never

from tiptop.choices import Format, SeriesBy
from tiptop.errors import UsageError
from tiptop.frame import SamplerConfig
from tiptop.options.argv import Act, Action, parse_argv
from tiptop.options.modes import Mode
from tiptop.options.values import (
    MAX_DELAY,
    MIN_DELAY,
    atoi,
    decimal,
    parse_choice,
    parse_count,
    parse_delay,
    parse_float,
    parse_target,
    parse_user,
    task_name,
)
from tiptop.outside import shown
from tiptop.readonly import readonly
from tiptop.screens.model import Target
from tiptop.screens.rcoptions import RC_OPTIONS, How, RcOption
from tiptop.table import DEFAULT_CPU_THRESHOLD, View

__all__ = [
    "FORMATS",
    "MAX_DELAY",
    "MIN_DELAY",
    "Action",
    "Mode",
    "Options",
    "apply_actions",
    "apply_rc",
    "decimal",
    "merge",
    "parse_argv",
    "parse_count",
    "parse_delay",
    "parse_float",
    "parse_target",
    "parse_user",
    "to_rc",
]

#: The ``--format`` words (``tiptop.choices.Format``).
FORMATS = tuple(Format)


@readonly
class Options:
    """All options, with the original's defaults; read-only (:mod:`tiptop.readonly`): a
    change is a new record (:func:`dataclasses.replace`)."""

    batch: bool = False
    show_cmdline: bool = False  # -c
    cpu_threshold: float = DEFAULT_CPU_THRESHOLD  # --cpu-min (percent)
    delay: float = 2.0  # -d
    error_file: str | None = None  # -E
    show_epoch: bool = False  # --epoch
    show_threads: bool = False  # -H
    show_idle: bool = False  # -i
    show_kernel: bool = False  # -K
    max_iter: int = 0  # -n (0 = forever)
    collect: bool = True  # --no-collect clears it
    output: str | None = None  # -o
    only_conf: bool = False  # --only-conf
    only_pid: int | None = None  # -p PID
    only_name: str | None = None  # -p NAME
    screen: str | None = None  # -S (number or name part); None = the first screen
    sticky: bool = False  # --sticky
    show_timestamp: bool = False  # --timestamp
    uid: int | None = None  # -u (filters for real)
    user_name: str | None = None  # -u, the name shown in the batch preamble
    show_user: bool = False  # -U
    watch_pid: int | None = None  # -w PID
    watch_name: str | None = None  # -w NAME
    config_dir: str | None = None  # -W
    debug: bool = False  # -g
    command: tuple[str, ...] = ()  # -- cmd args
    #: Width of the PID column: 5, or more when pid_max has more digits (2.3.2's rule;
    #: set by cli from /proc/sys/kernel/pid_max so 7-digit PIDs do not shift their row).
    pid_width: int = 5
    #: This CPU (``arch``, ``model``) for the live help window's ``Target:`` line; set by
    #: cli from /proc/cpuinfo (docs/original.md section 5.4, the help window).
    target: Target | None = None
    #: The configuration file read, if any (the live title's ``[conf]`` indicator).
    config_path: str | None = None
    # New in this implementation.
    format: Format = Format.TEXT  # --format
    export: str | None = None  # --export FILE
    record: str | None = None  # --record FILE
    replay: str | None = None  # --replay FILE
    time_from: str | None = None  # --from WHEN (replay, plot)
    time_to: str | None = None  # --to WHEN (replay, plot)
    plot: str | None = None  # --plot FILE (-o: the image)
    plot_column: str | None = None  # --column HEADER (plot; default: cli.plot picks)
    plot_top: int = 5  # --top N (plot; with --by pid, the processes given a series)
    serve: str | None = None  # --serve [HOST:]PORT (Prometheus /metrics)
    textfile: str | None = None  # --textfile PATH (node_exporter textfile collector)
    web_config: str | None = None  # --web-config FILE (--serve's TLS and basic auth)
    runtime_root: str = "/"  # --runtime-root DIR: where the container runtimes' state is
    task_counters: bool = False  # --task-counters: --by cgroup counts each task, not cgroups
    series_expiry: float = 600.0  # --series-expiry S: exporter label sets unseen S s go (0: never)
    series_by: SeriesBy = SeriesBy.COMM  # --by (exporter series; cgroup: rows too)
    why: int | None = None  # --why PID (batch: the task's top-down tree per refresh)
    #: For ``--why``: the levels its screen lacks and the screen that has them (set by cli).
    why_note: str | None = None
    where: int | None = None  # --where PID (batch: the task's hottest functions per refresh)
    where_depth: int = 8  # --depth N (--where's tree: levels shown; 0: all)
    where_min_share: float = 0.5  # --min-share PCT (--where's tree: the least share shown)
    where_top_down: bool = False  # --top-down (--where's tree: callers to callees)
    folded: str | None = None  # --folded FILE (--where's stacks, folded, for flame graphs)
    # One-shot actions (print and exit).
    help: bool = False
    version: bool = False
    legalese: bool = False  # --version
    list_screens: bool = False
    list_events: bool = False
    check: bool = False
    selftest: bool = False  # --selftest
    #: What the run does, derived once from the command line (``tiptop.options.modes``).
    mode: Mode = Mode.LIVE
    #: Whether it takes the terminal over (live mode, a live replay); derived with ``mode``.
    live: bool = False

    @property
    def watch(self) -> int | str | None:
        """The ``-w`` target as ``table.View`` wants it."""
        return self.watch_pid if self.watch_pid is not None else self.watch_name

    def view(self, sort_column: int = 0, descending: bool = True) -> View:
        """The presentation settings these options imply, sorted on ``sort_column``."""
        return View(
            sort_column=sort_column,
            descending=descending,
            show_idle=self.show_idle,
            cpu_threshold=self.cpu_threshold,
            show_user=self.show_user,
            show_cmdline=self.show_cmdline,
            watch=self.watch,
            sticky=self.sticky,
            pid_width=self.pid_width,
            name_header="CGROUP" if self.series_by is SeriesBy.CGROUP else "COMMAND",
        )

    def sampler_config(self) -> SamplerConfig:
        """What these options ask a frame source to watch: the one mapping from settings
        to a sampler's configuration (the command line, the live keys, the ``t`` window's
        extra sampler and the exporter all go through it)."""
        return SamplerConfig(
            threads=self.show_threads,
            kernel=self.show_kernel,
            only_pid=self.only_pid,
            only_name=self.only_name,
            match_cmdline=self.show_cmdline,
            uid=self.uid,
            collect=self.collect,
            cpu_threshold=self.cpu_threshold,
            sticky=self.sticky,
        )


# --------------------------------------------------------------------------- building

#: A record being built: its fields by name, as the rc file and the command line name them
#: (``RC_OPTIONS``' fields, ``Action.name``). Only this module's builders use it; every
#: other module reads a finished :class:`Options` by attribute.
Draft = dict[str, Any]


def _draft(opts: Options) -> Draft:
    """The fields of ``opts`` as a draft to change (a shallow copy)."""
    return {f.name: getattr(opts, f.name) for f in dataclasses.fields(opts)}


def apply_rc(opts: Options, rc: dict[str, str]) -> tuple[Options, list[str]]:
    """``opts`` with a config file's ``<options>`` applied as :data:`RC_OPTIONS` says, and
    one warning line per value that could not be used (unknown names are ignored, as in
    the original)."""
    draft = _draft(opts)
    warnings: list[str] = []
    for name, value in rc.items():
        opt = RC_OPTIONS.get(name)
        if opt is None:
            continue
        try:
            _apply_rc_value(draft, opt, value, f"option '{name}'")
        except UsageError as exc:
            warnings.append(f"config file: {str(exc).rstrip('.')}, ignored")
    return Options(**draft), warnings


def _apply_rc_value(draft: Draft, opt: RcOption, value: str, where: str) -> None:
    """One ``<option>``'s text applied to its field (``tiptop.screens.rcoptions.HOW``)."""
    if opt.how is How.OR:
        draft[opt.field] = draft[opt.field] or atoi(value) != 0
    elif opt.how is How.BOOL:
        draft[opt.field] = atoi(value) != 0
    elif opt.how is How.DELAY:
        draft[opt.field] = parse_delay(value, where)
    elif opt.how is How.FLOAT:
        draft[opt.field] = parse_float(value, where)
    elif opt.how is How.COUNT:
        draft[opt.field] = max(atoi(value), 0)
    elif opt.how is How.NAME:
        if value:  # an empty name is in every name: it would mark every task
            draft["watch_name"], draft["watch_pid"] = task_name(value), None
    elif opt.how is How.USER:
        # The original's ``watch_uid || atoi(v)`` always gave uid 1; we take the value as
        # -u does (and, like -u here, it filters).
        draft["uid"], draft["user_name"] = parse_user(value, where)
    else:  # every How is handled above: the type checker proves this unreachable
        assert_never(opt.how)


def apply_actions(opts: Options, actions: list[Action]) -> Options:
    """``opts`` with parsed command-line items applied in order; toggles invert the
    current value."""
    draft = _draft(opts)
    for act in actions:
        where = act.spelled or act.name
        if act.kind is Act.TOGGLE:
            draft[act.name] = not draft[act.name]
        elif act.kind is Act.FLAG:
            draft[act.name] = True
        elif act.kind is Act.CLEAR:
            draft[act.name] = False
        else:
            _apply_value(draft, act.name, act.value or "", where)
    return Options(**draft)


#: Options whose value is kept as the text given (a path, a screen, a time).
TEXT_OPTIONS = frozenset(
    {
        "screen",
        "output",
        "error_file",
        "config_dir",
        "export",
        "record",
        "replay",
        "time_from",
        "time_to",
        "plot",
        "plot_column",
        "serve",
        "textfile",
        "web_config",
        "runtime_root",
        "folded",
    }
)


def _apply_value(draft: Draft, name: str, value: str, where: str) -> None:
    """One command-line option with a value, parsed into its field(s) of ``draft``."""
    if name == "delay":
        draft["delay"] = parse_delay(value, where)
    elif name in ("cpu_threshold", "series_expiry", "where_min_share"):
        draft[name] = parse_float(value, where)
    elif name in ("max_iter", "plot_top", "where_depth"):
        draft[name] = parse_count(value, where)
    elif name in ("only", "watch"):
        if not value:
            # An empty name is in every name: it would select (or mark) every task.
            raise UsageError(f"{where}: empty value")
        draft[f"{name}_pid"], draft[f"{name}_name"] = parse_target(value, where)
    elif name == "user":
        draft["uid"], draft["user_name"] = parse_user(value, where)
    elif name == "format":
        draft["format"] = parse_choice(Format, value, where)
    elif name == "series_by":
        draft["series_by"] = parse_choice(SeriesBy, value, where)
    elif name in ("why", "where"):
        pid, _text = parse_target(value, where)
        if pid is None:
            raise UsageError(f"{where}: '{shown(value)}' is not a process id")
        draft[name] = pid
    elif name in TEXT_OPTIONS:
        if not value:
            raise UsageError(f"{where}: empty value")
        draft[name] = value
    else:  # pragma: no cover - the parser only produces the names above
        raise UsageError(f"unknown option {where}")


def to_rc(opts: Options) -> dict[str, str]:
    """The options as a config file's ``<options>`` block (every name of
    :data:`RC_OPTIONS`), for the live ``W`` key: reading the block back with
    :func:`apply_rc` gives the same values. ``watch_name`` and ``watch_uid`` (``-u``) only
    when set, as the original writes ``watch_name``."""
    draft = _draft(opts)
    rc: dict[str, str] = {}
    for name, opt in RC_OPTIONS.items():
        value = draft[opt.field]
        if opt.how in (How.DELAY, How.FLOAT):
            rc[name] = repr(value)
        elif opt.how in (How.NAME, How.USER):
            if value is not None:
                rc[name] = str(value)
        else:
            rc[name] = str(int(value))
    return rc


def merge(
    rc: dict[str, str] | None, actions: list[Action], command: Sequence[str] = ()
) -> tuple[Options, list[str]]:
    """Defaults < rc ``<options>`` < command line (and the ``--`` command); returns the
    options and rc warnings."""
    opts, warnings = apply_rc(Options(command=tuple(command)), rc or {})
    return apply_actions(opts, actions), warnings
