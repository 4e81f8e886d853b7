"""``--why PID``: which screen shows the task's tree: the top-down tree beneath where its time
went where a PMU counts, where its time went alone (the ``state`` screen) where none does,
said in one line; a refusal (no such process, a screen without a tree) is one line and exit
status 1, as for any run that cannot start."""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING

from tiptop.cli.screens import ScreenSet
from tiptop.errors import TiptopError
from tiptop.host import Host
from tiptop.options import Options
from tiptop.table.why import deeper, has_tree, time_screen, why_screen

if TYPE_CHECKING:
    from tiptop.screens.model import ScreenSpec

__all__ = ["why_setup"]


def why_setup(
    opts: Options, loaded: ScreenSet, host: Host, index: int, screen: ScreenSpec
) -> tuple[Options, int, ScreenSpec]:
    """The options that sample that process only and the ``(index, screen)`` that
    ``--why`` shows: ``-S``'s when given; else ``topdown2`` or ``topdown`` where it counts
    here, and where none does, ``state`` (where the task's time went, with no PMU), with a
    note on what the hardware would add. Raises :class:`TiptopError` with one line when
    nothing can be shown."""
    pid = opts.why
    if not os.path.exists(f"{host.proc_root}/{pid}"):
        raise TiptopError(f"--why {pid}: no such process")
    note = None
    if opts.screen is not None:
        if not has_tree(screen):
            raise TiptopError(
                f"--why {pid}: screen '{screen.name}' has no bottleneck tree "
                "(no bottleneck column); leave -S out to use topdown2, topdown or state"
            )
    else:
        index, screen, note = _pick(loaded, host, int(pid or 0))
    more = deeper(screen, loaded.screens)
    if more and note is None:
        note = f"(level 2 is on screen '{more}': -S {more})"
    opts = dataclasses.replace(opts, only_pid=pid, only_name=None, show_idle=True, why_note=note)
    return opts, index, screen


def _pick(loaded: ScreenSet, host: Host, pid: int) -> tuple[int, ScreenSpec, str | None]:
    """``topdown2`` or ``topdown`` where one has a tree and counts here; else the time
    screen and the one line saying what the hardware would add, and why it cannot."""
    from tiptop import diagnose

    found = why_screen(loaded.screens)
    if found is None:
        cpu = next((s.variant.cpu() for s in loaded.screens if s.variant), "this CPU")
        missing = f"tiptop has no top-down screen for {cpu}"
    else:
        ok, total, reason = diagnose.screen_counters(loaded.screens[found], host)
        if not total or ok:
            return found, loaded.screens[found], None
        missing = reason.partition(": ")[2] or reason  # the reason, not the counter's alias
    timed = time_screen(loaded.screens)
    if timed is None:
        raise TiptopError(f"--why {pid}: no screen with a tree can count here ({missing})")
    note = (
        "(where its time goes, from the kernel's accounting; where it runs, a "
        "hardware PMU would split that time into front end, bad speculation, back "
        f"end and retiring: {missing}; --where {pid} says in which functions)"
    )
    return timed, loaded.screens[timed], note
