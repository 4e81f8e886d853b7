"""``/`` (and F3): htop's incremental search. A question on the status line; each key
typed moves the highlight to the first row, from the highlighted one down and round to
the top, whose command holds the text (``tiptop.table.matches``: case ignored); F3 or
``/`` again goes to the next one. Enter and Esc leave the highlight where it is."""

from __future__ import annotations

from tiptop.live.reaction import NOTHING, Effect, Reaction
from tiptop.live.session import Session
from tiptop.live.windows.prompt import Prompt
from tiptop.table import RowList, matches

#: Keys that go to the next match while searching.
AGAIN = ("f3", "/")


def find(session: Session, text: str, start: int) -> int | None:
    """The position of the first row at or after ``start`` (going round) whose command
    holds ``text``."""
    rows = session.rows()
    if isinstance(rows, RowList):
        return rows.find(text, start)
    n = len(rows)
    return next(
        (k % n for k in range(start, start + n) if matches(rows[k % n].command, text)), None
    )


def search_prompt() -> Prompt:
    """The search question (see the module's docstring)."""
    prompt = Prompt("Search: ", lambda _session, _text: Reaction(Effect.CLOSE))

    def seek(session: Session, text: str, start: int) -> Reaction:
        if not text:
            return NOTHING
        found = find(session, text, start)
        if found is None:
            prompt.note = "not found"
            return NOTHING
        session.table.select(found)
        return Reaction(Effect.FOLLOW)

    def typed(session: Session, text: str) -> Reaction:
        return seek(session, text, session.table.selected)

    def again(session: Session, text: str) -> Reaction:
        return seek(session, text, session.table.selected + 1)

    prompt.edited = typed
    prompt.extra = dict.fromkeys(AGAIN, again)
    return prompt


__all__ = ["AGAIN", "find", "search_prompt"]
