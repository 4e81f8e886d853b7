"""``--plot`` of a long recording: wall and CPU time and peak memory of
``python -m tiptop --plot FILE -o x.png`` on a recording of N refreshes.

    python3 benchmarks/plot_day.py [--refreshes 200000] [--gzip]

The recording is the golden file's first refreshes (tests/data/recording-v1.jsonl: three
tasks, the ``default`` screen) written again through the real ``Recorder``, half a second
apart; the plot draws their IPC (issue 38: 200,000 refreshes in under 30 s).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tiptop import recording  # noqa: E402  (the repository's, whatever is installed)


def write(path: str, refreshes: int) -> None:
    """``refreshes`` refreshes of the golden file's three tasks, 0.5 s apart."""
    rec = recording.load(str(REPO / "tests" / "data" / "recording-v1.jsonl"))
    screen = rec.screens[0]
    frames = [recording.decode(rec, i, screen) for i in range(3)]
    writer = recording.Recorder(path, {"started": 1.9e9, "interval": 0.5})
    for i in range(refreshes):
        f = frames[i % 3]
        f.timestamp = 1.9e9 + i * 0.5
        writer.write(f, screen)
    writer.close()


def main() -> None:
    """Write the recording, plot it, print the figures."""
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("--refreshes", type=int, default=200_000)
    args.add_argument("--gzip", action="store_true")
    opts = args.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "day.jsonl" + (".gz" if opts.gzip else ""))
        write(path, opts.refreshes)
        env = dict(os.environ, PYTHONPATH=str(REPO))
        start = time.monotonic()
        r = subprocess.run(
            [sys.executable, "-m", "tiptop", "--plot", path, "-o", os.path.join(tmp, "x.png")],
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - start
        use = resource.getrusage(resource.RUSAGE_CHILDREN)
        size = os.path.getsize(path) / 1e6
        print(
            f"{opts.refreshes} refreshes ({size:.0f} MB): rc {r.returncode}, "
            f"wall {wall:.1f} s, CPU {use.ru_utime + use.ru_stime:.1f} s, "
            f"peak RSS {use.ru_maxrss / 1024:.0f} MB, load {os.getloadavg()[0]:.1f}"
        )
        if r.returncode:
            print(r.stderr, end="")


if __name__ == "__main__":
    main()
