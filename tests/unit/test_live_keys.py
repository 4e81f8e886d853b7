"""Live mode's keys and prompts without a terminal: keys fed to the controller (sort,
screens, filters, delay, kill, -K, W, -n), the screen read back as text (tests/support/live.py).
Sending a real signal from the kill prompt is a system test (tests/system/test_live_kill.py);
``tests/system/test_live_tmux.py`` drives the real program.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.support.live import BRANCH, DEFAULT, attrs, keys, new_app, selected, text
from tiptop.frame import SamplerConfig
from tiptop.host import Host
from tiptop.live import palette as P
from tiptop.live.services import Services
from tiptop.options import Options
from tiptop.screens.model import ScreenSpec


def test_sort_keys_move_the_marker_and_order() -> None:
    app, _ = new_app()
    keys(app, ">")
    assert text(app)[3].rstrip() == "  PID   %CPU \u25bc[IPC] %MISS COMMAND"
    assert [r.tid for r in app.rows] == [100, 101, 103, 102]  # '-' sorts last
    keys(app, "<", "<", "<", "<")  # clamped at PID
    assert app.state.view.sort_column == -1
    keys(app, "R")
    assert [r.tid for r in app.rows] == [100, 101, 102, 103]
    for _ in range(10):
        keys(app, ">")  # clamped at COMMAND
    assert text(app)[3].rstrip() == "  PID   %CPU   IPC  %MISS [COMMAND]\u25b2"


def test_sort_marker_on_pid() -> None:
    app, _ = new_app()
    keys(app, "<")
    assert text(app)[3].rstrip() == " [PID]\u25bc %CPU   IPC  %MISS COMMAND"


def test_screen_switch_wraps_reopens_and_resets_sort() -> None:
    app, sampler = new_app()
    keys(app, ">", "right")
    assert sampler.reconfigured[-1]["screen"] is BRANCH
    assert app.state.view.sort_column == 0
    lines = text(app)
    assert lines[1].rstrip().endswith("screen  1: branch")
    assert lines[3].rstrip() == "  PID  [%CPU]\u25bc IPC COMMAND"
    assert lines[4].strip() == ""  # empty until the next refresh, 0.2 s later
    keys(app, "right")  # wraps around
    assert sampler.reconfigured[-1]["screen"] is DEFAULT
    keys(app, "-")
    assert sampler.reconfigured[-1]["screen"] is BRANCH


def test_threads_idle_user_column_and_cmdline() -> None:
    app, sampler = new_app()
    keys(app, "H")
    assert text(app)[2].strip() == "Show threads On"
    assert sampler.reconfigured[-1]["config"] == SamplerConfig(threads=True)
    assert "[threads]" in text(app)[0]
    keys(app, "H")
    assert text(app)[2].strip() == "Show threads Off"
    keys(app, "i")
    assert "[idle]" in text(app)[0]
    keys(app, "U")
    assert text(app, (100, 12))[3].startswith("  PID  user       [%CPU]\u25bc")
    assert text(app)[4].startswith("  100  root        50.0")
    keys(app, "c")
    assert text(app)[4].rstrip().endswith("/bin/task0 --flag")


def test_delay_prompt_accepts_refuses_and_cancels() -> None:
    app, _ = new_app()
    keys(app, "d")
    assert text(app)[2].rstrip() == "Change delay from 2.00 to: _"
    keys(app, "0", ".", "0", "0", "1", "enter")
    assert app.state.delay == 2.0
    assert text(app)[2].strip() == (
        "delay must be at least 0.01 s and at most 604800 s (got '0.001') (delay stays 2.00)"
    )
    keys(app, "d", *"1e300", "enter")  # would overflow the event loop's timer
    assert app.state.delay == 2.0 and "at most 604800 s" in text(app)[2]
    keys(app, "d", *"1_0", "enter")  # Python's float() takes it; C's scanf does not
    assert (
        app.state.delay == 2.0
        and text(app)[2].strip() == "'1_0' is not a number of seconds (delay stays 2.00)"
    )
    keys(app, "s", "0", ".", "5", "x", "backspace", "enter")
    assert app.state.delay == 0.5
    assert text(app)[2].strip() == "Delay set to 0.50"
    keys(app, "d", "7", "esc")
    assert app.state.delay == 0.5 and not app.windows


def test_filters_pid_user_watch() -> None:
    app, sampler = new_app()
    keys(app, "p", "1", "2", "3", "enter")
    assert sampler.reconfigured[-1]["config"] == SamplerConfig(only_pid=123)
    assert "[pid]" in text(app)[0]
    keys(app, "p", "enter")
    assert sampler.reconfigured[-1]["config"] == SamplerConfig()
    keys(app, "u", *"no-such-user-xyz", "enter")
    assert text(app)[2].strip() == "User name does not exist."
    keys(app, "u", *"nobody", "enter")
    assert sampler.reconfigured[-1]["config"] == SamplerConfig(uid=65534)
    assert "[uid]" in text(app)[0]
    app.refresh()
    keys(app, "w", *"task3", "enter")
    assert app.rows[-1].watched and attrs(app, (60, 12), 7)[0][0] == P.WATCHED


def test_write_config_never_overwrites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``W`` writes the user's file ($XDG_CONFIG_HOME/tiptop/tiptoprc), never
    ``./.tiptoprc`` (which would come first in that directory: issue 39), and says where."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    rc = tmp_path / "xdg" / "tiptop" / "tiptoprc"
    app, _ = new_app()
    keys(app, "W")
    assert text(app, (120, 12))[2].strip() == f"{rc} written"
    assert rc.read_text() == "<tiptop/>" and not (tmp_path / ".tiptoprc").exists()
    rc.write_text("mine")
    keys(app, "W")
    assert text(app, (120, 12))[2].strip() == f"{rc} not written: it already exists"
    assert rc.read_text() == "mine"
    app.session.services = Services(exporter=None)
    os.remove(rc)
    keys(app, "W")
    assert "not written" in text(app, (120, 12))[2]
    assert not rc.exists()


def test_write_config_to_the_directory_w_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    app, _ = new_app(config_dir=str(tmp_path))
    keys(app, "W")
    assert text(app, (120, 12))[2].strip() == f"{tmp_path / '.tiptoprc'} written"
    assert not (tmp_path / "xdg").exists()


def test_write_config_says_what_the_exporter_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A configuration the exporter cannot write (``ValueError``) is said on the message
    line; any other exception is a bug and is not swallowed."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    app, _ = new_app()

    def refuse(options: Options, screens: Sequence[ScreenSpec]) -> str:
        raise ValueError("column 'x' has no header")

    app.session.services = Services(exporter=refuse)
    keys(app, "W")
    rc = tmp_path / "tiptop" / "tiptoprc"
    assert text(app, (120, 12))[2].strip() == f"{rc} not written: column 'x' has no header"
    assert not rc.exists()

    def broken(options: Options, screens: Sequence[ScreenSpec]) -> str:
        raise RuntimeError("bug")

    app.session.services = Services(exporter=broken)
    with pytest.raises(RuntimeError, match="bug"):
        keys(app, "W")
    assert not (tmp_path / ".tiptoprc").exists()


def test_keypress_latency_with_2000_tasks() -> None:
    app, _ = new_app(n=2000, show_idle=True)
    text(app, (120, 40))
    worst = 0.0
    for key in (">", "R", "<", "i", "U", "down"):
        # The CPU the key costs (thread time): what the program controls, whatever else
        # the machine runs meanwhile.
        t0 = time.thread_time()
        app.on_key(key)
        app.widget.render((120, 40))
        worst = max(worst, time.thread_time() - t0)
    assert worst < 0.2, f"slowest key took {worst * 1000:.1f} ms of CPU"


def test_max_iter_quits_after_n_refreshes() -> None:
    app, _ = new_app(max_iter=3)
    app.refresh()
    assert app.quit_code is None
    app.refresh()
    assert app.quit_code == 0


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
        assert sampler.reconfigured[-1]["config"].kernel is True


def test_screen_switch_shows_rows_at_the_first_refresh() -> None:
    """After a restart (Right: the sampler is reconfigured) the refresh 0.2 s later shows
    the tasks: ``restart`` primes the sampler, so that refresh is not the priming scan's
    empty frame (``0 processes, 0 displayed`` for a whole delay)."""
    app, sampler = new_app()
    keys(app, "right")
    assert sampler.reconfigured[-1]["screen"] is BRANCH
    assert sampler.started and sampler.starts == 2  # run()'s (here new_app's) and the restart's
    app.refresh()  # the 0.2 s alarm
    lines = text(app)
    assert lines[1].startswith("Tasks:   4 processes,   4 displayed")
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
    assert text(app)[1].startswith("Tasks:   4 processes,   4 displayed")
    app.refresh()
    assert app.quit_code == 0
    assert sampler.refreshes == 3  # new_app's, then the two after the switch


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        (["65", "enter"], "Not valid"),  # past SIGRTMAX
        (["9" * 30, "enter"], "Not valid"),  # past int
        (["\u00b2", "enter"], "Not valid"),  # a digit to str.isdigit, not to int()
        (["0", "enter"], "Not valid"),
        (["enter", "n"], "No signal sent"),  # anything but y
        (["esc"], "No signal sent"),
    ],
)
def test_kill_odd_signals_give_a_message(typed: list[str], message: str) -> None:
    """``k`` on the highlighted row (PID 100, made up: no signal may reach it, so every
    case here fails before kill(2) or sends nothing)."""
    app, _ = new_app()
    keys(app, "k", *_chars(typed))
    assert message in app.state.message and not app.windows


def test_k_signals_the_tagged_tasks_or_the_highlighted_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Space tags a row and highlights the next; ``k`` offers the tagged tasks, SIGTERM
    first, and sends nothing until ``y``; without tags, the highlighted one (a fake
    sender: the rows' PIDs are made up)."""
    from tiptop.live import keys as handlers

    sent: list[tuple[int, int]] = []

    def fake(pid: int, sig: int) -> str | None:
        sent.append((pid, sig))
        return "Kill of PID '103' with '9' failed: No such process" if pid == 103 else None

    monkeypatch.setattr(handlers, "send_signal", fake)
    app, _ = new_app()
    keys(app, " ")
    assert selected(app).pid == 101
    assert attrs(app, (60, 12), 4)[0][0] == P.TAGGED
    keys(app, "end", " ", "k")
    lines = text(app, (80, 24))
    assert any("Signal to 2 tagged tasks" in ln for ln in lines)
    assert text(app, (80, 24))[2].strip() == "Signal: SIGTERM (15)_"
    keys(app, "enter")
    assert text(app, (80, 24))[2].strip() == "Send SIGTERM (15) to 2 tagged tasks? (y/N)"
    assert sent == []
    keys(app, "y")
    assert sent == [(100, 15), (103, 15)] and not app.windows
    assert app.state.message.startswith("Sent SIGTERM (15) to 1 of 2 tasks; Kill of PID '103'")
    keys(app, "home", " ", "end", " ", "k", "9", "enter", "y")  # both untagged: the highlight
    assert sent[-1] == (103, 9) and app.state.message.endswith("No such process")


def _chars(typed: list[str]) -> list[str]:
    out: list[str] = []
    for t in typed:
        out += [t] if t in ("enter", "esc") else list(t)
    return out


def test_htop_function_keys_help_and_quit() -> None:
    app, _ = new_app()
    keys(app, "f1")
    assert any("Help (h or Esc closes)" in ln for ln in text(app, (100, 30)))
    keys(app, "f1")
    assert not app.windows
    keys(app, "f10")
    assert app.quit_code == 0


def test_an_unknown_key_says_so_for_two_seconds() -> None:
    """A key bound to nothing: the status line says so and that h or F1 helps, for 2 s
    (a fake clock), and the frame is taken as for any key (the original's)."""
    from tiptop.host import Clock

    now = [100.0]
    app, sampler = new_app(host=Host(clock=Clock(monotonic=lambda: now[0])))
    before = sampler.refreshes
    keys(app, "x")
    assert sampler.refreshes == before + 1
    assert text(app)[2].strip() == "Unknown key 'x': h or F1 lists the keys"
    now[0] += 1.9
    assert "Unknown key" in text(app)[2]
    now[0] += 0.2
    app.widget.changed()  # what the 2 s alarm the key set does in the main loop
    assert text(app)[2].strip() == ""
    keys(app, "ctrl b", "f7")
    assert text(app)[2].strip() == "Unknown key 'F7': h or F1 lists the keys"


def test_search_moves_the_highlight_to_the_next_match() -> None:
    """``/`` as in htop: each key typed moves to the first command holding the text from
    the highlighted row down; F3 the next; not found says so; Enter keeps the place."""
    app, sampler = new_app()
    before = sampler.refreshes
    keys(app, "/", "t", "a", "s", "k", "2")
    assert selected(app).command == "task2"
    assert text(app)[2].strip() == "Search: task2_"
    keys(app, "backspace", "f3")  # "task": the next one after task2
    assert selected(app).command == "task3"
    keys(app, "f3")  # round to the top
    assert selected(app).command == "task0"
    keys(app, "x")
    assert text(app)[2].strip() == "Search: taskx_  (not found)"
    keys(app, "enter")
    assert not app.windows and selected(app).command == "task0"
    assert sampler.refreshes == before + 1  # the answer's frame, no frame per key typed


def test_filter_narrows_the_rows_as_one_types_and_esc_clears_it() -> None:
    app, _ = new_app()
    keys(app, "\\", "K", "2")
    assert [r.command for r in app.rows] == ["task2"]
    assert text(app)[2].strip() == "Filter: K2_"
    keys(app, "enter")
    assert [r.command for r in app.rows] == ["task2"] and app.state.filter == "K2"
    assert app.state.message.startswith("Filter 'K2'")
    keys(app, "f4", "esc")  # F4: the same, from the filter in force; Esc clears it
    assert len(app.rows) == 4 and app.state.filter == ""


def test_follow_keeps_the_task_highlighted_and_shown() -> None:
    app, _ = new_app(show_idle=False)
    keys(app, "end", "F")  # task3, 1% CPU
    assert app.state.follow == 103 and app.state.message.startswith("Following PID 103")
    keys(app, "R")  # reversed: task3 first, still highlighted
    assert selected(app).pid == 103 and app.table.selected == 0
    keys(app, "down")  # a move: no longer followed
    assert app.state.follow is None and app.state.message == "Not following any more"


def test_htop_sort_keys() -> None:
    app, _ = new_app()
    keys(app, "N")
    assert [r.tid for r in app.rows] == [100, 101, 102, 103]  # PID, smallest first
    assert text(app)[3].startswith(" [PID]\u25b2")
    keys(app, "M")  # the first memory column: %MISS
    assert app.state.sort_column == 2 and app.state.descending
    keys(app, "P")
    assert app.state.sort_column == 0 and app.state.message == "Sorted on %CPU (R reverses)"
    keys(app, "right")  # screen branch: no memory column
    keys(app, "M")
    assert app.state.message == "Screen 'branch' has no memory column"
