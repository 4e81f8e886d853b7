"""What sampling one process costs the whole tiptop process: live mode on ``-p PID`` of a
busy program (tests/data/hotcold.c, built with frame pointers: its samples carry call
chains) in a detached tmux pane, its CPU time (utime + stime, proc(5)) over a window of
refreshes with the ``f`` window closed, then open; and batch ``--where PID`` over the same
time. With ``--before DIR`` (a checkout of an earlier commit: ``git worktree add --detach
DIR COMMIT``) the same runs of that tree come after each of ours, on the same target.

    python3 benchmarks/where_cost.py [--seconds 20] [--delay 1] [--before DIR]

Prints CPU milliseconds per refresh for each; figures go in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (proc(5), fields 14 and 15), in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mib(pid: int) -> float:
    """The resident memory of ``pid`` in MiB (``VmRSS``, proc(5))."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def live_cost(
    target: int, seconds: float, delay: float, keys: str, tree: Path = REPO
) -> tuple[float, float, float]:
    """CPU ms per refresh of live tiptop (of ``tree``) on ``-p target`` after ``keys``
    were pressed, and its resident memory (MiB) at the start and the end of the time
    measured."""
    session = f"where-cost-{os.getpid()}"
    env = f"PYTHONPATH={tree}"
    cmd = f"{env} {sys.executable} -m tiptop -p {target} -d {delay}"
    tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "50", cmd)
    try:
        time.sleep(4)  # start-up and the first refreshes
        pane = int(tmux("list-panes", "-t", session, "-F", "#{pane_pid}").strip())
        if keys:
            tmux("send-keys", "-t", session, keys)
            time.sleep(2 * delay)
            screen = tmux("capture-pane", "-p", "-t", session)
            assert "Hottest functions" in screen, screen
        before, rss_before = cpu_seconds(pane), rss_mib(pane)
        time.sleep(seconds)
        used = cpu_seconds(pane) - before
        return 1000 * used / (seconds / delay), rss_before, rss_mib(pane)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def batch_cost(target: int, seconds: float, delay: float, tree: Path = REPO) -> float:
    """CPU ms per refresh of ``tiptop -b --where target`` (of ``tree``; start-up included,
    divided over the refreshes)."""
    n = int(seconds / delay)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    argv = [sys.executable, "-m", "tiptop", "-b", "--where", str(target), "-n", str(n)]
    proc = subprocess.Popen([*argv, "-d", str(delay)], stdout=subprocess.DEVNULL, env=env)
    _pid, _status, usage = os.wait4(proc.pid, 0)
    return 1000 * (usage.ru_utime + usage.ru_stime) / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--delay", type=float, default=1)
    parser.add_argument("--before", type=Path, help="a checkout to measure after ours")
    args = parser.parse_args()
    if shutil.which("tmux") is None or shutil.which("cc") is None:
        print("needs tmux and cc")
        return 1
    work = Path(tempfile.mkdtemp(prefix="where-cost-"))
    program = work / "hotcold"
    source = REPO / "tests" / "data" / "hotcold.c"
    frames = "-fno-omit-frame-pointer"
    subprocess.run(["cc", "-O1", frames, "-o", str(program), str(source)], check=True)
    target = subprocess.Popen([str(program)], stdout=subprocess.PIPE)
    try:
        assert target.stdout is not None
        pid = int(target.stdout.readline())
        trees = [("ours", REPO)] + ([("before", args.before)] if args.before else [])
        for what, keys in (
            ("live -p PID, f window closed", ""),
            ("live -p PID, f window open", "f"),
        ):
            for name, tree in trees:
                ms, first, last = live_cost(pid, args.seconds, args.delay, keys, tree)
                memory = f"RSS {first:.1f} -> {last:.1f} MiB"
                print(f"{what:30} {name:6}: {ms:6.1f} ms CPU per refresh, {memory}", flush=True)
        for name, tree in trees:
            ms = batch_cost(pid, args.seconds, args.delay, tree)
            said = f"{ms:6.1f} ms CPU per refresh (start-up included)"
            print(f"{'batch --where PID':30} {name:6}: {said}")
        print(f"load: {os.getloadavg()[0]:.2f}")
    finally:
        target.kill()
        target.wait()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
