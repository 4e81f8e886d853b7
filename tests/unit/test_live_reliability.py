"""Live mode goes on, and says what happened: a screen file with a bad format, long
messages (wrapped on the message line and in the ``e`` window), and a ``-- command``
that ends (issue 15)."""

from __future__ import annotations

from tests.support.live import DEFAULT, ScriptedSampler, keys, text
from tiptop.host import Host
from tiptop.live.app import LiveApp
from tiptop.live.services import Services
from tiptop.options import Options
from tiptop.screens import Target, load_text

#: Two screens; the second has a column whose format would print a 1 GB cell, and one
#: that does not print a double.
SCREENS = """<tiptop>
<screen name="good"><column header=" %CPU" format="%5.1f" expr="CPU_TOT"/></screen>
<screen name="bad">
  <column header=" %CPU" format="%5.1f" expr="CPU_TOT"/>
  <column header=" huge" format="%999999999f" expr="CPU_TOT"/>
  <column header=" int" format="%d" expr="CPU_TOT"/>
</screen>
</tiptop>
"""


def _app(screens: list, **opts: object) -> tuple[LiveApp, ScriptedSampler]:
    sampler = ScriptedSampler(4)
    app = LiveApp(Options(**opts), sampler, screens, Services(host=Host(), screen_index=0))  # type: ignore[arg-type]
    sampler.start()
    app.refresh()
    return app, sampler


def test_moving_onto_a_screen_with_a_bad_format_goes_on() -> None:
    """The loader refuses the bad columns (file:line:column), the screen shows the rest,
    and the session goes on across the switch and the next refreshes."""
    cfg = load_text(SCREENS, Target(), path="rc")
    assert [str(p).split(": ")[0] for p in cfg.problems] == ["rc:5:34", "rc:6:33"]
    app, _sampler = _app([DEFAULT, *cfg.screens])
    keys(app, "right", "right")
    app.refresh()
    app.refresh()
    assert app.quit_code is None
    assert app.state.screen.name == "bad"
    lines = text(app, (60, 8))
    assert lines[1].endswith("screen  2: bad")
    assert lines[3].split() == ["PID", "\u25bc[%CPU]", "COMMAND"]  # neither ' huge' nor ' int'
    assert lines[4].split() == ["100", "50.0", "task0"]


#: Two messages a new user meets, both longer than a terminal is wide.
FALLBACK = (
    "screen 'default' cannot count here (cycles: ENOENT (No such file or directory), "
    "no hardware PMU here); starting on screen 'sched' (software events)"
)
PARANOID = (
    "context-switches, cpu-migrations: happen only in the kernel and would always read 0 "
    "without kernel counting, which perf_event_paranoid 2 forbids to non-root users: run as "
    "root or with CAP_PERFMON, or set kernel.perf_event_paranoid to 1 or lower, to count "
    "them; their cells show '?'"
)


def _words(lines: list[str]) -> str:
    """The text of ``lines`` as one line (borders and padding dropped)."""
    return " ".join(" ".join(line.strip("│ ").split()) for line in lines).strip()


def test_a_long_message_takes_one_line_and_is_kept_whole() -> None:
    """The start-up notice longer than the terminal: its first words on the status line,
    cut at a space, then the key that shows it whole; the header right below; the whole
    text kept for that key (issue 50: it took 2 rows of 80x24, 3 here)."""
    sampler = ScriptedSampler(4)
    app = LiveApp(Options(), sampler, [DEFAULT], Services(host=Host(), message=FALLBACK))
    sampler.start()
    app.refresh()
    lines = text(app, (60, 16))
    assert lines[2].rstrip() == "screen 'default' cannot count here (cycles\u2026 (m: more)"
    assert FALLBACK.startswith(lines[2].split("\u2026")[0].rstrip())
    assert lines[3].split()[:3] == ["PID", "[%CPU]\u25bc", "IPC"]  # the header below it
    assert app.state.status.said == [FALLBACK]
    wide = text(app, (len(FALLBACK) + 1, 16))[2]
    assert wide.rstrip() == FALLBACK  # it fits: whole, no key named


def test_the_start_up_notice_goes_after_a_few_refreshes_or_a_key() -> None:
    sampler = ScriptedSampler(4)
    app = LiveApp(Options(), sampler, [DEFAULT], Services(host=Host(), message="no PMU"))
    sampler.start()
    for _ in range(2):
        app.refresh()
        assert text(app)[2].strip() == "no PMU"
    app.refresh()
    assert text(app)[2].strip() == ""
    app = LiveApp(Options(), sampler, [DEFAULT], Services(host=Host(), message="no PMU"))
    app.refresh()
    keys(app, "i")
    assert text(app)[2].strip() == ""


def test_errors_mark_only_errors() -> None:
    """``[errors]`` in the footer for an error, not for a notice (no PMU here is news)."""
    sampler = ScriptedSampler(4)
    app = LiveApp(Options(), sampler, [DEFAULT], Services(host=Host()))
    sampler.start()
    sampler.messages.say("no-pmu", "no hardware PMU here", notice=True)
    app.refresh()
    assert "[errors]" not in text(app)[-1]
    sampler.messages.say("open:7", "pid 7: EACCES: not yours")
    app.refresh()
    assert "[errors]" in text(app)[-1]
    keys(app, "e")
    assert any("1 errors detected, 1 notice (e to close)" in ln for ln in text(app, (80, 20)))


def test_a_long_message_is_wrapped_in_the_error_window() -> None:
    sampler = ScriptedSampler(4)
    app = LiveApp(Options(), sampler, [DEFAULT], Services(host=Host()))
    sampler.start()
    sampler.messages.say("paranoid", PARANOID)
    sampler.messages.say("other", "second message")
    app.refresh()
    keys(app, "e")
    lines = text(app, (60, 30))
    top = next(i for i, line in enumerate(lines) if "2 errors detected" in line)
    end = next(i for i, line in enumerate(lines) if line.strip("│ ") == "END")
    assert lines[top + 1].strip("│ ") == "BEGIN"
    assert _words(lines[top + 2 : end]) == PARANOID + " second message"
    assert lines[-2].strip("│ ") == "100 %"
    # Shorter: the first message fills the window, and scrolling reaches the second.
    assert _words(text(app, (60, 20))[11:17]) == PARANOID
    keys(app, "end")
    lines = text(app, (60, 20))
    assert [line.strip("│ ") for line in lines[10:13]] == [".....", "second message", "END"]


class Child:
    """A ``--`` command as live mode sees it (``tiptop.spawn.Spawned.peek``)."""

    def __init__(self) -> None:
        self.status: int | None = None

    def peek(self) -> int | None:
        return self.status


def test_the_end_of_the_command_is_said_with_its_status() -> None:
    sampler, child = ScriptedSampler(4), Child()
    opts = Options(command=("make", "-j4"))
    app = LiveApp(opts, sampler, [DEFAULT], Services(host=Host(), child=child))
    sampler.start()
    app.refresh()
    assert app.state.message == ""
    child.status = 2
    app.refresh()
    assert app.quit_code is None  # the session goes on, on the last counts
    assert text(app, (60, 12))[2].strip() == "'make' ended, exit status 2 (q quits)"
    keys(app, "i")  # said once: a key clears it, as any message
    app.refresh()
    assert "ended" not in text(app, (60, 12))[2]


def test_huge_numbers_typed_at_the_prompts_are_refused() -> None:
    """A 4,301-digit number (past Python's int() limit) or a 25-digit one at the p, w, u
    and d prompts and as k's signal: one message, and the session goes on (issue 15,
    item 2)."""
    sampler = ScriptedSampler(4)
    app = LiveApp(Options(), sampler, [DEFAULT], Services(host=Host()))
    sampler.start()
    app.refresh()
    for number in ("1" * 4301, "9" * 25):
        for key in ("k", "p", "w", "u", "d"):
            keys(app, key, *number, "enter")
            assert app.quit_code is None and not app.windows
            assert app.state.message, key
            assert len(app.state.message) < 120
    keys(app, "k", "9", "enter", "n")  # asked, not sent
    assert app.state.message == "No signal sent"
    assert app.state.options.only_pid is None and app.state.view.watch is None


def test_m_shows_each_text_whole_newest_first() -> None:
    """``m`` (the key the status line names after a cut text) shows what the status line
    said, whole and wrapped, the latest first, and the notice line's text."""
    sampler = ScriptedSampler(4)
    app = LiveApp(Options(), sampler, [DEFAULT], Services(host=Host(), message=FALLBACK))
    sampler.start()
    app.refresh()
    keys(app, "d", *"0.001", "enter")  # a refusal longer than the line
    said = app.state.message
    assert said.startswith("delay must be at least") and len(said) > 60
    assert text(app, (60, 30))[2].rstrip().endswith("\u2026 (m: more)")
    keys(app, "m")
    lines = text(app, (60, 30))
    top = next(i for i, ln in enumerate(lines) if "Messages, newest first" in ln)
    end = next(i for i in range(top + 1, len(lines)) if lines[i].startswith("└"))
    assert " ".join(_words(lines[top + 1 : end]).split()) == f"{said} {FALLBACK}"
    keys(app, "m")
    assert not any("Messages, newest" in ln for ln in text(app, (60, 30)))
