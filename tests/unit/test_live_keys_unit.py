"""The live keys on their own: a :class:`Keys` changes a :class:`LiveState` and asks its
:class:`KeyActions` for the rest, with no ``LiveApp``, urwid loop or sampler behind it."""

from __future__ import annotations

from typing import Any

from tiptop.frame import SamplerConfig
from tiptop.host import Host
from tiptop.live.keys import KeyActions, Keys
from tiptop.live.state import LiveState
from tiptop.options import Options
from tiptop.screens.model import ColumnSpec, ScreenSpec

COLS = (
    ColumnSpec(" %CPU", "%5.1f", "CPU_TOT", "Total CPU usage"),
    ColumnSpec("  IPC", " %4.2f", "delta(I)/delta(C)", "Executed instructions per cycle"),
)
SCREENS = [ScreenSpec(name, name, columns=COLS) for name in ("one", "two", "three")]


class Recorder:
    """The actions a key asked for, in order; a restart with the screen and the sampler
    configuration the state asks for at that moment (what the app reopens)."""

    def __init__(self, state: LiveState) -> None:
        self.state = state
        self.calls: list[tuple[str, Any]] = []

    def restart(self) -> None:
        st = self.state
        self.calls.append(("restart", (st.screen, st.options.sampler_config())))

    def actions(self) -> KeyActions:
        return KeyActions(
            restart=self.restart,
            quit=lambda code: self.calls.append(("quit", code)),
            toggle_window=lambda name: self.calls.append(("window", name)),
        )


def new_keys(host: Host | None = None, **opts: Any) -> tuple[Keys, LiveState, Recorder]:
    state = LiveState.initial(Options(**opts), None, SCREENS, 0)
    rec = Recorder(state)
    return Keys(state, rec.actions(), host=host or Host()), state, rec


def test_keys_change_the_state_and_ask_the_actions() -> None:
    keys, state, rec = new_keys()
    assert keys.dispatch("q") is False and rec.calls == [("quit", 0)]
    rec.calls.clear()
    assert keys.dispatch("h") is False and keys.dispatch("e") is False
    assert rec.calls == [("window", "help"), ("window", "errors")]
    rec.calls.clear()
    assert keys.dispatch("S") is True
    assert state.view.sticky and state.options.sticky
    assert rec.calls == [("restart", (SCREENS[0], SamplerConfig(sticky=True)))]
    rec.calls.clear()
    assert keys.dispatch("x") is False and rec.calls == []  # no binding: nothing happens


def test_screen_keys_wrap_and_restart_with_the_new_screen() -> None:
    keys, state, rec = new_keys()
    state.sort_column = 2
    assert keys.dispatch("left") is True  # from the first screen to the last
    assert state.screen_index == 2 and state.view.sort_column == 0
    assert rec.calls == [("restart", (SCREENS[2], SamplerConfig()))]
    assert keys.dispatch("+") is True and state.screen_index == 0
    assert keys.dispatch("right") is True and state.screen is SCREENS[1]


def test_c_restarts_only_when_a_name_filter_matches_the_command_line() -> None:
    keys, state, rec = new_keys()
    assert keys.dispatch("c") is False and state.view.show_cmdline and rec.calls == []
    keys, state, rec = new_keys(only_name="sshd")
    assert keys.dispatch("c") is True
    assert rec.calls == [
        ("restart", (SCREENS[0], SamplerConfig(only_name="sshd", match_cmdline=True)))
    ]


def test_k_asks_the_host_and_the_delay_prompt_sets_state_and_options() -> None:
    keys, state, rec = new_keys(host=Host(uid=1000, euid=1000, paranoid=2))
    assert keys.dispatch("K") is False and rec.calls == []
    assert state.message.startswith("Kernel mode not available")
    assert keys.dispatch("d") is False and state.prompt is not None
    assert state.prompt.accept(" 0.5 ") is False
    assert state.delay == 0.5 and state.options.delay == 0.5
    assert state.message == "Delay set to 0.50"


def test_key_help_lists_every_key_and_only_keys_that_work() -> None:
    """The help's key list (KEY_HELP) against what acts on keys: the dispatcher, the
    navigation keys, and the sources' own keys (G of bycgroup, the replay's)."""
    from tiptop.live.app import CLOSE_KEYS, NAV_KEYS
    from tiptop.live.keys import KEY_HELP, KEY_LABELS, key_help
    from tiptop.recording import replay
    from tiptop.sources import bycgroup

    keys, _, _ = new_keys()
    handled = keys.bound() | NAV_KEYS | CLOSE_KEYS | {"enter", bycgroup.KEY, " "}
    handled |= {*replay.STEP_KEYS, *replay.JUMP_KEYS, *replay.SPEED_KEYS}
    listed = [k for ks, _ in KEY_HELP for k in ks]
    assert len(listed) == len(set(listed))
    assert set(listed) == handled
    lines = key_help()
    assert lines[0] == "Selection and windows:" and lines[1].startswith("  Up Down ")
    # One key (or key pair) per line, its words after it.
    for ks, what in KEY_HELP:
        label = " ".join(KEY_LABELS.get(k, k) for k in ks)
        assert any(x.startswith(f"  {label} ") and x.endswith(what) for x in lines), ks
