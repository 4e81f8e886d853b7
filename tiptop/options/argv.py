"""The command line as a list of :class:`Action` (docs/original.md section 1).

Every option of the original, the modern spellings (``--delay=2``, ``-d2``, clustered
``-bi``), and long names for the short options. Items are kept in order so that toggles
given twice cancel, as in the original; applying them is :mod:`tiptop.options`' job.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from tiptop.errors import UsageError
from tiptop.outside import shown
from tiptop.readonly import readonly


class Act(Enum):
    """What a command-line item does to its field."""

    #: Invert it (the original's toggles: they invert the configuration file's value).
    TOGGLE = "toggle"
    #: Parse the item's value into it.
    SET = "set"
    #: Set it to True.
    FLAG = "flag"
    #: Set it to False.
    CLEAR = "clear"


@readonly
class Action:
    """One command-line item: what it does (``kind``) to field ``name``."""

    kind: Act
    name: str
    value: str | None = None
    #: How the user wrote it, for messages (``-d``, ``--delay``).
    spelled: str = ""


# short letter -> (kind, field); Act.SET takes a value.
SHORT = {
    "b": (Act.TOGGLE, "batch"),
    "c": (Act.TOGGLE, "show_cmdline"),
    "H": (Act.TOGGLE, "show_threads"),
    "i": (Act.TOGGLE, "show_idle"),
    "K": (Act.TOGGLE, "show_kernel"),
    "U": (Act.TOGGLE, "show_user"),
    "g": (Act.TOGGLE, "debug"),
    "h": (Act.FLAG, "help"),
    "v": (Act.FLAG, "version"),
    "d": (Act.SET, "delay"),
    "E": (Act.SET, "error_file"),
    "n": (Act.SET, "max_iter"),
    "o": (Act.SET, "output"),
    "p": (Act.SET, "only"),
    "S": (Act.SET, "screen"),
    "u": (Act.SET, "user"),
    "W": (Act.SET, "config_dir"),
    "w": (Act.SET, "watch"),
}
LONG = {
    "cpu-min": (Act.SET, "cpu_threshold"),
    "epoch": (Act.TOGGLE, "show_epoch"),
    "help": (Act.FLAG, "help"),
    "kernel": (Act.TOGGLE, "show_kernel"),
    "list-screens": (Act.FLAG, "list_screens"),
    "no-collect": (Act.CLEAR, "collect"),
    "only-conf": (Act.FLAG, "only_conf"),
    "pid": (Act.SET, "only"),
    "sticky": (Act.TOGGLE, "sticky"),
    "timestamp": (Act.TOGGLE, "show_timestamp"),
    "version": (Act.FLAG, "legalese"),
    "format": (Act.SET, "format"),
    "list-events": (Act.FLAG, "list_events"),
    "check": (Act.FLAG, "check"),
    "selftest": (Act.FLAG, "selftest"),
    "export": (Act.SET, "export"),
    "record": (Act.SET, "record"),
    "replay": (Act.SET, "replay"),
    "from": (Act.SET, "time_from"),
    "to": (Act.SET, "time_to"),
    "plot": (Act.SET, "plot"),
    "column": (Act.SET, "plot_column"),
    "top": (Act.SET, "plot_top"),
    "serve": (Act.SET, "serve"),
    "textfile": (Act.SET, "textfile"),
    "web-config": (Act.SET, "web_config"),
    "runtime-root": (Act.SET, "runtime_root"),
    "task-counters": (Act.FLAG, "task_counters"),
    "series-expiry": (Act.SET, "series_expiry"),
    "by": (Act.SET, "series_by"),
    "why": (Act.SET, "why"),
    "where": (Act.SET, "where"),
    "depth": (Act.SET, "where_depth"),
    "min-share": (Act.SET, "where_min_share"),
    "top-down": (Act.TOGGLE, "where_top_down"),
    "folded": (Act.SET, "folded"),
    # Long spellings of the short options (new).
    "batch": (Act.TOGGLE, "batch"),
    "cmdline": (Act.TOGGLE, "show_cmdline"),
    "delay": (Act.SET, "delay"),
    "error-file": (Act.SET, "error_file"),
    "threads": (Act.TOGGLE, "show_threads"),
    "idle": (Act.TOGGLE, "show_idle"),
    "iterations": (Act.SET, "max_iter"),
    "output": (Act.SET, "output"),
    "screen": (Act.SET, "screen"),
    "user": (Act.SET, "user"),
    "show-user": (Act.TOGGLE, "show_user"),
    "config": (Act.SET, "config_dir"),
    "watch": (Act.SET, "watch"),
}


class _Args:
    """The argument list being consumed, for options whose value is the next word."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.args = list(argv)
        self.i = 0

    def next(self) -> str | None:
        if self.i >= len(self.args):
            return None
        self.i += 1
        return self.args[self.i - 1]

    def value_for(self, spelled: str, attached: str | None) -> str:
        """The option's value: ``attached`` (``-d2``, ``--delay=2``) or the next word."""
        if attached is not None:
            return attached
        value = self.next()
        if value is None:
            raise UsageError(f"missing value after {spelled}")
        return value


def parse_argv(argv: Sequence[str], *, ptiptop: bool = False) -> tuple[list[Action], list[str]]:
    """Command-line items in order, and the command after ``--``. Raises UsageError.

    Under ``ptiptop`` an argument that is not a recognised flag becomes a ``-p`` pattern.
    """
    actions: list[Action] = []
    args = _Args(argv)
    while (arg := args.next()) is not None:
        if arg == "--":
            command = args.args[args.i :]
            if not command:
                raise UsageError("no command after --")
            if not command[0]:  # execvp(3) cannot run an empty name (Python: ValueError)
                raise UsageError("empty command name after --")
            return actions, command
        if arg.startswith("--"):
            name, eq, attached = arg[2:].partition("=")
            spec = LONG.get(name)
            if spec is None:
                if not ptiptop:
                    raise UsageError(f"unknown option '{shown(arg)}' (see --help)")
                actions.append(Action(Act.SET, "only", arg, "pattern"))
                continue
            kind, field = spec
            spelled = f"--{name}"
            if kind is Act.SET:
                value = args.value_for(spelled, attached if eq else None)
                actions.append(Action(Act.SET, field, value, spelled))
            elif eq:
                raise UsageError(f"option {spelled} takes no value")
            else:
                actions.append(Action(kind, field, None, spelled))
        elif arg.startswith("-") and len(arg) > 1:
            for j, letter in enumerate(arg[1:], start=1):
                spec = SHORT.get(letter)
                if spec is None:
                    if not ptiptop:
                        raise UsageError(
                            f"unknown option '-{shown(letter)}' in '{shown(arg)}' (see --help)"
                        )
                    actions.append(Action(Act.SET, "only", arg, "pattern"))
                    break
                kind, field = spec
                if kind is Act.SET:
                    value = args.value_for(f"-{letter}", arg[j + 1 :] or None)
                    actions.append(Action(Act.SET, field, value, f"-{letter}"))
                    break
                actions.append(Action(kind, field, None, f"-{letter}"))
        elif ptiptop:
            actions.append(Action(Act.SET, "only", arg, "pattern"))
        else:
            raise UsageError(f"unexpected argument '{shown(arg)}' (a command to run goes after --)")
    return actions, []
