"""``--where PID``: the batch writer of one process's hottest functions and their call
tree per refresh, as text (``  share%  symbol  module`` lines, indented two spaces a level,
under a line saying what was sampled), csv (one header line, one row per function) or json
(one object per refresh); docs/tiptop.1.

Text shows the tree (``tiptop.where.report``, as the live window does: bottom-up unless
``--top-down``, cut at ``--depth`` levels and ``--min-share``), its first level the
hottest functions and one ``[other]`` line for the rest; csv the hottest functions; json
every function, every stack and the tree as cut."""

from __future__ import annotations

import csv
import dataclasses
import json
import time
from typing import IO

from tiptop.choices import Format
from tiptop.outputs.folded import FoldedFile
from tiptop.where import Profile
from tiptop.where.calltree import TreeRow
from tiptop.where.report import (
    TreeCut,
    profile_head,
    profile_lines,
    profile_stacks,
    profile_tree,
    row_text,
    waiting_tree,
)

__all__ = ["WhereWriter"]

_CSV_HEADER = (
    "timestamp",
    "iteration",
    "interval",
    "pid",
    "command",
    "event",
    "samples",
    "lost",
    "share",
    "symbol",
    "module",
)


class WhereWriter:
    """Per refresh, the hottest functions of the profiled process in ``fmt``."""

    def __init__(
        self,
        out: IO[str],
        fmt: Format,
        pid: int,
        cut: TreeCut | None = None,
        folded: FoldedFile | None = None,
    ) -> None:
        self.out = out
        self.fmt = fmt
        self.pid = pid
        self.cut = cut or TreeCut()
        #: ``--folded``'s file, which each refresh's stacks go to as well.
        self.folded = folded
        self.csv = csv.writer(out, lineterminator="\n") if fmt is Format.CSV else None

    def begin(self, now: float) -> None:
        """The csv header line; for text, one line naming the view."""
        if self.csv is not None:
            self.csv.writerow(_CSV_HEADER)
        elif self.fmt is Format.TEXT:
            self.out.write(
                f"tiptop --where {self.pid}: the hottest functions per refresh, as a tree "
                f"({self.cut.view.words})\n"
            )

    def frame(self, profile: Profile, iteration: int) -> int:
        """Write one refresh; returns the lines written."""
        now = time.time()
        if self.folded is not None:
            self.folded.add(profile)
        if self.fmt is Format.JSON:
            rec = {
                "timestamp": round(now, 6),
                "iteration": iteration,
                "interval": round(profile.interval, 6),
                "pid": profile.pid,
                "command": profile.comm,
                "event": profile.event,
                "rate_hz": profile.rate_hz,
                "samples": profile.samples,
                "lost": profile.lost,
                "exited": profile.exited,
                "functions": [
                    {
                        "share": round(profile.share(h), 3),
                        "samples": h.samples,
                        "symbol": h.symbol,
                        "module": h.module,
                    }
                    for h in profile.hot
                ],
                "stacks": [
                    {"samples": st.weight, "frames": [list(site) for site in st.frames]}
                    for st in profile.stacks
                ],
                "view": self.cut.view.value,
                "tree": self._tree(self._rows(profile)),
                "waiting": self._waiting(profile),
            }
            self.out.write(json.dumps(rec) + "\n")
            return 1
        if self.csv is not None:
            rows = profile_lines(profile)
            base: list[float | str] = [round(now, 6), iteration, round(profile.interval, 6)]
            base.append(profile.pid)
            base += [profile.comm, profile.event, profile.samples, profile.lost]
            for share, symbol, module in rows:
                self.csv.writerow([*base, round(share, 3), symbol, module])
            return len(rows)
        stamp = time.strftime("%H:%M:%S", time.localtime(now))
        lines = [f"{stamp} {profile_head(profile)}"]
        for row in (*self._rows(profile), *self._waiting_rows(profile)):
            lines.append(f"  {row_text(row)}")
        self.out.write("\n".join(lines) + "\n\n")
        return len(lines)

    def _rows(self, profile: Profile) -> list[TreeRow | tuple[float, str, str]]:
        cut = self.cut
        stacks = profile_stacks(profile)
        return profile_tree(stacks, cut)

    def _waiting_rows(self, profile: Profile) -> list[TreeRow | tuple[float, str, str]]:
        return waiting_tree(profile, self.cut)

    def _waiting(self, profile: Profile) -> dict[str, object] | None:
        """Off-CPU: the time waited, its stacks (ns) and its tree as cut (the rows beneath
        the ``waiting`` root); None where it was not sampled."""
        if not profile.offcpu:
            return None
        beneath = [
            row if isinstance(row, tuple) else dataclasses.replace(row, depth=row.depth - 1)
            for row in self._waiting_rows(profile)[1:]
        ]
        return {
            "seconds": round(profile.waited / 1e9, 6),
            "switches": profile.switches,
            "lost": profile.waits_lost,
            "stacks": [
                {"ns": st.weight, "frames": [list(site) for site in st.frames]}
                for st in profile.waiting
            ],
            "tree": self._tree(beneath, "ns"),
        }

    def _tree(
        self, rows: list[TreeRow | tuple[float, str, str]], weight: str = "samples"
    ) -> list[dict[str, object]]:
        """A tree's rows as cut, nested: per node its symbol, module, its ``weight``
        (``samples``, or ``ns`` off CPU), share and ``children``; an ``[other]`` row as a
        node without children."""
        top: list[dict[str, object]] = []
        parents: list[list[dict[str, object]]] = [top]
        for row in rows:
            if isinstance(row, tuple):
                share, symbol, module = row
                top.append({"symbol": symbol, "module": module, "share": round(share, 3)})
                continue
            children: list[dict[str, object]] = []
            symbol, module = row.site
            node = {
                "symbol": symbol,
                "module": module,
                weight: row.weight,
                "share": round(row.share, 3),
                "children": children,
            }
            del parents[row.depth + 1 :]
            parents[row.depth].append(node)
            parents.append(children)
        return top
