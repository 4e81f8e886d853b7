"""Live mode goes on, and says what happened: a screen file with a bad format, long
messages (wrapped on the message line and in the ``e`` window), and a ``-- command``
that ends (issue 15)."""

from __future__ import annotations

from tests.support.live import DEFAULT, ScriptedSampler, keys, text
from tiptop.host import Host
from tiptop.live.app import LiveApp
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
    app = LiveApp(Options(**opts), sampler, screens, host=Host(), screen_index=0)  # type: ignore[arg-type]
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
    assert lines[3].split() == ["PID", "[", "%CPU]COMMAND"]  # neither ' huge' nor ' int'
    assert lines[4].split() == ["100", "50.0", "task0"]
