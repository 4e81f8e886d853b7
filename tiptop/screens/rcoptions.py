"""The names of a configuration file's ``<options>``: one table, read by the loader (which
names are known) and by ``tiptop.options`` (how each applies, and the ``W`` key's export).

The original's rules (docs/screens.md, "Options"): options are applied before the command
line; some are OR-set, the others assigned.
"""

from __future__ import annotations

from enum import Enum

from tiptop.readonly import readonly

__all__ = ["HOW", "IGNORED_OPTIONS", "RC_OPTIONS", "How", "RcOption"]


class How(Enum):
    """How an ``<option>``'s text is read and applied (:data:`HOW` says it in words)."""

    OR = "or"
    BOOL = "bool"
    DELAY = "delay"
    FLOAT = "float"
    COUNT = "count"
    NAME = "name"
    USER = "user"


#: What each :class:`How` means.
HOW: dict[How, str] = {
    How.OR: "OR-set, the original's x = x || atoi(v): 1 switches on, 0 cannot switch off",
    How.BOOL: "assign atoi(v) != 0",
    How.DELAY: "assign seconds, as -d",
    How.FLOAT: "assign a non-negative number",
    How.COUNT: "assign atoi(v), 0 when negative",
    How.NAME: "assign a task name to watch (never a PID)",
    How.USER: "assign a user name or uid, as -u (it filters)",
}


@readonly
class RcOption:
    """How one ``<option name=...>`` applies: the ``tiptop.options.Options`` field it sets
    and how its text is read."""

    field: str
    how: How


#: Every ``<option>`` name, in the order of docs/screens.md's table.
RC_OPTIONS: dict[str, RcOption] = {
    "delay": RcOption("delay", How.DELAY),
    "cpu_threshold": RcOption("cpu_threshold", How.FLOAT),
    "show_cmdline": RcOption("show_cmdline", How.OR),
    "show_epoch": RcOption("show_epoch", How.OR),
    "show_kernel": RcOption("show_kernel", How.OR),
    "show_timestamp": RcOption("show_timestamp", How.OR),
    "debug": RcOption("debug", How.OR),
    "show_user": RcOption("show_user", How.BOOL),
    "show_threads": RcOption("show_threads", How.BOOL),
    "idle": RcOption("show_idle", How.BOOL),
    "sticky": RcOption("sticky", How.BOOL),
    "max_iter": RcOption("max_iter", How.COUNT),
    "watch_name": RcOption("watch_name", How.NAME),
    "watch_uid": RcOption("uid", How.USER),
}

#: Names the original's ``W`` export writes but never reads back: ignored without a note.
IGNORED_OPTIONS = frozenset({"batch", "only_pid", "only_name"})
