"""What each key does in live mode (docs/original.md section 5.3, ``handle_key()``).

A mixin for :class:`tiptop.live.app.LiveApp`: each handler changes the table ``View``, the
options record or the sampler's configuration, and sets the message line. ``dispatch``
returns True when the sampler was restarted (its refresh is then scheduled, not taken at
once). Fixes of the original: ``u`` really filters, ``k`` reports the real ``strerror``,
``W`` refuses to overwrite and says "written" only when it was, a delay below the minimum
is refused with a message instead of silently becoming 1.
"""

from __future__ import annotations

import errno
import os
import signal
from typing import Any

from tiptop.errors import UsageError
from tiptop.live.prompts import Prompt
from tiptop.options import MAX_DELAY, MIN_DELAY, decimal, parse_target, parse_user

#: The ``W`` key's file, in the current directory, as the original writes it.
RC_NAME = ".tiptoprc"


class KeyHandlers:
    """Key handlers; the attributes they use are set by ``LiveApp.__init__``."""

    # Provided by LiveApp (declared for readers and type checkers).
    options: Any
    source: Any
    host: Any
    screens: list[Any]
    screen_index: int
    view: Any
    delay: float
    message: str
    prompt: Prompt | None
    widget: Any
    exporter: Any

    def dispatch(self, key: str) -> bool:
        """Run the action bound to ``key``; True when the sampler was restarted."""
        simple = {
            "q": lambda: self.quit(0),
            "<": lambda: self._sort(-1),
            ">": lambda: self._sort(+1),
            "R": self._reverse,
            "e": lambda: self._window("errors"),
            "h": lambda: self._window("help"),
            "?": lambda: self._window("help"),
            "i": self._idle,
            "U": self._user_column,
            "W": self._write_config,
            "d": self._ask_delay,
            "s": self._ask_delay,
            "k": self._ask_kill,
            "p": self._ask_only,
            "u": self._ask_user,
            "w": self._ask_watch,
        }
        restarting = {
            "left": lambda: self._switch(-1),
            "-": lambda: self._switch(-1),
            "right": lambda: self._switch(+1),
            "+": lambda: self._switch(+1),
            "H": self._threads,
            "K": self._kernel,
            "S": self._sticky,
            "c": self._cmdline,
        }
        if key in simple:
            simple[key]()
            return False
        if key in restarting:
            return bool(restarting[key]())
        return False

    # ------------------------------------------------------------ view only

    def _sort(self, step: int) -> None:
        # Range -1 (PID) .. number of columns (COMMAND), clamped like the original.
        k = len(self.screen.columns)
        self.view.sort_column = max(-1, min(k, self.view.sort_column + step))

    def _reverse(self) -> None:
        self.view.descending = not self.view.descending

    def _idle(self) -> None:
        self.view.show_idle = not self.view.show_idle
        self._set_opt("show_idle", self.view.show_idle)

    def _user_column(self) -> None:
        self.view.show_user = not self.view.show_user
        self._set_opt("show_user", self.view.show_user)

    def _window(self, which: str) -> None:
        self.widget.window = None if self.widget.window == which else which

    # ------------------------------------------------------------ sampler

    def _switch(self, step: int) -> bool:
        # Screens wrap around; counters are reopened and the sort column goes back to 0.
        self.screen_index = (self.screen_index + step) % len(self.screens)
        self.view.sort_column = 0
        self.restart(screen=self.screen)
        return True

    def _toggle_counting(self, option: str, config: str, label: str) -> bool:
        """Invert ``option``, say ``label On``/``Off`` and reopen the counters with the
        sampler's ``config`` field set to match."""
        on = not self._opt(option, False)
        self._set_opt(option, on)
        self.message = f"{label} {'On' if on else 'Off'}"
        self.restart(**{config: on})
        return True

    def _threads(self) -> bool:
        return self._toggle_counting("show_threads", "threads", "Show threads")

    def _kernel(self) -> bool:
        if not self.host.kernel_counting_allowed:
            self.message = "Kernel mode not available (not root and paranoia level too high)."
            return False
        return self._toggle_counting("show_kernel", "kernel", "Kernel mode")

    def _sticky(self) -> bool:
        self.view.sticky = not self.view.sticky
        self._set_opt("sticky", self.view.sticky)
        self.restart(sticky=self.view.sticky)
        return True

    def _cmdline(self) -> bool:
        self.view.show_cmdline = not self.view.show_cmdline
        self._set_opt("show_cmdline", self.view.show_cmdline)
        if self._opt("only_name"):
            # The -p name filter matches the command line with -c (docs/original.md 1).
            self.restart(match_cmdline=self.view.show_cmdline)
            return True
        return False

    # ------------------------------------------------------------ prompts

    def _ask_delay(self) -> None:
        self.prompt = Prompt(f"Change delay from {self.delay:.2f} to: ", self._set_delay)

    def _set_delay(self, text: str) -> bool:
        try:
            self.delay = parse_delay(text.strip())
        except UsageError as exc:
            self.message = f"{exc} (delay stays {self.delay:.2f})"
            return False
        self._set_opt("delay", self.delay)
        self.message = f"Delay set to {self.delay:.2f}"
        return False

    def _ask_kill(self) -> None:
        self.prompt = Prompt("PID to kill: ", self._kill_pid)

    def _kill_pid(self, text: str) -> bool:
        text = text.strip()
        if not _digits(text) or int(text) == 0:
            self.message = "Not valid"
            return False
        pid = int(text)
        self.prompt = Prompt(f"Kill PID {pid} with signal [15]: ", lambda t: self._kill(pid, t))
        return False

    def _kill(self, pid: int, text: str) -> bool:
        text = text.strip()
        if text and not _digits(text):
            self.message = "Not valid"
            return False
        sig = int(text) if text else 0
        sig = sig or signal.SIGTERM  # empty or zero means 15, as in the original
        try:
            os.kill(pid, sig)
        except OverflowError:  # past pid_t or int: no such process or signal can exist
            self.message = f"Kill of PID '{pid}' with '{sig}' failed: {os.strerror(errno.EINVAL)}"
        except OSError as exc:
            self.message = f"Kill of PID '{pid}' with '{sig}' failed: {os.strerror(exc.errno or 0)}"
        else:
            self.message = f"Sent signal {sig} to PID {pid}"
        return False

    def _ask_only(self) -> None:
        self.prompt = Prompt("Only display process: ", self._set_only)

    def _set_only(self, text: str) -> bool:
        pid, name = _target(text.strip())
        self._set_opt("only_pid", pid)
        self._set_opt("only_name", name)
        # "Changing the filter resets all counters" (man page).
        self.restart(only_pid=pid, only_name=name)
        return True

    def _ask_user(self) -> None:
        self.prompt = Prompt("Which user (blank for all): ", self._set_user)

    def _set_user(self, text: str) -> bool:
        text = text.strip()
        uid, name = None, None
        if text:
            try:
                uid, name = parse_user(text, where="u")
            except UsageError:
                self.message = "User name does not exist."
                return False
        self._set_opt("uid", uid)
        self._set_opt("user_name", name)
        self.restart(uid=uid)
        return True

    def _ask_watch(self) -> None:
        self.prompt = Prompt("Watch process: ", self._set_watch)

    def _set_watch(self, text: str) -> bool:
        pid, name = _target(text.strip())
        self.view.watch = pid if pid is not None else name
        self._set_opt("watch_pid", pid)
        self._set_opt("watch_name", name)
        return False

    # ------------------------------------------------------------ W

    def _write_config(self) -> None:
        """Write the current options and every screen to ``./.tiptoprc``, never over an
        existing file, and say "written" only when it was (docs/original.md 8, defect 13). An
        exporter refuses a configuration it cannot write with ``ValueError``."""
        if self.exporter is None:
            self.message = f"{RC_NAME} not written: no configuration writer available"
            return
        try:
            text = self.exporter(self.options, self.screens)
        except ValueError as exc:  # a configuration the exporter cannot write (SpecError)
            self.message = f"{RC_NAME} not written: {exc}"
            return
        try:
            # O_EXCL: refuse to replace a file the user may care about.
            fd = os.open(RC_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            self.message = f"{RC_NAME} not written: already exists in current directory"
            return
        except OSError as exc:
            self.message = f"{RC_NAME} not written: {os.strerror(exc.errno or 0)}"
            return
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
        except OSError as exc:
            self.message = f"{RC_NAME} not written: {os.strerror(exc.errno or 0)}"
            return
        self.message = f"{RC_NAME} written"

    # Provided by LiveApp.
    def quit(self, code: int = 0) -> None: ...  # pragma: no cover
    def restart(self, **config: Any) -> None: ...  # pragma: no cover
    def _opt(self, name: str, default: Any = None) -> Any: ...  # pragma: no cover
    def _set_opt(self, name: str, value: Any) -> None: ...  # pragma: no cover

    @property
    def screen(self) -> Any: ...  # pragma: no cover


def parse_delay(text: str, minimum: float = MIN_DELAY) -> float:
    """A delay typed at the ``d`` prompt; UsageError with a one-line reason when it is not
    a number or is below the minimum (the original silently used 1 s instead)."""
    value = decimal(text)
    if value is None:
        raise UsageError(f"Not a number: '{text}'")
    if not minimum <= value <= MAX_DELAY:
        raise UsageError(f"Delay must be at least {minimum} s and at most {MAX_DELAY:.0f} s")
    return value


def _target(text: str) -> tuple[int | None, str | None]:
    """A ``-p``/``-w`` style answer: a non-zero number is a PID, other text a name,
    blank clears."""
    return parse_target(text) if text else (None, None)


def _digits(text: str) -> bool:
    """ASCII digits only (``str.isdigit`` also takes ``²`` and other digits int() refuses)."""
    return text.isascii() and text.isdigit()
