"""How long live mode takes to answer a key with N tasks (default 2000): the key handler
(which re-samples, re-sorts and re-filters through ``tiptop.table``) plus a full render of
a 120x40 screen to an urwid canvas. Frames are hand-built (no hardware needed).

Run: ``python3 benchmarks/keypress_latency.py [N]``; prints per-key and worst times in ms.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.live import new_app


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    app, _ = new_app(n=n, show_idle=True)
    app.widget.render((120, 40))
    times: dict[str, list[float]] = {}
    for _ in range(20):
        for key in (">", "<", "R", "i", "U", "x", "down", "end", "home"):
            t0 = time.perf_counter()
            app.on_key(key)
            app.widget.render((120, 40))
            times.setdefault(key, []).append((time.perf_counter() - t0) * 1000)
    for key, ts in times.items():
        print(f"{key!r:8} median {statistics.median(ts):7.2f} ms  max {max(ts):7.2f} ms")
    worst = max(max(ts) for ts in times.values())
    print(f"{n} tasks: worst key {worst:.2f} ms (budget 200 ms)")
    return 0 if worst < 200 else 1


if __name__ == "__main__":
    raise SystemExit(main())
