"""Live mode without a terminal: the screen rendered to a canvas and compared as text and
attributes (urwid's own testing habit), keys fed to the controller, real signals and files.

Frames are built by hand here (a scripted sampler hands them out); the end-to-end test in
``test_live_tmux.py`` drives the real program.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import time
from typing import Any

import numpy as np
import pytest
import urwid

from tiptop.cells import Status
from tiptop.frame import Frame
from tiptop.host import Host
from tiptop.live import palette as P
from tiptop.live.app import LiveApp
from tiptop.live.widgets import MIN_COLS, MIN_ROWS
from tiptop.messages import MessageLog
from tiptop.options import Options
from tiptop.screens.model import ColumnSpec, ScreenSpec, Target

COLS = (
    ColumnSpec(" %CPU", "%5.1f", "CPU_TOT", "Total CPU usage"),
    ColumnSpec("  IPC", " %4.2f", "delta(I)/delta(C)", "Executed instructions per cycle", 1.5),
    ColumnSpec(" %MISS", "%6.2f", "100*delta(M)/delta(I)", "Cache miss per 100 instructions"),
)
DEFAULT = ScreenSpec("default", "Screen by default", columns=COLS)
BRANCH = ScreenSpec("branch", "Branch prediction statistics", columns=COLS[:2])


def make_frame(n: int = 4, *, iteration: int = 4) -> Frame:
    """``n`` tasks, %CPU falling with the index; task1 is dead, task2 has ``-`` for IPC,
    task3 a ``?`` %MISS, task0's %MISS was multiplexed and its IPC is over threshold."""
    f = Frame.empty(
        tuple(c.header for c in COLS), ("C",), iteration=iteration, timestamp=1795291592.5
    )
    f.tid = np.arange(100, 100 + n, dtype=np.int64)
    f.pid = f.tid.copy()
    f.marker = [" "] * n
    f.user = ["root"] * n
    f.name = [f"task{i}" for i in range(n)]
    f.cmdline = [f"/bin/task{i} --flag" for i in range(n)]
    f.num_threads = np.ones(n, np.int64)
    f.dead = np.zeros(n, bool)
    f.cpu_total = np.linspace(50.0, 1.0, n)
    f.values = np.tile([0.0, 1.0, 0.5], (n, 1))
    f.values[:, 0] = f.cpu_total
    f.values[0, 1] = 2.0
    f.status = np.zeros((n, 3), np.uint8)
    f.running = np.ones((n, 3))
    f.running[0, 2] = 0.5
    if n >= 4:
        f.dead[1] = True
        f.status[2, 1] = Status.DIV0
        f.status[3, 2] = Status.UNREADABLE
    f.counter_delta = np.zeros((n, 1))
    f.counter_running = np.ones((n, 1))
    f.counter_status = np.zeros((n, 1), np.uint8)
    f.tasks_total = n + 5
    return f


class ScriptedSampler:
    """A scripted frame source (``tiptop.frame.FrameSource``) handing out hand-built frames.

    It keeps the real sampler's priming rule (``tiptop.engine.sampler`` contract): after
    construction or ``reconfigure`` it is unstarted, and a ``refresh()`` then only primes
    it and hands back an empty frame that counts the tasks but shows none."""

    def __init__(self, n: int = 4) -> None:
        self.n = n
        self.messages = MessageLog()
        self.screen = DEFAULT
        self.reconfigured: list[dict[str, Any]] = []
        self.refreshes = 0
        self.starts = 0
        self.started = False

    def start(self) -> None:
        self.starts += 1
        self.started = True

    def refresh(self) -> Frame:
        self.refreshes += 1
        if not self.started:
            self.start()
            empty = Frame.empty(tuple(c.header for c in self.screen.columns), ("C",))
            empty.tasks_total = self.n + 5
            return empty
        f = make_frame(self.n)
        k = len(self.screen.columns)  # only the screen's columns, like the real sampler
        f.headers = f.headers[:k]
        f.values, f.status, f.running = f.values[:, :k], f.status[:, :k], f.running[:, :k]
        return f

    def close(self) -> None:
        self.started = False

    def reconfigure(self, screen: ScreenSpec | None = None, **changes: Any) -> None:
        self.reconfigured.append({"screen": screen, **changes})
        self.started = False
        if screen is not None:
            self.screen = screen


def new_app(n: int = 4, host: Host | None = None, **opts: Any) -> tuple[LiveApp, ScriptedSampler]:
    sampler = ScriptedSampler(n)
    app = LiveApp(
        Options(**opts), sampler, [DEFAULT, BRANCH], host=host or Host(),
        exporter=lambda o, s: "<tiptop/>",
    )  # fmt: skip
    sampler.start()  # as LiveApp.run() does
    app.refresh()
    return app, sampler


def text(app: LiveApp, size: tuple[int, int] = (100, 12)) -> list[str]:
    return [line.decode() for line in app.widget.render(size).text]


def attrs(app: LiveApp, size: tuple[int, int], row: int) -> list[tuple[Any, int]]:
    """``(attribute, width)`` runs of one screen row."""
    content = list(app.widget.render(size).content())
    return [(a, len(t)) for a, _cs, t in content[row]]


def keys(app: LiveApp, *ks: str) -> None:
    for k in ks:
        app.on_key(k)


GOLDEN = [
    "tiptop -                                      [root]                  [sticky]",
    "Tasks:   9 total,   4 displayed,   1 dead" + " " * 41 + "screen  0: default",
    "",
    "  PID [ %CPU]  IPC  %MISS COMMAND",
    "  100   50.0  2.00   0.50 task0",
    "  101   33.7  1.00   0.50 task1",
    "  102   17.3     -   0.50 task2",
    "  103    1.0  1.00      ? task3",
    "",
    "",
    "",
    "Iteration: 4" + " " * 18 + "[errors] [scaled]" + " " * 35 + "Epoch: 1795291592",
]


def test_golden_screen() -> None:
    app, sampler = new_app(sticky=True, show_timestamp=True, show_epoch=True)
    sampler.messages.say("C: cycles: no such event", "C: cycles: no such event")
    app.refresh()
    lines = [x.rstrip() for x in text(app)]
    golden = list(GOLDEN)
    if os.geteuid() != 0:
        golden[0] = "tiptop -" + " " * 62 + "[sticky]"
    assert lines == golden
    # The header is padded to COLS-1 (docs/original.md 5.1), rows are cut to COLS-1.
    assert attrs(app, (100, 12), 3) == [
        (P.HEADER, 6),
        (P.HEADER_SORT, 7),
        (P.HEADER, 86),
        (None, 1),
    ]


def test_root_indicator_follows_euid() -> None:
    app, _ = new_app()
    assert ("[root]" in text(app)[0]) == (os.geteuid() == 0)


def test_dead_and_watched_rows_and_cell_attributes() -> None:
    app, _ = new_app(sticky=True, watch_name="task2")
    size = (60, 12)
    # task0: IPC over its threshold (1.5), %MISS multiplexed (running 0.5).
    assert attrs(app, size, 4) == [(None, 13), (P.OVER, 5), (None, 1), (P.SCALED, 6), (None, 35)]
    # task1 is dead: red all along, nothing else.
    assert attrs(app, size, 5) == [(P.DEAD, 31), (None, 29)]
    # task2, right after the dead row, is watched (green): no red leaks onto it.
    assert attrs(app, size, 6) == [(P.WATCHED, 31), (None, 29)]
    # task3: plain.
    assert attrs(app, size, 7) == [(None, 60)]


def test_sort_keys_move_the_marker_and_order() -> None:
    app, _ = new_app()
    keys(app, ">")
    assert text(app)[3].rstrip() == "  PID   %CPU[  IPC] %MISS COMMAND"
    assert [r.tid for r in app.rows] == [100, 101, 103, 102]  # '-' sorts last
    keys(app, "<", "<", "<", "<")  # clamped at PID
    assert app.view.sort_column == -1
    keys(app, "R")
    assert [r.tid for r in app.rows] == [100, 101, 102, 103]
    for _ in range(10):
        keys(app, ">")  # clamped at COMMAND
    assert text(app)[3].rstrip() == "  PID   %CPU   IPC  %MISS[COMMAND]"


def test_sort_marker_on_pid() -> None:
    app, _ = new_app()
    keys(app, "<")
    assert text(app)[3].rstrip() == " [PID]  %CPU   IPC  %MISS COMMAND"


def test_screen_switch_wraps_reopens_and_resets_sort() -> None:
    app, sampler = new_app()
    keys(app, ">", "right")
    assert sampler.reconfigured[-1]["screen"] is BRANCH
    assert app.view.sort_column == 0
    lines = text(app)
    assert lines[1].rstrip().endswith("screen  1: branch")
    assert lines[3].rstrip() == "  PID [ %CPU]  IPC COMMAND"
    assert lines[4].strip() == ""  # empty until the next refresh, 0.2 s later
    keys(app, "right")  # wraps around
    assert sampler.reconfigured[-1]["screen"] is DEFAULT
    keys(app, "-")
    assert sampler.reconfigured[-1]["screen"] is BRANCH


def test_threads_idle_user_column_and_cmdline() -> None:
    app, sampler = new_app()
    keys(app, "H")
    assert text(app)[2].strip() == "Show threads On"
    assert sampler.reconfigured[-1] == {"screen": None, "threads": True}
    assert "[threads]" in text(app)[0]
    keys(app, "H")
    assert text(app)[2].strip() == "Show threads Off"
    keys(app, "i")
    assert "[idle]" in text(app)[0]
    keys(app, "U")
    assert text(app, (100, 12))[3].startswith("  PID  user      [ %CPU]")
    assert text(app)[4].startswith("  100  root        50.0")
    keys(app, "c")
    assert text(app)[4].rstrip().endswith("/bin/task0 --flag")


def test_delay_prompt_accepts_refuses_and_cancels() -> None:
    app, _ = new_app()
    keys(app, "d")
    assert text(app)[2].rstrip() == "Change delay from 2.00 to: _"
    keys(app, "0", ".", "0", "0", "1", "enter")
    assert app.delay == 2.0
    assert text(app)[2].strip() == (
        "Delay must be at least 0.01 s and at most 604800 s (delay stays 2.00)"
    )
    keys(app, "d", *"1e300", "enter")  # would overflow the event loop's timer
    assert app.delay == 2.0 and "at most 604800 s" in text(app)[2]
    keys(app, "d", *"1_0", "enter")  # Python's float() takes it; C's scanf does not
    assert app.delay == 2.0 and text(app)[2].strip() == "Not a number: '1_0' (delay stays 2.00)"
    keys(app, "s", "0", ".", "5", "x", "backspace", "enter")
    assert app.delay == 0.5
    assert text(app)[2].strip() == "Delay set to 0.50"
    keys(app, "d", "7", "esc")
    assert app.delay == 0.5 and app.prompt is None


def test_kill_prompt_sends_a_real_signal() -> None:
    child = subprocess.Popen(["sleep", "60"])
    try:
        app, _ = new_app()
        keys(app, "k")
        assert text(app)[2].rstrip() == "PID to kill: _"
        keys(app, *str(child.pid), "enter")
        assert text(app)[2].rstrip() == f"Kill PID {child.pid} with signal [15]: _"
        keys(app, "enter")
        assert child.wait(timeout=5) == -signal.SIGTERM
        assert text(app)[2].strip() == f"Sent signal 15 to PID {child.pid}"
        # The pid is gone now: the kernel's own reason is shown.
        keys(app, "k", *str(child.pid), "enter", "9", "enter")
        assert text(app)[2].strip() == (
            f"Kill of PID '{child.pid}' with '9' failed: No such process"
        )
        keys(app, "k", "x", "enter")
        assert text(app)[2].strip() == "Not valid"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_filters_pid_user_watch() -> None:
    app, sampler = new_app()
    keys(app, "p", "1", "2", "3", "enter")
    assert sampler.reconfigured[-1] == {"screen": None, "only_pid": 123, "only_name": None}
    assert "[pid]" in text(app)[0]
    keys(app, "p", "enter")
    assert sampler.reconfigured[-1] == {"screen": None, "only_pid": None, "only_name": None}
    keys(app, "u", *"no-such-user-xyz", "enter")
    assert text(app)[2].strip() == "User name does not exist."
    keys(app, "u", *"nobody", "enter")
    assert sampler.reconfigured[-1] == {"screen": None, "uid": 65534}
    assert "[uid]" in text(app)[0]
    app.refresh()
    keys(app, "w", *"task3", "enter")
    assert app.rows[-1].watched and attrs(app, (60, 12), 7)[0][0] == P.WATCHED


def test_write_config_never_overwrites(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    app, _ = new_app()
    keys(app, "W")
    assert text(app)[2].strip() == ".tiptoprc written"
    assert (tmp_path / ".tiptoprc").read_text() == "<tiptop/>"
    (tmp_path / ".tiptoprc").write_text("mine")
    keys(app, "W")
    assert text(app)[2].strip() == ".tiptoprc not written: already exists in current directory"
    assert (tmp_path / ".tiptoprc").read_text() == "mine"
    app.exporter = None
    os.remove(tmp_path / ".tiptoprc")
    keys(app, "W")
    assert "not written" in text(app)[2]
    assert not (tmp_path / ".tiptoprc").exists()


def test_write_config_says_what_the_exporter_refused(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A configuration the exporter cannot write (``ValueError``) is said on the message
    line; any other exception is a bug and is not swallowed."""
    monkeypatch.chdir(tmp_path)
    app, _ = new_app()

    def refuse(options: Any, screens: Any) -> str:
        raise ValueError("column 'x' has no header")

    app.exporter = refuse
    keys(app, "W")
    assert text(app)[2].strip() == ".tiptoprc not written: column 'x' has no header"
    assert not (tmp_path / ".tiptoprc").exists()

    def broken(options: Any, screens: Any) -> str:
        raise RuntimeError("bug")

    app.exporter = broken
    with pytest.raises(RuntimeError, match="bug"):
        keys(app, "W")
    assert not (tmp_path / ".tiptoprc").exists()


def test_help_window_lists_columns() -> None:
    app, _ = new_app()
    keys(app, "h")
    lines = text(app, (100, 14))
    body = [line[6:75].rstrip(" │") for line in lines]
    assert any("Help (h to close)" in line for line in lines)
    assert "Screen by default" in body
    assert "%CPU : Total CPU usage" in body
    assert "IPC  : Executed instructions per cycle" in body
    assert any(b.startswith("Target: ") for b in body)
    keys(app, "?")
    assert not any("Help (h to close)" in line for line in text(app, (100, 14)))


def test_error_window_scrolls() -> None:
    app, sampler = new_app()
    for i in range(40):
        sampler.messages.say(f"problem {i}", f"problem {i}")
    app.refresh()
    keys(app, "e")
    lines = text(app, (80, 20))
    top = next(i for i, line in enumerate(lines) if "40 errors detected (e to close)" in line)
    assert lines[top + 1].strip("│ ") == "BEGIN"
    assert lines[top + 2].strip("│ ") == "problem 0"
    keys(app, "down", "down")
    lines = text(app, (80, 20))
    assert lines[top + 1].strip("│ ") == "....."
    assert lines[top + 2].strip("│ ") == "problem 2"
    keys(app, "end")
    lines = text(app, (80, 20))
    assert lines[-3].strip("│ ") == "END" and lines[-4].strip("│ ") == "problem 39"
    assert lines[-2].strip("│ ") == "100 %"
    keys(app, "e")
    assert not any("errors detected" in line for line in text(app, (80, 20)))


def test_rows_scroll_beyond_the_terminal() -> None:
    app, _ = new_app(n=50, show_idle=True)
    lines = text(app, (60, 12))  # 7 rows fit between header and footer
    assert lines[4].startswith("  100 ") and lines[10].startswith("  106 ")
    keys(app, "down")
    assert text(app, (60, 12))[4].startswith("  101 ")
    keys(app, "end")
    assert text(app, (60, 12))[10].startswith("  149 ")
    keys(app, "page up")
    assert text(app, (60, 12))[4].startswith("  137 ")
    keys(app, "home")
    assert text(app, (60, 12))[4].startswith("  100 ")


def test_resize_and_too_small() -> None:
    app, _ = new_app()
    assert len(text(app, (120, 40))) == 40
    small = text(app, (60, 15))
    assert len(small) == 15 and all(len(line) == 60 for line in small)
    assert small[3].rstrip() == "  PID [ %CPU]  IPC  %MISS COMMAND"
    tiny = text(app, (MIN_COLS - 1, MIN_ROWS))
    assert tiny[0].startswith("Terminal too") and len(tiny) == MIN_ROWS
    assert text(app, (40, MIN_ROWS - 1))[0].startswith("Terminal too small")


def test_only_visible_rows_are_formatted() -> None:
    app, _ = new_app(n=5000, show_idle=True)
    calls = 0
    fmt = app.table.format_row

    def counting(row: Any) -> str:
        nonlocal calls
        calls += 1
        return fmt(row)

    app.table.format_row = counting
    text(app, (100, 30))
    assert calls == 30 - 5


def test_keypress_latency_with_2000_tasks() -> None:
    app, _ = new_app(n=2000, show_idle=True)
    text(app, (120, 40))
    worst = 0.0
    for key in (">", "R", "<", "i", "U", "down"):
        t0 = time.perf_counter()
        app.on_key(key)
        app.widget.render((120, 40))
        worst = max(worst, time.perf_counter() - t0)
    assert worst < 0.2, f"slowest key took {worst * 1000:.1f} ms"


def test_max_iter_quits_after_n_refreshes() -> None:
    app, _ = new_app(max_iter=3)
    app.refresh()
    assert app.quit_code is None
    app.refresh()
    assert app.quit_code == 0


def test_mono_palette_keeps_meanings_apart() -> None:
    mono = {name: m for name, _fg, _bg, m in P.PALETTE}
    meanings = [P.WATCHED, P.DEAD, P.OVER, P.SCALED, P.HEADER]
    assert len({mono[m] for m in meanings}) == len(meanings)
    for m in meanings:
        assert urwid.AttrSpec(mono[m], "default", 1).foreground != "default"
    screen = urwid.display.raw.Screen()
    screen.register_palette(P.PALETTE)  # urwid accepts every entry in 16 colours and mono


def test_kernel_key_refused_when_unprivileged() -> None:
    """``K`` asks the Host, as ``-K`` does: refused for uid 1000 at paranoid 2 (the
    original's line), allowed for root or at paranoid 1. The real system test of the rule
    is -K as uid 65534 (tests/system/test_cli_run.py)."""
    app, sampler = new_app(host=Host(uid=1000, euid=1000, paranoid=2))
    keys(app, "K")
    assert text(app)[2].strip() == (
        "Kernel mode not available (not root and paranoia level too high)."
    )
    assert sampler.reconfigured == []
    for host in (Host(uid=0, euid=0, paranoid=2), Host(uid=1000, euid=1000, paranoid=1)):
        app, sampler = new_app(host=host)
        keys(app, "K")
        assert text(app)[2].strip() == "Kernel mode On"
        assert sampler.reconfigured[-1]["kernel"] is True


def test_help_window_shows_the_target_cli_found() -> None:
    """The original's ``Target: x86, model = %02X_%02X`` (docs/original.md 5.4), from
    ``Options.target`` as cli sets it from /proc/cpuinfo, not the bare machine name."""
    app, _ = new_app(target=Target("x86", "1A_11"))
    keys(app, "h")
    body = [line[6:75].rstrip(" │") for line in text(app, (100, 14))]
    assert "Target: x86, model = 1A_11" in body


def test_tasks_line_is_blank_until_a_frame_counts_them() -> None:
    """No ``Tasks:   0 total`` before the first refresh (or after a restart)."""
    sampler = ScriptedSampler(4)
    app = LiveApp(Options(), sampler, [DEFAULT, BRANCH])
    sampler.start()
    line = text(app)[1]
    assert "Tasks" not in line and line.rstrip().endswith("screen  0: default")
    app.refresh()
    assert text(app)[1].startswith("Tasks:   9 total,   4 displayed")
    keys(app, "H")  # threads: the sampler restarts, counts are unknown again
    assert "Tasks" not in text(app)[1]
    app.refresh()
    assert text(app)[1].startswith("Tasks:   9 total")


def test_screen_switch_shows_rows_at_the_first_refresh() -> None:
    """After a restart (Right: the sampler is reconfigured) the refresh 0.2 s later shows
    the tasks: ``restart`` primes the sampler, so that refresh is not the priming scan's
    empty frame (``4 total, 0 displayed`` for a whole delay)."""
    app, sampler = new_app()
    keys(app, "right")
    assert sampler.reconfigured[-1]["screen"] is BRANCH
    assert sampler.started and sampler.starts == 2  # run()'s (here new_app's) and the restart's
    app.refresh()  # the 0.2 s alarm
    lines = text(app)
    assert lines[1].startswith("Tasks:   9 total,   4 displayed")
    assert lines[1].rstrip().endswith("screen  1: branch")
    assert [x.rstrip() for x in lines[4:8]] == [
        "  100   50.0  2.00 task0",
        "  101   33.7  1.00 task1",
        "  102   17.3     - task2",
        "  103    1.0  1.00 task3",
    ]


def test_max_iter_counts_shown_frames_after_a_restart() -> None:
    """``-n 2``: after a screen switch, two refreshes with rows, the first of them 0.2 s
    after the key, then the program quits (no empty frame counted as one of them)."""
    app, sampler = new_app(max_iter=2)
    keys(app, "right")
    app.refresh()
    assert app.quit_code is None
    assert text(app)[1].startswith("Tasks:   9 total,   4 displayed")
    app.refresh()
    assert app.quit_code == 0
    assert sampler.refreshes == 3  # new_app's, then the two after the switch


def test_conf_indicator_follows_the_config_file() -> None:
    """``[conf]`` at COLS-60 when a configuration file was read (docs/original.md 5.1)."""
    assert "[conf]" not in text(new_app()[0])[0]
    line = text(new_app(config_path="/tmp/.tiptoprc")[0])[0]
    assert line.index("[conf]") == 100 - 60


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        (["9" * 30, "enter", "enter"], "failed: Invalid argument"),  # past pid_t
        (["1", "enter", "9" * 30, "enter"], "failed: Invalid argument"),  # past int
        (["²", "enter"], "Not valid"),  # a digit to str.isdigit, not to int()
        (["1", "enter", "³", "enter"], "Not valid"),
    ],
)
def test_kill_prompt_odd_numbers_give_a_message(typed: list[str], message: str) -> None:
    app, _ = new_app()
    keys(app, "k", *_chars(typed))
    assert message in text(app)[2]


def _chars(typed: list[str]) -> list[str]:
    out: list[str] = []
    for t in typed:
        out += [t] if t == "enter" else list(t)
    return out


def test_error_file_gets_each_new_message_once() -> None:
    """``-E file`` in live mode: the sampler's messages are logged there as they appear
    (the original's error log file), not only in the ``e`` window."""
    log = io.StringIO()
    sampler = ScriptedSampler(4)
    app = LiveApp(Options(), sampler, [DEFAULT, BRANCH], error_log=log)
    sampler.messages.say("bus-cycles: ENOENT: not here", "bus-cycles: ENOENT: not here")
    app.refresh()
    app.refresh()
    sampler.messages.say("pid 7: EACCES: not yours", "pid 7: EACCES: not yours")
    app.refresh()
    assert log.getvalue().splitlines() == [
        "tiptop: bus-cycles: ENOENT: not here",
        "tiptop: pid 7: EACCES: not yours",
    ]
    log.close()  # a log that can no longer be written: said once, the screen stays up
    sampler.messages.say("third", "third")
    app.refresh()
    assert text(app)[2].startswith("-E: cannot write the error log")
