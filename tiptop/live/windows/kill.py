"""``k`` (and F9): a signal to the tagged tasks, or to the highlighted one (htop's kill
panel): choose the signal (Up/Down, or type its number; SIGTERM first), Enter, then ``y``
to send it; any other key, or Esc, sends nothing. What happened is said on the status
line: each failure with the kernel's reason (kill(2))."""

from __future__ import annotations

import signal
from collections.abc import Callable, Sequence

import urwid

from tiptop.live import palette as P
from tiptop.live.reaction import NOTHING, Effect, Reaction
from tiptop.live.session import Session
from tiptop.live.text import Markup, Scrolled, scrolled
from tiptop.live.window import Place, boxed, room
from tiptop.outside import printable

#: The signals offered, SIGTERM first (the original's default: 15).
OFFERED = (
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGINT,
    signal.SIGQUIT,
    signal.SIGKILL,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGCONT,
    signal.SIGSTOP,
    signal.SIGTSTP,
)

#: The highest signal number (signal(7): real-time signals end at SIGRTMAX).
SIGRTMAX = int(signal.SIGRTMAX)

#: A task to signal: its id as shown and its command.
Target = tuple[int, str]

#: ``send(pid, sig) -> failure``: the signal sent, and why it failed (None: it did not).
Sender = Callable[[int, int], str | None]


def signal_name(number: int) -> str:
    """``SIGTERM (15)``; a number no signal has: ``signal 99``."""
    try:
        return f"{signal.Signals(number).name} ({number})"
    except ValueError:
        return f"signal {number}"


def targets_words(targets: Sequence[Target]) -> str:
    """``PID 123 (sleep)``, or ``3 tagged tasks``."""
    if len(targets) == 1:
        pid, command = targets[0]
        return f"PID {pid} ({command.strip()})"
    return f"{len(targets)} tagged tasks"


class KillWindow:
    """The signal dialog (see the module's docstring) for ``targets``; ``send(pid, sig)``
    sends one and says what failed (None: sent)."""

    modal = True

    def __init__(self, targets: Sequence[Target], send: Sender) -> None:
        self.name = "kill"
        self.targets = list(targets)
        self.send = send
        #: The offered signal highlighted, and the number typed (it wins when given).
        self.choice = 0
        self.typed = ""
        #: The signal chosen, once Enter was pressed: ``y`` sends it.
        self.chosen: int | None = None
        self.body = Scrolled(())

    def open(self, session: Session) -> None:
        """Its list."""
        self.body.set_lines(self._lines())

    def close(self) -> None:
        """Nothing to release."""
        return None

    def key(self, key: str, session: Session) -> Reaction:
        """Choose, confirm, or cancel (every key is its own while it is open)."""
        if self.chosen is not None:
            return self._send(self.chosen) if key == "y" else self._cancel()
        if key == "esc":
            return self._cancel()
        if key == "enter":
            return self._confirm()
        moved = scrolled(self.choice, key, len(OFFERED) - 1, len(OFFERED))
        if moved is not None:
            self.choice, self.typed = max(0, min(moved, len(OFFERED) - 1)), ""
        elif key == "backspace":
            self.typed = self.typed[:-1]
        elif len(key) == 1 and key.isprintable():
            self.typed += key
        self.body.set_lines(self._lines())
        return NOTHING

    def _confirm(self) -> Reaction:
        text = self.typed.strip()
        if not text:
            self.chosen = int(OFFERED[self.choice])
        elif text.isascii() and text.isdigit() and len(text) <= 4 and 0 < int(text) <= SIGRTMAX:
            self.chosen = int(text)
        else:  # kill(2) takes 1 to SIGRTMAX (signal(7)); 0 only probes
            said = f"Not valid: '{printable(text[:20])}' is no signal number"
            return Reaction(Effect.CLOSE, says=said)
        self.body.set_lines(self._lines())
        return NOTHING

    def _cancel(self) -> Reaction:
        return Reaction(Effect.CLOSE, says="No signal sent")

    def _send(self, sig: int) -> Reaction:
        failed = [f for f in (self.send(pid, sig) for pid, _ in self.targets) if f]
        name = signal_name(sig)
        if not failed:
            said = f"Sent {name} to {targets_words(self.targets)}"
        elif len(self.targets) == 1:
            said = failed[0]
        else:
            sent = len(self.targets) - len(failed)
            said = f"Sent {name} to {sent} of {len(self.targets)} tasks; " + "; ".join(failed)
        return Reaction(Effect.CLOSE | Effect.REFRESH, says=said)

    def _lines(self) -> list[Markup]:
        if self.chosen is not None:
            return [
                f"Send {signal_name(self.chosen)} to {targets_words(self.targets)}?",
                "y sends it; any other key does not.",
            ]
        lines: list[Markup] = ["Up/Down choose, or type a number; Enter, then y; Esc: none."]
        for i, sig in enumerate(OFFERED):
            text = f"{int(sig):3d} {sig.name}"
            lines.append(
                (P.SELECTED, f"> {text}") if i == self.choice and not self.typed else f"  {text}"
            )
        return lines

    def draw(self, body: urwid.Widget, cols: int, rows: int) -> urwid.Widget:
        """A box above the footer, as high as its lines, below the status line (which
        asks its question): it scrolls when the screen is shorter."""
        width = min(cols, 64)
        height = min(self.body.rows_at(width - 2) + 2, room(rows, Place.ABOVE_FOOTER))
        title = f"Signal to {targets_words(self.targets)}"
        top = max(rows - height - 1, 0)
        return urwid.Overlay(
            boxed(self.body, title), body, "left", width, ("fixed top", top), height
        )

    def status(self) -> str:
        """The question on the status line."""
        if self.chosen is not None:
            return f"Send {signal_name(self.chosen)} to {targets_words(self.targets)}? (y/N)"
        chosen = self.typed if self.typed else signal_name(int(OFFERED[self.choice]))
        return f"Signal: {chosen}_"

    def refresh(self, session: Session) -> None:
        """Nothing to take: its tasks were chosen when it opened."""
        return None

    def update(self, session: Session) -> None:
        """Nothing to make again."""
        return None


__all__ = ["OFFERED", "KillWindow", "Sender", "Target", "signal_name", "targets_words"]
