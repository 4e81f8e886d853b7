"""The ``h`` window: the target, the screen's columns, the keys, the screens' CPU variants,
a legend and the built-in variables of expressions (docs/original.md 5.4, with our
additions), inset from the sides and scrolled when taller than the terminal."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tiptop import table
from tiptop.live import palette as P
from tiptop.live.session import Session
from tiptop.live.text import Markup
from tiptop.live.window import Place, TextWindow

if TYPE_CHECKING:
    from tiptop.screens.model import Target

#: The window's title, with the keys that close it.
TITLE = "Help (h or Esc closes)"


def help_lines(
    target: str,
    desc: str,
    columns: Sequence[tuple[str, str]],
    variables: Sequence[tuple[str, str]] | None = None,
    variants: Sequence[tuple[str, str, str]] = (),
    keys: Sequence[str] = (),
) -> list[Markup]:
    """The help window's text: the target line (reverse), the screen description, then
    ``header: description`` per column, headers stripped and padded to the widest, then
    ``keys`` (one per line, grouped: :func:`tiptop.live.registry.key_help`), per screen
    name with CPU variants the one this CPU got and why (``variants``: name, description,
    why), a legend of the colours and the built-in variables of expressions
    (``variables``, by default :func:`tiptop.table.builtin_variables`), last since a short
    terminal clips the window's end (our additions). Each line is wrapped at spaces to the
    window's width."""
    heads = [h.strip() for h, _ in columns]
    width = max((len(h) for h in heads), default=0)
    lines: list[Markup] = [(P.WINDOW_REVERSE, target), desc]
    lines += [f"{h.ljust(width)}: {d}" for h, (_, d) in zip(heads, columns, strict=True)]
    if keys:
        lines += ["", *keys]
    if variants:
        lines += ["", "Screen variants for this CPU:"]
        lines += [f"{name}: {d} ({why})" for name, d, why in variants]
    lines += [
        "",
        [
            (P.WATCHED, "watched"),
            "  ",
            (P.DEAD, "dead"),
            "  ",
            (P.OVER, "over threshold"),
            "  ",
            (P.SCALED, "scaled"),
            " (counters multiplexed)",
        ],
        "42.0! suspect: the screen's breakdown does not add up to 100% for that task",
        "PID+ a process with several threads (H lists them); PID- one of its other threads",
    ]
    names = table.builtin_variables() if variables is None else variables
    width = max((len(n) for n, _ in names), default=0)
    lines += ["", "Built-in variables of expressions:"]
    lines += [f"{n.ljust(width)}: {d}" for n, d in names]
    return lines


def target_line(target: Target | None) -> str:
    """The help window's first line: ``Target: x86, model = 19_11`` or the like."""
    if target is None:
        return f"Target: {platform.machine() or 'unknown'}"
    arch, model = target.arch, target.model
    if arch and model:
        return f"Target: {arch}, model = {model}"
    return f"Target: {arch}" if arch else "Unknown processor"


def session_help(session: Session, keys: Sequence[str]) -> list[Markup]:
    """The help of the session's screen and screens, with the ``keys`` lines."""
    st = session.state
    cols = [(c.header, c.desc) for c in st.screen.columns]
    variants = []
    for s in st.screens:
        v = getattr(s, "variant", None)
        if v is not None and len(v.variants) > 1:
            variants.append((s.name, v.desc, v.why()))
    target = target_line(st.options.target)
    return help_lines(target, st.screen.desc, cols, variants=variants, keys=keys)


def help_window(keys: Sequence[str], opened_by: Sequence[str]) -> TextWindow:
    """The ``h`` window, listing ``keys`` (the registry's lines), closed by Esc or one of
    ``opened_by``."""
    return TextWindow(
        "help", TITLE, lambda session: session_help(session, keys), opened_by, place=Place.INSET
    )


__all__ = ["TITLE", "help_lines", "help_window", "session_help", "target_line"]
