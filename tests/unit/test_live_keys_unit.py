"""The live keys on their own and the controller's one place that applies them: a
handler of the registry (``tiptop.live.registry``) changes a :class:`Session`'s state and
returns a :class:`Reaction`, with no ``LiveApp``, urwid loop or sampler behind it; then
``LiveApp.apply`` and ``on_key`` carry reactions out (windows opened, toggled, closed; a
question that takes every key; a refresh after a key)."""

from __future__ import annotations

from typing import Any

import urwid

from tests.support.live import ScriptedSampler, keys, new_app
from tiptop.frame import SamplerConfig
from tiptop.host import Host
from tiptop.live import registry
from tiptop.live.reaction import NOTHING, Effect, Reaction
from tiptop.live.rows import TaskTable
from tiptop.live.services import Services
from tiptop.live.session import Session
from tiptop.live.state import LiveState
from tiptop.live.window import TextWindow
from tiptop.live.windows.errors import ErrorWindow
from tiptop.live.windows.prompt import Prompt
from tiptop.options import Options
from tiptop.screens.model import ColumnSpec, ScreenSpec

COLS = (
    ColumnSpec(" %CPU", "%5.1f", "CPU_TOT", "Total CPU usage"),
    ColumnSpec("  IPC", " %4.2f", "delta(I)/delta(C)", "Executed instructions per cycle"),
)
SCREENS = [ScreenSpec(name, name, columns=COLS) for name in ("one", "two", "three")]


def new_session(host: Host | None = None, **opts: Any) -> Session:
    state = LiveState.initial(Options(**opts), None, SCREENS, 0)
    table = TaskTable(str)
    return Session(state, ScriptedSampler(), Services(), host or Host(), table)


def press(session: Session, key: str) -> Reaction:
    binding = registry.lookup(key)
    assert binding is not None, key
    return binding.act(session, key)


def test_handlers_change_the_state_and_return_what_to_redo() -> None:
    s = new_session()
    assert press(s, "q").effects == Effect.QUIT and press(s, "q").code == 0
    assert isinstance(press(s, "h").opens, TextWindow)
    assert isinstance(press(s, "e").opens, ErrorWindow)
    done = press(s, "S")
    assert done.effects == Effect.RESTART
    assert s.state.view.sticky and s.state.options.sampler_config() == SamplerConfig(sticky=True)
    assert registry.lookup("x") is None  # no binding: the controller says so


def test_screen_keys_wrap_and_restart_with_the_new_screen() -> None:
    s = new_session()
    s.state.sort_column = 2
    assert press(s, "left").effects == Effect.RESTART  # from the first screen to the last
    assert s.state.screen_index == 2 and s.state.view.sort_column == 0
    assert press(s, "+").effects == Effect.RESTART and s.state.screen_index == 0
    press(s, "right")
    assert s.state.screen is SCREENS[1]
    press(s, "-")
    assert s.state.screen is SCREENS[0]


def test_c_restarts_only_when_a_name_filter_matches_the_command_line() -> None:
    s = new_session()
    assert press(s, "c") is NOTHING and s.state.view.show_cmdline
    s = new_session(only_name="sshd")
    assert press(s, "c").effects == Effect.RESTART
    assert s.state.options.sampler_config() == SamplerConfig(only_name="sshd", match_cmdline=True)


def test_k_asks_the_host_and_the_delay_prompt_sets_state_and_options() -> None:
    s = new_session(host=Host(uid=1000, euid=1000, paranoid=2))
    done = press(s, "K")
    assert done.effects == Effect.NONE and (done.says or "").startswith("Kernel mode not")
    prompt = press(s, "d").opens
    assert isinstance(prompt, Prompt) and prompt.modal
    for k in " 0.5 ":
        prompt.key(k, s)
    answered = prompt.key("enter", s)
    assert answered.effects == Effect.CLOSE | Effect.REFRESH
    assert answered.says == "Delay set to 0.50"
    assert s.state.delay == 0.5 and s.state.options.delay == 0.5


def test_the_registry_binds_each_key_once_and_lists_the_sources_keys() -> None:
    """One table: each key in one binding; the sources' own keys (G of bycgroup, the
    replay's) are the ones those sources act on; the help lists every binding, one a
    line, under its group."""
    from tiptop.recording import replay
    from tiptop.sources import bycgroup

    listed = [k for b in registry.BINDINGS for k in b.keys]
    assert len(listed) == len(set(listed))
    to_source = {k for b in registry.BINDINGS if b.act is registry.K.from_source for k in b.keys}
    assert to_source == {bycgroup.KEY, *replay.STEP_KEYS, *replay.JUMP_KEYS, *replay.SPEED_KEYS}
    space = registry.lookup(" ")
    assert space is not None and space.act is registry.K.tag  # pause for a replay, else a tag
    lines = registry.key_help()
    assert lines[0] == "Selection and windows:" and lines[1].startswith("  Up Down ")
    for b in registry.BINDINGS:
        name = registry.label(b.keys)
        assert any(x.startswith(f"  {name} ") and x.endswith(b.words) for x in lines), b.keys


class Marker(TextWindow):
    """A text window that records being closed (the controller's bookkeeping)."""

    def __init__(self, log: list[str], title: str, modal: bool = False) -> None:
        super().__init__(title[0], title, lambda _s: [title])
        self.log, self.modal = log, modal

    def close(self) -> None:
        self.log.append(f"close {self.title}")
        super().close()


def test_apply_opens_toggles_and_keeps_one_window_under_a_question() -> None:
    app, sampler = new_app()
    log: list[str] = []
    app.apply(Reaction(opens=Marker(log, "a")))
    assert [w.title for w in app.windows] == ["a"]  # type: ignore[attr-defined]
    app.apply(Reaction(opens=Marker(log, "b")))  # another window takes its place
    assert log == ["close a"] and len(app.windows) == 1
    app.apply(Reaction(opens=Marker(log, "q", modal=True)))  # a question goes on top
    assert len(app.windows) == 2 and log == ["close a"]
    app.apply(Reaction(Effect.CLOSE))
    assert log == ["close a", "close q"]
    app.apply(Reaction(opens=Marker(log, "b2")))  # the same name on top: a toggle
    assert log[-1] == "close b" and app.windows == []
    refreshes = sampler.refreshes
    app.apply(Reaction(Effect.REBUILD, says="sorted"))
    assert sampler.refreshes == refreshes and app.state.message == "sorted"
    app.apply(Reaction(Effect.QUIT, code=3))
    assert app.quit_code == 3


def test_a_question_takes_every_key_and_other_keys_take_a_frame() -> None:
    app, sampler = new_app()
    before = sampler.refreshes
    keys(app, "i")  # a view key: refreshed at once, as in the original
    assert sampler.refreshes == before + 1
    keys(app, "down")  # navigation only: no frame
    assert sampler.refreshes == before + 1
    keys(app, "p")  # a question: no frame until it is answered
    assert sampler.refreshes == before + 1 and app.windows
    keys(app, "q", "h", "down")  # typed into it, not quit nor help
    assert app.quit_code is None and app.windows[-1].status() == "Only display process: qh_"
    keys(app, "esc")
    assert not app.windows and sampler.refreshes == before + 1


def test_the_tree_window_follows_the_highlight() -> None:
    app, _ = new_app()
    keys(app, "t")
    canvas = app.widget.render((100, 12))
    assert any(b"PID 100 (task0)" in line for line in canvas.text)
    keys(app, "down")
    canvas = app.widget.render((100, 12))
    assert any(b"PID 101 (task1)" in line for line in canvas.text)
    assert isinstance(canvas, urwid.Canvas)
