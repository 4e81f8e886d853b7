"""``\\`` (and F4): htop's filter. A question on the status line, holding the filter in
force; each key typed narrows the rows to those whose command holds the text
(``tiptop.table.View.name_filter``: case ignored) at once. Enter keeps it (the tasks line
says so), Esc clears it."""

from __future__ import annotations

from tiptop.live.reaction import Effect, Reaction
from tiptop.live.session import Session
from tiptop.live.windows.prompt import Prompt


def _set(session: Session, text: str) -> Reaction:
    session.state.filter = text
    return Reaction(Effect.REBUILD)


def _keep(session: Session, text: str) -> Reaction:
    session.state.filter = text
    if not text:
        return Reaction(Effect.REBUILD, says="Filter cleared")
    return Reaction(Effect.REBUILD, says=f"Filter '{text}': \\ changes it, \\ then Esc clears it")


def _clear(session: Session, text: str) -> Reaction:
    session.state.filter = ""
    return Reaction(Effect.REBUILD, says="Filter cleared")


def filter_prompt(session: Session) -> Prompt:
    """The filter question, starting from the filter in force."""
    return Prompt("Filter: ", _keep, edited=_set, cancel=_clear, text=session.state.filter)


__all__ = ["filter_prompt"]
