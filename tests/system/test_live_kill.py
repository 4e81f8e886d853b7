"""Live mode's kill prompt sending a real signal to a real process, and the kernel's
reason shown when the process is gone."""

from __future__ import annotations

import signal
import subprocess

from tests.support.live import keys, new_app, text


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
