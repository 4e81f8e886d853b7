"""Nothing a watched task controls writes to root's terminal (issue 52; the attacker's
term_inject_tmux.sh, where_csv_inject.sh, cgroup_escape_inject.sh): in a real terminal,
tmux with ``set-clipboard on``, tiptop's output is printed while the names hold ESC ]0;
(the title), ESC ]52; (a clipboard write) and C1 controls; the pane's title must stay and
tmux must hold no buffer (no clipboard write), and the names must show as escapes.

Before, a crafted recording's replay set the title and made 7 clipboard writes, and so
did ``--where --format csv`` on a file whose symbols hold them, and ``-b --by cgroup``
with a cgroup so named."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import REPO, TIPTOP
from tests.support.crafted_elf import SPIN, craft
from tests.system.hostile import NOBODY, Target, needs_root, shared_dir
from tests.system.test_hostile_cgroups import ESCAPES, delegated
from tests.system.test_live_tmux import Tmux, _quote, has
from tests.unit.test_outside import crafted_recording

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

TITLE = "clean-title"


@pytest.fixture
def terminal() -> Iterator[Tmux]:
    """A tmux whose clipboard takes OSC 52 writes (as the attack's did)."""
    t = Tmux(["sh", "-c", "sleep 300"], Path(REPO), cols=200, rows=50)
    t.tmux("set-option", "-g", "set-clipboard", "on")
    try:
        yield t
    finally:
        t.kill()


def show(t: Tmux, args: list[str], done: str = "DONE") -> list[str]:
    """Run ``tiptop args`` in the pane, its output to the terminal; the screen at its end."""
    run_in(t, f"{tiptop(args)} 2>&1; echo {done}")
    return t.wait(has(done), "the run to end", timeout=60)


def tiptop(args: list[str]) -> str:
    """``python -m tiptop args`` as a shell command, on this checkout."""
    return f"PYTHONPATH={REPO} " + " ".join(_quote(a) for a in [*TIPTOP, *args])


def run_in(t: Tmux, command: str) -> None:
    """``command`` in the pane, after the pane set its title itself."""
    script = f"printf '\\033]2;{TITLE}\\007'; {command}; sleep 300"
    t.tmux("respawn-pane", "-k", "-t", "t", "sh", "-c", script)


def untouched(t: Tmux) -> None:
    """The title the pane set itself, and no clipboard write."""
    assert t.tmux("display-message", "-p", "-t", "t", "#{pane_title}").strip() == TITLE
    assert t.tmux("list-buffers").strip() == "", t.tmux("list-buffers")


@pytest.mark.parametrize("extra", [[], ["-c"]])
def test_a_crafted_recording_replayed(terminal: Tmux, tmp_path: Path, extra: list[str]) -> None:
    path = crafted_recording(tmp_path)
    for fmt in ("text", "csv", "json"):
        lines = show(terminal, ["-b", "--replay", str(path), "-n", "2", "--format", fmt, *extra])
        untouched(terminal)
        assert any("x1b]0;PWN" in ln or "x9b2J" in ln for ln in lines), lines


def test_a_crafted_recording_replayed_live(terminal: Tmux, tmp_path: Path) -> None:
    path = crafted_recording(tmp_path)
    run_in(terminal, tiptop(["--replay", str(path)]))
    terminal.wait(has("x1b]0;PWN"), "the replayed rows")
    untouched(terminal)
    terminal.keys("q")


@pytest.fixture
def esc_target() -> Iterator[Target]:
    """A process of uid 65534 spinning in a file whose symbols hold escapes."""
    needs_root()
    with shared_dir("tiptop-term-") as where:
        path = where / "esc.so"
        craft("esc", path, 10)
        path.chmod(0o644)
        target = Target([*NOBODY, sys.executable, "-c", SPIN, str(path)])
        yield target
        target.stop()


@pytest.mark.parametrize("fmt", ["text", "csv", "json"])
def test_where_on_symbols_holding_escapes(terminal: Tmux, esc_target: Target, fmt: str) -> None:
    lines = show(
        terminal, ["-b", "--where", str(esc_target.pid), "-d", "1", "-n", "2", "--format", fmt]
    )
    untouched(terminal)
    assert any("x1b]0;PWNED-title" in ln for ln in lines), lines


@pytest.mark.parametrize("fmt", ["text", "csv"])
def test_by_cgroup_named_with_escapes(terminal: Tmux, fmt: str) -> None:
    with delegated(ESCAPES):
        lines = show(
            terminal,
            ["-b", "--by", "cgroup", "-S", "sched", "-d", "0.5", "-n", "2", "--format", fmt],
        )
    untouched(terminal)
    assert any("x1b]0;CGPWN" in ln for ln in lines), lines


#: term_target.py: sets its comm to argv[1] (prctl PR_SET_NAME), uses some CPU; its command
#: line holds the rest.
NAMED = """
import ctypes, sys, time
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)
print(1, flush=True)
while True:
    t = time.time()
    while time.time() - t < 0.05:
        pass
    time.sleep(0.05)
"""


def test_tasks_named_with_escapes(terminal: Tmux) -> None:
    """term_inject.py's targets: comm and command line holding title, clipboard and C1."""
    needs_root()
    names = ["\x1b]0;PWN\x07", "\x1b]52;c;cHduZWQ=\x07", "\u009b2J\u009d0;T\u009c"]
    target = Target([*NOBODY, sys.executable, "-c", NAMED, *names])
    try:
        for extra in ([], ["-c"]):
            for fmt in ("text", "csv"):
                show(
                    terminal, ["-b", "-S", "sched", "-d", "0.5", "-n", "2", "--format", fmt, *extra]
                )
                untouched(terminal)
    finally:
        target.stop()
