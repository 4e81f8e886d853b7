"""The live ``t`` window (tiptop/live/windows.py ``tree_markup``): the top-down tree of the
selected task drawn on urwid's canvas from a synthetic Zen 4 ``topdown2`` frame (nodes,
shares, bars, thresholds, the critical path and its highlight, the advice), and its one
line when there is no tree. The tmux test is tests/system/test_live_tmux.py's."""

from __future__ import annotations

from typing import Any

from tests.support.live import DEFAULT, ScriptedSampler, attrs, keys, new_app, text
from tests.unit.test_why import TD2, ZEN4, _frame
from tiptop.frame import Frame
from tiptop.host import Host
from tiptop.live import palette as P
from tiptop.live.app import LiveApp
from tiptop.live.reaction import Reaction
from tiptop.live.services import Services
from tiptop.live.windows.tree import TreeWindow
from tiptop.options import Options
from tiptop.screens import Target, builtin_screens
from tiptop.screens.model import ScreenSpec

SIZE = (150, 24)


class TreeSource(ScriptedSampler):
    """Frames of the Zen 4 ``topdown2`` screen holding task 4242 (tests/unit/test_why.py)."""

    def __init__(self, **frame: Any) -> None:
        super().__init__(1)
        self.frame = frame
        self.screen = TD2  # the view follows its source's screen

    def refresh(self) -> Frame:
        self.refreshes += 1
        return _frame(**self.frame)


def tree_app(**frame: Any) -> LiveApp:
    td1 = next(s for s in ZEN4 if s.name == "topdown")
    app = LiveApp(Options(show_idle=True), TreeSource(**frame), [TD2, td1], Services(host=Host()))
    app.refresh()
    return app


def test_the_tree_window_draws_nodes_bars_and_the_path() -> None:
    app = tree_app()
    keys(app, "t")
    lines = text(app, SIZE)
    top = next(i for i, ln in enumerate(lines) if "Top-down tree of PID" in ln)
    body = [ln[1:].rstrip(" │") for ln in lines[top + 1 :]]
    assert body[0] == "PID 4242 (chase): bottleneck BE/Mem 36% of slots"
    be = next(ln for ln in body if ln.startswith("* BE "))
    assert be.startswith("* BE            45.0% [#########...........] > 20% over  see its level 2")
    mem = next(ln for ln in body if "BE/Mem" in ln and ln.startswith("*"))
    assert mem.startswith("*   BE/Mem      36.0% [#######.............] > 20% over  smaller work")
    cpu = next(ln for ln in body if "BE/CPU" in ln)
    assert cpu.startswith("    BE/CPU       9.0% [##..................] > 10%       break dep")
    smt = next(ln for ln in body if ln.startswith("  SMT"))
    assert "   n/a [                    ] > 20%" in smt
    assert any(ln.startswith("BE/Mem: stalled on loads and stores") for ln in body)
    # The critical nodes' marks and labels highlighted, "over" too; others plain.
    row = top + 1 + body.index(be)
    runs = [(str(a), n) for a, n in attrs(app, SIZE, row)]  # over the window's attribute
    over = str(next(a for a, _ in attrs(app, SIZE, row) if P.OVER in str(a)))
    assert runs[1] == (over, 14) and (over, 4) in runs
    row = top + 1 + body.index(cpu)
    assert (over, 14) not in [(str(a), n) for a, n in attrs(app, SIZE, row)]
    keys(app, "t")
    assert not any("Top-down tree" in ln for ln in text(app, SIZE))


def test_counts_missing_say_why_in_one_line() -> None:
    app = tree_app(missing="LNC")
    app.source.messages.say("open:LNC", "LNC: no PMU named 'cpu' on this machine", ["LNC"])
    keys(app, "t")
    lines = text(app, SIZE)
    top = next(i for i, ln in enumerate(lines) if "Top-down tree of PID" in ln)
    assert lines[top + 1][1:].rstrip(" │") == (
        "PID 4242 (chase): counts missing: LNC: no PMU named 'cpu' on this machine"
    )
    assert "─" in lines[top + 2]  # one line, then the box's bottom


def test_without_a_tree_one_line() -> None:
    app, _ = new_app()  # screens default and branch: no tree on any
    keys(app, "t")
    lines = text(app, (100, 12))
    top = next(i for i, ln in enumerate(lines) if "Top-down tree of PID" in ln)
    assert "no top-down tree for this CPU: no screen has one" in lines[top + 1]
    assert "─" in lines[top + 2]


def window_line(screens: list[ScreenSpec]) -> str:
    """The drill-down window's first line after ``t`` on the first of ``screens``."""
    app = LiveApp(Options(), ScriptedSampler(2), screens, Services(host=Host()))
    app.source.start()
    app.refresh()
    keys(app, "t")
    lines = text(app, (100, 12))
    top = next(i for i, ln in enumerate(lines) if "Top-down tree of PID" in ln)
    return lines[top + 1]


def test_where_no_cpu_tree_is_it_names_the_time_screen() -> None:
    """Zen 3 has no top-down screen: ``t`` on ``default`` points to ``state``, whose tree
    (where the time went) needs no PMU."""
    line = window_line(builtin_screens(Target("x86", "19_01")))
    assert "no top-down tree for this CPU: 'state' has where the time went (+/-)" in line


def test_on_a_screen_without_a_tree_it_names_the_one_with() -> None:
    line = window_line([DEFAULT, TD2])
    assert "screen 'default' has no top-down tree: 'topdown2' has (+/-)" in line


class Counted(TreeSource):
    """The extra source: ``topdown2`` frames of task 4242, its life recorded."""

    def __init__(self, made: list[tuple[int, str, Counted]], pid: int, screen: ScreenSpec) -> None:
        super().__init__()
        made.append((pid, screen.name, self))
        self.closed = False

    def close(self) -> None:
        self.closed = True


class Level1(ScriptedSampler):
    """The main source: Zen 4 ``topdown`` (level 1) frames of task 4242."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.screen = TD1

    def refresh(self) -> Frame:
        self.refreshes += 1
        return _frame(screen=TD1)


TD1 = next(s for s in ZEN4 if s.name == "topdown")


def level1_app(main: Level1, extra: type[Counted], made: list[tuple[int, str, Counted]]) -> LiveApp:
    """Live mode on ``topdown`` from ``main`` after one refresh, the ``t`` window's extra
    sources made as ``extra`` (each recorded in ``made``)."""
    app = LiveApp(
        Options(show_idle=True),
        main,
        [TD1, TD2],
        Services(host=Host(), drill=lambda _settings, pid, s: extra(made, pid, s)),
    )
    app.refresh()
    return app


def test_level_2_is_counted_for_the_selected_task_alone() -> None:
    """On ``topdown`` the window asks for a ``topdown2`` source on the selected process
    only, shows level 1 until it has counted, then its level 2; closing the window
    releases it; the main source is never reconfigured."""
    made: list[tuple[int, str, Counted]] = []
    main = Level1(1)
    app = level1_app(main, Counted, made)
    keys(app, "t")  # opens it; the key's refresh already counts once
    assert [(pid, name) for pid, name, _ in made] == [(4242, "topdown2")]
    extra = made[0][2]
    assert extra.starts == 1 and extra.refreshes >= 1
    body = [ln[1:].rstrip(" │") for ln in text(app, SIZE)]
    assert "PID 4242 (chase): bottleneck BE/Mem 36% of slots" in body
    assert any(
        ln.startswith("level 2 from screen 'topdown2', counted on PID 4242 alone") for ln in body
    )
    assert main.reconfigured == []
    keys(app, "t")
    assert extra.closed and not app.windows
    assert not any("Top-down tree" in ln for ln in text(app, SIZE))


def test_the_extra_source_takes_the_settings_changed_live() -> None:
    """``K`` pressed with the window open reaches the extra source too: it is reopened with
    the live settings (kernel mode on), not the command line's (issue 36)."""
    made: list[tuple[Options, int]] = []

    def factory(settings: Options, pid: int, screen: ScreenSpec) -> Counted:
        made.append((settings, pid))
        return Counted([], pid, screen)

    root = Host(uid=0, euid=0, paranoid=2)
    app = LiveApp(
        Options(show_idle=True), Level1(1), [TD1, TD2], Services(host=root, drill=factory)
    )
    app.refresh()
    keys(app, "t")
    keys(app, "K")  # counters reopened: the window's task comes back with the next frame
    app.refresh()
    assert [(s.show_kernel, pid) for s, pid in made] == [(False, 4242), (True, 4242)]
    assert made[-1][0].sampler_config().kernel and made[-1][0].only_pid is None


def test_until_the_extra_source_counts_level_1_is_shown() -> None:
    made: list[tuple[int, str, Counted]] = []
    app = level1_app(Level1(1), Counted, made)
    app.apply(Reaction(opens=TreeWindow(("t",))))  # no refresh: the extra source has no frame yet
    body = [ln[1:].rstrip(" │") for ln in text(app, SIZE)]
    assert "PID 4242 (chase): bottleneck BE 45% of slots" in body
    assert any(
        ln.startswith("level 2: counting screen 'topdown2' on PID 4242 alone") for ln in body
    )


def test_multiplexed_counts_show_the_time_each_event_ran() -> None:
    class Halves(TreeSource):
        def refresh(self) -> Frame:
            f = _frame(running=0.5)
            f.counter_running[0, :] = 0.5
            return f

    app = LiveApp(Options(show_idle=True), Halves(), [TD2], Services(host=Host()))
    app.refresh()
    keys(app, "t")
    body = [ln[1:].rstrip(" │") for ln in text(app, SIZE)]
    i = body.index(
        "PID 4242 (chase): bottleneck BE/Mem 36% of slots (counts scaled: they ran 50% of the time)"
    )
    assert body[i + 1].startswith("events ran: CYC 50%, RET 50%, UC 50%")


#: A machine without a PMU: every count of the task missing (``CYC`` is in every node),
#: where its time went known (fractions of the interval: run, wait, throttled, I/O).
NO_PMU: dict[str, Any] = {"missing": "CYC", "time": [0.98, 0.0, 0.0, 0.0]}
NO_PMU_LINE = "CYC: no PMU named 'cpu' on this machine"
#: A terminal where the window holds the whole tree, its last line included.
TALL = (150, 40)


class Uncounted(Counted):
    """The extra source on a machine without a PMU (:data:`NO_PMU`)."""

    def __init__(self, made: list[tuple[int, str, Counted]], pid: int, screen: ScreenSpec) -> None:
        super().__init__(made, pid, screen)
        self.frame = NO_PMU
        self.messages.say("open:CYC", NO_PMU_LINE, ["CYC"])


class Level1Uncounted(Level1):
    """The main source on that machine."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.messages.say("open:CYC", NO_PMU_LINE, ["CYC"])

    def refresh(self) -> Frame:
        self.refreshes += 1
        return _frame(screen=TD1, **NO_PMU)


def test_level_2_without_counts_says_why_last() -> None:
    """Without a PMU the window still shows where the task's time went, and its last line
    says why the top-down counts are missing, before the extra source has counted and
    once it has (an AMD Zen 4 machine without a PMU: its ``topdown`` has a ``topdown2``)."""
    made: list[tuple[int, str, Counted]] = []
    app = level1_app(Level1Uncounted(1), Uncounted, made)
    app.apply(Reaction(opens=TreeWindow(("t",))))  # no refresh: the extra source has no frame yet
    for note in (
        "level 2: counting screen 'topdown2' on PID 4242 alone",
        "level 2 from screen 'topdown2', counted on PID 4242 alone",
    ):
        body = [ln[1:].rstrip(" │") for ln in text(app, TALL)]
        assert "PID 4242 (chase): running 98% of its time; top-down: counts missing ('?')" in body
        end = body.index(note)
        assert body[end + 1] == f"top-down counts missing: {NO_PMU_LINE}"
        assert body[end + 2].startswith("─")  # the last line: the box's bottom follows
        app.refresh()  # the extra source counts: its level 2, and the same line last
    assert made and made[0][2].refreshes >= 1
