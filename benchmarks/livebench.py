"""Live-mode, idle and start-up measurements for ``whole_process.py``.

Live mode runs in a real terminal: a detached tmux session of 200x50 (its own server socket,
no status line, panes kept after their command exits so that an error stays readable). The
tool is ``exec``'ed as the pane's process, so the pane PID is the tool's PID, and its CPU is
read from ``/proc/PID/task/*/schedstat`` (run time in ns, proc(5)), falling back to the
``utime``/``stime`` ticks of ``/proc/PID/stat``.
"""

from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from procbench import ITERATION, Tool, cpu_ns, rotation, run_retrying

TMUX_CONF = "set -g remain-on-exit on\nset -g status off\nset -g default-size 200x50\n"


class Tmux:
    """A private tmux server whose windows are 200x50 terminals running one tool each."""

    def __init__(self, tmp: Path, name: str = "tiptop-bench") -> None:
        conf = tmp / "tmux.conf"
        conf.write_text(TMUX_CONF)
        self.base = ["tmux", "-L", f"{name}-{os.getpid()}", "-f", str(conf)]
        self.started = False

    def _tmux(self, *args: str) -> str:
        r = subprocess.run([*self.base, *args], capture_output=True, text=True, check=True)
        return r.stdout

    def start(self, tool: Tool, args: list[str]) -> tuple[str, int]:
        """Run ``tool`` with ``args`` in a new window: (the window's id, the tool's PID)."""
        env = [f"{k}={v}" for k, v in tool.env.items()]
        line = "exec " + shlex.join(["env", *env, *tool.command(args)])
        if not self.started:  # a window that stays, so the session outlives the tools'
            hold = ["-n", "hold", "exec sleep 86400"]
            self._tmux("new-session", "-d", "-x", "200", "-y", "50", "-s", "bench", *hold)
            self.started = True
        fmt = "#{window_id} #{pane_pid}"
        out = self._tmux("new-window", "-d", "-t", "bench", "-P", "-F", fmt, line)
        window, pid = out.split()
        return window, int(pid)

    def screen(self, window: str) -> str:
        """The text on ``window``'s screen now."""
        return self._tmux("capture-pane", "-p", "-t", window)

    def dead(self, window: str) -> bool:
        """Whether the tool in ``window`` has exited."""
        return self._tmux("display-message", "-p", "-t", window, "#{pane_dead}") == "1\n"

    def iteration(self, window: str) -> int:
        """The ``Iteration:`` counter (``--timestamp``) on ``window``'s screen, -1 if none."""
        m = ITERATION.search(self.screen(window))
        return int(m.group(1)) if m else -1

    def wait_past(self, window: str, above: int, timeout: float) -> int:
        """Poll until ``window``'s counter exceeds ``above``; the new value, right after the
        screen changed. Raises RuntimeError with the screen if the tool died or timed out."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            it = self.iteration(window)
            if it > above:
                return it
            if self.dead(window):
                break
            time.sleep(0.01)
        lines = [ln.strip() for ln in self.screen(window).splitlines() if ln.strip()]
        why = self._tmux("display-message", "-p", "-t", window, "#{pane_dead_status}").strip()
        raise RuntimeError(f"no refresh past {above} (exit {why or '-'}): {' / '.join(lines[-3:])}")

    def kill(self, window: str) -> None:
        """Close ``window`` (and the tool in it)."""
        subprocess.run([*self.base, "kill-window", "-t", window], capture_output=True)

    def close(self) -> None:
        """Stop the server and remove its socket."""
        if not self.started:
            return
        sock = self._tmux("display-message", "-p", "#{socket_path}").strip()
        subprocess.run([*self.base, "kill-server"], capture_output=True)
        if sock:
            Path(sock).unlink(missing_ok=True)


@dataclass
class LiveResult:
    """CPU per refresh of a tool in a terminal, over ``refreshes`` counted refreshes."""

    ms: float
    refreshes: int


def measure_live(
    tmux: Tmux, tool: Tool, args: list[str], seconds: float, timeout: float = 180
) -> LiveResult | str:
    """CPU per refresh of ``tool`` (``args`` + ``--timestamp``) in a tmux window, between
    two screen updates about ``seconds`` apart, after its second refresh; or why not."""
    window, pid = tmux.start(tool, [*args, "--timestamp"])
    try:
        it = tmux.wait_past(window, 1, timeout)
        it0 = tmux.wait_past(window, it, timeout)
        c0 = cpu_ns(pid)
        time.sleep(seconds)
        it1 = tmux.wait_past(window, tmux.iteration(window), timeout)
        c1 = cpu_ns(pid)
    except RuntimeError as e:
        return str(e)
    except OSError as e:  # the tool exited between two screens
        return f"{tool.label} exited: {e}; screen: {tmux.screen(window)[-300:]!r}"
    finally:
        tmux.kill(window)
    return LiveResult((c1 - c0) / 1e6 / (it1 - it0), it1 - it0)


def measure_idle(
    tmux: Tmux, tools: list[Tool], args: list[str], seconds: float, timeout: float = 180
) -> dict[str, float | str]:
    """CPU % of one core used by each tool over ``seconds`` in live mode with ``args``,
    all tools side by side in their own windows, after each has refreshed twice."""
    panes = {t.label: tmux.start(t, [*args, "--timestamp"]) for t in tools}
    res: dict[str, float | str] = {}
    try:
        for label, (window, _) in panes.items():
            try:
                tmux.wait_past(window, 1, timeout)
            except RuntimeError as e:
                res[label] = str(e)
        live = [k for k in panes if k not in res]
        t0, c0 = time.monotonic(), {k: cpu_ns(panes[k][1]) for k in live}
        time.sleep(seconds)
        t1, c1 = time.monotonic(), {k: cpu_ns(panes[k][1]) for k in live}
        for k in live:
            res[k] = (c1[k] - c0[k]) / 1e9 / (t1 - t0) * 100
    finally:
        for window, _ in panes.values():
            tmux.kill(window)
    return res


#: The label of the floor's runs among the start-up runs.
FLOOR = "floor"

#: What every start of ours pays before its own code: the interpreter with its site, and
#: the dependencies a ``tiptop -b -n 1`` imports (``python3 -X importtime``: numpy, as
#: tiptop imports it, OpenBLAS at one thread, ``tiptop/__init__.py``; cffi's compiled
#: backend, which the out-of-line binding loads without the cffi package). Not psutil: a
#: batch run does not import it, and a floor holding it would credit ours with its cost.
FLOOR_CODE = "import numpy, _cffi_backend"


def floor_tool(preload: dict[str, str], code: str = FLOOR_CODE) -> Tool:
    """``python3 -c CODE`` as a tool run beside the others, with their preload (``preload``:
    the shim, which ours loads too and a user's tiptop does not)."""
    return Tool(FLOOR, (sys.executable, "-c", code), {**preload, "OPENBLAS_NUM_THREADS": "1"})


def floor_run(floor: Tool) -> float:
    """CPU ms (user + system, wait4(2)) of one run of ``floor`` (no arguments, no output)."""
    cmd = floor.command([])
    pid = os.posix_spawn(cmd[0], cmd, floor.environ())
    _, status, ru = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{shlex.join(cmd)} exited {os.waitstatus_to_exitcode(status)}")
    return (ru.ru_utime + ru.ru_stime) * 1e3


@dataclass
class StartUp:
    """CPU ms of each round's whole run of each tool, the floor's among them (a round's
    runs follow each other), and the tools that failed."""

    rounds: list[dict[str, float]]
    errors: dict[str, str]

    def median(self, label: str) -> float | str:
        """The median of ``label``'s runs; its error when it failed."""
        if label in self.errors:
            return self.errors[label]
        return statistics.median(r[label] for r in self.rounds)

    def above_floor(self, label: str) -> float | str:
        """The median over the rounds of ``label``'s run less the floor's in the same round:
        the machine's speed, which moves by the minute on a shared VM, moves both alike,
        which a difference of two medians taken over the whole run does not undo."""
        if label in self.errors:
            return self.errors[label]
        return statistics.median(r[label] - r[FLOOR] for r in self.rounds)


def measure_startup(
    tools: list[Tool], floor: Tool, args: list[str], repeats: int, out: Path
) -> StartUp:
    """CPU of ``repeats`` whole ``-b -n 1`` runs (start-up, first refresh, exit) of each
    tool, and as many of ``floor``, all alternated (:func:`rotation`); a tool that failed
    is run no more and its runs are dropped (its error stands for them)."""
    rounds: list[dict[str, float]] = []
    errors: dict[str, str] = {}
    for r in range(repeats):
        cpu: dict[str, float] = {}
        for tool in rotation([*tools, floor], r):
            if tool is floor:
                cpu[FLOOR] = floor_run(floor)
                continue
            if tool.label in errors:
                continue
            crashes: list[str] = []
            run = run_retrying(tool, [*args, "-b", "-n", "1"], out / f"{tool.label}.start", crashes)
            for c in crashes:
                print(f"  (start-up: {tool.label} failed, run again: {c})")
            if run.error:
                errors[tool.label] = run.error
            else:
                cpu[tool.label] = run.cpu_s * 1e3
        rounds.append(cpu)
    for cpu in rounds:
        for label in errors:
            cpu.pop(label, None)
    return StartUp(rounds, errors)
