"""The command line as a list of :class:`Action` (docs/original.md section 1).

Every option of the original, the modern spellings (``--delay=2``, ``-d2``, clustered
``-bi``), and long names for the short options. Items are kept in order so that toggles
given twice cancel, as in the original; applying them is :mod:`tiptop.options`' job.
"""

from __future__ import annotations

from collections.abc import Sequence

from tiptop.errors import UsageError
from tiptop.outside import shown
from tiptop.readonly import readonly


@readonly
class Action:
    """One command-line item: ``kind`` is ``"toggle"`` (invert ``name``), ``"set"``
    (parse ``value`` for ``name``), ``"flag"`` (set ``name`` to True) or ``"clear"``
    (set it to False)."""

    kind: str
    name: str
    value: str | None = None
    #: How the user wrote it, for messages (``-d``, ``--delay``).
    spelled: str = ""


# short letter -> (kind, field); kind "set" takes a value.
SHORT = {
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
LONG = {
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
    "selftest": ("flag", "selftest"),
    "export": ("set", "export"),
    "record": ("set", "record"),
    "replay": ("set", "replay"),
    "from": ("set", "time_from"),
    "to": ("set", "time_to"),
    "plot": ("set", "plot"),
    "column": ("set", "plot_column"),
    "top": ("set", "plot_top"),
    "serve": ("set", "serve"),
    "textfile": ("set", "textfile"),
    "web-config": ("set", "web_config"),
    "series-expiry": ("set", "series_expiry"),
    "by": ("set", "series_by"),
    "why": ("set", "why"),
    "where": ("set", "where"),
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
                actions.append(Action("set", "only", arg, "pattern"))
                continue
            kind, field = spec
            spelled = f"--{name}"
            if kind == "set":
                value = args.value_for(spelled, attached if eq else None)
                actions.append(Action("set", field, value, spelled))
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
                    actions.append(Action("set", "only", arg, "pattern"))
                    break
                kind, field = spec
                if kind == "set":
                    value = args.value_for(f"-{letter}", arg[j + 1 :] or None)
                    actions.append(Action("set", field, value, f"-{letter}"))
                    break
                actions.append(Action(kind, field, None, f"-{letter}"))
        elif ptiptop:
            actions.append(Action("set", "only", arg, "pattern"))
        else:
            raise UsageError(f"unexpected argument '{shown(arg)}' (a command to run goes after --)")
    return actions, []
