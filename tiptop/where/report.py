"""The lines of one ``--where`` refresh, shared by batch text and csv
(``tiptop.outputs.where``) and the live window (``tiptop.live.where``): a head saying what
was sampled, how much and what was lost, then the call tree's rows
(``tiptop.where.calltree``) or, for csv, ``(share %, symbol, module)`` rows of the hottest
functions."""

from __future__ import annotations

from collections.abc import Callable

from tiptop.outside import printable
from tiptop.readonly import readonly
from tiptop.where.calltree import Path, TreeRow, View, build, tree_rows
from tiptop.where.profile import Profile, Stack
from tiptop.where.resolve import Site

__all__ = [
    "DEPTH",
    "MIN_SHARE",
    "OTHER",
    "TOP",
    "TreeCut",
    "profile_head",
    "profile_lines",
    "profile_stacks",
    "profile_tree",
    "row_text",
    "waiting_tree",
]

#: Functions shown per refresh in text and csv (the first level of a tree).
TOP = 20
#: The name of the line that adds up the functions past :data:`TOP`.
OTHER = "[other]"
#: The batch tree's default cuts: levels shown, and the least share of a node shown (%).
DEPTH = 8
MIN_SHARE = 0.5


@readonly
class TreeCut:
    """How a batch tree is shown: its view, at most ``depth`` levels (0: all), no node
    under ``min_share`` percent (``--top-down``, ``--depth``, ``--min-share``)."""

    view: View = View.BOTTOM_UP
    depth: int = DEPTH
    min_share: float = MIN_SHARE


def profile_head(profile: Profile) -> str:
    """The line above a refresh's functions: what was sampled, how much, what was lost
    (the cost: samples per second of the process's CPU time)."""
    lost = f", {profile.lost} lost (buffer full)" if profile.lost else ""
    return (
        f"PID {profile.pid} ({printable(profile.comm)}): {profile.samples} samples of "
        f"{profile.event} at {profile.rate_hz} Hz{lost}"
    )


def profile_lines(profile: Profile, top: int = TOP) -> list[tuple[float, str, str]]:
    """``(share %, symbol, module)`` of the ``top`` hottest functions, then one
    :data:`OTHER` line for the rest when there is any."""
    rows = [(profile.share(h), h.symbol, h.module) for h in profile.hot[:top]]
    rest = sum(h.samples for h in profile.hot[top:])
    if rest and profile.samples:
        more = len(profile.hot) - top
        rows.append((100.0 * rest / profile.samples, OTHER, f"{more} functions"))
    return rows


def profile_stacks(profile: Profile) -> tuple[Stack, ...]:
    """The refresh's call stacks; where it has none (samples taken without chains), each
    function a stack of its own."""
    if profile.stacks or not profile.hot:
        return profile.stacks
    return tuple(Stack(((h.symbol, h.module),), h.samples) for h in profile.hot)


def every(_path: Path) -> bool:
    """Every node opened (batch)."""
    return True


def profile_tree(
    stacks: tuple[Stack, ...], cut: TreeCut, opened: Callable[[Path], bool] = every, top: int = TOP
) -> list[TreeRow | tuple[float, str, str]]:
    """The rows of the tree of ``stacks`` in ``cut``'s view, cut (:func:`tree_rows`),
    the first level at its ``top`` nodes, then one :data:`OTHER` row ``(share, symbol,
    module)`` for the first-level nodes left out when there are any."""
    root = build(((st.frames, st.weight) for st in stacks), cut.view)
    rows: list[TreeRow | tuple[float, str, str]] = []
    firsts = 0
    shown = 0
    for row in tree_rows(root, depth=cut.depth, min_share=cut.min_share, opened=opened):
        if row.depth == 0:
            firsts += 1
            if firsts > top:
                continue
            shown += row.weight
        elif firsts > top:
            continue
        rows.append(row)
    rest = root.weight - shown
    if rest > 0:
        more = len(root.children) - min(firsts, top)
        rows.append((100.0 * rest / root.weight, OTHER, f"{more} functions"))
    return rows


#: The site of the off-CPU tree's root row: every path beneath it begins with it.
WAITING: Site = ("waiting", "")


def waiting_tree(
    profile: Profile, cut: TreeCut, opened: Callable[[Path], bool] = every, top: int = TOP
) -> list[TreeRow | tuple[float, str, str]]:
    """Where the process waited (off CPU), as rows under one ``waiting`` root row (its
    time and switches); shares of the time waited. None where off-CPU time was not
    sampled."""
    if not profile.offcpu:
        return []
    seconds = profile.waited / 1e9
    lost = f", {profile.waits_lost} lost" if profile.waits_lost else ""
    said = f"{seconds:.2f} s off CPU, {profile.switches} switches{lost}"
    shown = bool(profile.waiting) and opened((WAITING,))
    root = TreeRow(0, (WAITING,), profile.waited, 100.0, bool(profile.waiting), shown, said)
    rows: list[TreeRow | tuple[float, str, str]] = [root]
    if not shown:
        return rows
    beneath = profile_tree(profile.waiting, cut, lambda path: opened((WAITING, *path)), top)
    for row in beneath:
        if isinstance(row, tuple):
            rows.append(row)
        else:
            path = (WAITING, *row.path)
            rows.append(
                TreeRow(row.depth + 1, path, row.weight, row.share, row.branches, row.opened)
            )
    return rows


def row_text(row: TreeRow | tuple[float, str, str], marks: bool = False) -> str:
    """A tree row as text: its share, then its symbol and module indented two spaces a
    level; with ``marks``, first ``+`` for a closed node that has children, ``-`` for an
    opened one, a blank for the others."""
    if isinstance(row, tuple):
        share, symbol, module = row
        return f"{'  ' if marks else ''}{share:5.1f}%  {printable(symbol)}  {printable(module)}"
    symbol, module = row.site
    module = row.note or module
    mark = ""
    if marks:
        mark = "- " if row.opened else "+ " if row.branches else "  "
    indent = "  " * row.depth
    return f"{mark}{row.share:5.1f}%  {indent}{printable(symbol)}  {printable(module)}"
