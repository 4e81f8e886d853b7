"""What each key does in live mode (docs/original.md section 5.3, ``handle_key()``).

:class:`Keys` is held by :class:`tiptop.live.app.LiveApp`: each handler changes the
session's :class:`~tiptop.live.state.LiveState` (the table ``View``, the options record, the
delay, the prompt, the message line) or asks the app, through :class:`KeyActions`, to
reconfigure the sampler, quit or toggle a window. ``dispatch`` returns True when the
sampler was restarted (its refresh is then scheduled, not taken at once). Fixes of the
original: ``u`` really filters, ``k`` reports the real ``strerror``, ``W`` refuses to
overwrite and says "written" only when it was, a delay below the minimum is refused with a
message instead of silently becoming 1.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import signal
import sys
from collections.abc import Callable

from tiptop.errors import UsageError
from tiptop.host import Host
from tiptop.live.config_file import write_target
from tiptop.live.prompts import Prompt
from tiptop.live.services import Exporter
from tiptop.live.state import LiveState
from tiptop.options import Options, parse_delay, parse_target, parse_user
from tiptop.readonly import readonly

#: Every key of live mode and what it does, in the help window's groups: urwid's key
#: names, then the words. The sources' own keys are here too (``G``: rows by cgroup,
#: ``tiptop.sources.bycgroup``; ``[ ] { } * /`` and space: ``--replay``,
#: ``tiptop.recording.replay``);
#: tests check this list against the dispatcher, the sources and the man page.
KEY_GROUPS: tuple[tuple[str, tuple[tuple[tuple[str, ...], str], ...]], ...] = (
    (
        "Selection and windows",
        (
            (("up", "down"), "move the highlight (in a window: scroll)"),
            (("page up", "page down", "home", "end"), "move it by a page, to the ends"),
            (("t", "enter"), "top-down tree of the highlighted task"),
            (("f",), "its hottest functions (sampled)"),
            (("h", "?"), "this help"),
            (("e",), "error log"),
            (("esc",), "close the window"),
            (("q",), "quit"),
        ),
    ),
    (
        "Screen and order",
        (
            (("left", "right", "-", "+"), "screen"),
            (("<", ">"), "sort column"),
            (("R",), "reverse sort"),
        ),
    ),
    (
        "What is shown and counted",
        (
            (("d", "s"), "delay"),
            (("H",), "threads"),
            (("i",), "idle tasks"),
            (("K",), "kernel mode"),
            (("S",), "sticky (dead tasks stay)"),
            (("c",), "command line"),
            (("U",), "user column"),
            (("u",), "only a user"),
            (("p",), "only a PID or name"),
            (("w",), "watch a PID or name"),
            (("G",), "rows by cgroup"),
        ),
    ),
    (
        "Actions",
        (
            (("k",), "kill a PID"),
            (("W",), "write ~/.config/tiptop/tiptoprc (or -W DIR)"),
        ),
    ),
    (
        "Replay (--replay)",
        (
            (("[", "]"), "a refresh back/forward"),
            (("{", "}"), "a minute back/forward"),
            ((" ",), "pause"),
            (("*", "/"), "twice/half as fast"),
        ),
    ),
)

#: Every key and what it does, in the help's order (:data:`KEY_GROUPS` without groups).
KEY_HELP: tuple[tuple[tuple[str, ...], str], ...] = tuple(
    entry for _, entries in KEY_GROUPS for entry in entries
)

#: How the help and the man page spell urwid's key names.
KEY_LABELS = {
    "left": "Left",
    "right": "Right",
    "up": "Up",
    "down": "Down",
    "page up": "PgUp",
    "page down": "PgDn",
    "home": "Home",
    "end": "End",
    "enter": "Enter",
    "esc": "Esc",
    " ": "space",
}


def key_help() -> list[str]:
    """The help window's keys, one per line under their group's title:
    ``  Up Down          move the highlight (in a window: scroll)``."""
    labels = {ks: " ".join(KEY_LABELS.get(k, k) for k in ks) for ks, _ in KEY_HELP}
    width = max(len(label) for label in labels.values())
    lines: list[str] = []
    for title, entries in KEY_GROUPS:
        lines += ["", f"{title}:"] if lines else [f"{title}:"]
        lines += [f"  {labels[ks].ljust(width)}  {what}" for ks, what in entries]
    return lines


@readonly
class KeyActions:
    """What the keys ask of the live session beyond changing its :class:`LiveState`."""

    #: ``restart()``: reconfigure the sampler for the state's screen and settings and show
    #: an empty table until its next refresh.
    restart: Callable[[], None]
    #: ``quit(code)``: leave the main loop with this exit status.
    quit: Callable[[int], None]
    #: ``toggle_window(name)``: open the ``"help"``, ``"errors"``, ``"tree"`` or ``"where"``
    #: window, or close it when it is the one open.
    toggle_window: Callable[[str], None]


class Keys:
    """The live keys: each handler changes ``state`` (view, options, screen, delay,
    message line, prompt) or asks ``actions`` for a restart, the end or a window."""

    def __init__(
        self,
        state: LiveState,
        actions: KeyActions,
        *,
        host: Host,
        exporter: Exporter | None = None,
    ) -> None:
        self.state = state
        self.actions = actions
        #: What this machine allows (the ``K`` key asks it).
        self.host = host
        #: ``exporter(options, screens) -> text`` for ``W``; ``None``: ``W`` says so.
        self.exporter = exporter

    def bound(self) -> set[str]:
        """Every key :meth:`dispatch` acts on."""
        simple, restarting = self._bindings()
        return {*simple, *restarting}

    def dispatch(self, key: str) -> bool:
        """Run the action bound to ``key``; True when the sampler was restarted."""
        simple, restarting = self._bindings()
        if key in simple:
            simple[key]()
            return False
        if key in restarting:
            return bool(restarting[key]())
        return False

    def _bindings(self) -> tuple[dict[str, Callable[[], object]], dict[str, Callable[[], object]]]:
        """The keys that only change the view or state, and those that may restart the
        sampler (their handlers say whether they did)."""
        simple: dict[str, Callable[[], object]] = {
            "q": lambda: self.actions.quit(0),
            "<": lambda: self._sort(-1),
            ">": lambda: self._sort(+1),
            "R": self._reverse,
            "e": lambda: self.actions.toggle_window("errors"),
            "h": lambda: self.actions.toggle_window("help"),
            "?": lambda: self.actions.toggle_window("help"),
            "t": lambda: self.actions.toggle_window("tree"),
            "f": lambda: self.actions.toggle_window("where"),
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
        restarting: dict[str, Callable[[], object]] = {
            "left": lambda: self._switch(-1),
            "-": lambda: self._switch(-1),
            "right": lambda: self._switch(+1),
            "+": lambda: self._switch(+1),
            "H": self._threads,
            "K": self._kernel,
            "S": self._sticky,
            "c": self._cmdline,
        }
        return simple, restarting

    # ------------------------------------------------------------ view only

    def _sort(self, step: int) -> None:
        # Range -1 (PID) .. number of columns (COMMAND), clamped like the original.
        st = self.state
        st.sort_column = max(-1, min(len(st.screen.columns), st.sort_column + step))

    def _reverse(self) -> None:
        self.state.descending = not self.state.descending

    def _idle(self) -> None:
        st = self.state
        st.options = dataclasses.replace(st.options, show_idle=not st.options.show_idle)

    def _user_column(self) -> None:
        st = self.state
        st.options = dataclasses.replace(st.options, show_user=not st.options.show_user)

    # ------------------------------------------------------------ sampler

    def _switch(self, step: int) -> bool:
        # Screens wrap around; counters are reopened and the sort column goes back to 0.
        st = self.state
        st.screen_index = (st.screen_index + step) % len(st.screens)
        st.sort_column = 0
        self.actions.restart()
        return True

    def _reopen(self, options: Options, said: str) -> bool:
        """Take ``options``, say ``said`` and reopen the counters to match them."""
        self.state.options = options
        self.state.message = said
        self.actions.restart()
        return True

    def _threads(self) -> bool:
        on = not self.state.options.show_threads
        options = dataclasses.replace(self.state.options, show_threads=on)
        return self._reopen(options, f"Show threads {_on_off(on)}")

    def _kernel(self) -> bool:
        if not self.host.kernel_counting_allowed:
            self.state.message = "Kernel mode not available (not root and paranoia level too high)."
            return False
        on = not self.state.options.show_kernel
        options = dataclasses.replace(self.state.options, show_kernel=on)
        return self._reopen(options, f"Kernel mode {_on_off(on)}")

    def _sticky(self) -> bool:
        st = self.state
        st.options = dataclasses.replace(st.options, sticky=not st.options.sticky)
        self.actions.restart()
        return True

    def _cmdline(self) -> bool:
        st = self.state
        st.options = dataclasses.replace(st.options, show_cmdline=not st.options.show_cmdline)
        if st.options.only_name:
            # The -p name filter matches the command line with -c (docs/original.md 1).
            self.actions.restart()
            return True
        return False

    # ------------------------------------------------------------ prompts

    def _ask_delay(self) -> None:
        label = f"Change delay from {self.state.delay:.2f} to: "
        self.state.prompt = Prompt(label, self._set_delay)

    def _set_delay(self, text: str) -> bool:
        st = self.state
        try:
            delay = parse_delay(text.strip(), where="")
        except UsageError as exc:
            st.message = f"{exc} (delay stays {st.delay:.2f})"
            return False
        st.options = dataclasses.replace(st.options, delay=delay)
        st.message = f"Delay set to {st.delay:.2f}"
        return False

    def _ask_kill(self) -> None:
        self.state.prompt = Prompt("PID to kill: ", self._kill_pid)

    def _kill_pid(self, text: str) -> bool:
        text = text.strip()
        if not _digits(text) or int(text) == 0:
            self.state.message = "Not valid"
            return False
        pid = int(text)
        label = f"Kill PID {pid} with signal [15]: "
        self.state.prompt = Prompt(label, lambda t: self._kill(pid, t))
        return False

    def _kill(self, pid: int, text: str) -> bool:
        text = text.strip()
        if text and not _digits(text):
            self.state.message = "Not valid"
            return False
        sig = int(text) if text else 0
        sig = sig or signal.SIGTERM  # empty or zero means 15, as in the original
        failed = f"Kill of PID '{pid}' with '{sig}' failed"
        try:
            os.kill(pid, sig)
        except OverflowError:  # past pid_t or int: no such process or signal can exist
            self.state.message = f"{failed}: {os.strerror(errno.EINVAL)}"
        except OSError as exc:
            self.state.message = f"{failed}: {os.strerror(exc.errno or 0)}"
        else:
            self.state.message = f"Sent signal {sig} to PID {pid}"
        return False

    def _ask_only(self) -> None:
        self.state.prompt = Prompt("Only display process: ", self._set_only)

    def _set_only(self, text: str) -> bool:
        try:
            pid, name = _target(text.strip(), "p")
        except UsageError as exc:  # a number past any PID
            self.state.message = str(exc)
            return False
        st = self.state
        st.options = dataclasses.replace(st.options, only_pid=pid, only_name=name)
        # "Changing the filter resets all counters" (man page).
        self.actions.restart()
        return True

    def _ask_user(self) -> None:
        self.state.prompt = Prompt("Which user (blank for all): ", self._set_user)

    def _set_user(self, text: str) -> bool:
        text = text.strip()
        uid, name = None, None
        if text:
            try:
                uid, name = parse_user(text, where="u")
            except UsageError:
                self.state.message = "User name does not exist."
                return False
        st = self.state
        st.options = dataclasses.replace(st.options, uid=uid, user_name=name)
        self.actions.restart()
        return True

    def _ask_watch(self) -> None:
        self.state.prompt = Prompt("Watch process: ", self._set_watch)

    def _set_watch(self, text: str) -> bool:
        try:
            pid, name = _target(text.strip(), "w")
        except UsageError as exc:  # a number past any PID
            self.state.message = str(exc)
            return False
        st = self.state
        st.options = dataclasses.replace(st.options, watch_pid=pid, watch_name=name)
        return False

    # ------------------------------------------------------------ W

    def _write_config(self) -> None:
        """Write the current options and every screen to the user's configuration file
        (``tiptop.live.config_file.write_target``: XDG, or ``-W DIR``'s ``.tiptoprc``),
        never over an existing file, and say where, and "written" only when it was
        (docs/original.md 8, defect 13). An exporter refuses a configuration it cannot
        write with ``ValueError``."""
        path = write_target(self.state.options.config_dir, os.environ)
        if path is None:
            self.state.message = "configuration not written: neither $XDG_CONFIG_HOME nor $HOME"
            return
        if self.exporter is None:
            self.state.message = f"{path} not written: no configuration writer available"
            return
        try:
            text = self.exporter(self.state.options, self.state.screens)
        except ValueError as exc:  # a configuration the exporter cannot write (SpecError)
            self.state.message = f"{path} not written: {exc}"
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            # O_EXCL: refuse to replace a file the user may care about.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            self.state.message = f"{path} not written: it already exists"
            return
        except OSError as exc:
            self.state.message = f"{path} not written: {os.strerror(exc.errno or 0)}"
            return
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
        except OSError as exc:
            self.state.message = f"{path} not written: {os.strerror(exc.errno or 0)}"
            return
        self.state.message = f"{path} written"


def _on_off(on: bool) -> str:
    """The original's words for a toggle's new state."""
    return "On" if on else "Off"


def _target(text: str, where: str) -> tuple[int | None, str | None]:
    """A ``-p``/``-w`` style answer: a non-zero number is a PID, other text a name,
    blank clears; UsageError (naming the key ``where``) for a number out of range."""
    return parse_target(text, where) if text else (None, None)


def _digits(text: str) -> bool:
    """ASCII digits only (``str.isdigit`` also takes ``²`` and other digits int() refuses),
    no more than int() reads (4,300 by default, sys.get_int_max_str_digits); a number past
    pid_t or int is then refused by os.kill (OverflowError, said as EINVAL)."""
    most = sys.get_int_max_str_digits() or len(text)
    return text.isascii() and text.isdigit() and len(text) <= most
