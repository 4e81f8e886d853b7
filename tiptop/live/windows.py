"""The live mode's pop-up windows: ``h`` (help) and ``e`` (error log), docs/original.md
sections 5.4 and 5.5, and ``t``, the selected task's top-down tree (docs/screens.md,
"Bottleneck"). Each is a box drawn over the screen by
:class:`tiptop.live.widgets.LiveScreen`; the help text is handed in finished, the error log
scrolls like the task table.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from typing import TYPE_CHECKING

import urwid

from tiptop import table
from tiptop.live import palette as P
from tiptop.table.why import in_order, node_label, share_text, tree_head

if TYPE_CHECKING:
    from tiptop.screens.model import Target
    from tiptop.table.why import DrillDown

#: One run of text in a palette attribute (``tiptop.live.palette``; None: the default).
Segment = tuple[str | None, str]
#: urwid text markup as tiptop writes it: a string, a :data:`Segment`, or a list of markups.
Markup = str | Segment | list["Markup"]
#: What urwid hands a widget's ``render``: () fixed, ``(cols,)`` flow, ``(cols, rows)`` box.
Size = tuple[()] | tuple[int] | tuple[int, int]


def box_size(size: Size) -> tuple[int, int]:
    """``(cols, rows)`` of a box widget's ``size`` (urwid gives a box widget both)."""
    if len(size) != 2:
        raise ValueError(f"a box widget rendered with size {size}")
    return size


def flow_cols(size: Size) -> int:
    """The columns of a flow widget's ``size``."""
    if not size:
        raise ValueError("a flow widget rendered with no size")
    return size[0]


def scrolled(top: int, key: str, count: int, page: int) -> int | None:
    """The first line shown after navigation ``key`` (up/down by one, page up/down by
    ``page``, home/end), before clamping; None when ``key`` does not navigate."""
    page = max(page, 1)
    moves = {"up": -1, "down": 1, "page up": -page, "page down": page}
    if key in moves:
        return top + moves[key]
    return {"home": 0, "end": count}.get(key)


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
    ``keys`` (one per line, grouped: :func:`tiptop.live.keys.key_help`), per screen name with CPU
    variants the one this CPU got and why (``variants``: name, description, why), a legend
    of the colours and the built-in variables of expressions (``variables``, by default
    :func:`tiptop.table.builtin_variables`), last since a short terminal clips the
    window's end (our additions). Each line is wrapped at spaces to the window's width."""
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


class HelpBody(urwid.Widget):
    """The ``h`` window's body: its lines wrapped at spaces to the window's width; taller
    than the window, it scrolls (Up/Down, PgUp/PgDn, Home/End) and its last line says how
    far (a Pile cannot overflow its box)."""

    _sizing = frozenset([urwid.Sizing.BOX])
    ignore_focus = True

    def __init__(self, lines: Sequence[Markup]) -> None:
        super().__init__()
        self.lines: Sequence[Markup] = ()
        self.pile = urwid.Pile([])
        self.top = 0
        self.height = 1
        self.set_lines(lines)

    def set_lines(self, lines: Sequence[Markup]) -> None:
        """Show ``lines`` (a new text goes back to its top)."""
        if list(lines) == list(self.lines):
            return
        self.lines = list(lines)
        self.pile = urwid.Pile([urwid.Text(m, wrap="space") for m in self.lines])
        self.top = 0
        self._invalidate()

    def scroll(self, key: str) -> bool:
        """Move the text for a navigation key; False when the key is not one."""
        top = scrolled(self.top, key, 1 << 30, self.height - 2)
        if top is None:
            return False
        self.top = max(top, 0)  # the end is clamped at render, where the width is known
        self._invalidate()
        return True

    def render(self, size: Size, focus: bool = False) -> urwid.Canvas:
        cols, rows = box_size(size)
        self.height = rows
        canvas = urwid.CompositeCanvas(self.pile.render((cols,)))
        total = canvas.rows()
        if total <= rows:
            self.top = 0
            return fit_rows(canvas, rows)
        self.top = min(self.top, total - (rows - 1))
        canvas.trim(self.top, rows - 1)
        shown = min(self.top + rows - 1, total)
        more = "END" if shown >= total else f"{round(100 * shown / total)} % (Up/Down scroll)"
        tail = urwid.Text(f" {more} ", align="right", wrap="clip").render((cols,))
        return urwid.CanvasCombine([(canvas, None, False), (tail, None, False)])


def fit_rows(canvas: urwid.Canvas, rows: int) -> urwid.Canvas:
    """``canvas`` made exactly ``rows`` high: cut at the bottom, or padded below."""
    canvas = urwid.CompositeCanvas(canvas)
    extra = canvas.rows() - rows
    if extra > 0:
        canvas.trim_end(extra)
    elif extra < 0:
        canvas.pad_trim_top_bottom(0, -extra)
    return canvas


def help_window(body: HelpBody, cols: int, rows: int) -> tuple[urwid.Widget, int]:
    """The ``h`` window ``cols`` wide, a box titled `` Help (h or Esc closes)``, and its
    height: its wrapped lines and the frame, at most ``rows`` (then ``body`` scrolls)."""
    height = min(body.pile.rows((max(cols - 2, 1),)) + 2, rows)
    box = urwid.LineBox(body, title="Help (h or Esc closes)")
    return urwid.AttrMap(box, P.WINDOW), height


class ErrorLog(urwid.Widget):
    """The ``e`` window's body: ``BEGIN`` (or ``.....`` when scrolled), the error lines,
    ``END`` (or ``.....``), and the scroll position ``%d %`` on the last line. A message
    longer than the window is wide is wrapped onto the next lines (the original cut it)."""

    _sizing = frozenset([urwid.Sizing.BOX])
    ignore_focus = True

    def __init__(self) -> None:
        super().__init__()
        self.messages: Sequence[str] = ()
        self.top = 0
        self.height = 3
        self.cols = 80

    def set_messages(self, messages: Sequence[str]) -> None:
        """Show this list of messages (the sampler's error log)."""
        self.messages = messages
        self._invalidate()

    def _room(self) -> int:
        """Rows for messages: all but the BEGIN, END and percentage lines."""
        return max(self.height - 3, 1)

    def _wrapped(self, i: int) -> urwid.Canvas:
        return urwid.Text(self.messages[i], wrap="space").render((self.cols,))

    def _last_top(self) -> int:
        """The first message shown when scrolled to the end: the last ones that fit."""
        used, top = 0, len(self.messages)
        while top > 0:
            used += self._wrapped(top - 1).rows()
            if used > self._room():
                break
            top -= 1
        return min(top, max(len(self.messages) - 1, 0))

    def scroll(self, key: str) -> bool:
        """Scroll by messages for a navigation key; False when the key is not one."""
        top = scrolled(self.top, key, len(self.messages), self._room())
        if top is None:
            return False
        self.top = max(0, min(top, self._last_top()))
        self._invalidate()
        return True

    def render(self, size: Size, focus: bool = False) -> urwid.Canvas:
        cols, rows = box_size(size)
        self.height, self.cols = rows, cols
        n = len(self.messages)
        self.top = max(0, min(self.top, self._last_top()))
        canvases: list[urwid.Canvas] = [
            urwid.Text("BEGIN" if self.top == 0 else ".....").render((cols,))
        ]
        used, end = 0, self.top
        while end < n:
            c = self._wrapped(end)
            if used + c.rows() > self._room():
                if end == self.top:  # taller than the window: what fits of it
                    c = urwid.CompositeCanvas(c)
                    c.trim_end(c.rows() - self._room())
                    canvases.append(c)
                    end += 1
                break
            canvases.append(c)
            used += c.rows()
            end += 1
        canvases.append(urwid.Text("END" if end >= n else ".....").render((cols,)))
        pct = 100 if end >= n else round(100 * end / n)
        canvases = canvases[: rows - 1]
        taken = sum(c.rows() for c in canvases)
        if taken < rows - 1:
            canvases.append(urwid.SolidCanvas(" ", cols, rows - 1 - taken))
        canvases.append(urwid.Text(f" {pct} % ", align="right", wrap="clip").render((cols,)))
        return urwid.CanvasCombine([(c, None, False) for c in canvases])


def error_window(log: ErrorLog) -> urwid.Widget:
    """The ``e`` window: a box titled `` %d errors detected (e to close) ``."""
    # urwid's LineBox adds the spaces around the title.
    title = f"{len(log.messages)} errors detected (e to close)"
    return urwid.AttrMap(urwid.LineBox(log, title=title), P.WINDOW)


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
    what the bottleneck means and the note on a deeper level."""
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
    if drill.note:
        lines.append(drill.note)
    return lines


def tree_title(row: table.Row | None) -> str:
    """The ``t`` window's title: the task it is about (``row``, the highlighted one:
    PID and command), or that there is none."""
    if row is None:
        return "Top-down tree: no task (t or Esc closes)"
    return f"Top-down tree of PID {row.pid} ({row.command.strip()}) (t or Esc closes)"


def tree_window(lines: Sequence[Markup], title: str) -> urwid.Widget:
    """The ``t`` window: a box titled ``title`` (:func:`tree_title`)."""
    return urwid.AttrMap(urwid.LineBox(HelpBody(lines), title=title), P.WINDOW)


def where_window(lines: Sequence[Markup]) -> urwid.Widget:
    """The ``f`` window: a box titled `` Hottest functions (f or Esc to close)``."""
    return urwid.AttrMap(
        urwid.LineBox(HelpBody(lines), title="Hottest functions (f or Esc to close)"),
        P.WINDOW,
    )


def wrapped_rows(lines: Sequence[Markup], cols: int) -> int:
    """The rows ``lines`` take wrapped in a box ``cols`` wide (its frame not counted): a
    reason longer than the terminal is wide is read whole, never cut at its edge."""
    return HelpBody(lines).pile.rows((max(cols - 2, 1),))


def target_line(target: Target | None) -> str:
    """The help window's first line: ``Target: x86, model = 19_11`` or the like."""
    if target is None:
        return f"Target: {platform.machine() or 'unknown'}"
    arch, model = target.arch, target.model
    if arch and model:
        return f"Target: {arch}, model = {model}"
    return f"Target: {arch}" if arch else "Unknown processor"
