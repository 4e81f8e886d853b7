"""Every run-time option in one record, and the one place where sources are merged.

Order (docs/original.md section 1): built-in defaults, then the rc file's
``<options>``, then the command line. As in the original, command-line *toggles invert*
the value the file set, options with a value replace it, and the file's options apply
as :data:`tiptop.screens.rcoptions.RC_OPTIONS` says (some OR-set, ``x = x || atoi(v)``, the
others assigned). The command line is parsed into a list of :class:`Action` by
:mod:`.argv`; value parsers are in :mod:`.values`. Imports only ``errors``, ``screens``,
``cells`` and ``table``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tiptop.errors import UsageError, shown
from tiptop.options.argv import Action, parse_argv
from tiptop.options.values import (
    MAX_DELAY,
    MIN_DELAY,
    atoi,
    decimal,
    parse_count,
    parse_delay,
    parse_float,
    parse_target,
    parse_user,
)
from tiptop.screens.model import Target
from tiptop.screens.rcoptions import RC_OPTIONS, RcOption
from tiptop.table import DEFAULT_CPU_THRESHOLD, View

__all__ = [
    "FORMATS",
    "MAX_DELAY",
    "MIN_DELAY",
    "Action",
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

FORMATS = ("text", "csv", "json")


@dataclass
class Options:
    """All options, with the original's defaults."""

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
    command: list[str] = field(default_factory=list)  # -- cmd args
    #: Width of the PID column: 5, or more when pid_max has more digits (2.3.2's rule;
    #: set by cli from /proc/sys/kernel/pid_max so 7-digit PIDs do not shift their row).
    pid_width: int = 5
    #: This CPU (``arch``, ``model``) for the live help window's ``Target:`` line; set by
    #: cli from /proc/cpuinfo (docs/original.md section 5.4, the help window).
    target: Target | None = None
    #: The configuration file read, if any (the live title's ``[conf]`` indicator).
    config_path: str | None = None
    # New in this implementation.
    format: str = "text"  # --format
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
    series_expiry: float = 600.0  # --series-expiry S: exporter label sets unseen S s go (0: never)
    series_by: str = "comm"  # --by comm|pid|cgroup (exporter series; cgroup: rows too)
    why: int | None = None  # --why PID (batch: the task's top-down tree per refresh)
    #: For ``--why``: the levels its screen lacks and the screen that has them (set by cli).
    why_note: str | None = None
    # One-shot actions (print and exit).
    help: bool = False
    version: bool = False
    legalese: bool = False  # --version
    list_screens: bool = False
    list_events: bool = False
    check: bool = False
    selftest: bool = False  # --selftest

    @property
    def watch(self) -> int | str | None:
        """The ``-w`` target as ``table.View`` wants it."""
        return self.watch_pid if self.watch_pid is not None else self.watch_name

    def view(self) -> View:
        """The presentation settings these options imply (sorted on column 0)."""
        return View(
            sort_column=0,
            descending=True,
            show_idle=self.show_idle,
            cpu_threshold=self.cpu_threshold,
            show_user=self.show_user,
            show_cmdline=self.show_cmdline,
            watch=self.watch,
            sticky=self.sticky,
            pid_width=self.pid_width,
        )


# --------------------------------------------------------------------------- rc file


def apply_rc(opts: Options, rc: dict[str, str]) -> list[str]:
    """Apply a config file's ``<options>`` to ``opts`` as :data:`RC_OPTIONS` says; return
    one warning line per value that could not be used (unknown names are ignored, as in
    the original)."""
    warnings: list[str] = []
    for name, value in rc.items():
        opt = RC_OPTIONS.get(name)
        if opt is None:
            continue
        try:
            _apply_rc_value(opts, opt, value, f"option '{name}'")
        except UsageError as exc:
            warnings.append(f"config file: {str(exc).rstrip('.')}, ignored")
    return warnings


def _apply_rc_value(opts: Options, opt: RcOption, value: str, where: str) -> None:
    """One ``<option>``'s text applied to its field (``tiptop.screens.rcoptions.HOW``)."""
    if opt.how == "or":
        setattr(opts, opt.field, getattr(opts, opt.field) or atoi(value) != 0)
    elif opt.how == "bool":
        setattr(opts, opt.field, atoi(value) != 0)
    elif opt.how == "delay":
        setattr(opts, opt.field, parse_delay(value, where))
    elif opt.how == "float":
        setattr(opts, opt.field, parse_float(value, where))
    elif opt.how == "count":
        setattr(opts, opt.field, max(atoi(value), 0))
    elif opt.how == "name":
        if value:  # an empty name is in every name: it would mark every task
            opts.watch_name, opts.watch_pid = value, None
    elif opt.how == "user":
        # The original's ``watch_uid || atoi(v)`` always gave uid 1; we take the value as
        # -u does (and, like -u here, it filters).
        opts.uid, opts.user_name = parse_user(value, where)
    else:  # pragma: no cover - RC_OPTIONS uses only the ways above (tests check it)
        raise ValueError(f"unknown way {opt.how!r} for {where}")


def apply_actions(opts: Options, actions: list[Action]) -> None:
    """Apply parsed command-line items in order; toggles invert the current value."""
    for act in actions:
        where = act.spelled or act.name
        if act.kind == "toggle":
            setattr(opts, act.name, not getattr(opts, act.name))
        elif act.kind == "flag":
            setattr(opts, act.name, True)
        elif act.kind == "clear":
            setattr(opts, act.name, False)
        else:
            _apply_value(opts, act.name, act.value or "", where)


def _apply_value(opts: Options, name: str, value: str, where: str) -> None:
    if name == "delay":
        opts.delay = parse_delay(value, where)
    elif name == "cpu_threshold":
        opts.cpu_threshold = parse_float(value, where)
    elif name == "max_iter":
        opts.max_iter = parse_count(value, where)
    elif name in ("only", "watch"):
        if not value:
            # An empty name is in every name: it would select (or mark) every task.
            raise UsageError(f"{where}: empty value")
        pid, text = parse_target(value, where)
        if name == "only":
            opts.only_pid, opts.only_name = pid, text
        else:
            opts.watch_pid, opts.watch_name = pid, text
    elif name == "user":
        opts.uid, opts.user_name = parse_user(value, where)
    elif name == "format":
        if value not in FORMATS:
            raise UsageError(f"{where}: '{shown(value)}' is not one of {', '.join(FORMATS)}")
        opts.format = value
    elif name == "series_by":
        if value not in ("comm", "pid", "cgroup"):
            raise UsageError(f"{where}: '{value}' is not one of comm, pid, cgroup")
        opts.series_by = value
    elif name == "why":
        pid, _text = parse_target(value, where)
        if pid is None:
            raise UsageError(f"{where}: '{shown(value)}' is not a process id")
        opts.why = pid
    elif name == "plot_top":
        opts.plot_top = parse_count(value, where)
    elif name == "series_expiry":
        opts.series_expiry = parse_float(value, where)
    elif name in (
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
    ):
        if not value:
            raise UsageError(f"{where}: empty value")
        setattr(opts, name, value)
    else:  # pragma: no cover - the parser only produces the names above
        raise UsageError(f"unknown option {where}")


def to_rc(opts: Options) -> dict[str, str]:
    """The options as a config file's ``<options>`` block (every name of
    :data:`RC_OPTIONS`), for the live ``W`` key: reading the block back with
    :func:`apply_rc` gives the same values. ``watch_name`` and ``watch_uid`` (``-u``) only
    when set, as the original writes ``watch_name``."""
    rc: dict[str, str] = {}
    for name, opt in RC_OPTIONS.items():
        value = getattr(opts, opt.field)
        if opt.how in ("delay", "float"):
            rc[name] = repr(value)
        elif opt.how in ("name", "user"):
            if value is not None:
                rc[name] = str(value)
        else:
            rc[name] = str(int(value))
    return rc


def merge(rc: dict[str, str] | None, actions: list[Action]) -> tuple[Options, list[str]]:
    """Defaults < rc ``<options>`` < command line; returns the options and rc warnings."""
    opts = Options()
    warnings = apply_rc(opts, rc or {})
    apply_actions(opts, actions)
    return opts, warnings
