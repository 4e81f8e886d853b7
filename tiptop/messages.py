"""The one message log: every problem tiptop meets, said once, read by every consumer.

A message has a stable *key* (said once per key, whatever its text), one *line* of text,
and the *subjects* it is about (counter aliases, a PMU name), so that the live view can
say why a column shows ``?`` without searching message texts. Batch mode, the live view,
``-E`` and ``--check`` each read the log with their own cursor (:meth:`MessageLog.since`).
Imports nothing from tiptop.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Message:
    """One problem: its stable key, its line, and what it is about."""

    key: str
    line: str
    subjects: tuple[str, ...] = ()


class MessageLog:
    """Messages in the order first said; each key once."""

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._keys: set[str] = set()

    def say(self, key: str, line: str, subject: str | Sequence[str] = ()) -> bool:
        """Record ``line`` under ``key`` unless that key was said; returns whether it was
        new. ``subject`` is one name or several."""
        if key in self._keys:
            return False
        self._keys.add(key)
        subjects = (subject,) if isinstance(subject, str) else tuple(subject)
        self._messages.append(Message(key, line, subjects))
        return True

    def since(self, cursor: int) -> tuple[list[Message], int]:
        """The messages said after ``cursor`` (0 for all), and the cursor to pass next."""
        return self._messages[cursor:], len(self._messages)

    def about(self, subject: str) -> Message | None:
        """The first message about ``subject``, or None."""
        return next((m for m in self._messages if subject in m.subjects), None)

    def lines(self) -> list[str]:
        """Every line, in order."""
        return [m.line for m in self._messages]

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(list(self._messages))

    def __bool__(self) -> bool:
        return bool(self._messages)
