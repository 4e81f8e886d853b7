"""``--why PID``: which screen shows the task's top-down tree, and the one line saying why
not when none can (no top-down screen for this CPU, or its events cannot count here: no
PMU); exit status 1 then, as for any run that cannot start."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from tiptop.cli.screens import ScreenSet
from tiptop.errors import TiptopError, UsageError
from tiptop.host import Host
from tiptop.options import Options
from tiptop.table.why import deeper, has_tree, why_screen

__all__ = ["why_setup"]


def why_setup(
    opts: Options, loaded: ScreenSet, host: Host, index: int, screen: Any
) -> tuple[Options, int, Any]:
    """The options that sample that process only and the ``(index, screen)`` that
    ``--why`` shows (``-S``'s when given, else ``topdown2`` or ``topdown``). Raises
    :class:`TiptopError` with one line when it cannot be shown."""
    from tiptop import diagnose

    pid = opts.why
    if opts.command:
        raise UsageError("--why takes the PID of a running process, not a command after --")
    if opts.format == "csv":
        raise UsageError("--why prints a tree: --format text or json, not csv")
    if not os.path.exists(f"{host.proc_root}/{pid}"):
        raise TiptopError(f"--why {pid}: no such process")
    if opts.screen is not None:
        if not has_tree(screen):
            raise TiptopError(
                f"--why {pid}: screen '{screen.name}' has no top-down tree on this CPU "
                "(no bottleneck column); leave -S out to use topdown2 or topdown"
            )
    else:
        found = why_screen(loaded.screens)
        if found is None:
            cpu = next((s.variant.cpu() for s in loaded.screens if s.variant), "this CPU")
            raise TiptopError(f"--why {pid}: no top-down screen with a tree for {cpu}")
        index, screen = found, loaded.screens[found]
    ok, total, reason = diagnose.screen_counters(screen, host)
    if total and not ok:
        raise TiptopError(f"--why {pid}: screen '{screen.name}' cannot count here ({reason})")
    more = deeper(screen, loaded.screens)
    opts = dataclasses.replace(
        opts,
        only_pid=pid,
        only_name=None,
        show_idle=True,
        why_note=f"(level 2 is on screen '{more}': -S {more})" if more else None,
    )
    return opts, index, screen
