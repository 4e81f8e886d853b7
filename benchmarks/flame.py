"""Where a batch refresh spends its CPU: py-spy flame graphs of ``tiptop -b -i`` at N
sleeping processes.

    python3 benchmarks/flame.py [--sizes 2000,5000] [--seconds 20] [--out benchmarks/flame]

For each size it starts N copies of ``sleep(1)`` (``procbench.start_tasks``), runs ours
as ``whole_process.py`` does (``-S default`` through the ``hw2sw.c`` shim where there is
no PMU, the soft fd limit raised to the hard one) with ``-b -i -d 0.1``, and once it has
printed 5 refreshes (start-up and the first attach behind it) samples it with py-spy for
``--seconds``: 250 samples a second, without stopping it (``--nonblocking``), idle time
left out. It writes ``OUT/batch-N.svg`` (the flame graph, open it in a browser), samples
again as collapsed stacks, and prints the frames below the refresh loop that hold the most
samples. py-spy is not a dependency of tiptop: ``pip install py-spy``.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from procbench import build_shim, make_tools, raise_fd_limit, start_tasks

#: Refreshes printed before sampling starts (each ends with one blank line).
WARM = 5


def wait_refreshes(out: Path, n: int, timeout: float = 120) -> None:
    """Until the batch output ``out`` shows ``n`` refreshes printed."""
    end = time.monotonic() + timeout
    while out.read_bytes().count(b"\n\n") < n:
        if time.monotonic() > end:
            raise RuntimeError(f"{out}: {n} refreshes not printed in {timeout:.0f} s")
        time.sleep(0.1)


def record(pid: int, seconds: float, fmt: str, path: Path) -> None:
    """py-spy's samples of ``pid`` over ``seconds``, in ``fmt`` (flamegraph or raw)."""
    what = ["--pid", str(pid), "--duration", str(int(seconds)), "--rate", "250"]
    how = ["--nonblocking", "--format", fmt, "-o", str(path)]
    subprocess.run(["py-spy", "record", *what, *how], check=True, capture_output=True)


#: Frames at or above the refresh loop (every sample passes through them): not printed.
OUTER = 0.85


def top_frames(collapsed: Path, k: int = 30) -> list[str]:
    """The ``k`` frames in the most samples (a frame counted once a stack) below the
    :data:`OUTER` ones, as lines: the share of samples that pass through it, the share
    where it is the innermost."""
    through: collections.Counter[str] = collections.Counter()
    inner: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        n = int(count)
        total += n
        frames = [re.sub(r" \(/\S*?/(tiptop/|numpy/)", r" (\1", f) for f in stack.split(";")]
        for f in set(frames):
            through[f] += n
        inner[frames[-1]] += n
    below = [(f, n) for f, n in through.most_common() if n < OUTER * total]
    return [f"{100 * n / total:5.1f}% {100 * inner[f] / total:5.1f}%  {f}" for f, n in below[:k]]


def profile(n: int, seconds: float, out_dir: Path, tmp: Path) -> None:
    """The flame graph and the collapsed stacks of ours at ``n`` sleeping processes."""
    shim, why = build_shim(tmp)
    (ours,) = [t for t in make_tools(shim, None, tmp / "rc") if t.label == "ours"]
    tasks = start_tasks("processes", n, tmp)
    out = tmp / "batch.out"
    try:
        time.sleep(0.5)
        with open(out, "wb") as sink:
            proc = subprocess.Popen(
                ours.command(["-b", "-i", "-d", "0.1"]), stdout=sink, env=ours.environ()
            )
        try:
            wait_refreshes(out, WARM)
            record(proc.pid, seconds, "flamegraph", out_dir / f"batch-{n}.svg")
            record(proc.pid, seconds, "raw", tmp / "collapsed.txt")
        finally:
            proc.terminate()
            proc.wait()
    finally:
        tasks.close()
    print(f"N={n} ({shim or why}): % of samples through a frame, % innermost")
    for line in top_frames(tmp / "collapsed.txt"):
        print("  " + line)


def main(argv: list[str] | None = None) -> int:
    """The command line: one flame graph per size."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="2000,5000")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "flame")
    a = ap.parse_args(argv)
    if shutil.which("py-spy") is None:
        print("flame.py: py-spy not found (pip install py-spy)", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    raise_fd_limit()
    with tempfile.TemporaryDirectory(prefix="tiptop-flame-") as d:
        tmp = Path(d)
        (tmp / "rc").mkdir()
        for n in (int(x) for x in a.sizes.split(",")):
            profile(n, a.seconds, a.out, tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
