"""The ``t`` window: the highlighted task's top-down tree (docs/screens.md, "Bottleneck"),
its lines from ``tiptop.table.why`` (``drill_down``), its deeper level counted on that task
alone where the screen stops at level 1 (:class:`tiptop.live.drill.Drill`, the extra source
taken while the window is open and released when it closes). Up and Down move the
highlight under it, which it follows; its lines wrap and scroll (PgUp/PgDn)."""

from __future__ import annotations

from collections.abc import Sequence

import urwid

from tiptop import table
from tiptop.live import palette as P
from tiptop.live.drill import Drill
from tiptop.live.reaction import Reaction
from tiptop.live.session import Session
from tiptop.live.text import Markup
from tiptop.live.window import TextWindow
from tiptop.table.why import DrillDown, in_order, node_label, share_text, tree_head

#: Width of a node's bar: one character per 5% of slots.
BAR = 20


def _bar(share: float | None) -> str:
    if share is None:
        return "[" + " " * BAR + "]"
    n = round(max(0.0, min(share, 100.0)) * BAR / 100.0)
    return "[" + "#" * n + "." * (BAR - n) + "]"


def tree_markup(drill: DrillDown) -> list[Markup]:
    """The ``t`` window's text from a :class:`tiptop.table.why.DrillDown`: the reason
    alone when there is no tree; else the summary, the time each event ran when they were
    multiplexed, one line per node (``*`` on the critical
    path, label, share, a bar, ``>bound``, ``over`` highlighted, what usually helps), then
    what the bottleneck means, the note on a deeper level and why the top-down counts are
    missing (last: the whole line, however long)."""
    if drill.tree is None:
        alone: list[Markup] = [drill.reason or "no top-down tree"]
        return alone + ([drill.note] if drill.note else [])
    tree = drill.tree
    head = tree_head(tree)
    lines: list[Markup] = [(P.WINDOW_REVERSE, head[0])]
    lines += [(P.SCALED, ln.strip()) for ln in head[1:]]  # the time each event ran
    for n in in_order(tree.nodes):
        share, label = share_text(n), node_label(n)
        attr = P.OVER if n.critical else P.WINDOW
        over = (P.OVER, "over") if n.over else "    "
        mark = (attr, f"{'*' if n.critical else ' '} {label}")
        lines.append([mark, f" {share} {_bar(n.share)} >{n.bound:3.0f}% ", over, f"  {n.helps}"])
    b = tree.bottleneck
    if b is not None:
        lines += ["", f"{b.label}: {b.meaning}"]
    lines += [line for line in (drill.note, drill.missing) if line]
    return lines


def tree_title(row: table.Row | None) -> str:
    """The ``t`` window's title: the task it is about (``row``, the highlighted one:
    PID and command), or that there is none."""
    if row is None:
        return "Top-down tree: no task (t or Esc closes)"
    return f"Top-down tree of PID {row.pid} ({row.command.strip()}) (t or Esc closes)"


class TreeWindow:
    """The ``t`` window (see the module's docstring); ``keys`` toggle it."""

    modal = False

    def __init__(self, keys: Sequence[str]) -> None:
        self.name = "tree"
        self.text = TextWindow(self.name, tree_title(None), lambda _s: (), keys, follows=True)
        #: The deeper level's extra source (opened by :meth:`open`).
        self.drill = Drill(None)
        #: The highlighted task's bottleneck (the ``f`` window samples where it shows).
        self.bottleneck: str | None = None
        #: The highlighted task's PID.
        self.pid: int | None = None

    def open(self, session: Session) -> None:
        """Take the cli's factory of extra sources, and make the tree."""
        self.drill = Drill(session.services.drill)
        self.update(session)

    def close(self) -> None:
        """Release the extra source's counters."""
        self.drill.close()
        self.text.close()

    def key(self, key: str, session: Session) -> Reaction | None:
        """Esc and its keys close it, PgUp/PgDn scroll it; Up/Down are the table's."""
        return self.text.key(key, session)

    def draw(self, body: urwid.Widget, cols: int, rows: int) -> urwid.Widget:
        """Full width above the footer."""
        return self.text.draw(body, cols, rows)

    def status(self) -> str | None:
        """It leaves the status line alone."""
        return None

    def refresh(self, session: Session) -> None:
        """The extra source's frame, with the main one's."""
        self.drill.refresh()

    def update(self, session: Session) -> None:
        """The tree of the highlighted task in the frame on display."""
        st = session.state
        row = session.selected()
        self.pid = None if row is None else int(row.pid)
        view = self.drill.view(
            st.options, session.selected_frame(), st.screen, st.screens, self.pid, session.messages
        )
        self.text.body.set_lines(tree_markup(view))
        self.text.title = tree_title(row)
        b = None if view.tree is None else view.tree.bottleneck
        self.bottleneck = None if b is None else b.label


__all__ = ["TreeWindow", "tree_markup", "tree_title"]
