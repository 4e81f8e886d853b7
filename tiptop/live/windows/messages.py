"""The ``m`` window: every text the status line said, whole, newest first, and the notice
above the footer (why whole counters read ``?``), wrapped at the window's width. The
status line shows a long text's first words and names this window's key
(``tiptop.live.registry.WHOLE_KEY``); here it is read to its last word."""

from __future__ import annotations

from collections.abc import Sequence

from tiptop.live.session import Session
from tiptop.live.text import Markup
from tiptop.live.window import TextWindow

#: The window's title.
TITLE = "Messages, newest first (m or Esc closes)"


def said_lines(session: Session) -> list[Markup]:
    """The notice, then what the status line said, newest first, a blank line between
    two; or that nothing was said yet."""
    st = session.state
    texts = ([st.notice] if st.notice else []) + list(reversed(st.status.said))
    if not texts:
        return ["Nothing said on the status line yet."]
    lines: list[Markup] = []
    for text in texts:
        lines += [text, ""]
    return lines[:-1]


def messages_window(keys: Sequence[str]) -> TextWindow:
    """The ``m`` window, closed by Esc or one of ``keys``."""
    return TextWindow("messages", TITLE, said_lines, keys)


__all__ = ["TITLE", "messages_window", "said_lines"]
