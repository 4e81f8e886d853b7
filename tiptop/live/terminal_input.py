"""What of the terminal's input reaches the live keys: key names only.

A terminal sends more than keys: replies to queries (a cursor-position report,
``ESC[row;colR``, which a user can also type or paste), focus events (``ESC[I``,
``ESC[O``) and bracketed paste (``ESC[200~`` ... ``ESC[201~``, xterm's ctlseqs). urwid
decodes the report as a tuple that its ``MainLoop.process_input`` refuses with a
TypeError, which ended live mode (issue 39); the focus events and a paste's text would
act as keys. :class:`InputFilter`, the loop's ``input_filter``, drops them all.
"""

from __future__ import annotations

from collections.abc import Sequence

#: urwid's names for the focus events (urwid.display.escape's key table).
FOCUS_EVENTS = frozenset({"focus in", "focus out"})


class InputFilter:
    """urwid ``input_filter(keys, raw) -> keys``: key names pass; terminal reports (any
    input that is not a ``str``), focus events and everything between ``begin paste``
    and ``end paste`` are dropped."""

    def __init__(self) -> None:
        #: Inside a bracketed paste: its text is not typed keys.
        self.pasting = False

    def __call__(
        self, keys: Sequence[object], raw: Sequence[int]
    ) -> list[str | tuple[str, int, int, int]]:
        # The type urwid's MainLoop declares for its input_filter (only names are kept).
        kept: list[str | tuple[str, int, int, int]] = []
        for key in keys:
            if not isinstance(key, str):  # ('cursor position', x, y), other reports
                continue
            if key in ("begin paste", "end paste"):
                self.pasting = key == "begin paste"
            elif not self.pasting and key not in FOCUS_EVENTS:
                kept.append(key)
        return kept
