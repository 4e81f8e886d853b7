"""Process trees, for ``tiptop -- CMD`` in process mode (``TaskScanner.add_tree_root``).

A tree root's row stands for its whole process tree, as its counters do (``inherit``
without ``inherit_thread``). Its CPU times are the sum, over the root and every live
descendant (found through ``ppid``, field 4 of ``/proc/PID/stat``), of ``utime + stime +
cutime + cstime`` (fields 14-17): ``cutime``/``cstime`` hold the times of the children a
process has waited for, recursively (proc(5), getrusage(2) ``RUSAGE_CHILDREN``), so a
descendant that has ended and been reaped inside the tree stays counted, and a zombie
still counts its own times until its parent reaps it. Not covered: descendants reparented
out of the tree (their parent exited first: they are re-parented to init or a subreaper)
and the moment between a child's reap and our read of its parent (shown in the next
interval). Descendants get no rows of their own. With ``-H`` trees are not followed.
"""

from __future__ import annotations

from collections.abc import Callable

from tiptop.engine.scan.task import Proc
from tiptop.kernel.procfs import Stat

#: pid -> (ppid, user ticks, system ticks) of every process a scan saw, waited-for
#: children's ticks included (``stat`` fields 4, 14 + 16, 15 + 17).
Family = dict[int, tuple[int, int, int]]
#: A tree root seen by a scan: its pid, process facts and ``stat``.
Root = tuple[int, Proc, Stat]


def descendants(fam: Family, roots: list[int]) -> dict[int, list[int]]:
    """Each root's live descendants, followed through the parents of ``fam`` (pid ->
    ``(ppid, ...)``, proc(5) ``stat`` field 4); a process under two roots goes to the
    first, and a root is never its own descendant."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, *_) in fam.items():
        children.setdefault(ppid, []).append(pid)
    taken: set[int] = set()
    out: dict[int, list[int]] = {}
    for root in roots:
        desc = out[root] = []
        todo = list(children.get(root, ()))
        while todo:
            c = todo.pop()
            if c in taken or c == root:
                continue
            taken.add(c)
            desc.append(c)
            todo.extend(children.get(c, ()))
    return out


def tree_root(
    p: Proc,
    st: Stat,
    ended: bool,
    fam: Family,
    roots: list[Root],
    last_look: Callable[[int, Stat], None],
) -> int:
    """A tree root seen by the scan: kept in ``roots`` for :func:`fold`, or given its
    ``last_look`` when it ended; returns the threads it adds to the scan's total."""
    if not p.watched:
        return 0
    if ended:
        # Its live descendants were re-parented when it exited (exit(2)): its own times
        # and its waited-for children's are the whole tree.
        _, u, s = fam[p.pid]
        last_look(p.pid, st._replace(utime=u, stime=s))
        return 0
    roots.append((p.pid, p, st))
    return st.num_threads


def fold(
    roots: list[Root],
    fam: Family,
    tree: dict[int, list[int]],
    update: Callable[[int, Proc, Stat], None],
) -> set[int]:
    """Give each root its tree's CPU times (``update(pid, p, stat)``, the root's row),
    note its live descendants in ``tree``; returns every descendant's pid (no row)."""
    members = descendants(fam, [pid for pid, _, _ in roots])
    for pid, p, st in roots:
        desc = tree[pid] = members[pid]
        user = st.utime + st.cutime + sum(fam[c][1] for c in desc)
        system = st.stime + st.cstime + sum(fam[c][2] for c in desc)
        update(pid, p, st._replace(utime=user, stime=system))
    return {c for desc in members.values() for c in desc}
