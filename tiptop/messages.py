"""The one message log: every problem tiptop meets, said once, read by every consumer.

A message has a stable *key* (said once per key, whatever its text), one *line* of text,
optionally a longer *detail* (the whole explanation, for the live ``e`` window), whether
it is a *notice* (what this machine or run is, such as no hardware PMU: news, not an
error, so the live ``[errors]`` mark stays off for it), and the *subjects* it is about
(counter aliases, a PMU name: a key said again adds its subjects), so that the live view
can say why a column shows ``?`` without searching message texts.
Batch mode, the live view, ``-E`` and ``--check`` each read the log with their own cursor
(:meth:`MessageLog.since`).
Imports nothing from tiptop.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

from tiptop.readonly import readonly


@readonly
class Message:
    """One problem: its stable key, its line, what it is about, and its whole explanation
    where the line is its short form."""

    key: str
    line: str
    subjects: tuple[str, ...] = ()
    detail: str = ""
    notice: bool = False


class MessageLog:
    """Messages in the order first said; each key once."""

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._keys: dict[str, int] = {}

    def say(
        self,
        key: str,
        line: str,
        subject: str | Sequence[str] = (),
        *,
        detail: str = "",
        notice: bool = False,
    ) -> bool:
        """Record ``line`` (and its longer ``detail``; a ``notice``, not an error) under
        ``key`` unless that key was said, else add ``subject`` to the message said;
        returns whether it was new. ``subject`` is one name or several."""
        subjects = (subject,) if isinstance(subject, str) else tuple(subject)
        if key in self._keys:
            i = self._keys[key]
            said = self._messages[i]
            more = tuple(s for s in subjects if s not in said.subjects)
            if more:
                self._messages[i] = dataclasses.replace(said, subjects=said.subjects + more)
            return False
        self._keys[key] = len(self._messages)
        self._messages.append(Message(key, line, subjects, detail, notice))
        return True

    def since(self, cursor: int) -> tuple[list[Message], int]:
        """The messages said after ``cursor`` (0 for all), and the cursor to pass next."""
        return self._messages[cursor:], len(self._messages)

    def about(self, subject: str) -> Message | None:
        """The first message about ``subject``, or None."""
        return next((m for m in self._messages if subject in m.subjects), None)

    def errors(self) -> int:
        """How many messages are errors (not notices)."""
        return sum(1 for m in self._messages if not m.notice)

    def lines(self) -> list[str]:
        """Every line, in order."""
        return [m.line for m in self._messages]

    def explained(self) -> list[str]:
        """Every line, with its detail on the next line where it has one (the live ``e``
        window: the whole explanation once)."""
        return [f"{m.line}\n{m.detail}" if m.detail else m.line for m in self._messages]

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(list(self._messages))

    def __bool__(self) -> bool:
        return bool(self._messages)
