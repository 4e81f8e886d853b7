"""Live mode's ``k`` sending a real signal to a real process (the highlighted row's), after
its confirmation, and the kernel's reason shown when the process is gone. The tmux test of
the real program is tests/system/test_live_tmux.py's ``test_htop_habits_in_a_real_terminal``."""

from __future__ import annotations

import signal
import subprocess

from tests.support.live import ScriptedSampler, keys, new_app, text
from tiptop.frame import Frame


class WithChild(ScriptedSampler):
    """The scripted rows, the first one being the child's (the highlighted one)."""

    def __init__(self, pid: int) -> None:
        super().__init__(4)
        self.child = pid

    def refresh(self) -> Frame:
        f = super().refresh()
        if len(f):
            f.tid[0] = f.pid[0] = self.child
        return f


def test_k_sends_a_real_signal_after_confirmation() -> None:
    child = subprocess.Popen(["sleep", "60"])
    try:
        app, _ = new_app()
        app.source = app.session.source = WithChild(child.pid)
        app.source.start()
        app.refresh()
        assert app.table.selected_row().pid == child.pid  # type: ignore[union-attr]
        keys(app, "k")
        assert text(app)[2].rstrip() == "Signal: SIGTERM (15)_"
        keys(app, "enter")
        assert child.poll() is None  # asked, not sent
        assert text(app)[2].strip() == f"Send SIGTERM (15) to PID {child.pid} (task0)? (y/N)"
        keys(app, "y")
        assert child.wait(timeout=5) == -signal.SIGTERM
        assert app.state.message == f"Sent SIGTERM (15) to PID {child.pid} (task0)"
        # The pid is gone now: the kernel's own reason is shown.
        keys(app, "k", "9", "enter", "y")
        assert app.state.message == f"Kill of PID '{child.pid}' with '9' failed: No such process"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
