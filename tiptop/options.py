"""Every run-time option in one record, and the one place where sources are merged.

Order (tiptop-original.md sections 2 and 4.3): built-in defaults, then the rc file's
``<options>``, then the command line. As in the original, command-line *toggles invert*
the value the file set, options with a value replace it, and the file's ``show_cmdline``,
``show_epoch``, ``show_kernel``, ``show_timestamp`` and ``debug`` are OR-set (``x = x ||
atoi(v)``) while the others are assigned. Parsing the command line is :mod:`tiptop.cli`'s
job; it hands over a list of :class:`Action`. Imports only ``errors`` and ``table``.
"""

from __future__ import annotations

import math
import pwd
from collections.abc import Sequence
from dataclasses import dataclass, field

from tiptop.errors import UsageError
from tiptop.table import DEFAULT_CPU_THRESHOLD, View

#: Smallest accepted refresh delay in seconds (the original silently replaced smaller
#: values by 1; we refuse them with a message).
MIN_DELAY = 0.01

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
    # New in this implementation.
    format: str = "text"  # --format
    export: str | None = None  # --export FILE
    # One-shot actions (print and exit).
    help: bool = False
    version: bool = False
    legalese: bool = False  # --version
    list_screens: bool = False
    list_events: bool = False
    check: bool = False

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


@dataclass(frozen=True)
class Action:
    """One command-line item: ``kind`` is ``"toggle"`` (invert ``name``), ``"set"``
    (parse ``value`` for ``name``) or ``"flag"`` (set ``name`` to True)."""

    kind: str
    name: str
    value: str | None = None
    #: How the user wrote it, for messages (``-d``, ``--delay``).
    spelled: str = ""


# --------------------------------------------------------------------------- values


def parse_delay(text: str, where: str = "-d") -> float:
    """A refresh delay in seconds, at least :data:`MIN_DELAY`."""
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{where}: '{text}' is not a number of seconds") from None
    if not math.isfinite(value) or value < MIN_DELAY:
        raise UsageError(f"{where}: delay must be at least {MIN_DELAY} s (got '{text}')")
    return value


def parse_float(text: str, where: str) -> float:
    """A finite, non-negative float."""
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{where}: '{text}' is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{where}: '{text}' must be a non-negative number")
    return value


def parse_count(text: str, where: str) -> int:
    """A non-negative integer."""
    try:
        value = int(text, 10)
    except ValueError:
        raise UsageError(f"{where}: '{text}' is not a whole number") from None
    if value < 0:
        raise UsageError(f"{where}: '{text}' must not be negative")
    return value


def parse_user(text: str, where: str = "-u") -> tuple[int, str]:
    """``(uid, name)`` for a user name or numeric uid; a numeric uid without a passwd
    entry is accepted and shown as its number (the original hit an ``assert``)."""
    if text[:1].isdigit():
        try:
            uid = int(text, 10)
        except ValueError:
            raise UsageError(f"{where}: '{text}' is neither a user name nor a uid") from None
        try:
            return uid, pwd.getpwuid(uid).pw_name
        except KeyError:
            return uid, str(uid)
    try:
        entry = pwd.getpwnam(text)
    except KeyError:
        # The original's message (tiptop-original.md section 2, ``-u``).
        raise UsageError(f"User name '{text}' does not exist.") from None
    return entry.pw_uid, entry.pw_name


def parse_target(text: str) -> tuple[int | None, str | None]:
    """A ``-p``/``-w`` argument: a PID when it reads as a non-zero integer (the
    original's ``atoi(arg) != 0`` rule, without atoi's prefix parsing), else a name."""
    try:
        pid = int(text, 10)
    except ValueError:
        return None, text
    return (pid, None) if pid > 0 else (None, text)


def _atoi(text: str) -> int:
    """C ``atoi``: leading integer, 0 when there is none (the rc file's semantics)."""
    text = text.strip()
    digits = ""
    for i, ch in enumerate(text):
        if ch.isdigit() or (i == 0 and ch in "+-"):
            digits += ch
        else:
            break
    try:
        return int(digits)
    except ValueError:
        return 0


# --------------------------------------------------------------------------- rc file

#: rc options applied with ``x = x || atoi(v)`` (tiptop-original.md section 4.3).
_OR_SET = {
    "show_cmdline": "show_cmdline",
    "show_epoch": "show_epoch",
    "show_kernel": "show_kernel",
    "show_timestamp": "show_timestamp",
    "debug": "debug",
}
#: rc options assigned ``atoi(v) != 0``.
_ASSIGN_BOOL = {
    "show_user": "show_user",
    "show_threads": "show_threads",
    "idle": "show_idle",
    "sticky": "sticky",
}
#: Names the original's ``W`` dump writes but never reads back; ignored here too.
_IGNORED = {"batch", "only_pid", "only_name"}


def apply_rc(opts: Options, rc: dict[str, str]) -> list[str]:
    """Apply a config file's ``<options>`` to ``opts``; return one warning line per
    value that could not be used (unknown names are ignored, as in the original)."""
    warnings: list[str] = []
    for name, value in rc.items():
        try:
            if name in _OR_SET:
                attr = _OR_SET[name]
                setattr(opts, attr, getattr(opts, attr) or _atoi(value) != 0)
            elif name in _ASSIGN_BOOL:
                setattr(opts, _ASSIGN_BOOL[name], _atoi(value) != 0)
            elif name == "delay":
                opts.delay = parse_delay(value, "option 'delay'")
            elif name == "cpu_threshold":
                opts.cpu_threshold = parse_float(value, "option 'cpu_threshold'")
            elif name == "max_iter":
                opts.max_iter = max(_atoi(value), 0)
            elif name == "watch_name":
                opts.watch_name, opts.watch_pid = value, None
            elif name == "watch_uid":
                # The original's ``watch_uid || atoi(v)`` always gave uid 1; we take
                # the value as -u does (and, like -u here, it filters).
                opts.uid, opts.user_name = parse_user(value, "option 'watch_uid'")
            elif name in _IGNORED:
                continue
        except UsageError as exc:
            warnings.append(f"config file: {exc}, ignored")
    return warnings


# --------------------------------------------------------------------------- command line

# short letter -> (kind, field); kind "set" takes a value.
_SHORT = {
    "b": ("toggle", "batch"),
    "c": ("toggle", "show_cmdline"),
    "H": ("toggle", "show_threads"),
    "i": ("toggle", "show_idle"),
    "K": ("toggle", "show_kernel"),
    "U": ("toggle", "show_user"),
    "g": ("toggle", "debug"),
    "h": ("flag", "help"),
    "v": ("flag", "version"),
    "d": ("set", "delay"),
    "E": ("set", "error_file"),
    "n": ("set", "max_iter"),
    "o": ("set", "output"),
    "p": ("set", "only"),
    "S": ("set", "screen"),
    "u": ("set", "user"),
    "W": ("set", "config_dir"),
    "w": ("set", "watch"),
}
_LONG = {
    "cpu-min": ("set", "cpu_threshold"),
    "epoch": ("toggle", "show_epoch"),
    "help": ("flag", "help"),
    "kernel": ("toggle", "show_kernel"),
    "list-screens": ("flag", "list_screens"),
    "no-collect": ("clear", "collect"),
    "only-conf": ("flag", "only_conf"),
    "pid": ("set", "only"),
    "sticky": ("toggle", "sticky"),
    "timestamp": ("toggle", "show_timestamp"),
    "version": ("flag", "legalese"),
    "format": ("set", "format"),
    "list-events": ("flag", "list_events"),
    "check": ("flag", "check"),
    "export": ("set", "export"),
    # Long spellings of the short options (new).
    "batch": ("toggle", "batch"),
    "cmdline": ("toggle", "show_cmdline"),
    "delay": ("set", "delay"),
    "error-file": ("set", "error_file"),
    "threads": ("toggle", "show_threads"),
    "idle": ("toggle", "show_idle"),
    "iterations": ("set", "max_iter"),
    "output": ("set", "output"),
    "screen": ("set", "screen"),
    "user": ("set", "user"),
    "show-user": ("toggle", "show_user"),
    "config": ("set", "config_dir"),
    "watch": ("set", "watch"),
}


def parse_argv(argv: Sequence[str], *, ptiptop: bool = False) -> tuple[list[Action], list[str]]:
    """Command-line items in order, and the command after ``--``. Raises UsageError.

    Under ``ptiptop`` an argument that is not a recognised flag becomes a ``-p`` pattern.
    """
    actions: list[Action] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            command = args[i:]
            if not command:
                raise UsageError("no command after --")
            return actions, command
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            spec = _LONG.get(name)
            if spec is None:
                if ptiptop:
                    actions.append(Action("set", "only", arg, "pattern"))
                    continue
                raise UsageError(f"unknown option '{arg}' (see --help)")
            kind, field = spec
            if kind == "set":
                if not eq:
                    if i >= len(args):
                        raise UsageError(f"missing value after {arg}")
                    value = args[i]
                    i += 1
                actions.append(Action("set", field, value, f"--{name}"))
            elif eq:
                raise UsageError(f"option --{name} takes no value")
            else:
                actions.append(Action(kind, field, None, f"--{name}"))
            continue
        if arg.startswith("-") and len(arg) > 1:
            j = 1
            while j < len(arg):
                letter = arg[j]
                spec = _SHORT.get(letter)
                if spec is None:
                    if ptiptop:
                        actions.append(Action("set", "only", arg, "pattern"))
                        break
                    raise UsageError(f"unknown option '-{letter}' in '{arg}' (see --help)")
                kind, field = spec
                if kind == "set":
                    value = arg[j + 1 :]
                    if not value:
                        if i >= len(args):
                            raise UsageError(f"missing value after -{letter}")
                        value = args[i]
                        i += 1
                    actions.append(Action("set", field, value, f"-{letter}"))
                    break
                actions.append(Action(kind, field, None, f"-{letter}"))
                j += 1
            continue
        if ptiptop:
            actions.append(Action("set", "only", arg, "pattern"))
            continue
        raise UsageError(f"unexpected argument '{arg}' (a command to run goes after --)")
    return actions, []


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
    elif name == "only":
        opts.only_pid, opts.only_name = parse_target(value)
    elif name == "watch":
        opts.watch_pid, opts.watch_name = parse_target(value)
    elif name == "user":
        opts.uid, opts.user_name = parse_user(value, where)
    elif name == "format":
        if value not in FORMATS:
            raise UsageError(f"{where}: '{value}' is not one of {', '.join(FORMATS)}")
        opts.format = value
    elif name in ("screen", "output", "error_file", "config_dir", "export"):
        if not value:
            raise UsageError(f"{where}: empty value")
        setattr(opts, name, value)
    else:  # pragma: no cover - the parser only produces the names above
        raise UsageError(f"unknown option {where}")


def to_rc(opts: Options) -> dict[str, str]:
    """The options as a config file's ``<options>`` block (names of section 4.3), for the
    live ``W`` key: reading the block back with :func:`apply_rc` gives the same values.
    ``watch_name`` only when set, as the original writes it; ``-u`` as ``watch_uid``."""
    rc = {
        "delay": repr(opts.delay),
        "cpu_threshold": repr(opts.cpu_threshold),
        "max_iter": str(opts.max_iter),
        "show_cmdline": str(int(opts.show_cmdline)),
        "show_epoch": str(int(opts.show_epoch)),
        "show_kernel": str(int(opts.show_kernel)),
        "show_timestamp": str(int(opts.show_timestamp)),
        "show_user": str(int(opts.show_user)),
        "show_threads": str(int(opts.show_threads)),
        "idle": str(int(opts.show_idle)),
        "sticky": str(int(opts.sticky)),
        "debug": str(int(opts.debug)),
    }
    if opts.watch_name is not None:
        rc["watch_name"] = opts.watch_name
    if opts.uid is not None:
        rc["watch_uid"] = str(opts.uid)
    return rc


def merge(rc: dict[str, str] | None, actions: list[Action]) -> tuple[Options, list[str]]:
    """Defaults < rc ``<options>`` < command line; returns the options and rc warnings."""
    opts = Options()
    warnings = apply_rc(opts, rc or {})
    apply_actions(opts, actions)
    return opts, warnings
