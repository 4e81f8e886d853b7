"""One-line prompts typed on the message line (the original's ``scanw`` prompts).

Enter accepts, Esc cancels, Backspace deletes, Ctrl-U clears; other printable keys are
appended. The action gets the typed text and says whether it restarted the sampler.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(eq=False)
class Prompt:
    """A question on the message line and the text typed so far."""

    label: str
    accept: Callable[[str], bool]
    text: str = ""

    def display(self) -> str:
        """The message line: the label, the typed text and a cursor mark."""
        return f"{self.label}{self.text}_"

    def feed(self, key: str) -> bool | None:
        """Apply one key: ``True`` on Enter, ``False`` on Esc, ``None`` to go on."""
        if key == "enter":
            return True
        if key == "esc":
            return False
        if key == "backspace":
            self.text = self.text[:-1]
        elif key == "ctrl u":
            self.text = ""
        elif len(key) == 1 and key.isprintable():
            self.text += key
        return None
