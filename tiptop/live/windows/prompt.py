"""A question typed on the status line (the original's ``scanw`` prompts): a modal window
with no box, whose status line is its label, the text typed so far and a cursor mark.

Enter answers (``accept(session, text)`` says what must be redone), Esc cancels
(``cancel(session, text)``, when given, says what that undoes), Backspace deletes, Ctrl-U
clears; other printable keys are typed. ``edited(session, text)``, when given, is told each
change (the ``\\`` filter narrows the rows as one types); ``extra`` keys have their own
answers (F3: the search's next match).
"""

from __future__ import annotations

from collections.abc import Callable

import urwid

from tiptop.live.reaction import NOTHING, Effect, Reaction
from tiptop.live.session import Session

#: ``accept(session, text) -> Reaction``: what the answer does.
Answer = Callable[[Session, str], Reaction]


class Prompt:
    """A question on the status line and the text typed so far."""

    modal = True

    def __init__(
        self,
        label: str,
        accept: Answer,
        *,
        edited: Answer | None = None,
        cancel: Answer | None = None,
        text: str = "",
    ) -> None:
        self.name = "prompt"
        self.label = label
        self.accept = accept
        self.edited = edited
        self.cancel = cancel
        self.text = text
        #: Keys with answers of their own, while the question is open.
        self.extra: dict[str, Answer] = {}
        #: Words after the cursor (e.g. ``not found``), until the next key.
        self.note = ""

    def open(self, session: Session) -> None:
        """Nothing to take: the question is the status line."""
        return None

    def close(self) -> None:
        """Nothing to release."""
        return None

    def key(self, key: str, session: Session) -> Reaction:
        """Enter answers, Esc cancels, the rest edits the text (every key is its own)."""
        if key == "enter":
            done = self.accept(session, self.text)
            effects = done.effects | Effect.CLOSE
            if done.opens is None and not effects & (Effect.RESTART | Effect.QUIT):
                effects |= Effect.REFRESH  # answered: a frame at once, as any key takes
            return Reaction(effects, done.opens, done.says, done.lasting, done.code)
        if key == "esc":
            if self.cancel is not None:
                done = self.cancel(session, self.text)
                return Reaction(done.effects | Effect.CLOSE, says=done.says)
            return Reaction(Effect.CLOSE)
        self.note = ""
        if key in self.extra:
            return self.extra[key](session, self.text)
        before = self.text
        if key == "backspace":
            self.text = self.text[:-1]
        elif key == "ctrl u":
            self.text = ""
        elif len(key) == 1 and key.isprintable():
            self.text += key
        if self.edited is not None and self.text != before:
            return self.edited(session, self.text)
        return NOTHING

    def draw(self, body: urwid.Widget, cols: int, rows: int) -> urwid.Widget:
        """No box: the question is on the status line."""
        return body

    def status(self) -> str:
        """The label, the typed text and a cursor mark, then its note."""
        note = f"  ({self.note})" if self.note else ""
        return f"{self.label}{self.text}_{note}"

    def refresh(self, session: Session) -> None:
        """Nothing to take from a refresh."""
        return None

    def update(self, session: Session) -> None:
        """Nothing to make again."""
        return None


__all__ = ["Answer", "Prompt"]
