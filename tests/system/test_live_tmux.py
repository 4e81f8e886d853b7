"""End to end in a real terminal: live mode runs inside tmux, keys are typed with
``send-keys`` and the screen is read back with ``capture-pane`` after each one.

The program is driven through ``tiptop.live.run`` by a small script with a scripted
sampler (hand-built frames, ``tests/support/live.py``), so the test runs anywhere;
``test_real_tiptop_in_tmux`` runs ``python3 -m tiptop`` itself where the sampler exists.
Each test uses its own tmux server socket and kills only that server.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

DRIVER = """
import sys
sys.path.insert(0, {repo!r})
from tests.support.live import BRANCH, DEFAULT, ScriptedSampler
from tiptop import live
from tiptop.options import Options

code = live.run(Options(delay=2.0), ScriptedSampler(6), [DEFAULT, BRANCH])
print("EXIT", code, flush=True)
# tmux drops what a pane wrote but had not yet read when its process exits (a maintainer
# in tmux/tmux#506), so the driver stays until the test ends its tmux server.
sys.stdin.readline()
"""


class Tmux:
    """One private tmux server (``-L``) running one command in a window of ``cols`` x
    ``rows`` (120x40 unless given)."""

    def __init__(self, command: list[str], cwd: Path, cols: int = 120, rows: int = 40) -> None:
        self.sock = f"tiptop-live-{os.getpid()}-{time.monotonic_ns()}"
        env = dict(os.environ, TERM="xterm-256color")
        env.pop("TMUX", None)
        self.tmux(
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            str(cols),
            "-y",
            str(rows),
            "-c",
            str(cwd),
            " ".join(_quote(c) for c in command),
            env=env,
        )
        self.tmux("set-option", "-t", "t", "remain-on-exit", "on")

    def tmux(self, *args: str, env: dict[str, str] | None = None) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.sock, *args],
            capture_output=True,
            text=True,
            timeout=10,
            env=env,
        )
        assert out.returncode == 0, f"tmux {args[0]}: {out.stderr.strip()}"
        return out.stdout

    def screen(self) -> list[str]:
        return self.tmux("capture-pane", "-p", "-t", "t").splitlines()

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def wait(self, ok: Callable[[list[str]], bool], what: str, timeout: float = 30) -> list[str]:
        end = time.monotonic() + timeout
        while True:
            lines = self.screen()
            if ok(lines):
                return lines
            if time.monotonic() > end:
                pytest.fail(f"timed out waiting for {what}; screen:\n" + "\n".join(lines))
            time.sleep(0.05)

    def dead(self) -> bool:
        return self.tmux("list-panes", "-t", "t", "-F", "#{pane_dead}").strip() == "1"

    def quit(self) -> None:
        """Type ``q`` and wait for the program to end."""
        self.keys("q")
        self.wait(lambda ls: self.dead(), "the program to quit")

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True, timeout=10)


def _quote(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def quit_driver(t: Tmux) -> list[str]:
    """Type ``q`` to DRIVER's session: the screen once it printed ``EXIT 0``, what
    ``live.run`` returned, after the terminal was restored."""
    t.keys("q")
    return t.wait(has("EXIT 0"), "the program to quit")


def has(text: str) -> Callable[[list[str]], bool]:
    return lambda lines: any(text in line for line in lines)


def shown(screen: int) -> Callable[[list[str]], bool]:
    """The tasks line of screen ``screen`` says some tasks are displayed, and rows follow."""

    def ok(lines: list[str]) -> bool:
        if len(lines) < 5 or f"screen  {screen}:" not in lines[1]:
            return False
        m = re.match(r"Tasks:\s+\d+ \w+,\s+(\d+) displayed", lines[1])
        return bool(m and int(m.group(1)) > 0 and lines[4].strip())

    return ok


@pytest.fixture
def driven(tmp_path: Path) -> Iterator[Tmux]:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(repo=str(REPO)))
    t = Tmux([sys.executable, str(script)], tmp_path)
    try:
        yield t
    finally:
        t.kill()


def test_keys_in_a_real_terminal(driven: Tmux) -> None:
    t = driven
    lines = t.wait(has("task5"), "the first refresh")
    lines = t.wait(has("6 displayed"), "the tasks line")
    assert lines[0].startswith("tiptop -")
    assert lines[1].startswith("Tasks:   6 processes,   6 displayed")
    assert lines[1].rstrip().endswith("screen  0: default")
    assert lines[3].rstrip() == "  PID  [%CPU]\u25bc IPC  %MISS COMMAND"
    assert lines[4].startswith("  100   50.0  2.00   0.50 task0")

    t.keys("h")
    lines = t.wait(has("Help (h or Esc closes)"), "the help window")
    assert any("%CPU : Total CPU usage" in line for line in lines)
    t.keys("h")
    t.wait(lambda ls: not has("Help (h or Esc closes)")(ls), "the help window to close")

    t.keys("Right")
    lines = t.wait(has("screen  1: branch"), "the second screen")
    assert lines[3].rstrip() == "  PID  [%CPU]\u25bc IPC COMMAND"
    t.wait(has("task0"), "rows of the second screen")

    t.keys("<")
    lines = t.wait(lambda ls: "PID]" in ls[3], "the sort marker on PID")
    assert lines[3].startswith(" [PID]")

    t.keys("H")
    lines = t.wait(has("Show threads On"), "the threads message")
    assert "[threads]" in lines[0]

    t.keys("d")
    t.wait(has("Change delay from 2.00 to: "), "the delay prompt")
    t.keys("0", ".", "5", "Enter")
    t.wait(has("Delay set to 0.50"), "the new delay")

    # The terminal is restored (urwid leaves the alternate screen) and run() returned 0.
    lines = quit_driver(t)
    assert not any("tiptop -" in line for line in lines)


def highlighted(t: Tmux) -> list[str]:
    """The rows drawn in the selection cursor's colours (black on cyan: ``ESC[30m ESC[46m``,
    tiptop.live.palette.SELECTED), as text."""
    raw = t.tmux("capture-pane", "-e", "-p", "-t", "t").splitlines()
    return [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in raw if "\x1b[46m" in line]


def test_selection_cursor_esc_and_terminal_reports(tmp_path: Path) -> None:
    """At 80x24 (issue 39): Down moves the highlight over rows that stay in place, ``t``
    opens the tree of the highlighted task and names it, Esc closes it, and a typed or
    pasted cursor-position report (``ESC[999;999R``) leaves the UI running."""
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(repo=str(REPO)))
    t = Tmux([sys.executable, str(script)], tmp_path, cols=80, rows=24)
    try:
        lines = t.wait(has("6 displayed"), "the first refresh")
        assert lines[3].lstrip().startswith("PID")  # the header within the top 5 lines
        rows = lines[4:10]
        assert [r.split()[0] for r in highlighted(t)] == ["100"]
        for pid in ("101", "102"):
            t.keys("Down")
            t.wait(lambda _ls: [r.split()[0] for r in highlighted(t)] == [pid], "Down")  # noqa: B023
            assert [x.split()[0] for x in t.screen()[4:10]] == [r.split()[0] for r in rows]
        t.keys("t")
        lines = t.wait(has("Top-down tree of PID 102 (task2)"), "the tree window naming it")
        assert any("no top-down tree" in x for x in lines), lines
        t.keys("Escape")
        t.wait(lambda ls: not has("Top-down tree")(ls), "Esc to close the window")
        t.tmux("send-keys", "-t", "t", "-l", "\x1b[999;999R")  # a cursor-position report
        t.keys("h")
        t.wait(has("Help (h or Esc closes)"), "the UI to take keys after the report")
        t.keys("Escape")
        t.wait(lambda ls: not has("Help (")(ls), "Esc to close the help")
        quit_driver(t)
    finally:
        t.kill()


def test_resize_keeps_running(driven: Tmux) -> None:
    t = driven
    t.wait(has("task0"), "the first refresh")
    t.tmux("resize-window", "-t", "t", "-x", "60", "-y", "15")
    lines = t.wait(lambda ls: len(ls) == 15 and "task0" in "".join(ls), "the 60x15 layout")
    assert all(len(line) <= 60 for line in lines)
    assert lines[3].rstrip() == "  PID  [%CPU]\u25bc IPC  %MISS COMMAND"
    t.tmux("resize-window", "-t", "t", "-x", "15", "-y", "5")
    t.wait(has("Terminal too"), "the too-small message")
    assert not t.dead()
    t.tmux("resize-window", "-t", "t", "-x", "120", "-y", "40")
    t.wait(has("screen  0: default"), "the full layout again")
    quit_driver(t)


def test_real_tiptop_in_tmux(tmp_path: Path) -> None:
    """The real program, delay 30 s: after Right the second screen shows rows at its first
    refresh, 0.2 s after the key, not an empty ``0 displayed`` table for a whole delay. The
    bound is half the delay: a loaded machine may take seconds to draw, never 30."""
    from tests.helpers import TIPTOP

    t = Tmux([*TIPTOP, "-d", "30", "-i", "-S", "0"], tmp_path)
    try:
        lines = t.wait(shown(0), "the real program's first rows", timeout=40)
        assert lines[0].startswith("tiptop -")
        t.keys("Right")
        t0 = time.monotonic()
        # Before the fix: "N processes,   0 displayed" until ~30.2 s after the key.
        lines = t.wait(shown(1), "rows of the second screen", timeout=15)
        assert time.monotonic() - t0 < 15
        assert lines[3].lstrip().startswith("PID") and re.match(r" *\d+", lines[4]), lines
        t.keys("q")
        t.wait(lambda ls: t.dead(), "the program to quit")
    finally:
        t.kill()


def window_rows(lines: list[str], title: str) -> list[str]:
    """The rows inside the box whose top border holds ``title``, between its side
    borders, down to its bottom border, stripped."""
    top = next(i for i, ln in enumerate(lines) if title in ln)
    left, right = lines[top].index("┌"), lines[top].rindex("┐")
    inner: list[str] = []
    for ln in lines[top + 1 :]:
        if ln[left : left + 1] == "└":
            break
        inner.append(ln[left + 1 : right].strip())
    return inner


def window_text(lines: list[str], title: str) -> str:
    """The text inside the box whose top border holds ``title``, its rows joined at the
    spaces they were wrapped at."""
    return " ".join(x for x in window_rows(lines, title) if x)


#: The last row of a window that scrolls: how far, and the keys; ``END`` at the end.
SCROLL_TAIL = re.compile(r"^(\d+ % \(.* scroll\)|END)$")


def read_window(t: Tmux, title: str) -> str:
    """The whole text of a window, paged through with PgDn when it is taller than the
    terminal (pages overlap: each is joined at its longest overlap with the rows read)."""
    got: list[str] = []
    lines = t.screen()
    for _ in range(100):
        rows = window_rows(lines, title)
        tail = rows[-1] if rows and SCROLL_TAIL.match(rows[-1]) else None
        page = rows[:-1] if tail else rows
        same = [n for n in range(min(len(got), len(page)) + 1) if got[len(got) - n :] == page[:n]]
        got += page[max(same) :]
        if tail is None or tail == "END":
            return " ".join(x for x in got if x)
        before = lines
        t.keys("PageDown")
        lines = t.wait(lambda ls, b=before: ls != b, "the next page")  # type: ignore[misc]
    pytest.fail(f"{title}: no end after 100 pages")


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 50)])
def test_drill_down_opens_and_closes(tmp_path: Path, size: tuple[int, int]) -> None:
    """The real program on screen ``topdown`` in a terminal of each size: ``t`` opens the
    selected task's top-down window and ``t`` closes it. Without a PMU (or a tree for this
    CPU) the window says why, whole (wrapped at the window's width, never cut at the
    terminal's edge); with a PMU or without, the summary line and the machine's (where
    the task's time went needs none)."""
    from tests.helpers import TIPTOP, hardware_pmu_error
    from tiptop.cli.screens import host_target
    from tiptop.kernel.explain import NO_PMU_COLUMNS, no_pmu_line
    from tiptop.screens import builtin_screens
    from tiptop.table.why import has_tree

    # As on the CPU that ``make cpus`` names (Host.read() in this process too): Zen 4's
    # ``topdown`` has a deeper screen; QEMU's generic EPYC's shows generic stall events,
    # no tree, and no other screen has a top-down one: ``state`` is named.
    topdown = next(s for s in builtin_screens(host_target()) if s.name == "topdown")
    command = [*TIPTOP, "-d", "30", "-i", "-S", "topdown"]
    t = Tmux(command, tmp_path, cols=size[0], rows=size[1])
    try:
        t.wait(shown(int(_topdown_index())), "the topdown screen's rows", timeout=20)
        t.keys("t")
        t.wait(has("Top-down tree of PID"), "the drill-down window")
        body = read_window(t, "Top-down tree of PID")
        if not has_tree(topdown):  # the time screen has the tree that needs no PMU
            said = "no top-down tree for this CPU: 'state' has where the time went (+/-)"
            assert body == said, body
        else:  # where its time went is known without a PMU: the summary, the machine's line
            assert re.match(r"PID \d+ \(.*\): ", body) and " machine: " in body, body
            if hardware_pmu_error() is not None:  # and it says, whole, what the tree lacks
                assert "top-down counts missing: " in body, body
                reason = body[body.index("top-down counts missing: ") :]
                assert reason.endswith(no_pmu_line(NO_PMU_COLUMNS)), reason  # whole
        t.keys("t")
        t.wait(lambda ls: not has("Top-down tree")(ls), "the window to close")
        t.keys("q")
        t.wait(lambda ls: t.dead(), "the program to quit")
    finally:
        t.kill()


@pytest.mark.parametrize("cols", [80, 200])
def test_help_window_uses_the_terminal_width(tmp_path: Path, cols: int) -> None:
    """In a real terminal of 80 and 200 columns, ``h`` opens a box 5 columns in from each
    side listing the keys one per line, grouped."""
    from tiptop.live.registry import key_help

    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(repo=str(REPO)))
    t = Tmux([sys.executable, str(script)], tmp_path, cols=cols, rows=60)
    try:
        t.wait(has("6 displayed"), "the first refresh")
        t.keys("h")
        keys = [k.rstrip() for k in key_help()]  # one key per line, grouped: nothing cut

        def inner(lines: list[str]) -> list[str]:
            top = next((i for i, x in enumerate(lines) if "Help (h or Esc closes)" in x), None)
            if top is None:
                return []
            return [x[6 : cols - 6].rstrip() for x in lines[top + 1 :] if x[5:6] == "│"]

        # Drawn whole (a capture may catch the terminal half drawn on a loaded machine).
        lines = t.wait(lambda ls: keys[-1] in inner(ls), "the help window's keys")
        top = next(i for i, line in enumerate(lines) if "Help (h or Esc closes)" in line)
        assert lines[top].index("┌") == 5 and lines[top].rindex("┐") == cols - 6, lines[top]
        shown = inner(lines)
        start = shown.index("Selection and windows:")
        assert shown[start : start + len(keys)] == keys, shown
        quit_driver(t)
    finally:
        t.kill()


def _topdown_index() -> int:
    """The index of screen ``topdown`` among this machine's screens (the tasks line), or
    among those of the CPU that ``make cpus`` names (tests/support/as_cpu.py)."""
    from tests.helpers import TIPTOP

    out = subprocess.run(
        [*TIPTOP, "--list-screens"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=REPO,
    )
    for line in out.stdout.splitlines():
        m = re.match(r"\s*(\d+): 'topdown'", line)
        if m:
            return int(m.group(1))
    pytest.skip(f"no topdown screen listed: {out.stdout[:200]!r}")


#: The name of the process the htop-habits test looks for (a link to sleep: its comm).
NEEDLE = "tt50needle"


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 50)])
def test_htop_habits_in_a_real_terminal(tmp_path: Path, size: tuple[int, int]) -> None:
    """The real program, in a terminal of each size (issue 50): F1 opens the help; a key
    bound to nothing says so and which key helps; ``/`` finds a process by name (it is
    highlighted); ``\\`` filters the rows to it; a message longer than the line (the ``d``
    prompt's refusal, and the no-PMU notice where there is no PMU) is read whole in the
    ``m`` window; ``k`` on the highlighted row sends SIGTERM after its confirmation;
    F10 quits."""
    from tests.helpers import TIPTOP, hardware_pmu_error
    from tiptop.kernel.explain import no_pmu_line

    needle = tmp_path / NEEDLE
    needle.symlink_to(shutil.which("sleep") or "/bin/sleep")
    child = subprocess.Popen([str(needle), "600"])
    cols, rows = size
    t = Tmux([*TIPTOP, "-i", "-d", "2"], tmp_path, cols=cols, rows=rows)
    try:
        lines = t.wait(lambda ls: len(ls) > 5 and re.match(r" *\d+", ls[5]) is not None, "rows")
        first_screen = lines[1].rsplit(": ", 1)[-1].strip()  # the fallback's, without PMU
        t.keys("F1")
        t.wait(has("Help (h or Esc closes)"), "F1: the help")
        t.keys("Escape")
        t.wait(lambda ls: not has("Help (")(ls), "Esc to close the help")
        t.keys("x")
        t.wait(has("Unknown key 'x': h or F1 lists the keys"), "the unknown key's hint")

        t.keys("/", *NEEDLE)
        mine = str(child.pid)  # its row (at 80 columns a wide screen cuts COMMAND off)
        t.wait(lambda _: [r.split()[0].rstrip("+-") for r in highlighted(t)] == [mine], "/")
        t.keys("Enter")
        t.keys("\\", *NEEDLE, "Enter")
        lines = t.wait(has(f"Filter '{NEEDLE}'"), "\\ to filter the rows")
        shown = [x for x in lines[4:-1] if re.match(r" *\d+", x)]
        assert [x.split()[0].rstrip("+-") for x in shown] == [mine], lines
        assert re.match(r"Tasks: +\d+ processes, +1 displayed", lines[1]), lines[1]

        t.keys("d", *"0.001", "Enter")
        refusal = (
            "delay must be at least 0.01 s and at most 604800 s (got '0.001') (delay stays 2.00)"
        )
        lines = t.wait(has("delay must be at least"), "the d prompt's refusal")
        assert (refusal in lines[2]) == (cols > len(refusal)), lines[2]  # else cut, m: more
        t.keys("m")
        lines = t.wait(has("Messages, newest first"), "the m window")
        said = " ".join(read_window(t, "Messages, newest first").split())
        assert refusal in said, said
        if hardware_pmu_error() is not None:  # the start-up notice, whole
            assert no_pmu_line(f"showing screen '{first_screen}'") in said, said
        t.keys("m")
        t.wait(lambda ls: not has("Messages, newest")(ls), "m to close it")

        t.keys("k")
        t.wait(has(f"Signal to PID {child.pid} ({NEEDLE})"), "k's signal window")
        t.keys("Enter")
        t.wait(has(f"Send SIGTERM (15) to PID {child.pid} ({NEEDLE})? (y/N)"), "the question")
        assert child.poll() is None  # nothing sent before the answer
        t.keys("y")
        assert child.wait(timeout=10) == -signal.SIGTERM
        t.wait(has(f"Sent SIGTERM (15) to PID {child.pid}"), "what was sent")
        t.keys("F10")
        t.wait(lambda ls: t.dead(), "F10 to quit")
    finally:
        t.kill()
        if child.poll() is None:
            child.kill()
            child.wait()


def test_cgroup_rows_as_a_tree_in_a_real_terminal(tmp_path: Path) -> None:
    """The real program over a cgroup the test makes, two busy tasks in it (issue 48):
    ``G`` shows rows by cgroup as a tree, ``*`` hides every cgroup's tasks, ``/`` finds
    the cgroup's row by its name, ``=`` shows its two tasks beneath it (by their PIDs),
    and ``=`` on one of them hides them again, the highlight back on the cgroup's row."""
    from tests.helpers import TIPTOP, removed
    from tests.system.test_exporter_cgroup import made_cgroup
    from tests.system.test_hostile_cgroups import SPIN

    cg = made_cgroup("tt48tree")
    label = cg.name
    spinners: list[subprocess.Popen[bytes]] = []
    t = None
    try:
        for _ in range(2):
            spinners.append(subprocess.Popen([sys.executable, "-c", SPIN]))
            (cg / "cgroup.procs").write_text(str(spinners[-1].pid))
        pids = sorted(str(s.pid) for s in spinners)
        # -i: on a loaded machine a refresh can find the cgroup idle for a moment; its row
        # would leave the list and the highlight, keeping its place (htop's), go elsewhere.
        t = Tmux([*TIPTOP, "-i", "-d", "1"], tmp_path, cols=120, rows=40)
        t.wait(lambda ls: len(ls) > 5 and re.match(r" *\d+", ls[4]) is not None, "rows")
        t.keys("G")
        lines = t.wait(lambda ls: "CGROUP" in ls[3] and "cgroups" in ls[1], "rows by cgroup")
        # Sorted on PID, newest first (N, R), not on %CPU: htop's highlight keeps its
        # place, not its row, when the order changes, and on a busy machine "/" and the
        # test's cgroup trade places; newest first, its row is at the top (its tasks have
        # the newest PIDs) however many cgroups -i lists.
        t.keys("N", "R")
        t.keys("*")
        lines = t.wait(has("Every cgroup's tasks hidden"), "* to hide every cgroup's tasks")
        t.wait(lambda ls: all(not re.search(r"[|`]- ", x) for x in ls[4:]), "no task rows")
        t.wait(has(f" + {label}"), "the cgroup's row")
        t.keys("/", *label)
        t.wait(lambda ls: [r.split()[-1] for r in highlighted(t)] == [label], "/ to its row")
        t.keys("Enter")
        t.wait(lambda ls: not any("Search:" in x for x in ls), "Enter to end the search")
        t.wait(lambda ls: [r.split()[-1] for r in highlighted(t)] == [label], "still its row")
        t.keys("=")

        def beneath(lines: list[str]) -> list[str]:
            """The PIDs of the rows beneath the cgroup's row, drawn as its tasks."""
            at = next((i for i, x in enumerate(lines) if x.rstrip().endswith(f" {label}")), None)
            if at is None:
                return []
            tasks = [x for x in lines[at + 1 :] if re.search(r" [|`]- \S", x)]
            return [x.split()[0] for x in tasks]

        lines = t.wait(lambda ls: sorted(beneath(ls)) == pids, "= to show its two tasks")
        row = next(x for x in lines if x.rstrip().endswith(f" {label}"))
        assert row.rstrip().endswith(f" - {label}"), row
        at = lines.index(row)
        assert re.search(r" \|- \S", lines[at + 1]) and re.search(r" `- \S", lines[at + 2])
        t.keys("Down", "=")
        lines = t.wait(lambda ls: has(f" + {label}")(ls) and not beneath(ls), "= on a task")
        assert [r.split()[-1] for r in highlighted(t)] == [label]
        t.keys("q")
        t.wait(lambda ls: t.dead(), "the program to quit")
    finally:
        if t is not None:
            t.kill()
        for s in spinners:
            s.kill()
            s.wait()
        removed(cg)
