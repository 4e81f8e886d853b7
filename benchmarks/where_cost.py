"""What sampling one process costs the whole tiptop process: live mode on ``-p PID`` of a
busy program (tests/data/hotcold.c) in a detached tmux pane, its CPU time (utime + stime,
proc(5)) over a window of refreshes with the ``f`` window closed, then open; and batch
``--where PID`` over the same time.

    python3 benchmarks/where_cost.py [--seconds 20] [--delay 1]

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


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def live_cost(target: int, seconds: float, delay: float, keys: str) -> float:
    """CPU ms per refresh of live tiptop on ``-p target`` after ``keys`` were pressed."""
    session = f"where-cost-{os.getpid()}"
    env = f"PYTHONPATH={REPO}"
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
        before = cpu_seconds(pane)
        time.sleep(seconds)
        used = cpu_seconds(pane) - before
        return 1000 * used / (seconds / delay)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def batch_cost(target: int, seconds: float, delay: float) -> float:
    """CPU ms per refresh of ``tiptop -b --where target`` (start-up included, divided
    over the refreshes)."""
    n = int(seconds / delay)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "tiptop", "-b", "--where", str(target), "-n", str(n)]
    proc = subprocess.Popen([*argv, "-d", str(delay)], stdout=subprocess.DEVNULL, env=env)
    _pid, _status, usage = os.wait4(proc.pid, 0)
    return 1000 * (usage.ru_utime + usage.ru_stime) / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--delay", type=float, default=1)
    args = parser.parse_args()
    if shutil.which("tmux") is None or shutil.which("cc") is None:
        print("needs tmux and cc")
        return 1
    work = Path(tempfile.mkdtemp(prefix="where-cost-"))
    program = work / "hotcold"
    source = REPO / "tests" / "data" / "hotcold.c"
    subprocess.run(["cc", "-O1", "-o", str(program), str(source)], check=True)
    target = subprocess.Popen([str(program)], stdout=subprocess.PIPE)
    try:
        assert target.stdout is not None
        pid = int(target.stdout.readline())
        closed = live_cost(pid, args.seconds, args.delay, "")
        opened = live_cost(pid, args.seconds, args.delay, "f")
        batch = batch_cost(pid, args.seconds, args.delay)
        print(f"live -p PID, f window closed: {closed:6.1f} ms CPU per refresh")
        print(f"live -p PID, f window open:   {opened:6.1f} ms CPU per refresh")
        print(f"batch --where PID:            {batch:6.1f} ms CPU per refresh (start-up included)")
        print(f"load: {os.getloadavg()[0]:.2f}")
    finally:
        target.kill()
        target.wait()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
