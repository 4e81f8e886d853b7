"""Packing one PMU's events into counter groups (``tiptop.engine.count.plan``, "Groups too large for
the PMU are split, as perf does"): greedy in first-use order, a column's events kept
together when they fit, then spread evenly over as many groups. Pure: whether a group opens
(and is scheduled) is the caller's ``opens``."""

from __future__ import annotations

from collections.abc import Callable

from tiptop.events import EventBinding

#: ``(alias index, binding)`` pairs of one PMU, in first-use order.
Members = list[tuple[int, EventBinding]]
#: Whether a group of these events opens on ourselves and is scheduled.
Opens = Callable[[list[EventBinding]], bool]


def pack(members: Members, column_of: dict[int, int], opens: Opens, head: int = 0) -> list[Members]:
    """Split one PMU's members into groups for which ``opens`` holds.

    ``members`` are in first-use order; ``column_of`` maps an alias index to the
    first column using it (members of one column are kept together when they fit).
    The first ``head`` members (``slots`` and the metric events) are never split up.
    The greedy packing fixes the number of groups; the members are then spread evenly
    over that many groups when they can be (5 + 5 rather than 6 + 4): every group gets
    the same share of the PMU, and the PMU's last counter, which a hypervisor or the
    NMI watchdog may be sharing, is left free."""
    if len(members) < 2 or opens([b for _, b in members]):
        return [members]

    def owner(j: int) -> tuple[str, int]:
        """The column that first uses alias ``j``, or the alias itself when none does."""
        return ("column", column_of[j]) if j in column_of else ("alias", j)

    chunks: list[Members] = [members[:head]] if head else []
    for m in members[head:]:
        if len(chunks) > bool(head) and owner(chunks[-1][0][0]) == owner(m[0]):
            chunks[-1].append(m)
        else:
            chunks.append([m])
    groups = _greedy(chunks, len(members), bool(head), opens)
    if len(groups) > 1:
        even = _greedy(chunks, -(-len(members) // len(groups)), bool(head), opens)
        if len(even) == len(groups):
            groups = even
    return groups


def _greedy(chunks: list[Members], cap: int, whole_first: bool, opens: Opens) -> list[Members]:
    """Fill groups of at most ``cap`` members in order; a chunk (one column's events)
    goes whole into the current group, else whole into a new one, else event by event.
    With ``whole_first`` the first chunk (a top-down head) starts the first group
    whatever its size: it is never split.
    """

    def fits(ms: Members) -> bool:
        return len(ms) <= cap and (len(ms) < 2 or opens([b for _, b in ms]))

    groups: list[Members] = []
    cur: Members = []
    for chunk in chunks:
        if fits(cur + chunk):
            cur = cur + chunk
            continue
        if cur:
            groups.append(cur)
        if fits(chunk) or (whole_first and not groups and not cur):
            cur = list(chunk)
            continue
        cur = []
        for m in chunk:  # one column alone is too large: event by event
            if cur and not fits([*cur, m]):
                groups.append(cur)
                cur = []
            cur.append(m)
    if cur:
        groups.append(cur)
    return groups
