"""The names of a configuration file's ``<options>``: one table, read by the loader (which
names are known) and by ``tiptop.options`` (how each applies, and the ``W`` key's export).

The original's rules (docs/screens.md, "Options"): options are applied before the command
line; some are OR-set, the others assigned.
"""

from __future__ import annotations

from tiptop.readonly import readonly

__all__ = ["HOW", "IGNORED_OPTIONS", "RC_OPTIONS", "RcOption"]

#: What each ``RcOption.how`` means.
HOW: dict[str, str] = {
    "or": "OR-set, the original's x = x || atoi(v): 1 switches on, 0 cannot switch off",
    "bool": "assign atoi(v) != 0",
    "delay": "assign seconds, as -d",
    "float": "assign a non-negative number",
    "count": "assign atoi(v), 0 when negative",
    "name": "assign a task name to watch (never a PID)",
    "user": "assign a user name or uid, as -u (it filters)",
}


@readonly
class RcOption:
    """How one ``<option name=...>`` applies: the ``tiptop.options.Options`` field it sets
    and how its text is read (a key of :data:`HOW`)."""

    field: str
    how: str


#: Every ``<option>`` name, in the order of docs/screens.md's table.
RC_OPTIONS: dict[str, RcOption] = {
    "delay": RcOption("delay", "delay"),
    "cpu_threshold": RcOption("cpu_threshold", "float"),
    "show_cmdline": RcOption("show_cmdline", "or"),
    "show_epoch": RcOption("show_epoch", "or"),
    "show_kernel": RcOption("show_kernel", "or"),
    "show_timestamp": RcOption("show_timestamp", "or"),
    "debug": RcOption("debug", "or"),
    "show_user": RcOption("show_user", "bool"),
    "show_threads": RcOption("show_threads", "bool"),
    "idle": RcOption("show_idle", "bool"),
    "sticky": RcOption("sticky", "bool"),
    "max_iter": RcOption("max_iter", "count"),
    "watch_name": RcOption("watch_name", "name"),
    "watch_uid": RcOption("uid", "user"),
}

#: Names the original's ``W`` export writes but never reads back: ignored without a note.
IGNORED_OPTIONS = frozenset({"batch", "only_pid", "only_name"})
