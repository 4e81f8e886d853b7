"""Rows by cgroup as a tree (the live ``G`` view): each group row, then the tasks it sums
beneath it (``Frame.members``) unless it is folded (``View.folding``: the live ``=`` and
``*`` keys). The groups are ordered among themselves by the view's sort, and each group's
tasks among themselves by the same sort, as htop orders its tree's children. No
formatting, no I/O."""

from __future__ import annotations

import numpy as np

from tiptop.frame import Frame
from tiptop.readonly import readonly
from tiptop.table.select import Folding, View, conform, order, visible

#: The tree's drawing before a name: an unfolded group, a folded one, a task beneath its
#: group, the last task beneath it. ASCII: one column per character on any terminal (and
#: the live table's plain-text path).
UNFOLDED, FOLDED, BRANCH, LAST = "- ", "+ ", "  |- ", "  `- "


@readonly
class Tree:
    """A tree's rows in display order."""

    #: The group rows, then the task rows (``Frame.concat``), conformed to the screen.
    frame: Frame
    #: The display order: indices into :attr:`frame`.
    order: np.ndarray
    #: Rows of :attr:`frame` below this index are group rows, the others tasks.
    groups: int
    #: Per displayed row: the drawing before its name (:data:`UNFOLDED`, :data:`BRANCH`...).
    branch: list[str]
    #: Per displayed row: the name of the group row it is, or is beneath.
    group: list[str]


def tree(frame: Frame, ncols: int, view: View, folding: Folding) -> Tree:
    """The tree of ``frame``'s group rows and their tasks (``frame.members``, which must be
    set). A task is shown by the view's rules (idle, filter, watched); a group row when it
    is shown by them or one of its tasks is, so that no shown task is without its group."""
    members = frame.members
    assert members is not None, "a tree needs the rows the groups sum"
    m = len(frame)
    both = conform(frame, ncols).concat(conform(members.rows, ncols))
    shown = visible(both, view)
    tasks = np.flatnonzero(shown[m:])
    of_task = members.group
    with_tasks = np.zeros(m, bool)
    with_tasks[of_task[tasks]] = True
    groups = order(both, np.flatnonzero(shown[:m] | with_tasks), view, ncols)
    tasks = order(both, m + tasks, view, ncols)
    by_group = of_task[tasks - m]
    stable = np.argsort(by_group, kind="stable")  # each group's tasks in the sort's order
    tasks, by_group = tasks[stable], by_group[stable]
    bounds = np.searchsorted(by_group, np.arange(m + 1))
    out: list[int] = []
    branch: list[str] = []
    group: list[str] = []
    for g in groups.tolist():
        name = both.name[g]
        unfolded = folding.shows(name)
        out.append(g)
        branch.append(UNFOLDED if unfolded else FOLDED)
        group.append(name)
        if not unfolded:
            continue
        beneath = tasks[bounds[g] : bounds[g + 1]].tolist()
        out += beneath
        branch += [BRANCH] * (len(beneath) - 1) + [LAST] * bool(beneath)
        group += [name] * len(beneath)
    return Tree(both, np.asarray(out, np.int64), m, branch, group)


__all__ = ["BRANCH", "FOLDED", "LAST", "UNFOLDED", "Tree", "tree"]
