"""What a live session's keys change: the options, the screen on display, the table view,
the delay, the message line and the open prompt.

One record, owned by :class:`tiptop.live.app.LiveApp` and handed to
:class:`tiptop.live.keys.Keys`: the keys change it, the app draws from it, and neither
class declares the other's attributes.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tiptop.frame import FrameSource
from tiptop.live.prompts import Prompt
from tiptop.table import View


@dataclass
class LiveState:
    """The live session's changeable state (docs/original.md section 5.3, ``handle_key()``)."""

    #: The options record (a copy of the command line's); keys set fields on it so the
    #: title indicators and ``W`` see them.
    options: Any
    #: The ScreenSpecs Left/Right rotate through, and the index of the one on display.
    screens: list[Any]
    screen_index: int
    view: View
    #: Seconds between refreshes (the ``d`` key).
    delay: float
    #: The message line, shown when no prompt is open.
    message: str = ""
    prompt: Prompt | None = None

    @classmethod
    def initial(
        cls,
        options: Any,
        source: FrameSource,
        screens: Sequence[Any],
        screen_index: int | None = None,
        message: str = "",
    ) -> LiveState:
        """The state at start-up: a copy of ``options``, the view and delay they ask for,
        and ``screen_index`` (found from ``source.screen`` or ``options.screen`` when not
        given or out of range)."""
        screens = list(screens)
        if screen_index is None or not 0 <= screen_index < len(screens):
            screen_index = _screen_index(options, source, screens)
        return cls(
            options=copy.copy(options),
            screens=screens,
            screen_index=screen_index,
            view=_initial_view(options),
            delay=float(getattr(options, "delay", 2.0)),
            message=message,
        )

    @property
    def screen(self) -> Any:
        """The ScreenSpec on display."""
        return self.screens[self.screen_index]

    def opt(self, name: str, default: Any = None) -> Any:
        """The option ``name``, or ``default`` when the options record has no such field."""
        return getattr(self.options, name, default)

    def set_opt(self, name: str, value: Any) -> None:
        """Set the option ``name``; a record without the field (or a frozen one) keeps its
        value, as the live keys only mirror their state there."""
        with contextlib.suppress(AttributeError, dataclasses.FrozenInstanceError):
            setattr(self.options, name, value)


def _screen_index(options: Any, source: FrameSource, screens: Sequence[Any]) -> int:
    """The index of the screen the source was built with (or ``options.screen``)."""
    current = source.screen
    for i, s in enumerate(screens):
        if s is current:
            return i
    for i, s in enumerate(screens):
        if current is not None and s == current:
            return i
    want = getattr(options, "screen", None)
    if isinstance(want, int):
        return want if 0 <= want < len(screens) else 0
    if isinstance(want, str) and want:
        if want.isdigit() and int(want) < len(screens):
            return int(want)
        for i, s in enumerate(screens):
            if want in s.name:
                return i
    return 0


def _initial_view(options: Any) -> View:
    """The table view the options ask for (``options.view()`` when the record builds one)."""
    make = getattr(options, "view", None)
    view = (
        make()
        if callable(make)
        else View(
            show_idle=bool(getattr(options, "show_idle", False)),
            show_user=bool(getattr(options, "show_user", False)),
            show_cmdline=bool(getattr(options, "show_cmdline", False)),
            watch=getattr(options, "watch", None),
            sticky=bool(getattr(options, "sticky", False)),
        )
    )
    if getattr(options, "pid_width", None):
        view.pid_width = options.pid_width
    return view
