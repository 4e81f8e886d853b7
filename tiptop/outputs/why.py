"""``--why PID``: the batch writer that prints one task's top-down tree per refresh, as
text or (``--format json``) one JSON object per line (docs/tiptop.1, ``--why``)."""

from __future__ import annotations

import json
import time
from typing import IO, TYPE_CHECKING

from tiptop.choices import Format
from tiptop.frame import Frame
from tiptop.options import Options
from tiptop.table.why import TaskTree, task_tree, tree_lines, tree_record

if TYPE_CHECKING:
    from tiptop.screens.model import ScreenSpec

__all__ = ["OFF_CPU", "WhyWriter", "off_cpu"]

#: The part of the interval a task spends off CPU (waiting for one, blocked, asleep) past
#: which ``--why`` points to where it waits (``--where``'s waiting tree).
OFF_CPU = 50.0


def off_cpu(tree: TaskTree) -> bool:
    """Whether the task spent more than :data:`OFF_CPU` % of the interval off CPU, by its
    time level (its ``Run`` node's share; a process's threads summed, per thread)."""
    run = next((n.share for n in tree.nodes if n.label == "Run"), None)
    if not tree.timed or run is None or run != run:  # NaN: not known
        return False
    return run / max(tree.threads, 1.0) < 100.0 - OFF_CPU


class WhyWriter:
    """Per refresh, the tree of process ``options.why`` (a line saying so when the frame
    has no row for it: it did not run, or it ended)."""

    def __init__(
        self, out: IO[str], options: Options, screen: ScreenSpec, note: str | None = None
    ) -> None:
        self.out = out
        self.screen = screen
        self.pid = int(options.why or 0)
        self.json = options.format is Format.JSON
        #: Said once at the start: which levels this screen lacks, and where they are.
        self.note = note

    def begin(self, now: float) -> None:
        """A first line naming the screen (text only)."""
        if not self.json:
            line = f"tiptop --why {self.pid}: screen '{self.screen.name}' ({self.screen.desc})"
            self.out.write(line + "\n")
            if self.note:
                self.out.write(self.note + "\n")

    def frame(self, frame: Frame, iteration: int) -> int:
        """Write the task's tree for one refresh; returns the lines written."""
        tree = task_tree(frame, self.screen, self.pid)
        stamp = time.strftime("%H:%M:%S", time.localtime(frame.timestamp))
        if self.json:
            rec: dict[str, object] = {
                "timestamp": round(frame.timestamp, 6),
                "iteration": iteration,
                "screen": self.screen.name,
            }
            rec |= tree_record(tree) if tree else {"pid": self.pid, "nodes": None}
            self.out.write(json.dumps(rec, allow_nan=False) + "\n")
            return 1
        if tree is None:
            lines = [f"{stamp} PID {self.pid}: no row this refresh (not running, or ended)"]
        else:
            lines = tree_lines(tree)
            lines[0] = f"{stamp} {lines[0]}"
            if off_cpu(tree):
                lines.append(
                    f"   mostly off CPU: tiptop -b --where {self.pid} says where it waits "
                    "(its waiting tree: off-CPU time, as root)"
                )
        self.out.write("\n".join(lines) + "\n\n")
        return len(lines)
