"""``--where PID``: the batch writer of one process's hottest functions per refresh, as
text (``  share%  symbol  module`` lines under a line saying what was sampled), csv (one
header line, one row per function) or json (one object per refresh); docs/tiptop.1.

Text and csv show the hottest functions and one ``[other]`` line for the rest
(``tiptop.where.report``, as the live window does); json carries every function."""

from __future__ import annotations

import csv
import json
import time
from typing import IO

from tiptop.choices import Format
from tiptop.outside import printable
from tiptop.where import Profile
from tiptop.where.report import profile_head, profile_lines

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

    def __init__(self, out: IO[str], fmt: Format, pid: int) -> None:
        self.out = out
        self.fmt = fmt
        self.pid = pid
        self.csv = csv.writer(out, lineterminator="\n") if fmt is Format.CSV else None

    def begin(self, now: float) -> None:
        """The csv header line; for text, one line naming the view."""
        if self.csv is not None:
            self.csv.writerow(_CSV_HEADER)
        elif self.fmt is Format.TEXT:
            self.out.write(f"tiptop --where {self.pid}: the hottest functions per refresh\n")

    def frame(self, profile: Profile, iteration: int) -> int:
        """Write one refresh; returns the lines written."""
        now = time.time()
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
            }
            self.out.write(json.dumps(rec) + "\n")
            return 1
        rows = profile_lines(profile)
        if self.csv is not None:
            base: list[float | str] = [round(now, 6), iteration, round(profile.interval, 6)]
            base.append(profile.pid)
            base += [profile.comm, profile.event, profile.samples, profile.lost]
            for share, symbol, module in rows:
                self.csv.writerow([*base, round(share, 3), symbol, module])
            return len(rows)
        stamp = time.strftime("%H:%M:%S", time.localtime(now))
        lines = [f"{stamp} {profile_head(profile)}"]
        for share, symbol, module in rows:
            lines.append(f"  {share:5.1f}%  {printable(symbol)}  {printable(module)}")
        self.out.write("\n".join(lines) + "\n\n")
        return len(lines)
