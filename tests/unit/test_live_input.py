"""The live loop's input filter (tiptop/live/terminal_input.py): what urwid decodes from
terminal reports, focus events and a bracketed paste never reaches the keys; the real
terminal's ``ESC[999;999R`` is tests/system/test_live_tmux.py's."""

from __future__ import annotations

from tiptop.live.terminal_input import InputFilter


def test_reports_focus_events_and_pastes_are_dropped() -> None:
    keep = InputFilter()
    typed: list[object] = ["down", ("cursor position", 998, 998), "focus in", "t", "focus out"]
    assert keep(typed, []) == ["down", "t"]
    # A paste's text is not typed keys, even across two reads.
    assert keep(["begin paste", "q", "k"], []) == []
    assert keep(["W", "end paste", "h"], []) == ["h"]
    assert keep(["window resize", "esc"], []) == ["window resize", "esc"]
